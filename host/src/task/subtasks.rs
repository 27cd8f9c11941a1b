//! Delegated sub-tasks: how a parent makes one, and how one reports back.
//!
//! A sub-task gets a new id, its parent's context, participants, model and
//! effort, and `metadata.parent_task_id`; the parent lists it in
//! `metadata.subtasks`. It runs its goal as one model turn and finishes on
//! its own. Each of its state changes updates the parent's list; when it
//! finishes, the parent also gets an artifact `subtask-<id>` with its result.

use serde::{Deserialize, Serialize};
use serde_json::json;

use super::state::{Lifecycle, PARENT_KEY, TaskRecord, new_id};
use crate::a2a::types::{Artifact, Message, Metadata, Part, Role as MessageRole};
use crate::domain::SubtaskView;

/// A new sub-task of `parent` working on `goal`, with a new id.
pub(crate) fn child_of(parent: &TaskRecord, goal: &str) -> TaskRecord {
    child_with_id(parent, new_id(), goal)
}

/// A new sub-task `id` of `parent` working on `goal` (an engine that
/// replays its decisions derives the id).
pub(crate) fn child_with_id(parent: &TaskRecord, id: String, goal: &str) -> TaskRecord {
    TaskRecord::new(
        id,
        parent.context_id.clone(),
        Lifecycle::Delegated {
            parent_id: parent.id.clone(),
            goal: goal.trim().to_owned(),
        },
        parent.participants.clone(),
        parent.model.clone(),
        parent.effort.clone(),
    )
}

/// The message `id` a delegated task starts from: its goal.
pub(crate) fn goal_message(child: &TaskRecord, id: String, parent_id: &str, goal: &str) -> Message {
    let mut metadata = Metadata::new();
    metadata.insert(PARENT_KEY.into(), json!(parent_id));
    Message {
        task_id: Some(child.id.clone()),
        context_id: Some(child.context_id.clone()),
        metadata,
        ..Message::new(MessageRole::User, id, vec![Part::text(goal)])
    }
}

/// What a delegated task tells its parent after a state change.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct Report {
    pub(crate) parent_id: String,
    pub(crate) subtask: SubtaskView,
    /// The result, once the sub-task has finished: its final status text.
    pub(crate) result: Option<String>,
}

impl Report {
    /// `child`'s report, if it is a delegated task.
    pub(crate) fn of(child: &TaskRecord) -> Option<Report> {
        let Lifecycle::Delegated { parent_id, .. } = &child.lifecycle else {
            return None;
        };
        Some(Report {
            parent_id: parent_id.clone(),
            subtask: child.as_subtask()?,
            result: child.is_terminal().then(|| child.status_text()),
        })
    }
}

/// The artifact a parent gets when sub-task `subtask` finishes.
pub(crate) fn result_artifact(subtask: &SubtaskView, result: &str) -> Artifact {
    let id = format!("subtask-{}", subtask.id);
    let mut metadata = Metadata::new();
    metadata.insert("subtask_id".into(), json!(subtask.id));
    metadata.insert("state".into(), json!(subtask.state));
    Artifact {
        artifact_id: id.clone(),
        name: Some(id),
        description: Some(format!("Result of the sub-task \"{}\"", subtask.goal)),
        parts: vec![Part::text(result)],
        metadata,
        ..Artifact::default()
    }
}
