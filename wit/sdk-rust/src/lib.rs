//! Write tiny-harness plugins in Rust.
//!
//! A plugin is a WebAssembly component built for `wasm32-wasip2` from a
//! `cdylib` crate. This crate generates the bindings for the
//! `tiny-harness:plugin@0.2.0` contract (`wit/plugin.wit`) and wraps them in
//! four small traits, one per export, whose methods all have defaults:
//!
//! * [`Command::run`]: a command body; gets an [`Invocation`], returns an
//!   [`Outcome`] (a reply plus [`Effect`]s) or a [`CommandError`].
//!   Default: fails with "no command body".
//! * [`Tool::call`]: a tool body; gets a [`ToolCall`] (its JSON arguments
//!   already checked against the tool's declared schema), returns a JSON
//!   result or a [`ToolError`]. Default: fails with "no tool body".
//! * [`Hook::handle`]: a generic hook executor; gets the hook point and its
//!   JSON context, returns a [`Decision`]. Default: [`Decision::Pass`].
//! * [`Completion::complete`]: argument completion. Default: no suggestions.
//!
//! [`export_plugin!`] turns a type implementing them into the component's
//! exports. Imports are the host's [`log`] and the plugin's own [`config`].
//!
//! # Example
//!
//! ```no_run
//! use tiny_harness_plugin::{Command, CommandError, Effect, Invocation, Outcome};
//!
//! struct Shout;
//!
//! impl Command for Shout {
//!     fn run(invocation: Invocation) -> Result<Outcome, CommandError> {
//!         let Some(text) = invocation.arg("text") else {
//!             return Err(CommandError::Usage("usage: /shout <text>".into()));
//!         };
//!         tiny_harness_plugin::log::info(&format!("shouting for {}", invocation.sender.id));
//!         Ok(Outcome::reply(text.to_uppercase())
//!             .with_data(r#"{"shouted":true}"#)
//!             .with_effect(Effect::SetEffort("high".into())))
//!     }
//! }
//!
//! // Shout implements only `Command`; the other exports keep their defaults.
//! tiny_harness_plugin::export_plugin!(Shout: Command);
//! ```
//!
//! Build it with `cargo build --release --target wasm32-wasip2`; the `.wasm`
//! in `target/wasm32-wasip2/release/` is already a component. Declare the
//! command in `commands.json` and its body in `hooks.json` (see
//! `docs/contracts.md`).
//!
//! A tool:
//!
//! ```no_run
//! use tiny_harness_plugin::{Tool, ToolCall, ToolError};
//!
//! struct Shouter;
//!
//! impl Tool for Shouter {
//!     fn call(call: ToolCall) -> Result<String, ToolError> {
//!         // `call.arguments` fits the schema tools.json declares; read it
//!         // with serde_json (`std` only is enough) when it has fields.
//!         if call.task.turn_count > 100 {
//!             return Err(ToolError::Refused("this conversation is long enough".into()));
//!         }
//!         Ok(tiny_harness_plugin::json::string(&call.arguments.to_uppercase()))
//!     }
//! }
//!
//! tiny_harness_plugin::export_plugin!(Shouter: Tool);
//! ```
//!
//! Every component built with this crate exports all four interfaces; the
//! host decides which one to call from the plugin's `hooks.json`.

use std::fmt;
use std::marker::PhantomData;

// The generated code names this crate by path (`runtime_path`,
// `default_bindings_module`), both here and where `export_plugin!` expands.
extern crate self as tiny_harness_plugin;

#[doc(hidden)]
pub use wit_bindgen as __wit_bindgen;

/// The raw bindings generated from `wit/plugin.wit` (world `plugin`).
///
/// Prefer the re-exports at the crate root; this module is public so that
/// [`export_plugin!`] can reach it from the plugin's crate.
#[doc(hidden)]
#[allow(unsafe_code, unreachable_pub, missing_docs, clippy::all)]
pub mod bindings {
    wit_bindgen::generate!({
        path: "../plugin.wit",
        world: "plugin",
        pub_export_macro: true,
        export_macro_name: "export",
        default_bindings_module: "tiny_harness_plugin::bindings",
        runtime_path: "tiny_harness_plugin::__wit_bindgen::rt",
        additional_derives: [PartialEq],
    });
}

use bindings::exports::tiny_harness::plugin as exports;
use bindings::tiny_harness::plugin::host;

pub use bindings::tiny_harness::plugin::types::{
    Abort, AbortReason, Argument, CommandError, Decision, Effect, Invocation, Outcome, Participant,
    Reply, Role, SubtaskView, Suggestion, TaskView, ToolCall, ToolError, Usage,
};

/// The WIT package version this SDK builds components against.
pub const CONTRACT_VERSION: &str = "0.2.0";

/// A command body: the `command.invoked.in` executor for the commands this
/// plugin declares in `commands.json`.
pub trait Command {
    /// Runs the command. Return effects instead of changing anything: the
    /// task validates and applies them after the body returns.
    fn run(invocation: Invocation) -> Result<Outcome, CommandError> {
        Err(CommandError::Failed(format!(
            "this plugin has no command body for /{}",
            invocation.command
        )))
    }
}

/// A tool body: the `tool.invoked.in` executor for the tools this plugin
/// declares in `tools.json`.
pub trait Tool {
    /// Runs the tool. `call.arguments` is a JSON object that fits the
    /// tool's declared `input_schema`; the result is a JSON document (a JSON
    /// string, for text) the model reads. A [`ToolError`] is read by the
    /// model too, which may try again.
    fn call(call: ToolCall) -> Result<String, ToolError> {
        Err(ToolError::Failed(format!(
            "this plugin has no tool body for `{}`",
            call.name
        )))
    }
}

/// A generic hook executor for any hook point (`<operation>.<phase>`).
pub trait Hook {
    /// Handles `point` (e.g. `command.invoked.pre`) with its JSON `context`.
    fn handle(point: &str, context: &str) -> Decision {
        let _ = (point, context);
        Decision::Pass
    }
}

/// Argument completion for the commands this plugin declares.
pub trait Completion {
    /// Suggests values for the argument being typed.
    fn complete(command: &str, partial_arguments: &str) -> Vec<Suggestion> {
        let _ = (command, partial_arguments);
        Vec::new()
    }
}

/// Adapts a plugin type to the generated export traits. Used by
/// [`export_plugin!`]; plugin code never names it.
#[doc(hidden)]
pub struct Bridge<T>(PhantomData<T>);

impl<T: Command> exports::command::Guest for Bridge<T> {
    fn run(invocation: Invocation) -> Result<Outcome, CommandError> {
        T::run(invocation)
    }
}

impl<T: Tool> exports::tool::Guest for Bridge<T> {
    fn call(call: ToolCall) -> Result<String, ToolError> {
        T::call(call)
    }
}

impl<T: Hook> exports::hook::Guest for Bridge<T> {
    fn handle(point: String, context: String) -> Decision {
        T::handle(&point, &context)
    }
}

impl<T: Completion> exports::completion::Guest for Bridge<T> {
    fn complete(command: String, partial_arguments: String) -> Vec<Suggestion> {
        T::complete(&command, &partial_arguments)
    }
}

/// Exports a plugin type as this component's `command`, `tool`, `hook` and
/// `completion` implementations. Invoke it once, in the `cdylib` crate.
///
/// * `export_plugin!(MyPlugin);` — `MyPlugin` implements all four of
///   [`Command`], [`Tool`], [`Hook`] and [`Completion`] (an empty `impl`
///   keeps a trait's defaults).
/// * `export_plugin!(MyPlugin: Command, Hook);` — `MyPlugin` implements the
///   listed traits; the macro adds default implementations of the others.
#[macro_export]
macro_rules! export_plugin {
    ($plugin:ty) => {
        #[allow(unsafe_code)]
        const _: () = {
            type TinyHarnessPluginExports = $crate::Bridge<$plugin>;
            $crate::bindings::export!(TinyHarnessPluginExports with_types_in $crate::bindings);
        };
    };
    ($plugin:ty : $($implemented:ident),+ $(,)?) => {
        $crate::__default_impl!(Command; $plugin; $($implemented)+);
        $crate::__default_impl!(Tool; $plugin; $($implemented)+);
        $crate::__default_impl!(Hook; $plugin; $($implemented)+);
        $crate::__default_impl!(Completion; $plugin; $($implemented)+);
        $crate::export_plugin!($plugin);
    };
}

/// Implements the SDK trait named first for the plugin type unless it is in
/// the list that follows.
#[doc(hidden)]
#[macro_export]
macro_rules! __default_impl {
    (Command; $plugin:ty; Command $($rest:ident)*) => {};
    (Tool; $plugin:ty; Tool $($rest:ident)*) => {};
    (Hook; $plugin:ty; Hook $($rest:ident)*) => {};
    (Completion; $plugin:ty; Completion $($rest:ident)*) => {};
    ($trait:ident; $plugin:ty; $other:ident $($rest:ident)*) => {
        $crate::__default_impl!($trait; $plugin; $($rest)*);
    };
    ($trait:ident; $plugin:ty;) => {
        impl $crate::$trait for $plugin {}
    };
}

/// Writes to the harness log, tagged with the plugin's name.
pub mod log {
    use super::host::{self, Level};

    /// Logs at trace level.
    pub fn trace(message: &str) {
        host::log(Level::Trace, message);
    }
    /// Logs at debug level.
    pub fn debug(message: &str) {
        host::log(Level::Debug, message);
    }
    /// Logs at info level.
    pub fn info(message: &str) {
        host::log(Level::Info, message);
    }
    /// Logs at warn level.
    pub fn warn(message: &str) {
        host::log(Level::Warn, message);
    }
    /// Logs at error level.
    pub fn error(message: &str) {
        host::log(Level::Error, message);
    }
}

/// One of the plugin's configuration values (`plugin.json` `config`, as the
/// operator may have overridden it), or `None` when the key is not set.
pub fn config(key: &str) -> Option<String> {
    host::config(key)
}

impl Outcome {
    /// An outcome with this reply text, no data and no effects.
    pub fn reply(text: impl Into<String>) -> Self {
        Outcome {
            reply: Reply {
                text: text.into(),
                data: None,
            },
            effects: Vec::new(),
        }
    }

    /// Attaches structured data to the reply, as a JSON document.
    pub fn with_data(mut self, json: impl Into<String>) -> Self {
        self.reply.data = Some(json.into());
        self
    }

    /// Adds an effect for the task to apply after the body returns.
    pub fn with_effect(mut self, effect: Effect) -> Self {
        self.effects.push(effect);
        self
    }
}

impl Invocation {
    /// The parsed argument `name`, when it was given and is not blank.
    pub fn arg(&self, name: &str) -> Option<&str> {
        self.arguments
            .iter()
            .find(|argument| argument.name == name)
            .map(|argument| argument.value.trim())
            .filter(|value| !value.is_empty())
    }
}

impl TaskView {
    /// The sub-tasks that have not reached a terminal state.
    pub fn open_subtasks(&self) -> impl Iterator<Item = &SubtaskView> {
        self.subtasks.iter().filter(|subtask| subtask.is_open())
    }
}

impl SubtaskView {
    /// Whether this sub-task is still running (not in a terminal state).
    pub fn is_open(&self) -> bool {
        !is_terminal_state(&self.state)
    }
}

/// Whether an A2A task state name (e.g. `TASK_STATE_COMPLETED`) is terminal.
pub fn is_terminal_state(state: &str) -> bool {
    matches!(
        state,
        "TASK_STATE_COMPLETED"
            | "TASK_STATE_CANCELED"
            | "TASK_STATE_CANCELLED"
            | "TASK_STATE_FAILED"
            | "TASK_STATE_REJECTED"
    )
}

impl Role {
    /// The lower-case name used in manifests and JSON contexts.
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Reporter => "reporter",
            Role::Assignee => "assignee",
            Role::Watcher => "watcher",
            Role::Admin => "admin",
        }
    }

    /// Parses a lower-case role name as found in JSON contexts.
    pub fn parse(name: &str) -> Option<Role> {
        match name {
            "reporter" => Some(Role::Reporter),
            "assignee" => Some(Role::Assignee),
            "watcher" => Some(Role::Watcher),
            "admin" => Some(Role::Admin),
            _ => None,
        }
    }
}

impl fmt::Display for Role {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Decision {
    /// Stops the operation for this reason.
    pub fn abort(reason: AbortReason, message: impl Into<String>) -> Self {
        Decision::Abort(Abort {
            reason,
            message: message.into(),
        })
    }

    /// Stops the operation: the sender may not do this.
    pub fn refused(message: impl Into<String>) -> Self {
        Self::abort(AbortReason::Refused, message)
    }

    /// Stops the operation: a policy forbids it.
    pub fn policy(message: impl Into<String>) -> Self {
        Self::abort(AbortReason::Policy, message)
    }

    /// Stops the operation: the input is not acceptable.
    pub fn invalid(message: impl Into<String>) -> Self {
        Self::abort(AbortReason::Invalid, message)
    }
}

/// Minimal JSON helpers for building reply data without a JSON library.
pub mod json {
    use std::fmt::Write;

    /// `value` as a JSON string literal, quotes included.
    pub fn string(value: &str) -> String {
        let mut out = String::with_capacity(value.len() + 2);
        out.push('"');
        for c in value.chars() {
            match c {
                '"' => out.push_str("\\\""),
                '\\' => out.push_str("\\\\"),
                '\n' => out.push_str("\\n"),
                '\r' => out.push_str("\\r"),
                '\t' => out.push_str("\\t"),
                c if u32::from(c) < 0x20 => {
                    let _ = write!(out, "\\u{:04x}", u32::from(c));
                }
                c => out.push(c),
            }
        }
        out.push('"');
        out
    }

    /// The strings as a JSON array of string literals.
    pub fn string_array<'a>(values: impl IntoIterator<Item = &'a str>) -> String {
        let items: Vec<String> = values.into_iter().map(string).collect();
        format!("[{}]", items.join(","))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outcome_builders_fill_reply_and_effects() {
        let outcome = Outcome::reply("hi")
            .with_data(r#"{"a":1}"#)
            .with_effect(Effect::SetModel("m".into()));
        assert_eq!(outcome.reply.text, "hi");
        assert_eq!(outcome.reply.data.as_deref(), Some(r#"{"a":1}"#));
        assert_eq!(outcome.effects, vec![Effect::SetModel("m".into())]);
    }

    #[test]
    fn arg_skips_blank_values() {
        let invocation = Invocation {
            command: "x".into(),
            raw_arguments: String::new(),
            arguments: vec![
                Argument {
                    name: "blank".into(),
                    value: "  ".into(),
                },
                Argument {
                    name: "set".into(),
                    value: " v ".into(),
                },
            ],
            sender: Participant {
                id: "a".into(),
                role: Role::Reporter,
            },
            task: TaskView {
                id: "t".into(),
                context_id: "c".into(),
                state: "TASK_STATE_WORKING".into(),
                sub_state: None,
                model: "m".into(),
                effort: "low".into(),
                selectable_models: Vec::new(),
                participants: Vec::new(),
                subtasks: Vec::new(),
                turn_count: 0,
                usage: Usage {
                    input_tokens: 0,
                    output_tokens: 0,
                },
                last_turn_usage: None,
            },
        };
        assert_eq!(invocation.arg("blank"), None);
        assert_eq!(invocation.arg("missing"), None);
        assert_eq!(invocation.arg("set"), Some("v"));
    }

    #[test]
    fn json_strings_are_escaped() {
        assert_eq!(json::string("a\"b\\c\n\u{1}"), r#""a\"b\\c\n\u0001""#);
        assert_eq!(json::string_array(["x", "y"]), r#"["x","y"]"#);
    }

    #[test]
    fn roles_round_trip() {
        for role in [Role::Reporter, Role::Assignee, Role::Watcher, Role::Admin] {
            assert_eq!(Role::parse(role.as_str()), Some(role));
        }
        assert_eq!(Role::parse("root"), None);
    }
}
