//! What a participant's message is, checked in this order: a control
//! envelope, a task event envelope, a registered command, or an ordinary
//! message for the model.

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::participants;
use crate::a2a::error::A2aError;
use crate::a2a::types::Message;
use crate::commands::CommandRegistry;
use crate::domain::Participant;

/// The control actions a message may carry. Cancel stays A2A's CancelTask.
pub(crate) const CONTROL_ACTIONS: [&str; 3] = ["complete", "approve", "deny"];

/// A classified message.
#[derive(Clone)]
pub(crate) enum Class {
    /// `{"kind": "control", "action": "complete"}`.
    Complete,
    /// `{"kind": "control", "action": "approve" | "deny"}`: the decision on
    /// the tool calls awaiting approval.
    Decide { approve: bool },
    /// `{"kind": "task", "payload": {"participants": [...]}}`.
    Participants(Vec<Participant>),
    /// `/<name> <arguments>` for a command of this registry generation, which
    /// runs the whole command.
    Command(Arc<CommandRegistry>),
    /// Anything else goes to the model.
    Ordinary,
}

impl Class {
    /// Whether this is a control or task event, which act on an existing task.
    pub(crate) fn is_envelope(&self) -> bool {
        matches!(
            self,
            Class::Complete | Class::Decide { .. } | Class::Participants(_)
        )
    }

    /// What the message is to the lifecycle.
    pub(crate) fn kind(&self) -> Kind {
        match self {
            Class::Complete => Kind::Complete,
            Class::Decide { approve } => Kind::Decide { approve: *approve },
            Class::Participants(grants) => Kind::Participants(grants.clone()),
            Class::Command(_) => Kind::Command,
            Class::Ordinary => Kind::Ordinary,
        }
    }
}

/// What a classified message is, without the registry generation a command
/// runs in: what access checks and lifecycle decisions depend on, and what
/// crosses to another engine's workers (which run commands in their own).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Kind {
    Complete,
    Decide { approve: bool },
    Participants(Vec<Participant>),
    Command,
    Ordinary,
}

/// Classify `message` against the current `registry` generation.
pub(crate) fn classify(
    message: &Message,
    registry: &Arc<CommandRegistry>,
) -> Result<Class, A2aError> {
    if let Some((index, envelope)) = envelope(message) {
        let field = format!("message.parts[{index}].data");
        match envelope.get("kind").and_then(Value::as_str) {
            Some("control") => return control(envelope, &field),
            Some("task") => return task_event(envelope, &field),
            // Data of another shape is content for the model.
            _ => {}
        }
    }
    if let Some(text) = command_text(message)
        && registry.parse(text).is_some()
    {
        return Ok(Class::Command(Arc::clone(registry)));
    }
    Ok(Class::Ordinary)
}

/// The text of a message that is a single text part: the only shape a
/// command can have.
pub(crate) fn command_text(message: &Message) -> Option<&str> {
    match message.parts.as_slice() {
        [part] => part.as_text(),
        _ => None,
    }
}

/// The message's one data part, when it is a JSON object, and its index.
fn envelope(message: &Message) -> Option<(usize, &Map<String, Value>)> {
    let mut data = message
        .parts
        .iter()
        .enumerate()
        .filter_map(|(index, part)| part.as_data().map(|data| (index, data)));
    let (index, only) = data.next()?;
    if data.next().is_some() {
        return None;
    }
    only.as_object().map(|object| (index, object))
}

fn control(envelope: &Map<String, Value>, field: &str) -> Result<Class, A2aError> {
    match envelope.get("action").and_then(Value::as_str) {
        Some("complete") => Ok(Class::Complete),
        Some("approve") => Ok(Class::Decide { approve: true }),
        Some("deny") => Ok(Class::Decide { approve: false }),
        other => {
            let found = other.map_or_else(|| "no action".to_owned(), |a| format!("action `{a}`"));
            Err(A2aError::invalid_field(
                format!("{field}.action"),
                format!(
                    "unsupported control: {found}; the supported actions are {} \
                     (cancel a task with CancelTask)",
                    CONTROL_ACTIONS.join(", ")
                ),
            ))
        }
    }
}

fn task_event(envelope: &Map<String, Value>, field: &str) -> Result<Class, A2aError> {
    let list = envelope
        .get("payload")
        .and_then(|payload| payload.get("participants"));
    let grants = participants::parse_grants(list, &format!("{field}.payload.participants"))?;
    Ok(Class::Participants(grants))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::a2a::types::{Part, Role};
    use serde_json::json;

    fn message(parts: Vec<Part>) -> Message {
        Message::new(Role::User, "m", parts)
    }

    fn class_of(parts: Vec<Part>) -> Result<Class, A2aError> {
        classify(&message(parts), &Arc::new(CommandRegistry::default()))
    }

    #[test]
    fn envelopes_are_recognised_by_their_one_data_part() {
        let complete = json!({"kind": "control", "action": "complete"});
        assert!(matches!(
            class_of(vec![Part::text("done"), Part::data(complete.clone())]),
            Ok(Class::Complete)
        ));
        // Two data parts: not an envelope.
        assert!(matches!(
            class_of(vec![Part::data(complete.clone()), Part::data(complete)]),
            Ok(Class::Ordinary)
        ));
        let grant = json!({"kind": "task", "payload": {"participants": [{"id": "bob", "role": "watcher"}]}});
        assert!(
            matches!(class_of(vec![Part::data(grant)]), Ok(Class::Participants(g)) if g.len() == 1)
        );
        assert!(matches!(
            class_of(vec![Part::data(json!({"kind": "note"}))]),
            Ok(Class::Ordinary)
        ));
    }

    #[test]
    fn unknown_control_actions_name_the_supported_ones() {
        let error = class_of(vec![Part::data(
            json!({"kind": "control", "action": "pause"}),
        )])
        .err()
        .expect("refused");
        let A2aError::InvalidParams { message, field } = error else {
            panic!("expected InvalidParams, got {error:?}");
        };
        assert_eq!(field.as_deref(), Some("message.parts[0].data.action"));
        assert!(message.contains("action `pause`"), "{message}");
        assert!(message.contains("complete"), "{message}");
    }

    #[test]
    fn unregistered_commands_are_ordinary() {
        assert!(matches!(
            class_of(vec![Part::text("/nope")]),
            Ok(Class::Ordinary)
        ));
    }
}
