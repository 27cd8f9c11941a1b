//! `TaskWorkflow`: one task's lifecycle as a Temporal workflow.
//!
//! Its state is the task's record, as the actor holds it, and the ids of
//! the messages it accepted. Each message is an Update (`send`):
//!
//! * the validator checks the sender's role and the envelope against the
//!   task as it is now (`lifecycle::admit`, the actor's check); a refusal
//!   is answered at once and leaves nothing in the workflow's history;
//! * the handler accepts the message (`lifecycle::receive`, `start_turn`),
//!   projects that into the task store, runs the turn as activities, ends it
//!   (`lifecycle::finish`) and projects that. Turns run one at a time, in
//!   the order their messages were accepted, except that a completion cuts
//!   the running turn and goes first; a message whose id the task accepted
//!   before is answered as a duplicate and never applied again.
//!
//! Cancellation is the workflow's: it cuts the running turn, and the task
//! ends `CANCELED` once every handler has finished (a run that returned
//! with a handler still running would fail that handler's caller).
//!
//! Between turns, once the run's history is long, the run continues as new
//! with the task, the accepted ids and the id counter ([`Carried`]).
//!
//! Workflow code must replay to the same decisions: the clock is the
//! workflow's, the agent's message ids are derived from the task id and a
//! counter, and nothing here does I/O.

use std::collections::BTreeSet;
use std::convert::Infallible;
use std::error::Error;
use std::pin::pin;
use std::time::Duration;

use futures::future::{Either, select};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use temporalio_client::RetryPolicy;
use temporalio_macros::{workflow, workflow_methods};
use temporalio_sdk::{
    ActivityCancellationType, ActivityOptions, ApplicationFailure, ChildWorkflowOptions,
    ContinueAsNewOptions, LocalActivityOptions, ParentClosePolicy, SignalWorkflowOptions,
    TimerOptions, WaitConditionOptions, WorkflowCancellationToken, WorkflowContext,
    WorkflowContextView, WorkflowResult, WorkflowTermination,
};

use super::activities::{
    CommandTurn, CompletionTurn, HEARTBEAT_EVERY, ModelTurnRequest, TaskActivities, TurnResult,
};
use super::refusal::Refusal;
use crate::a2a::types::{Artifact, Message, TaskState, Timestamp};
use crate::domain::{Participant, Role, SubtaskView, TaskView};
use crate::store::TaskWrite;
use crate::task::TaskSettings;
use crate::task::classify::Kind;
use crate::task::env::TaskLimits;
use crate::task::journal::Journal;
use crate::task::lifecycle::{self, Ending, Next};
use crate::task::participants;
use crate::task::recovery::{self, Resume};
use crate::task::state::{Change, Lifecycle, TaskRecord, TurnWork};
use crate::task::subtasks::{self, Report};

/// A refusal or failure an Update answers with.
pub type UpdateError = Box<dyn Error + Send + Sync>;

/// What a task's workflow starts from: the task as its first message found
/// it, and the settings its decisions depend on.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct TaskInput {
    /// The new task's head (`TaskRecord` without history).
    pub head: String,
    /// The participant whose message starts it.
    pub created_by: String,
    pub admins: Vec<String>,
    pub limits: TaskLimits,
    /// The models a participant may switch to, as the views show them.
    pub selectable_models: Vec<String>,
    /// The run continues as new once its history holds this many events.
    pub continue_after_events: u32,
    /// Set when a run continued as new: what the previous run held.
    pub carried: Option<Carried>,
}

/// What a run hands the next when it continues as new, so the task, its
/// dedup by `messageId` and its agent message ids go on where they were.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Carried {
    /// The record as the run held it between turns: its head, and what the
    /// head leaves out (the store holds the messages themselves).
    record: String,
    history_len: usize,
    awaits_answer: bool,
    artifacts: Vec<Artifact>,
    processed: BTreeSet<String>,
    written: u64,
}

/// A message to the task, classified by the server that received it.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Envelope {
    pub sender: String,
    pub message: Message,
    pub kind: Kind,
}

/// What a sub-task's workflow signals its parent's: its report.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Reported(Report);

/// How the workflow answered a message.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub enum Answered {
    /// Its turn ended; a message-only answer is handed over as it is.
    TurnEnded { direct_reply: Option<Message> },
    /// The task had accepted this message before: it was not applied again.
    Duplicate,
}

#[workflow]
pub struct TaskWorkflow {
    record: TaskRecord,
    journal: Journal,
    /// What the decisions read of the server's settings: admins, limits,
    /// selectable models.
    settings: TaskSettings,
    continue_after_events: u32,
    /// The record could not be carried to a new run: this one goes on.
    stays: bool,
    /// Ids of the messages accepted, so a resend is never applied twice
    /// (Update ids dedupe only within one run).
    processed: BTreeSet<String>,
    /// A turn is running; the next message waits for its end.
    busy: bool,
    /// Sub-tasks a running model turn is delegating (being stored); the
    /// next step waits for them too, even if the turn was cut meanwhile.
    delegating: u32,
    /// The running turn was cut: what it did is dropped.
    cut: bool,
    /// Completions received and not yet finished; they go first.
    completing: u32,
    /// The workflow's clock when the current decision started.
    now: Timestamp,
    /// Ids derived so far: the agent's messages and sub-tasks (their ids
    /// derive from it).
    written: u64,
    /// Sub-tasks delegated in this step: stored with its write, then
    /// started as child workflows.
    children: Vec<TaskRecord>,
    /// A delegated task: the state it last reported to its parent.
    reported: Option<String>,
}

/// A sub-task is told so when its parent is canceled, and says so.
const CANCELED_WITH_PARENT: &str = "Task canceled with its parent task.";

/// How long a canceled task waits for its canceled sub-tasks to say they
/// ended; one whose workers are gone is then listed as canceled anyway.
const SUBTASKS_END_WITHIN: Duration = Duration::from_secs(30);

#[workflow_methods]
impl TaskWorkflow {
    #[init]
    pub fn new(_ctx: &WorkflowContextView, input: TaskInput) -> Self {
        let (record, journal, processed, written) = match input.carried {
            Some(carried) => {
                let mut record = readable(&carried.record);
                record.history_len = carried.history_len;
                record.awaits_answer = carried.awaits_answer;
                record.artifacts = carried.artifacts;
                let journal = Journal::stored(&record);
                (record, journal, carried.processed, carried.written)
            }
            None => {
                let record = readable(&input.head);
                let journal = match record.lifecycle {
                    // Its parent stored it, in the step that delegated it.
                    Lifecycle::Delegated { .. } => Journal::stored(&record),
                    Lifecycle::Conversation | Lifecycle::Task => {
                        Journal::new_task(&record, Some(input.created_by))
                            // Only a record that cannot be serialized fails
                            // here, and it was just parsed from JSON.
                            .unwrap_or_else(|_| Journal::stored(&record))
                    }
                };
                (record, journal, BTreeSet::new(), 0)
            }
        };
        TaskWorkflow {
            record,
            journal,
            settings: TaskSettings {
                admins: input.admins,
                limits: input.limits,
                selectable_models: input.selectable_models,
                ..TaskSettings::default()
            },
            continue_after_events: input.continue_after_events,
            stays: false,
            processed,
            busy: false,
            delegating: 0,
            cut: false,
            completing: 0,
            now: Timestamp::from_unix_millis(0),
            written,
            children: Vec::new(),
            reported: None,
        }
    }

    /// Lives until the task ends; a cancellation ends it `CANCELED`.
    /// Between turns, once the history has grown long, the run continues
    /// as new with the task as it is.
    #[run]
    pub async fn run(ctx: &mut WorkflowContext<Self>) -> WorkflowResult<String> {
        if ctx.state(|task| recovery::plan(&task.record) == Resume::StartGoal) {
            start_goal(ctx).await;
        }
        loop {
            let view = ctx.clone();
            let due = move |task: &TaskWorkflow| task.record.is_terminal() || task.long(&view);
            let ended = ctx.wait_condition(|task| task.free() && due(task)).await;
            if ended.is_err() {
                return cancel(ctx).await;
            }
            // A message accepted meanwhile runs its turn first.
            drain(ctx).await;
            if ctx.state(|task| task.record.is_terminal()) {
                return Ok(ctx.state(|task| task.record.state().as_str().to_owned()));
            }
            let view = ctx.clone();
            match ctx.state(|task| task.continued(&view)) {
                Ok(Some(next)) => {
                    return match ctx.continue_as_new(next, ContinueAsNewOptions::default()) {
                        Err(termination) => Err(termination),
                        Ok(never) => match never {},
                    };
                }
                Ok(None) => {}
                Err(error) => {
                    tracing::error!(task = %ctx.state(|task| task.record.id.clone()), %error,
                        "the task cannot be carried to a new run; this one goes on");
                    ctx.state_mut(|task| task.stays = true);
                }
            }
        }
    }

    #[update_validator(send)]
    fn validate_send(
        &self,
        _ctx: &WorkflowContextView,
        envelope: &Envelope,
    ) -> Result<(), UpdateError> {
        if self.processed.contains(&envelope.message.message_id) {
            return Ok(());
        }
        self.admit(envelope)
            .map(drop)
            .map_err(|refusal| Box::new(refusal) as UpdateError)
    }

    #[update]
    pub async fn send(
        ctx: &mut WorkflowContext<Self>,
        envelope: Envelope,
    ) -> Result<Answered, UpdateError> {
        let id = envelope.message.message_id.clone();
        if !ctx.state_mut(|task| task.processed.insert(id.clone())) {
            return Ok(Answered::Duplicate);
        }
        // One turn at a time: a message waits for the running one to end,
        // except that a completion cuts it, and goes before those waiting.
        let completes = matches!(envelope.kind, Kind::Complete);
        if completes {
            ctx.state_mut(TaskWorkflow::cut_turn);
        }
        let its_turn =
            move |task: &TaskWorkflow| task.free() && (completes || task.completing == 0);
        let accepted = match ctx.wait_condition(its_turn).await {
            Ok(()) => {
                let now = clock(ctx);
                ctx.state_mut(|task| {
                    task.now = now;
                    task.accept(envelope)
                })
            }
            Err(cancelled) => Err(cancelled.into()),
        };
        let (write, work) = match accepted {
            Ok(accepted) => accepted,
            Err(refusal) => {
                // Not applied: a resend must be looked at afresh.
                ctx.state_mut(|task| {
                    task.processed.remove(&id);
                    task.completing -= u32::from(completes);
                });
                return Err(refusal);
            }
        };
        ctx.state_mut(|task| {
            task.busy = true;
            task.cut = false;
        });
        let outcome = match run_steps(ctx, write, work).await {
            Ok(Ran::Cut) => return Ok(cut(ctx, completes).await),
            Ok(Ran::Done { direct_reply }) => Ok(Answered::TurnEnded { direct_reply }),
            Err(error) => Err(error),
        };
        ctx.state_mut(|task| {
            task.completing -= u32::from(completes);
            task.idle();
        });
        // A one-shot task that replied waits for its open sub-tasks, then
        // decides its completion; its sender hears once that is in.
        let _ = ctx
            .wait_condition(|task| !task.record.is_concluding())
            .await;
        outcome
    }

    /// Checks a running model turn's `spawn_subtask` call (its activity
    /// sends it) before anything is recorded.
    #[update_validator(delegate)]
    // The SDK hands a validator its Update's input by reference.
    #[allow(clippy::ptr_arg)]
    fn validate_delegate(
        &self,
        _ctx: &WorkflowContextView,
        goal: &String,
    ) -> Result<(), UpdateError> {
        self.may_delegate(goal).map_err(UpdateError::from)
    }

    /// A running model turn's `spawn_subtask` call: the sub-task, stored
    /// with this task's change and started, for the turn to wait on.
    #[update]
    pub async fn delegate(
        ctx: &mut WorkflowContext<Self>,
        goal: String,
    ) -> Result<SubtaskView, UpdateError> {
        let now = clock(ctx);
        let step = ctx.state_mut(|task| {
            task.now = now;
            task.may_delegate(&goal)?;
            let subtask = lifecycle::Task::spawn_subtask(task, &goal)?;
            task.delegating += 1;
            Ok::<_, UpdateError>((subtask, task.take_write()?))
        });
        let (subtask, write) = step?;
        let stored = project(ctx, write).await;
        ctx.state_mut(|task| task.delegating -= 1);
        stored.map(|()| subtask)
    }

    /// A sub-task's report of a state change. It is recorded between turns
    /// (after any completion waiting), and a concluding one-shot task whose
    /// last open sub-task finished goes on to its completion decision.
    #[signal]
    pub async fn report(ctx: &mut WorkflowContext<Self>, Reported(report): Reported) {
        // A canceled task still hears how its sub-tasks ended.
        let options = WaitConditionOptions::builder()
            .cancellation_token(WorkflowCancellationToken::new())
            .build();
        let free = |task: &TaskWorkflow| task.free() && task.completing == 0;
        let _ = ctx.wait_condition_with_options(free, options).await;
        let now = clock(ctx);
        let step = ctx.state_mut(|task| {
            task.busy = true;
            task.cut = false;
            task.now = now;
            task.record_report(report)
        });
        match step {
            Ok((write, work)) => {
                if let Err(error) = run_steps(ctx, write, work).await {
                    tracing::error!(%error, "a sub-task's report could not be stored");
                }
            }
            Err(error) => tracing::error!(%error, "a sub-task's report could not be recorded"),
        }
        ctx.state_mut(TaskWorkflow::idle);
    }
}

/// How a handler's steps ended.
enum Ran {
    /// Every step is stored; the reply a blocking sender gets instead of
    /// the task, if the answer asked for one.
    Done { direct_reply: Option<Message> },
    /// A completion or the task's cancellation cut the running turn.
    Cut,
}

/// Store `write`, then run `work` and whatever each turn leads to, storing
/// each step. The caller holds the task (`busy`).
async fn run_steps(
    ctx: &WorkflowContext<TaskWorkflow>,
    write: Projection,
    mut work: Option<Work>,
) -> Result<Ran, UpdateError> {
    let mut direct_reply = None;
    project(ctx, write).await?;
    while let Some(turn) = work.take() {
        let result = run_turn(ctx, turn).await;
        // Cut by a completion, or by the task's cancellation (which then
        // records how the task ended).
        if ctx.state(|task| task.cut) || ctx.cancellation_token().is_cancelled() {
            return Ok(Ran::Cut);
        }
        let now = clock(ctx);
        let (write, next, reply) = ctx.state_mut(|task| {
            task.now = now;
            task.conclude_turn(result)
        })?;
        direct_reply = direct_reply.or(reply);
        work = next;
        project(ctx, write).await?;
    }
    Ok(Ran::Done { direct_reply })
}

/// A delegated task works on its goal as soon as it exists.
async fn start_goal(ctx: &WorkflowContext<TaskWorkflow>) {
    let now = clock(ctx);
    let step = ctx.state_mut(|task| {
        task.busy = true;
        task.now = now;
        task.goal()
    });
    match step {
        Ok((write, work)) => {
            if let Err(error) = run_steps(ctx, write, Some(work)).await {
                tracing::error!(%error, "a sub-task's goal could not be stored");
            }
        }
        Err(error) => tracing::error!(%error, "a sub-task's goal could not be started"),
    }
    ctx.state_mut(TaskWorkflow::idle);
}

/// What one step stores, and the sub-tasks it delegated, started once it
/// is stored.
struct Projection {
    /// The task's own write first, then each new sub-task's creation: one
    /// atomic commit, as the embedded engine's.
    writes: Vec<TaskWrite>,
    children: Vec<TaskRecord>,
}

/// The running turn was cut by a completion: its output is dropped, the
/// completion runs, and the turn's sender is answered once it has (so it
/// reads how the task ended, as on the embedded engine).
async fn cut(ctx: &WorkflowContext<TaskWorkflow>, completes: bool) -> Answered {
    ctx.state_mut(|task| {
        task.busy = false;
        task.completing -= u32::from(completes);
    });
    let _ = ctx
        .wait_condition(|task| task.completing == 0 && !task.busy)
        .await;
    Answered::TurnEnded { direct_reply: None }
}

/// A turn the workflow runs as an activity.
enum Work {
    Model(ModelTurnRequest),
    Command(CommandTurn),
    Completion(CompletionTurn),
}

impl TaskWorkflow {
    /// No step runs or is being stored: the next may start.
    fn free(&self) -> bool {
        !self.busy && self.delegating == 0
    }

    /// Whether a model turn runs now that may delegate `goal`.
    fn may_delegate(&self, goal: &str) -> Result<(), String> {
        let model_turn = matches!(
            self.record.turn.as_ref().map(|turn| &turn.work),
            Some(TurnWork::Model { .. })
        );
        if !self.busy || self.cut || !model_turn {
            return Err("no model turn of this task is running".to_owned());
        }
        lifecycle::may_delegate(&self.record, &self.settings, goal)
    }

    /// No step runs now. Between turns the workflow keeps only counts of
    /// the history (a concluding one-shot task still needs its reply).
    fn idle(&mut self) {
        self.busy = false;
        if !self.record.is_concluding() {
            self.record.forget_history();
        }
    }

    /// A completion arrived: cut the running turn, if any.
    fn cut_turn(&mut self) {
        self.completing += 1;
        self.cut |= self.busy;
    }

    /// Whether this run's history is long enough to continue as new.
    fn long(&self, ctx: &WorkflowContext<TaskWorkflow>) -> bool {
        !self.stays
            && (ctx.history_length() >= self.continue_after_events
                || ctx.continue_as_new_suggested())
    }

    /// The next run's input, if this run should hand over now: no turn
    /// running, no handler left, the history long.
    fn continued(
        &self,
        ctx: &WorkflowContext<TaskWorkflow>,
    ) -> Result<Option<TaskInput>, serde_json::Error> {
        if !self.free() || !ctx.all_handlers_finished() || !self.long(ctx) {
            return Ok(None);
        }
        let record = serde_json::to_string(&self.record)?;
        Ok(Some(TaskInput {
            head: String::new(),
            created_by: String::new(),
            admins: self.settings.admins.clone(),
            limits: self.settings.limits,
            selectable_models: self.settings.selectable_models.clone(),
            continue_after_events: self.continue_after_events,
            carried: Some(Carried {
                record,
                history_len: self.record.history_len,
                awaits_answer: self.record.awaits_answer,
                artifacts: self.record.artifacts.clone(),
                processed: self.processed.clone(),
                written: self.written,
            }),
        }))
    }

    /// The authoritative check of a message against the task as it is now
    /// (the embedded engine's, `lifecycle::admit`).
    fn admit(&self, envelope: &Envelope) -> Result<Role, Refusal> {
        lifecycle::admit(
            &self.record,
            &self.settings,
            &envelope.sender,
            envelope.message.context_id.as_deref(),
            &envelope.kind,
        )
        .map_err(Refusal::from)
    }

    /// Accept a message, checked again against the task as its turn finds
    /// it: what to store, and the turn it starts.
    fn accept(&mut self, envelope: Envelope) -> Result<(Projection, Option<Work>), UpdateError> {
        let role = self.admit(&envelope)?;
        let Envelope {
            sender,
            mut message,
            kind,
        } = envelope;
        let sender = Participant { id: sender, role };
        // Commands and completions see the task as the message found it.
        let before = self.view();
        let text = crate::task::classify::command_text(&message)
            .unwrap_or_default()
            .to_owned();
        message.task_id = Some(self.record.id.clone());
        message.context_id = Some(self.record.context_id.clone());
        let approval = lifecycle::receive(self, message, &kind, &sender);
        lifecycle::start_turn(self, &kind, &sender, approval, &text);
        let work = match &kind {
            Kind::Participants(grants) => {
                let text = participants::confirmation(grants);
                self.apply_change(Change::Participants(grants.clone()));
                let sub_state = lifecycle::waiting_sub_state(&self.record);
                let _ended = lifecycle::park(self, text, sub_state);
                None
            }
            Kind::Command => Some(Work::Command(CommandTurn {
                text,
                sender,
                view: before,
            })),
            Kind::Complete => Some(Work::Completion(CompletionTurn {
                requested_by: sender,
                view: before,
            })),
            Kind::Ordinary | Kind::Decide { .. } => Some(self.model_turn()),
        };
        Ok((self.take_write()?, work))
    }

    /// A delegated task's start: its goal, as its first message, and the
    /// model turn on it.
    fn goal(&mut self) -> Result<(Projection, Work), UpdateError> {
        let Lifecycle::Delegated { parent_id, goal } = self.record.lifecycle.clone() else {
            return Err("only a delegated task starts from a goal".into());
        };
        let id = self.derived_id();
        let message = subtasks::goal_message(&self.record, id, &parent_id, &goal);
        lifecycle::start_goal(self, message);
        Ok((self.take_write()?, self.model_turn()))
    }

    /// Record a sub-task's report: what to store, and the completion
    /// decision it lets a concluding one-shot task go on to.
    fn record_report(&mut self, report: Report) -> Result<(Projection, Option<Work>), UpdateError> {
        lifecycle::record_subtask(self, report.subtask, report.result.as_deref());
        let work = lifecycle::resumed_conclusion(self).and_then(|next| self.work_after(next));
        Ok((self.take_write()?, work))
    }

    /// The report this delegated task owes its parent, if its state changed
    /// since the last one.
    fn report_due(&mut self) -> Option<Report> {
        let report = Report::of(&self.record)?;
        if self.reported.as_ref() == Some(&report.subtask.state) {
            return None;
        }
        self.reported = Some(report.subtask.state.clone());
        Some(report)
    }

    /// The workflow input of sub-task `child`: this task's settings.
    fn child_input(&self, child: &TaskRecord) -> Result<TaskInput, serde_json::Error> {
        Ok(TaskInput {
            head: serde_json::to_string(child)?,
            created_by: String::new(),
            admins: self.settings.admins.clone(),
            limits: self.settings.limits,
            selectable_models: self.settings.selectable_models.clone(),
            continue_after_events: self.continue_after_events,
            carried: None,
        })
    }

    /// End a turn with its activity's result: what to store, what runs
    /// next (a one-shot task's completion decision), and the reply a
    /// blocking sender gets instead of the task, if the answer asked for one.
    fn conclude_turn(
        &mut self,
        result: TurnResult,
    ) -> Result<(Projection, Option<Work>, Option<Message>), UpdateError> {
        for record in result.records {
            lifecycle::record(self, record);
        }
        let settings = self.settings.clone();
        let finished = lifecycle::finish(self, result.output, &settings);
        let work = self.work_after(finished.next);
        Ok((self.take_write()?, work, finished.direct_reply))
    }

    /// The turn a lifecycle decision runs next, if any (a one-shot task's
    /// completion decision).
    fn work_after(&self, next: Next) -> Option<Work> {
        match next {
            Next::Completion(requested_by) => Some(Work::Completion(CompletionTurn {
                requested_by,
                view: self.view(),
            })),
            Next::Continue | Next::TurnEnded => None,
        }
    }

    /// The model turn the record is running.
    fn model_turn(&self) -> Work {
        let turn_message = match self.record.turn.as_ref().map(|turn| &turn.work) {
            Some(TurnWork::Model { .. }) => {
                self.record.history.last().map(|m| m.message_id.clone())
            }
            _ => None,
        };
        Work::Model(ModelTurnRequest {
            head: serde_json::to_string(&self.record).unwrap_or_default(),
            view: self.view(),
            turn_message,
        })
    }

    fn view(&self) -> TaskView {
        self.record.view(&self.settings.selectable_models)
    }

    /// What to store of the changes since the last step: this task's, and
    /// the sub-tasks it delegated meanwhile.
    fn take_write(&mut self) -> Result<Projection, UpdateError> {
        let mut writes = vec![self.journal.write(&self.record)?];
        for child in &self.children {
            writes.push(Journal::new_task(child, None)?.write(child)?);
        }
        let _published = self.journal.committed(&self.record);
        Ok(Projection {
            writes,
            children: std::mem::take(&mut self.children),
        })
    }

    fn apply_change(&mut self, change: Change) {
        if let Err(error) = self.journal.apply(&mut self.record, change, self.now) {
            tracing::error!(task = %self.record.id, %error, "a change could not be recorded");
        }
    }
}

impl lifecycle::Task for TaskWorkflow {
    fn record(&self) -> &TaskRecord {
        &self.record
    }

    fn apply(&mut self, change: Change) {
        self.apply_change(change);
    }

    /// A child workflow, stored with this step's write and started once
    /// it is stored; its id is derived, so a replay starts the same one.
    fn spawn_subtask(&mut self, goal: &str) -> Result<SubtaskView, String> {
        let id = self.derived_id();
        let mut child = subtasks::child_with_id(&self.record, id, goal);
        child.status.timestamp = Some(self.now);
        let subtask = child
            .as_subtask()
            .ok_or("a sub-task must be a delegated task")?;
        self.apply_change(Change::Subtask(subtask.clone()));
        self.children.push(child);
        Ok(subtask)
    }

    fn message_id(&mut self) -> String {
        self.derived_id()
    }
}

impl TaskWorkflow {
    /// Derived from the task id and a counter, so a replay writes the same.
    fn derived_id(&mut self) -> String {
        self.written += 1;
        let digest = Sha256::digest(format!("{}/{}", self.record.id, self.written));
        let mut bytes = [0; 16];
        bytes.copy_from_slice(&digest[..16]);
        uuid::Builder::from_random_bytes(bytes)
            .into_uuid()
            .to_string()
    }
}

/// The record a run starts from. A head that does not parse is refused by
/// the server before it starts a workflow; an empty task here fails the
/// first Update.
fn readable(head: &str) -> TaskRecord {
    TaskRecord::from_head(head).unwrap_or_else(|error| {
        tracing::error!(%error, "a task workflow started from an unreadable head");
        TaskRecord::new(
            String::new(),
            String::new(),
            crate::task::state::Lifecycle::Conversation,
            Vec::new(),
            String::new(),
            String::new(),
        )
    })
}

/// The workflow's clock, which replays as it ran.
fn clock(ctx: &WorkflowContext<TaskWorkflow>) -> Timestamp {
    ctx.workflow_time().map_or_else(
        || Timestamp::from_unix_millis(0),
        Timestamp::from_system_time,
    )
}

/// Run a turn's activity; a failure of the activity itself (its retries
/// spent, a worker's error) ends the turn as a failed one.
/// A completion cuts it (the activity is cancelled), as does the task's
/// cancellation.
async fn run_turn(ctx: &WorkflowContext<TaskWorkflow>, work: Work) -> TurnResult {
    // The token lives in this handler: the workflow's state stays `Send`.
    let turn = ctx.cancellation_token().child_token();
    let retried = turn_options(5, &turn);
    let activity = async {
        match work {
            Work::Model(request) => {
                ctx.execute_activity(TaskActivities::model_turn, request, retried)
                    .await
            }
            Work::Command(request) => {
                // A command body may have had effects outside: it runs once.
                let once = turn_options(1, &turn);
                ctx.execute_activity(TaskActivities::command_turn, request, once)
                    .await
            }
            Work::Completion(request) => {
                ctx.execute_activity(TaskActivities::completion_turn, request, retried)
                    .await
            }
        }
    };
    let cut = async {
        let _ = ctx.wait_condition(|task| task.cut).await;
        turn.cancel();
        // The activity's own end (its cancellation) answers the select.
        std::future::pending::<Infallible>().await
    };
    let result = match select(pin!(activity), pin!(cut)).await {
        Either::Left((result, _)) => result,
        Either::Right((never, _)) => match never {},
    };
    result
        .unwrap_or_else(|error| TurnResult::failed(format!("the turn's activity failed: {error}")))
}

/// Store a step; retried until it lands (a write is idempotent). A local
/// activity: it runs on the worker running the workflow, with no round
/// trip through the cluster's queue, and its write stays out of the
/// history (a worker lost before the marker is recorded runs it again,
/// which the write's idempotence makes harmless).
async fn project(
    ctx: &WorkflowContext<TaskWorkflow>,
    projection: Projection,
) -> Result<(), UpdateError> {
    let Projection { writes, children } = projection;
    let retry = RetryPolicy::builder()
        .initial_interval(Duration::from_millis(200))
        .backoff_coefficient(2.0)
        .maximum_attempts(5)
        .build();
    let options = LocalActivityOptions::builder()
        .retry_policy(retry)
        .start_to_close_timeout(Duration::from_secs(30))
        // A cancellation must still record how the task ended: the
        // projection has a token of its own.
        .cancellation_token(WorkflowCancellationToken::new())
        .build();
    ctx.execute_local_activity(TaskActivities::commit, writes, options)
        .await
        .map_err(|error| format!("the task could not be stored: {error}"))?;
    start_children(ctx, children).await;
    report_to_parent(ctx).await;
    Ok(())
}

/// Start each stored sub-task as a child workflow. It lives on when this
/// task ends (a completion may leave it open); a cancellation of this task
/// cancels it explicitly (`cancel_subtasks`), so its end is recorded here.
async fn start_children(ctx: &WorkflowContext<TaskWorkflow>, children: Vec<TaskRecord>) {
    for child in children {
        let input = match ctx.state(|task| task.child_input(&child)) {
            Ok(input) => input,
            Err(error) => {
                tracing::error!(subtask = %child.id, %error, "cannot start a sub-task");
                continue;
            }
        };
        let options = ChildWorkflowOptions::builder()
            .workflow_id(child.id.clone())
            .parent_close_policy(ParentClosePolicy::Abandon)
            .cancellation_token(WorkflowCancellationToken::new())
            .build();
        if let Err(error) = ctx
            .start_child_workflow(TaskWorkflow::run, input, options)
            .await
        {
            tracing::error!(subtask = %child.id, ?error, "cannot start a sub-task");
        }
    }
}

/// A delegated task tells its parent of a new state, once it is stored.
/// A parent that has finished hears nothing more (its list keeps the
/// state it last heard); the sub-task's own record says how it ended.
async fn report_to_parent(ctx: &WorkflowContext<TaskWorkflow>) {
    let Some(report) = ctx.state_mut(TaskWorkflow::report_due) else {
        return;
    };
    let parent = ctx.external_workflow(report.parent_id.clone(), None);
    // Sent even while this task is being canceled: that is news too.
    let options = SignalWorkflowOptions::builder()
        .cancellation_token(WorkflowCancellationToken::new())
        .build();
    let signal = parent.signal(TaskWorkflow::report, Reported(report), options);
    if let Err(error) = signal.await {
        tracing::debug!(?error, "a sub-task's report did not reach its parent");
    }
}

/// Cancelled: cut the running turn, let every handler finish (with a token
/// of its own: the workflow's is cancelled), then end the task `CANCELED`.
async fn cancel(ctx: &mut WorkflowContext<TaskWorkflow>) -> WorkflowResult<String> {
    drain(ctx).await;
    cancel_subtasks(ctx).await;
    // The cluster quotes a workflow's reason inside its own words.
    let by_parent = ctx
        .cancellation_token()
        .reason()
        .is_some_and(|reason| reason.ends_with(CANCELED_WITH_PARENT));
    let now = clock(ctx);
    let write = ctx.state_mut(|task| {
        task.now = now;
        if task.record.is_terminal() {
            return None;
        }
        let ending = Ending::notice(Ending::default());
        let text = if by_parent {
            CANCELED_WITH_PARENT
        } else {
            "Task canceled."
        }
        .to_owned();
        let _ended = lifecycle::conclude(task, TaskState::Canceled, text, ending);
        task.take_write().ok()
    });
    if let Some(write) = write {
        project(ctx, write).await.map_err(|error| {
            WorkflowTermination::failed_application(ApplicationFailure::new(error))
        })?;
    }
    Err(WorkflowTermination::cancelled())
}

/// Cancel every open sub-task (and, through them, theirs) and record how
/// each ended, as its report says, before this task's own state changes.
async fn cancel_subtasks(ctx: &WorkflowContext<TaskWorkflow>) {
    let open: Vec<SubtaskView> = ctx.state(|task| task.record.open_subtasks().cloned().collect());
    if open.is_empty() {
        return;
    }
    let mut canceled = Vec::new();
    for subtask in open {
        let child = ctx.external_workflow(subtask.id.clone(), None);
        let request = child.cancel(Some(CANCELED_WITH_PARENT.to_owned()));
        // One that finished meanwhile is not cancelable; its report says
        // how it ended.
        if request.await.is_ok() {
            canceled.push(subtask);
        }
    }
    // This task's token is cancelled: the wait has tokens of its own.
    let own = WorkflowCancellationToken::new();
    let options = WaitConditionOptions::builder()
        .cancellation_token(own.clone())
        .build();
    let all_ended =
        |task: &TaskWorkflow| !task.busy && task.record.open_subtasks().next().is_none();
    let reported = ctx.wait_condition_with_options(all_ended, options);
    let timer = ctx.timer(
        TimerOptions::builder(SUBTASKS_END_WITHIN)
            .cancellation_token(own)
            .build(),
    );
    let _ = select(pin!(reported), pin!(timer)).await;
    drain(ctx).await;
    // Canceled, but silent (its workers gone): listed as canceled, as it
    // will be once a worker runs it.
    ctx.state_mut(|task| {
        for subtask in canceled {
            let open = task
                .record
                .subtasks
                .iter()
                .any(|s| s.id == subtask.id && s.is_open());
            if open {
                let state = TaskState::Canceled.as_str().to_owned();
                task.apply_change(Change::Subtask(SubtaskView { state, ..subtask }));
            }
        }
    });
}

/// Wait until no Update handler runs.
async fn drain(ctx: &WorkflowContext<TaskWorkflow>) {
    let view = ctx.clone();
    let options = WaitConditionOptions::builder()
        .cancellation_token(WorkflowCancellationToken::new())
        .build();
    let _ = ctx
        .wait_condition_with_options(move |_| view.all_handlers_finished(), options)
        .await;
}

/// A turn's activity: stopped when `turn` is cut, and retried (if
/// `attempts` allows) once its worker stops heartbeating.
fn turn_options(attempts: u32, turn: &WorkflowCancellationToken) -> ActivityOptions {
    let mut options = activity_options(attempts, Some(turn.clone()));
    options.heartbeat_timeout = Some(3 * HEARTBEAT_EVERY);
    options
}

/// At most `attempts` attempts, stopped when `token` is cancelled (by
/// default, when the workflow is).
fn activity_options(attempts: u32, token: Option<WorkflowCancellationToken>) -> ActivityOptions {
    let retry = RetryPolicy::builder()
        .initial_interval(Duration::from_millis(200))
        .backoff_coefficient(2.0)
        .maximum_attempts(attempts)
        .build();
    ActivityOptions::with_start_to_close_timeout(Duration::from_secs(300))
        .cancellation_type(ActivityCancellationType::TryCancel)
        .retry_policy(retry)
        .maybe_cancellation_token(token)
        .build()
}
