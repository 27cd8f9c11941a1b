//! One task's state as a plain value, the changes it goes through, and how it
//! renders as A2A objects.
//!
//! Everything here is synchronous and deterministic: [`TaskRecord::apply`]
//! is the only place a task changes, and it returns the event the change
//! produces (with the task's next sequence number). Each change is also an
//! entry of the task's log (`journal`): replaying the log with the times it
//! records rebuilds the same record, which is what lets a durable backend
//! decide exactly as the live task did.

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::events::Sequenced;
use super::transcript::{self, STREAM_KEY};
use crate::a2a::types::{
    Artifact, History, Message, Metadata, Part, Role as MessageRole, StreamResponse, Task,
    TaskArtifactUpdateEvent, TaskState, TaskStatus, TaskStatusUpdateEvent, Timestamp,
};
use crate::domain::{Participant, SubtaskView, TaskView, ToolCall, Usage};
use crate::store::StoredTask;

/// Where the status extension writes the sub-state (decision 007).
pub(crate) const SUB_STATE_KEY: &str = "sub_state";
/// Task metadata of a parent: its delegated sub-tasks.
pub(crate) const SUBTASKS_KEY: &str = "subtasks";
/// Task metadata of a delegated task: the task that spawned it.
pub(crate) const PARENT_KEY: &str = "parent_task_id";
/// Where a first message names its task's lifecycle (`conversation` or
/// `task`), as the status extension declares.
pub const LIFECYCLE_KEY: &str = "lifecycle";
/// The id prefix of the artifact holding a one-shot task's reply; the turn
/// number follows (`reply-1`).
pub(crate) const REPLY_ARTIFACT_PREFIX: &str = "reply-";
/// The reply artifact's metadata: the id of the reply message in the history.
pub(crate) const REPLY_MESSAGE_KEY: &str = "message_id";
/// Task metadata: the tool calls waiting for a participant's approval.
pub(crate) const PENDING_APPROVAL_KEY: &str = "pending_approval";
/// Task metadata: the tokens the conversation's models reported, in total.
pub(crate) const USAGE_KEY: &str = "usage";

/// A fresh server-generated id for tasks, contexts, messages and artifacts:
/// a UUIDv7, time-ordered (74 random bits), so the store's indexes keyed by
/// these ids take new rows at their right edge, in the pages the previous
/// rows dirtied, instead of one random page per index per task.
pub(crate) fn new_id() -> String {
    uuid::Uuid::now_v7().to_string()
}

/// Why a conversation is parked in `INPUT_REQUIRED`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
// The variants are the status extension's values, `awaiting-...` each.
#[allow(clippy::enum_variant_names)]
pub(crate) enum SubState {
    /// The agent replied; the conversation waits for whatever comes next.
    AwaitingNextMessage,
    /// The agent asked the participants a question.
    AwaitingAnswer,
    /// A tool call waits for a participant to approve or deny it.
    AwaitingApproval,
}

impl SubState {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            SubState::AwaitingNextMessage => "awaiting-next-message",
            SubState::AwaitingAnswer => "awaiting-answer",
            SubState::AwaitingApproval => "awaiting-approval",
        }
    }
}

/// How a task lives and ends.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub(crate) enum Lifecycle {
    /// Started by a participant's message: each turn parks in
    /// `INPUT_REQUIRED` until a participant completes or cancels it.
    Conversation,
    /// Started by a participant's message as a one-shot job: at the end of a
    /// turn the reply becomes an artifact, the task waits for its open
    /// sub-tasks, and then completes on its own if `task.complete` allows
    /// (the reply in `status.message`); refused, it parks like a conversation.
    Task,
    /// Delegated by another task: runs its goal as one model turn and then
    /// completes (or fails) on its own.
    Delegated { parent_id: String, goal: String },
}

/// The turn a task is running, recorded when it starts so a restart knows
/// what was interrupted (`recovery`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Turn {
    pub(crate) work: TurnWork,
    /// 1 for the first run; a restart that retries the turn adds one.
    pub(crate) attempt: u32,
}

/// What a turn does.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub(crate) enum TurnWork {
    /// A model call (a conversation's message, or a sub-task's goal).
    /// `sender` decides which declared tools the turn is offered; a
    /// sub-task's goal (and a turn stored before senders were recorded)
    /// has none and is offered what a reporter is.
    Model {
        #[serde(default)]
        sender: Option<Participant>,
        /// The participants' decision on the calls that awaited approval,
        /// when this turn resumes after one.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        approval: Option<ApprovalDecision>,
    },
    /// A command; `text` is the whole message, e.g. `/deploy prod`.
    Command { text: String, sender: Participant },
    /// The `task.complete` decision for a completion control.
    Completion { requested_by: Participant },
    /// A one-shot task's own completion after its turn: waiting for its open
    /// sub-tasks, then the `task.complete` decision on behalf of its reporter.
    Conclude { requested_by: Participant },
}

impl Turn {
    pub(crate) fn first(work: TurnWork) -> Self {
        Turn { work, attempt: 1 }
    }
}

/// One task, everything the harness knows about it.
///
/// Serialized without its history and artifacts, it is the task's snapshot
/// in the store (the "head"); those two are stored as rows of their own.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct TaskRecord {
    pub(crate) id: String,
    pub(crate) context_id: String,
    pub(crate) lifecycle: Lifecycle,
    /// The status as stored: its message carries no sub-state; that is
    /// added when rendering, so leaving `INPUT_REQUIRED` drops it everywhere.
    pub(crate) status: TaskStatus,
    /// Set only while the state is `INPUT_REQUIRED`.
    pub(crate) sub_state: Option<SubState>,
    /// The newest messages of the history this record holds: all of them
    /// when it was read whole, the latest turn's at most in a running actor
    /// (the store has the rest; a turn reads what its model needs).
    #[serde(skip)]
    pub(crate) history: Vec<Message>,
    /// How many messages the whole history has.
    #[serde(skip)]
    pub(crate) history_len: usize,
    /// Whether the model's last question (`ask_participant`) still waits
    /// for the participants' answer (see [`transcript::awaits_answer`]).
    #[serde(skip)]
    pub(crate) awaits_answer: bool,
    #[serde(skip)]
    pub(crate) artifacts: Vec<Artifact>,
    pub(crate) participants: Vec<Participant>,
    pub(crate) model: String,
    pub(crate) effort: String,
    pub(crate) subtasks: Vec<SubtaskView>,
    /// Messages received from participants (each is one turn).
    pub(crate) turn_count: u32,
    /// The sequence number of the last event this task produced.
    pub(crate) seq: u64,
    /// The turn running now, while the task is `WORKING`.
    #[serde(default)]
    pub(crate) turn: Option<Turn>,
    /// How many changes the task has gone through: the log position of the
    /// last one (the creation is position 0).
    #[serde(default)]
    pub(crate) changes: u64,
    /// Tokens its models reported, over every turn.
    #[serde(default)]
    pub(crate) usage: UsageTotals,
    /// Tool calls the model made that wait for a participant's approval.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) pending_approval: Vec<ToolCall>,
}

/// What a participant decided about the calls awaiting approval.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct ApprovalDecision {
    pub(crate) approved: bool,
    pub(crate) by: Participant,
    /// Denied because the participant sent a message instead of deciding.
    #[serde(default)]
    pub(crate) implicit: bool,
}

/// Tokens reported over a task's turns.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct UsageTotals {
    pub(crate) input_tokens: u64,
    pub(crate) output_tokens: u64,
    /// Turns whose model reported usage.
    pub(crate) turns: u64,
    /// What the most recent of them reported (for `/status`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) last_turn: Option<Usage>,
}

/// A change to a task. [`TaskRecord::apply`] is the only way one happens.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind", content = "change")]
pub(crate) enum Change {
    /// A participant's message was accepted.
    Received(Message),
    /// The status changed.
    Status(StatusChange),
    /// An artifact was added.
    Artifact(Artifact),
    /// One piece of an answer's artifacts: a new artifact, or (`append`)
    /// parts added to one an earlier piece of the same answer started.
    ArtifactChunk {
        artifact: Artifact,
        append: bool,
        last_chunk: bool,
    },
    Model(String),
    Effort(String),
    /// Participants added, or their roles changed.
    Participants(Vec<Participant>),
    /// A delegated sub-task was added or changed state.
    Subtask(SubtaskView),
    /// A turn started (or was started again after a restart).
    TurnStarted(Turn),
    /// A turn's models reported these tokens.
    Usage(Usage),
    /// These tool calls wait for a participant's approval.
    ApprovalRequested(Vec<ToolCall>),
    /// A participant decided on them (the turn that follows runs or
    /// refuses them).
    ApprovalDecided,
}

impl Change {
    /// The kind of log entry this change is.
    pub(crate) fn kind(&self) -> &'static str {
        match self {
            Change::Received(_) => "received",
            Change::Status(_) => "status",
            Change::Artifact(_) => "artifact",
            Change::ArtifactChunk { .. } => "artifact_chunk",
            Change::Model(_) => "model",
            Change::Effort(_) => "effort",
            Change::Participants(_) => "participants",
            Change::Subtask(_) => "subtask",
            Change::TurnStarted(_) => "turn_started",
            Change::Usage(_) => "usage",
            Change::ApprovalRequested(_) => "approval_requested",
            Change::ApprovalDecided => "approval_decided",
        }
    }
}

/// A new status.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct StatusChange {
    pub(crate) state: TaskState,
    pub(crate) sub_state: Option<SubState>,
    pub(crate) message: Option<Message>,
    /// Whether the message is a reply that joins the history, or transient
    /// progress shown only in the status.
    pub(crate) in_history: bool,
}

impl StatusChange {
    /// A turn started.
    pub(crate) fn working() -> Self {
        StatusChange {
            state: TaskState::Working,
            sub_state: None,
            message: None,
            in_history: false,
        }
    }

    /// Progress while a turn runs; not kept in the history.
    pub(crate) fn progress(message: Message) -> Self {
        StatusChange {
            message: Some(message),
            ..StatusChange::working()
        }
    }

    /// Something a turn did that joins the history while it goes on (a
    /// tool call, a tool's result).
    pub(crate) fn recorded(message: Message) -> Self {
        StatusChange {
            message: Some(message),
            in_history: true,
            ..StatusChange::working()
        }
    }

    /// A turn ended with `reply`; the conversation waits for a participant.
    pub(crate) fn parked(reply: Message, sub_state: SubState) -> Self {
        StatusChange {
            state: TaskState::InputRequired,
            sub_state: Some(sub_state),
            message: Some(reply),
            in_history: true,
        }
    }

    /// The task ended in terminal `state`, explained by `message`.
    pub(crate) fn finished(state: TaskState, message: Message) -> Self {
        StatusChange {
            state,
            sub_state: None,
            message: Some(message),
            in_history: true,
        }
    }
}

/// What applying a change did.
#[derive(Debug, Default)]
pub(crate) struct Applied {
    /// The event to publish, if the change produced one.
    pub(crate) event: Option<Sequenced>,
    /// `(from, to)` when the state changed.
    pub(crate) transition: Option<(TaskState, TaskState)>,
}

impl TaskRecord {
    /// A task that was just submitted.
    pub(crate) fn new(
        id: String,
        context_id: String,
        lifecycle: Lifecycle,
        participants: Vec<Participant>,
        model: String,
        effort: String,
    ) -> Self {
        TaskRecord {
            id,
            context_id,
            lifecycle,
            status: TaskStatus::new(TaskState::Submitted),
            sub_state: None,
            history: Vec::new(),
            history_len: 0,
            awaits_answer: false,
            artifacts: Vec::new(),
            participants,
            model,
            effort,
            subtasks: Vec::new(),
            turn_count: 0,
            seq: 0,
            turn: None,
            changes: 0,
            usage: UsageTotals::default(),
            pending_approval: Vec::new(),
        }
    }

    /// A record read back from the store: its head and, if read, its
    /// history and artifacts.
    ///
    /// The history read may be only its newest part: the record then knows
    /// how long the whole is, and whether the model's last question
    /// is open as far as that part shows ([`Self::knows_its_turn`]).
    pub(crate) fn from_stored(stored: &StoredTask) -> Result<Self, String> {
        let mut record = Self::from_head(&stored.head)?;
        record.history = parse_all(&stored.history, "message")?;
        record.artifacts = parse_all(&stored.artifacts, "artifact")?;
        let held = record.history.len();
        record.history_len = usize::try_from(stored.history_len)
            .unwrap_or(usize::MAX)
            .max(held);
        record.awaits_answer = transcript::awaits_answer(&record.history);
        Ok(record)
    }

    /// The task as A2A shows it, straight from what the store read, with at
    /// most `history_length` recent messages (unset: all). Its history stays
    /// the store's text (see [`History`]): reading a task to answer with it
    /// parses its head and artifacts, not its messages.
    pub(crate) fn render_stored(
        stored: StoredTask,
        history_length: Option<i32>,
    ) -> Result<Task, String> {
        Self::with_rendered(stored, history_length).map(|(_, task)| task)
    }

    /// The record of what the store read, without its history (it knows
    /// the history's length), and the task rendered as in
    /// [`Self::render_stored`].
    pub(crate) fn with_rendered(
        stored: StoredTask,
        history_length: Option<i32>,
    ) -> Result<(Self, Task), String> {
        let mut record = Self::from_head(&stored.head)?;
        record.artifacts = parse_all(&stored.artifacts, "artifact")?;
        record.history_len = usize::try_from(stored.history_len)
            .unwrap_or(usize::MAX)
            .max(stored.history.len());
        let history = History::from_stored(stored.history)
            .map_err(|error| format!("a stored message is unreadable: {error}"))?;
        let task = Task {
            history,
            ..record.to_task(Some(0))
        };
        Ok((record, trim_history(task, history_length)))
    }

    /// Whether the history this record holds shows whether the model's
    /// question is open: it is the whole history, or it holds a message the
    /// model saw (the newest of those decides).
    pub(crate) fn knows_its_turn(&self) -> bool {
        self.history.len() == self.history_len
            || self
                .history
                .iter()
                .any(|m| !m.metadata.contains_key(transcript::HARNESS_KEY))
    }

    /// Stop holding the history: everything in it is stored. A running
    /// actor keeps only counts between turns, so an idle conversation costs
    /// the same at turn 10 and turn 10,000.
    pub(crate) fn forget_history(&mut self) {
        self.history = Vec::new();
    }

    /// A message joins the history.
    fn push_history(&mut self, message: Message) {
        if !message.metadata.contains_key(transcript::HARNESS_KEY) {
            self.awaits_answer = transcript::asks_participant(&message);
        }
        self.history.push(message);
        self.history_len += 1;
    }

    /// A record from its head alone, without history or artifacts: enough to
    /// check access and describe the task, not to run it.
    pub(crate) fn from_head(head: &str) -> Result<Self, String> {
        serde_json::from_str(head).map_err(|error| format!("a stored task is unreadable: {error}"))
    }

    /// Whether a turn is running or due: a restart must pick the task up.
    pub(crate) fn is_active(&self) -> bool {
        matches!(self.state(), TaskState::Submitted | TaskState::Working)
    }

    pub(crate) fn state(&self) -> TaskState {
        self.status.state
    }

    pub(crate) fn is_terminal(&self) -> bool {
        self.state().is_terminal()
    }

    /// Sub-tasks that have not finished.
    pub(crate) fn open_subtasks(&self) -> impl Iterator<Item = &SubtaskView> {
        self.subtasks.iter().filter(|subtask| subtask.is_open())
    }

    /// A message from the agent in this task.
    pub(crate) fn agent_message(&self, text: impl Into<String>, data: Option<Value>) -> Message {
        self.agent_message_with_id(new_id(), text, data)
    }

    /// A message from the agent in this task, with the id its engine chose
    /// (a workflow's must be the same each time its history is replayed).
    pub(crate) fn agent_message_with_id(
        &self,
        id: String,
        text: impl Into<String>,
        data: Option<Value>,
    ) -> Message {
        let mut parts = vec![Part::text(text)];
        parts.extend(data.map(Part::data));
        Message {
            task_id: Some(self.id.clone()),
            context_id: Some(self.context_id.clone()),
            ..Message::new(MessageRole::Agent, id, parts)
        }
    }

    /// Apply `change` at `now`. A terminal task is never restarted: on one,
    /// only sub-task bookkeeping applies and everything else is ignored.
    /// Every change that applies counts in [`TaskRecord::changes`].
    pub(crate) fn apply(&mut self, change: Change, now: Timestamp) -> Applied {
        if self.is_terminal() && !matches!(change, Change::Subtask(_)) {
            tracing::warn!(task = %self.id, ?change, "ignored a change to a terminal task");
            return Applied::default();
        }
        self.changes += 1;
        match change {
            Change::Received(message) => {
                self.push_history(message);
                self.turn_count += 1;
                Applied::default()
            }
            Change::Status(status) => self.set_status(status, now),
            Change::Artifact(artifact) => {
                self.artifacts.push(artifact.clone());
                let event = StreamResponse::ArtifactUpdate(TaskArtifactUpdateEvent {
                    task_id: self.id.clone(),
                    context_id: self.context_id.clone(),
                    artifact,
                    ..TaskArtifactUpdateEvent::default()
                });
                self.sequenced(event)
            }
            Change::ArtifactChunk {
                artifact,
                append,
                last_chunk,
            } => {
                let started = self
                    .artifacts
                    .iter_mut()
                    .rev()
                    .find(|kept| append && kept.artifact_id == artifact.artifact_id);
                match started {
                    Some(kept) => kept.parts.extend(artifact.parts.iter().cloned()),
                    None => self.artifacts.push(artifact.clone()),
                }
                let event = StreamResponse::ArtifactUpdate(TaskArtifactUpdateEvent {
                    task_id: self.id.clone(),
                    context_id: self.context_id.clone(),
                    artifact,
                    append,
                    last_chunk,
                    ..TaskArtifactUpdateEvent::default()
                });
                self.sequenced(event)
            }
            Change::Model(model) => {
                self.model = model;
                Applied::default()
            }
            Change::Effort(effort) => {
                self.effort = effort;
                Applied::default()
            }
            Change::Participants(updates) => {
                for update in updates {
                    match self.participants.iter_mut().find(|p| p.id == update.id) {
                        Some(existing) => existing.role = update.role,
                        None => self.participants.push(update),
                    }
                }
                Applied::default()
            }
            Change::Subtask(view) => {
                match self.subtasks.iter_mut().find(|s| s.id == view.id) {
                    Some(existing) => *existing = view,
                    None => self.subtasks.push(view),
                }
                Applied::default()
            }
            Change::TurnStarted(turn) => {
                self.turn = Some(turn);
                Applied::default()
            }
            Change::ApprovalRequested(calls) => {
                self.pending_approval = calls;
                Applied::default()
            }
            Change::ApprovalDecided => {
                self.pending_approval.clear();
                Applied::default()
            }
            Change::Usage(usage) => {
                let totals = &mut self.usage;
                totals.input_tokens = totals.input_tokens.saturating_add(usage.input_tokens);
                totals.output_tokens = totals.output_tokens.saturating_add(usage.output_tokens);
                totals.turns += 1;
                totals.last_turn = Some(usage);
                Applied::default()
            }
        }
    }

    fn set_status(&mut self, change: StatusChange, now: Timestamp) -> Applied {
        let from = self.state();
        if change.in_history
            && let Some(message) = &change.message
        {
            self.push_history(message.clone());
        }
        self.sub_state = match change.state {
            TaskState::InputRequired => change.sub_state.or(Some(SubState::AwaitingNextMessage)),
            _ => None,
        };
        // A turn runs only while the task is working.
        if change.state != TaskState::Working {
            self.turn = None;
        }
        self.status = TaskStatus {
            state: change.state,
            message: change.message,
            timestamp: Some(now),
        };
        let mut metadata = self.sub_state_metadata();
        // Tool activity says what it is in the update too, for renderers
        // that read only the stream's metadata.
        if let Some(stream) = self
            .status
            .message
            .as_ref()
            .and_then(|message| message.metadata.get(STREAM_KEY))
        {
            metadata.insert(STREAM_KEY.into(), stream.clone());
        }
        let event = StreamResponse::StatusUpdate(TaskStatusUpdateEvent {
            task_id: self.id.clone(),
            context_id: self.context_id.clone(),
            status: self.rendered_status(),
            metadata,
        });
        Applied {
            transition: (from != change.state).then_some((from, change.state)),
            ..self.sequenced(event)
        }
    }

    fn sequenced(&mut self, event: StreamResponse) -> Applied {
        self.seq += 1;
        Applied {
            event: Some(Sequenced::stored(self.seq, event)),
            transition: None,
        }
    }

    /// `{"sub_state": ...}` while parked, else empty.
    fn sub_state_metadata(&self) -> Metadata {
        let mut metadata = Metadata::new();
        if let Some(sub_state) = self.sub_state {
            metadata.insert(SUB_STATE_KEY.into(), json!(sub_state.as_str()));
        }
        metadata
    }

    /// The status with the sub-state copied into its message, for clients
    /// that only read the status.
    fn rendered_status(&self) -> TaskStatus {
        let mut status = self.status.clone();
        if let Some(message) = &mut status.message {
            message.metadata.extend(self.sub_state_metadata());
        }
        status
    }

    fn metadata(&self) -> Metadata {
        let mut metadata = self.sub_state_metadata();
        if !self.subtasks.is_empty() {
            metadata.insert(SUBTASKS_KEY.into(), json!(self.subtasks));
        }
        if let Lifecycle::Delegated { parent_id, .. } = &self.lifecycle {
            metadata.insert(PARENT_KEY.into(), json!(parent_id));
        }
        if self.usage.turns > 0 {
            // The documented totals; the last turn's own figures are in its
            // message's `metadata.trace.usage`.
            let UsageTotals {
                input_tokens,
                output_tokens,
                turns,
                last_turn: _,
            } = self.usage;
            metadata.insert(
                USAGE_KEY.into(),
                json!({ "input_tokens": input_tokens, "output_tokens": output_tokens, "turns": turns }),
            );
        }
        if !self.pending_approval.is_empty() {
            metadata.insert(PENDING_APPROVAL_KEY.into(), json!(self.pending_approval));
        }
        metadata
    }

    /// The task as A2A shows it, with at most `history_length` recent
    /// messages (unset: all).
    pub(crate) fn to_task(&self, history_length: Option<i32>) -> Task {
        Task {
            id: self.id.clone(),
            context_id: self.context_id.clone(),
            status: self.rendered_status(),
            artifacts: self.artifacts.clone(),
            history: recent(&self.history, history_length)
                .iter()
                .cloned()
                .collect(),
            metadata: self.metadata(),
        }
    }

    /// The read-only view command bodies and hooks get.
    pub(crate) fn view(&self, selectable_models: &[String]) -> TaskView {
        TaskView {
            id: self.id.clone(),
            context_id: self.context_id.clone(),
            state: self.state().as_str().to_owned(),
            sub_state: self.sub_state.map(|s| s.as_str().to_owned()),
            model: self.model.clone(),
            effort: self.effort.clone(),
            selectable_models: selectable_models.to_vec(),
            participants: self.participants.clone(),
            subtasks: self.subtasks.clone(),
            turn_count: self.turn_count,
            usage: Usage {
                input_tokens: self.usage.input_tokens,
                output_tokens: self.usage.output_tokens,
            },
            last_turn_usage: self.usage.last_turn,
        }
    }

    /// How a delegated task appears in its parent's list.
    pub(crate) fn as_subtask(&self) -> Option<SubtaskView> {
        match &self.lifecycle {
            Lifecycle::Delegated { goal, .. } => Some(SubtaskView {
                id: self.id.clone(),
                goal: goal.clone(),
                state: self.state().as_str().to_owned(),
            }),
            Lifecycle::Conversation | Lifecycle::Task => None,
        }
    }

    /// Whether a one-shot task's turn is over and it is concluding: waiting
    /// for its sub-tasks or for the `task.complete` decision.
    pub(crate) fn is_concluding(&self) -> bool {
        self.concluding_for().is_some()
    }

    /// On whose behalf a concluding one-shot task completes.
    pub(crate) fn concluding_for(&self) -> Option<&Participant> {
        match &self.turn {
            Some(Turn {
                work: TurnWork::Conclude { requested_by },
                ..
            }) if self.state() == TaskState::Working => Some(requested_by),
            _ => None,
        }
    }

    /// The artifact holding a one-shot task's reply to its latest turn: the
    /// reply's text (and data), and the id of the reply message in the history.
    pub(crate) fn reply_artifact(&self, reply: &Message, data: Option<&Value>) -> Artifact {
        let id = format!("{REPLY_ARTIFACT_PREFIX}{}", self.turn_count);
        let mut parts = vec![Part::text(message_text(reply))];
        parts.extend(data.cloned().map(Part::data));
        let mut metadata = Metadata::new();
        metadata.insert(REPLY_MESSAGE_KEY.into(), json!(reply.message_id));
        Artifact {
            artifact_id: id,
            name: Some("reply".to_owned()),
            parts,
            metadata,
            ..Artifact::default()
        }
    }

    /// A one-shot task's latest reply, as recorded in its history (its final
    /// status message), if there is one.
    pub(crate) fn latest_reply(&self) -> Option<Message> {
        let artifact = self
            .artifacts
            .iter()
            .rev()
            .find(|artifact| artifact.metadata.contains_key(REPLY_MESSAGE_KEY))?;
        let id = artifact.metadata.get(REPLY_MESSAGE_KEY)?.as_str()?;
        self.history
            .iter()
            .rev()
            .find(|message| message.message_id == id)
            .cloned()
    }

    /// The text of the current status message.
    pub(crate) fn status_text(&self) -> String {
        self.status
            .message
            .as_ref()
            .map(message_text)
            .unwrap_or_default()
    }
}

fn parse_all<T: serde::de::DeserializeOwned>(
    documents: &[String],
    what: &str,
) -> Result<Vec<T>, String> {
    documents
        .iter()
        .map(|document| {
            serde_json::from_str(document)
                .map_err(|error| format!("a stored {what} is unreadable: {error}"))
        })
        .collect()
}

/// The last `length` messages (unset: all; 0: none), per the A2A
/// `historyLength` semantics.
pub(crate) fn recent(history: &[Message], length: Option<i32>) -> &[Message] {
    match length.map(|n| usize::try_from(n).unwrap_or(0)) {
        Some(n) if n < history.len() => &history[history.len() - n..],
        _ => history,
    }
}

/// Drops all but the last `length` messages of `task`'s history.
pub(crate) fn trim_history(mut task: Task, length: Option<i32>) -> Task {
    if let Some(length) = length {
        task.history
            .keep_newest(usize::try_from(length).unwrap_or(0));
    }
    task
}

/// The text parts of a message, joined by newlines.
pub(crate) fn message_text(message: &Message) -> String {
    let texts: Vec<&str> = message.parts.iter().filter_map(Part::as_text).collect();
    texts.join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::task::Role;

    fn record() -> TaskRecord {
        TaskRecord::new(
            "t1".into(),
            "c1".into(),
            Lifecycle::Conversation,
            vec![Participant {
                id: "alice".into(),
                role: Role::Reporter,
            }],
            "offline-echo".into(),
            "medium".into(),
        )
    }

    fn now() -> Timestamp {
        Timestamp::from_unix_millis(1_700_000_000_000)
    }

    #[test]
    fn parking_writes_the_sub_state_everywhere_and_leaving_removes_it() {
        let mut task = record();
        let reply = task.agent_message("hi", None);
        let applied = task.apply(
            Change::Status(StatusChange::parked(reply, SubState::AwaitingAnswer)),
            now(),
        );
        let Some(Sequenced { seq: 1, event, .. }) = applied.event else {
            panic!("expected the first event, got {:?}", applied.event);
        };
        let StreamResponse::StatusUpdate(update) = std::sync::Arc::unwrap_or_clone(event) else {
            panic!("expected a status update");
        };
        assert_eq!(update.metadata[SUB_STATE_KEY], "awaiting-answer");
        let message = update.status.message.expect("status message");
        assert_eq!(message.metadata[SUB_STATE_KEY], "awaiting-answer");
        let rendered = task.to_task(None);
        assert_eq!(rendered.metadata[SUB_STATE_KEY], "awaiting-answer");
        // The history keeps the reply without the transient sub-state.
        assert!(
            rendered.history.to_messages().expect("readable")[0]
                .metadata
                .is_empty()
        );

        let applied = task.apply(Change::Status(StatusChange::working()), now());
        assert_eq!(
            applied.transition,
            Some((TaskState::InputRequired, TaskState::Working))
        );
        let rendered = task.to_task(None);
        assert!(!rendered.metadata.contains_key(SUB_STATE_KEY));
        assert_eq!(task.seq, 2);
    }

    #[test]
    fn a_terminal_task_is_never_restarted() {
        let mut task = record();
        let message = task.agent_message("done", None);
        task.apply(
            Change::Status(StatusChange::finished(TaskState::Completed, message)),
            now(),
        );
        let applied = task.apply(Change::Status(StatusChange::working()), now());
        assert!(applied.event.is_none());
        assert_eq!(task.state(), TaskState::Completed);
        // Sub-task bookkeeping still applies.
        task.apply(
            Change::Subtask(SubtaskView {
                id: "s".into(),
                goal: "g".into(),
                state: "TASK_STATE_COMPLETED".into(),
            }),
            now(),
        );
        assert_eq!(task.subtasks.len(), 1);
    }

    #[test]
    fn history_length_keeps_the_most_recent() {
        let messages: Vec<Message> = (0..5)
            .map(|i| Message::new(MessageRole::User, format!("m{i}"), vec![Part::text("x")]))
            .collect();
        assert_eq!(recent(&messages, None).len(), 5);
        assert_eq!(recent(&messages, Some(0)).len(), 0);
        assert_eq!(recent(&messages, Some(2))[0].message_id, "m3");
        assert_eq!(recent(&messages, Some(9)).len(), 5);
    }
}
