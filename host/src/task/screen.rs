//! The policy points a participant's message passes before the task takes
//! it. Commands and controls never come here (`command.invoked` is their
//! policy point).
//!
//! * `request.received.pre` ([`RequestContext`]): every ordinary message. An
//!   abort refuses the message and nothing changes; a replaced `text`
//!   becomes the message's text (e.g. a redaction policy), stored and sent
//!   to the model as rewritten.
//! * `task.created.pre` ([`TaskCreatedContext`]): the first message of a new
//!   conversation, after `request.received.pre`. An abort refuses it and no
//!   task is created; a `pre` executor can only refuse here (what it
//!   replaces is not read).

use super::state::message_text;
use crate::a2a::error::A2aError;
use crate::a2a::types::{Message, Part, PartContent};
use crate::commands::CommandRegistry;
use crate::domain::{Participant, RequestContext, TaskCreatedContext, TaskView};
use crate::hooks::{AbortReason, ChainError, HookCall, HookPoint, Operation, Phase};

/// Run `request.received.pre` on `message`; returns the message to accept.
pub(crate) async fn request_received(
    registry: &CommandRegistry,
    message: Message,
    sender: &Participant,
    task: &TaskView,
) -> Result<Message, A2aError> {
    let point = HookPoint::new(Operation::RequestReceived, Phase::Pre);
    if !registry.hooks().has_entries(point, None) {
        return Ok(message);
    }
    let text = message_text(&message);
    let context = RequestContext {
        text: text.clone(),
        sender: sender.clone(),
        task: task.clone(),
    };
    let context = registry
        .hooks()
        .run_typed(HookCall::new(point, Some(&task.id)), None, context)
        .await
        .map_err(refusal)?;
    if context.text == text {
        Ok(message)
    } else {
        Ok(with_text(message, &context.text))
    }
}

/// Run `task.created.pre` for a conversation about to be created by
/// `sender`'s message.
pub(crate) async fn task_created(
    registry: &CommandRegistry,
    sender: &Participant,
    task: &TaskView,
) -> Result<(), A2aError> {
    let point = HookPoint::new(Operation::TaskCreated, Phase::Pre);
    let context = TaskCreatedContext {
        task: task.clone(),
        created_by: Some(sender.clone()),
    };
    registry
        .hooks()
        .run_typed(HookCall::new(point, Some(&task.id)), None, context)
        .await
        .map(drop)
        .map_err(refusal)
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
            tracing::warn!(executor = %by, %fault, "policy executor fault");
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
    use serde_json::json;

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
