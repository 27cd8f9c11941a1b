//! What every task actor shares: the settings from the configuration and
//! the services a task uses (registries, model, store, push delivery).

use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::commands::Registries;
use crate::model::Models;
use crate::push::Pusher;
use crate::store::TaskStore;

/// What the lifecycle needs from the configuration.
#[derive(Clone, Debug)]
pub struct TaskSettings {
    /// The model a new conversation starts on.
    pub default_model: String,
    /// Models a participant may switch to with `/model` (includes the default).
    pub selectable_models: Vec<String>,
    /// The effort a new conversation starts on: low, medium or high.
    pub default_effort: String,
    /// Participant ids that are admins on every task.
    pub admins: Vec<String>,
    /// How a task a participant starts lives when its first message does not say.
    pub default_lifecycle: TaskLifecycle,
    /// Whether a first message whose id its sender already started a task
    /// with is a resend of it (answered with that task) or starts a new one.
    pub dedupe_first_messages: bool,
    /// How model turns run.
    pub agent: AgentSettings,
    /// What one task may grow to.
    pub limits: TaskLimits,
}

impl Default for TaskSettings {
    /// The embedded defaults: the offline models, medium effort, no admins.
    fn default() -> Self {
        TaskSettings {
            default_model: crate::model::OFFLINE_MODELS[0].to_owned(),
            selectable_models: crate::model::OFFLINE_MODELS.map(str::to_owned).to_vec(),
            default_effort: "medium".to_owned(),
            admins: Vec::new(),
            default_lifecycle: TaskLifecycle::default(),
            dedupe_first_messages: true,
            agent: AgentSettings::default(),
            limits: TaskLimits::default(),
        }
    }
}

/// How model turns run (`[agent]`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AgentSettings {
    /// Sent to the model before every conversation.
    pub system_prompt: Option<String>,
    /// Tool rounds one turn may take before the loop stops it.
    pub max_tool_rounds: u32,
    /// Tools whose every call waits for a participant's approval, whatever
    /// their declarations say (the operator's own policy).
    pub tools_needing_approval: Vec<String>,
}

impl AgentSettings {
    pub const DEFAULT_MAX_TOOL_ROUNDS: u32 = 8;
}

impl Default for AgentSettings {
    fn default() -> Self {
        AgentSettings {
            system_prompt: None,
            max_tool_rounds: Self::DEFAULT_MAX_TOOL_ROUNDS,
            tools_needing_approval: Vec::new(),
        }
    }
}

/// What a task may grow to (`[limits]`); each is checked where the growth
/// happens, with an error naming the limit.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TaskLimits {
    /// Messages in one task's history; beyond it, new messages are refused
    /// (a conversation this long continues in a new task of its context).
    pub max_history_messages: usize,
    /// Bytes of one command reply, text and data together.
    pub max_reply_bytes: usize,
    /// Effects one command may ask for.
    pub max_effects: usize,
    /// Sub-tasks one task may have open at once.
    pub max_open_subtasks: usize,
}

impl TaskLimits {
    pub const DEFAULT_MAX_HISTORY_MESSAGES: usize = 100_000;
    pub const DEFAULT_MAX_REPLY_BYTES: usize = 256 << 10;
    pub const DEFAULT_MAX_EFFECTS: usize = 16;
    pub const DEFAULT_MAX_OPEN_SUBTASKS: usize = 32;
}

impl Default for TaskLimits {
    fn default() -> Self {
        TaskLimits {
            max_history_messages: Self::DEFAULT_MAX_HISTORY_MESSAGES,
            max_reply_bytes: Self::DEFAULT_MAX_REPLY_BYTES,
            max_effects: Self::DEFAULT_MAX_EFFECTS,
            max_open_subtasks: Self::DEFAULT_MAX_OPEN_SUBTASKS,
        }
    }
}

/// What every actor shares.
pub(crate) struct Env {
    pub(crate) settings: TaskSettings,
    pub(crate) registries: Registries,
    pub(crate) models: Models,
    pub(crate) store: Arc<dyn TaskStore>,
    pub(crate) push: Arc<Pusher>,
    /// How long an actor with nothing to do lives on.
    pub(crate) idle_timeout: Duration,
    /// How long a plain message whose sender waits for the turn's end may
    /// stay unstored, so that a quick turn stores it with its reply.
    pub(crate) accept_commit_delay: Duration,
}

/// How a task a participant starts lives.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TaskLifecycle {
    /// Decision 007: every turn parks in `INPUT_REQUIRED` until a participant completes
    /// (the control envelope) or cancels it.
    #[default]
    Conversation,
    /// One-shot: the agent answers and the task completes on its own (once its open
    /// sub-tasks have finished and `task.complete` allows), the reply in `status.message`
    /// and as an artifact.
    Task,
}

impl TaskLifecycle {
    /// Every lifecycle, in the order the card lists them.
    pub const ALL: [TaskLifecycle; 2] = [TaskLifecycle::Conversation, TaskLifecycle::Task];

    /// The name in the configuration and in message metadata.
    pub fn as_str(self) -> &'static str {
        match self {
            TaskLifecycle::Conversation => "conversation",
            TaskLifecycle::Task => "task",
        }
    }

    /// The lifecycle called `name`.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL
            .into_iter()
            .find(|lifecycle| lifecycle.as_str() == name)
    }
}
