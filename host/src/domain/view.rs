//! What executors and command bodies may see of a task: a read-only view,
//! never the task itself.

use serde::{Deserialize, Serialize};

use super::model::Usage;
use super::participant::{Participant, Role};

use crate::a2a::types::TaskState;

/// A delegated child task as its parent sees it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SubtaskView {
    pub id: String,
    pub goal: String,
    /// The A2A state name, e.g. `TASK_STATE_WORKING`.
    pub state: String,
}

impl SubtaskView {
    /// Not finished yet: its state is not a terminal one.
    pub fn is_open(&self) -> bool {
        !self
            .state
            .parse::<TaskState>()
            .is_ok_and(TaskState::is_terminal)
    }
}

/// A read-only snapshot of a task, handed to command bodies and hooks.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TaskView {
    pub id: String,
    pub context_id: String,
    /// The A2A state name, e.g. `TASK_STATE_INPUT_REQUIRED`.
    pub state: String,
    #[serde(default)]
    pub sub_state: Option<String>,
    pub model: String,
    pub effort: String,
    #[serde(default)]
    pub selectable_models: Vec<String>,
    #[serde(default)]
    pub participants: Vec<Participant>,
    #[serde(default)]
    pub subtasks: Vec<SubtaskView>,
    #[serde(default)]
    pub turn_count: u32,
    /// Tokens the conversation's models reported so far, in total.
    #[serde(default)]
    pub usage: Usage,
    /// Tokens of the most recent turn whose model reported any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_turn_usage: Option<Usage>,
}

impl TaskView {
    /// The sub-tasks that have not finished.
    pub fn open_subtasks(&self) -> impl Iterator<Item = &SubtaskView> {
        self.subtasks.iter().filter(|subtask| subtask.is_open())
    }

    /// A fresh conversation with one reporter, for trying commands without a
    /// server (`tiny-harness plugins run`) and for tests.
    pub fn scratch(reporter: &str) -> Self {
        TaskView {
            id: "scratch-task".into(),
            context_id: "scratch-context".into(),
            state: "TASK_STATE_INPUT_REQUIRED".into(),
            sub_state: Some("awaiting-next-message".into()),
            model: "offline-echo".into(),
            effort: "medium".into(),
            selectable_models: vec!["offline-echo".into()],
            participants: vec![Participant {
                id: reporter.into(),
                role: Role::Reporter,
            }],
            subtasks: Vec::new(),
            turn_count: 0,
            usage: Usage::default(),
            last_turn_usage: None,
        }
    }
}
