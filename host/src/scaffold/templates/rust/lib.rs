//! The {{name}} tiny-harness plugin: `/{{command}} [text]`.
//!
//! The harness validates the arguments against commands.json before the body
//! runs, then calls `Command::run` with the invocation (the command, its
//! arguments, the sender and a read-only view of the task). The body answers
//! with a reply and, optionally, effects the task applies afterwards
//! (`Effect::SetModel`, `Effect::SetEffort`, `Effect::SpawnSubtask`).

use tiny_harness_plugin::{Command, CommandError, Invocation, Outcome, json};

/// The longest text `/{{command}}` repeats.
const MAX_TEXT: usize = 200;

struct Plugin;

impl Command for Plugin {
    fn run(invocation: Invocation) -> Result<Outcome, CommandError> {
        let text = invocation.arg("text");
        if text.is_some_and(|text| text.chars().count() > MAX_TEXT) {
            // A usage error answers the participant with how to call the command.
            return Err(CommandError::Usage(format!(
                "usage: /{{command}} [text] (at most {MAX_TEXT} characters)"
            )));
        }
        let reply = match text {
            Some(text) => format!("Hello from {{name}}: {text}"),
            None => "Hello from {{name}}!".to_owned(),
        };
        let data = format!(
            r#"{{"plugin":"{{name}}","sender":{},"text":{}}}"#,
            json::string(&invocation.sender.id),
            text.map_or_else(|| "null".to_owned(), json::string),
        );
        Ok(Outcome::reply(reply).with_data(data))
    }
}

// `Command` only: the other exports (`Hook`, `Completion`) keep the SDK's
// defaults. Add `Hook` here and an entry in hooks.json to run on hook points.
tiny_harness_plugin::export_plugin!(Plugin: Command);
