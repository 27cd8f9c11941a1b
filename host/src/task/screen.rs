//! `request.received`: the policy point every ordinary message passes before
//! the task accepts it. Commands and controls never come here
//! (`command.invoked` is their policy point).
//!
//! The context is `{"text": "...", "sender": {"id", "role"}, "task": <task view>}`.
//! Only the `pre` phase runs. An abort refuses the message and nothing
//! changes; a replaced `text` becomes the message's text (e.g. a redaction
//! policy), stored and sent to the model as rewritten.

use serde_json::{Value, json};

use super::state::message_text;
use crate::a2a::error::A2aError;
use crate::a2a::types::{Message, Part, PartContent};
use crate::commands::CommandRegistry;
use crate::domain::{Participant, TaskView};
use crate::hooks::{AbortReason, ChainError, HookCall, HookPoint, Operation, Phase};

/// Run `request.received.pre` on `message`; returns the message to accept.
pub(crate) async fn request_received(
    registry: &CommandRegistry,
    message: Message,
    sender: &Participant,
    task: &TaskView,
) -> Result<Message, A2aError> {
    let point = HookPoint::new(Operation::RequestReceived, Phase::Pre);
    let text = message_text(&message);
    let context = json!({ "text": text, "sender": sender, "task": task });
    let context = registry
        .hooks()
        .run(HookCall::new(point, Some(&task.id)), None, context)
        .await
        .map_err(refusal)?;
    match context.get("text").and_then(Value::as_str) {
        Some(screened) if screened == text => Ok(message),
        Some(screened) => Ok(with_text(message, screened)),
        None => Err(A2aError::Internal(format!(
            "a {point} executor left `text` out of shape (it must stay a string)"
        ))),
    }
}

fn refusal(error: ChainError) -> A2aError {
    match error {
        ChainError::Aborted { abort, .. } => match abort.reason {
            AbortReason::Invalid => A2aError::invalid_params(abort.message),
            AbortReason::Refused | AbortReason::Policy => {
                A2aError::UnsupportedOperation(abort.message)
            }
        },
        ChainError::Fault { by, fault } => {
            tracing::warn!(executor = %by, %fault, "request.received executor fault");
            A2aError::Internal(format!("the message could not be checked: {by} {fault}"))
        }
    }
}

/// `message` with its text parts replaced by one part holding `text`, where
/// the first text part was.
fn with_text(mut message: Message, text: &str) -> Message {
    let first = message
        .parts
        .iter()
        .position(|part| matches!(part.content, PartContent::Text(_)))
        .unwrap_or(0);
    message
        .parts
        .retain(|part| !matches!(part.content, PartContent::Text(_)));
    let at = first.min(message.parts.len());
    message.parts.insert(at, Part::text(text));
    message
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::a2a::types::Role;

    #[test]
    fn rewritten_text_replaces_the_text_parts_in_place() {
        let message = Message::new(
            Role::User,
            "m",
            vec![
                Part::data(json!({"a": 1})),
                Part::text("secret"),
                Part::text("more"),
            ],
        );
        let rewritten = with_text(message, "[redacted]");
        assert_eq!(rewritten.parts.len(), 2);
        assert_eq!(rewritten.parts[1].as_text(), Some("[redacted]"));
    }
}
