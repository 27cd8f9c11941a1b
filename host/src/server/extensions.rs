//! The two A2A extensions this agent declares (decision 007), and their activation echo.
//!
//! * **status** ([`STATUS_EXTENSION_URI`]): a conversation parked in
//!   `TASK_STATE_INPUT_REQUIRED` carries why in `metadata["sub_state"]` of the Task and of
//!   the status update: `awaiting-next-message`, `awaiting-answer` or `awaiting-approval`
//!   (tool calls wait for a participant's `approve` or `deny` control). The value is an open
//!   string (an unknown one means plain INPUT_REQUIRED) and is removed when the task leaves
//!   INPUT_REQUIRED. It also declares the task lifecycles: a first message's
//!   `metadata["lifecycle"]` picks `conversation` (parks every turn) or `task` (completes
//!   on its own); without it the operator's default applies (`defaultLifecycle` in its
//!   params). A later message naming another lifecycle is refused (InvalidParams).
//! * **commands** ([`COMMANDS_EXTENSION_URI`]): the `/<name> <arguments>` commands that run
//!   on the harness instead of the model, generated from the registry generation being
//!   served, so the card follows reloads.
//!
//! Both are data-only and always in effect, so neither is `required`; a client need not
//! activate them. A client that does (`A2A-Extensions` request header) gets the ones this
//! agent supports echoed in the `A2A-Extensions` response header, as the extensions guide
//! asks; unknown URIs are ignored.

use axum::extract::Request;
use axum::http::HeaderValue;
use axum::middleware::Next;
use axum::response::Response;
use serde_json::{Map, Value, json};

use super::complete::{COMPLETION_PATH, COMPLETION_TASK_PATH};
use crate::a2a::types::AgentExtension;
use crate::commands::{ArgumentSpec, ArgumentType, CommandRegistry, RegisteredCommand};
use crate::task::LIFECYCLE_KEY;
use crate::task::TaskLifecycle;

/// The status extension: the INPUT_REQUIRED sub-state in metadata.
pub const STATUS_EXTENSION_URI: &str = "https://tiny-harness.dev/extensions/status/v1";

/// The commands extension: the harness commands a message can run.
pub const COMMANDS_EXTENSION_URI: &str = "https://tiny-harness.dev/extensions/commands/v1";

/// The metadata key of the sub-state.
pub const SUB_STATE_KEY: &str = "sub_state";

/// The sub-states the status extension defines.
pub const SUB_STATE_VALUES: [&str; 3] = [
    "awaiting-next-message",
    "awaiting-answer",
    "awaiting-approval",
];

/// The service parameter (header) naming the extensions a client activates.
const EXTENSIONS_HEADER: &str = "a2a-extensions";

const SUPPORTED: [&str; 2] = [STATUS_EXTENSION_URI, COMMANDS_EXTENSION_URI];

/// The status extension's declaration; `default_lifecycle` is the lifecycle of a task
/// whose first message names none.
pub(crate) fn status_extension(default_lifecycle: TaskLifecycle) -> AgentExtension {
    AgentExtension {
        uri: STATUS_EXTENSION_URI.to_owned(),
        description: Some(
            "A conversation parked in TASK_STATE_INPUT_REQUIRED says why in metadata.sub_state \
             of the Task and of the status update: awaiting-next-message (the agent replied), \
             awaiting-answer (the agent asked a question) or awaiting-approval (tool calls, listed \
             in metadata.pending_approval, wait for a control message whose action is approve \
             or deny). Unknown values mean plain \
             INPUT_REQUIRED; the key is removed when the task leaves INPUT_REQUIRED. A task's \
             first message may set metadata.lifecycle: conversation (every turn parks in \
             INPUT_REQUIRED until a participant completes or cancels the task) or task (the \
             agent answers, the reply is also an artifact, and the task completes on its own \
             once its sub-tasks have finished); without it, defaultLifecycle applies. A later \
             message cannot change it."
                .to_owned(),
        ),
        required: false,
        params: object(json!({
            "metadataKey": SUB_STATE_KEY,
            "values": SUB_STATE_VALUES,
            "lifecycleMetadataKey": LIFECYCLE_KEY,
            "lifecycles": TaskLifecycle::ALL.map(TaskLifecycle::as_str),
            "defaultLifecycle": default_lifecycle.as_str(),
        })),
    }
}

/// The commands extension's declaration, listing every command of `registry`.
pub(crate) fn commands_extension(registry: &CommandRegistry) -> AgentExtension {
    let commands: Vec<Value> = registry.commands().map(command_entry).collect();
    AgentExtension {
        uri: COMMANDS_EXTENSION_URI.to_owned(),
        description: Some(
            "A message whose only text is exactly `/<name> <arguments>` for a command listed \
             here runs that command on the harness instead of the model; any other message, \
             an unlisted /name included, goes to the model. `roles` are the participant roles \
             allowed to run it (admins may run every command, watchers none). `completion` names \
             the HTTP routes (relative to the HTTP+JSON interface URL) that suggest what may \
             follow a partly typed message: command names, then a command's argument values \
             from its plugin, checked against the caller's role."
                .to_owned(),
        ),
        required: false,
        params: object(json!({
            "commands": commands,
            "completion": completion_entry(),
        })),
    }
}

/// Where renderers ask for completion (`super::complete`).
fn completion_entry() -> Value {
    json!({
        "method": "POST",
        "taskPath": COMPLETION_TASK_PATH,
        "path": COMPLETION_PATH,
        "request": {"text": "the message typed so far, e.g. /model f"},
        "response": {
            "role": "the caller's role the suggestions were checked against",
            "suggestions": [{"value": "text to insert", "description": "optional"}],
        },
    })
}

fn command_entry(command: &RegisteredCommand) -> Value {
    let spec = &command.spec;
    let arguments: Vec<Value> = spec.arguments.iter().map(argument_entry).collect();
    let roles: Vec<&str> = spec.roles.iter().map(|role| role.as_str()).collect();
    json!({
        "name": spec.name,
        "description": spec.description,
        "usage": spec.usage,
        "arguments": arguments,
        "roles": roles,
    })
}

fn argument_entry(argument: &ArgumentSpec) -> Value {
    let kind = match &argument.kind {
        ArgumentType::String => "string",
        ArgumentType::Integer => "integer",
        ArgumentType::Enum { .. } => "enum",
        ArgumentType::Text => "text",
    };
    let mut entry = json!({
        "name": argument.name,
        "type": kind,
        "required": argument.required,
    });
    if let ArgumentType::Enum { values } = &argument.kind {
        entry["values"] = json!(values);
    }
    if let Some(description) = &argument.description {
        entry["description"] = json!(description);
    }
    entry
}

/// The map inside a `json!({...})` literal.
fn object(value: Value) -> Map<String, Value> {
    match value {
        Value::Object(map) => map,
        _ => Map::new(),
    }
}

/// Middleware: echoes the supported extensions a request activates in the response's
/// `A2A-Extensions` header.
pub(crate) async fn echo_activated(request: Request, next: Next) -> Response {
    let activated = activated(request.headers().get_all(EXTENSIONS_HEADER));
    let mut response = next.run(request).await;
    if !activated.is_empty()
        && let Ok(value) = HeaderValue::from_str(&activated.join(","))
    {
        response.headers_mut().insert(EXTENSIONS_HEADER, value);
    }
    response
}

/// The supported URIs among comma-separated header values, in this agent's order.
fn activated<'a>(values: impl IntoIterator<Item = &'a HeaderValue>) -> Vec<&'static str> {
    let requested: Vec<String> = values
        .into_iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(','))
        .map(|uri| uri.trim().to_owned())
        .collect();
    SUPPORTED
        .into_iter()
        .filter(|uri| requested.iter().any(|requested| requested == uri))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_supported_extensions_are_echoed() {
        let values = [
            HeaderValue::from_static(
                "https://example.com/ext/other/v1, https://tiny-harness.dev/extensions/commands/v1",
            ),
            HeaderValue::from_static("https://tiny-harness.dev/extensions/status/v1"),
        ];
        assert_eq!(activated(&values), SUPPORTED.to_vec());
        let none = [HeaderValue::from_static(
            "https://tiny-harness.dev/extensions/status/v2",
        )];
        assert!(activated(&none).is_empty());
    }

    #[test]
    fn the_status_extension_declares_its_sub_states() {
        let extension = status_extension(TaskLifecycle::Conversation);
        assert!(!extension.required);
        assert_eq!(extension.params["metadataKey"], json!("sub_state"));
        assert_eq!(
            extension.params["values"],
            json!([
                "awaiting-next-message",
                "awaiting-answer",
                "awaiting-approval"
            ])
        );
        assert_eq!(extension.params["lifecycleMetadataKey"], json!("lifecycle"));
        assert_eq!(
            extension.params["lifecycles"],
            json!(["conversation", "task"])
        );
        assert_eq!(extension.params["defaultLifecycle"], json!("conversation"));
        let task = status_extension(TaskLifecycle::Task);
        assert_eq!(task.params["defaultLifecycle"], json!("task"));
    }
}
