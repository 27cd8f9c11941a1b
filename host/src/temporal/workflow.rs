//! `TaskWorkflow`: one task's lifecycle as a Temporal workflow.
//!
//! Its state is the task's record, as the actor holds it, and the ids of
//! the messages it accepted. Each message is an Update (`send`):
//!
//! * the validator checks the sender's role and the envelope against the
//!   task as it is now (`access::admit_message`); a refusal is answered at
//!   once and leaves nothing in the workflow's history;
//! * the handler accepts the message (`lifecycle::receive`, `start_turn`),
//!   projects that into the task store, runs the turn as activities, ends it
//!   (`lifecycle::finish`) and projects that. Turns run one at a time, in
//!   the order their messages were accepted; a message whose id the task
//!   accepted before is answered as a duplicate and never applied again.
//!
//! Cancellation is the workflow's: it cuts the running turn, and the task
//! ends `CANCELED` once every handler has finished (a run that returned
//! with a handler still running would fail that handler's caller).
//!
//! Workflow code must replay to the same decisions: the clock is the
//! workflow's, the agent's message ids are derived from the task id and a
//! counter, and nothing here does I/O.

use std::collections::BTreeSet;
use std::error::Error;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use temporalio_client::RetryPolicy;
use temporalio_macros::{workflow, workflow_methods};
use temporalio_sdk::{
    ActivityCancellationType, ActivityOptions, ApplicationFailure, WaitConditionOptions,
    WorkflowCancellationToken, WorkflowContext, WorkflowContextView, WorkflowResult,
    WorkflowTermination,
};

use super::activities::{
    CommandTurn, CompletionTurn, ModelTurnRequest, TaskActivities, TurnResult,
};
use crate::a2a::types::{Message, TaskState, Timestamp};
use crate::domain::{Participant, SubtaskView, TaskView};
use crate::store::TaskWrite;
use crate::task::classify::Kind;
use crate::task::env::TaskLimits;
use crate::task::journal::Journal;
use crate::task::lifecycle::{self, Ending, Next};
use crate::task::state::{Change, TaskRecord, TurnWork};
use crate::task::{access, participants};

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
}

/// A message to the task, classified by the server that received it.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Envelope {
    pub sender: String,
    pub message: Message,
    pub kind: Kind,
}

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
    admins: Vec<String>,
    limits: TaskLimits,
    selectable_models: Vec<String>,
    /// Ids of the messages accepted, so a resend is never applied twice.
    processed: BTreeSet<String>,
    /// A turn is running; the next message waits for its end.
    busy: bool,
    /// The workflow's clock when the current decision started.
    now: Timestamp,
    /// Agent messages written so far (their ids derive from it).
    written: u64,
}

#[workflow_methods]
impl TaskWorkflow {
    #[init]
    pub fn new(_ctx: &WorkflowContextView, input: TaskInput) -> Self {
        // A head that does not parse is refused by the server before it
        // starts a workflow; an empty task here fails the first Update.
        let record = TaskRecord::from_head(&input.head).unwrap_or_else(|error| {
            tracing::error!(%error, "a task workflow started from an unreadable head");
            TaskRecord::new(
                String::new(),
                String::new(),
                crate::task::state::Lifecycle::Conversation,
                Vec::new(),
                String::new(),
                String::new(),
            )
        });
        let journal = Journal::new_task(&record, Some(input.created_by)).unwrap_or_else(|_| {
            // Only a record that cannot be serialized fails here, and it was
            // just parsed from JSON.
            Journal::stored(&record)
        });
        TaskWorkflow {
            record,
            journal,
            admins: input.admins,
            limits: input.limits,
            selectable_models: input.selectable_models,
            processed: BTreeSet::new(),
            busy: false,
            now: Timestamp::from_unix_millis(0),
            written: 0,
        }
    }

    /// Lives until the task ends; a cancellation ends it `CANCELED`.
    #[run]
    pub async fn run(ctx: &mut WorkflowContext<Self>) -> WorkflowResult<String> {
        let ended = ctx
            .wait_condition(|task| task.record.is_terminal() && !task.busy)
            .await;
        if ended.is_err() {
            return cancel(ctx).await;
        }
        drain(ctx).await;
        Ok(ctx.state(|task| task.record.state().as_str().to_owned()))
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
        // One turn at a time: a message waits for the running one to end.
        let accepted = match ctx.wait_condition(|task| !task.busy).await {
            Ok(()) => {
                let now = clock(ctx);
                ctx.state_mut(|task| {
                    task.now = now;
                    task.accept(envelope)
                })
            }
            Err(cancelled) => Err(cancelled.into()),
        };
        let (write, mut work) = match accepted {
            Ok(accepted) => accepted,
            Err(refusal) => {
                // Not applied: a resend must be looked at afresh.
                ctx.state_mut(|task| task.processed.remove(&id));
                return Err(refusal);
            }
        };
        ctx.state_mut(|task| task.busy = true);
        let mut direct_reply = None;
        let mut outcome = project(ctx, write).await;
        while outcome.is_ok()
            && let Some(turn) = work.take()
        {
            let result = run_turn(ctx, turn).await;
            let now = clock(ctx);
            let step = ctx.state_mut(|task| {
                task.now = now;
                task.conclude_turn(result)
            });
            let (write, next, reply) = match step {
                Ok(step) => step,
                Err(error) => {
                    outcome = Err(error);
                    break;
                }
            };
            direct_reply = direct_reply.or(reply);
            work = next;
            outcome = project(ctx, write).await;
        }
        ctx.state_mut(|task| {
            task.busy = false;
            task.record.forget_history();
        });
        outcome.map(|()| Answered::TurnEnded { direct_reply })
    }
}

/// A turn the workflow runs as an activity.
enum Work {
    Model(ModelTurnRequest),
    Command(CommandTurn),
    Completion(CompletionTurn),
}

impl TaskWorkflow {
    /// The authoritative check of a message against the task as it is now.
    fn admit(&self, envelope: &Envelope) -> Result<(), UpdateError> {
        let record = &self.record;
        let context_id = envelope.message.context_id.as_deref();
        access::admit_message(
            record,
            &self.admins,
            &envelope.sender,
            context_id,
            &envelope.kind,
        )?;
        if let Kind::Participants(grants) = &envelope.kind {
            participants::check_grants(&record.participants, grants)?;
        }
        if matches!(envelope.kind, Kind::Decide { .. }) && record.pending_approval.is_empty() {
            return Err(format!("no tool call of task {} awaits approval", record.id).into());
        }
        let limit = self.limits.max_history_messages;
        if record.history_len >= limit {
            return Err(format!(
                "task {} holds {limit} messages, the most one task may hold (`[limits] \
                 max_history_messages`)",
                record.id
            )
            .into());
        }
        Ok(())
    }

    /// Accept a message, checked again against the task as its turn finds
    /// it: what to store, and the turn it starts.
    fn accept(&mut self, envelope: Envelope) -> Result<(TaskWrite, Option<Work>), UpdateError> {
        self.admit(&envelope)?;
        let Envelope {
            sender,
            mut message,
            kind,
        } = envelope;
        let role = access::admit_message(
            &self.record,
            &self.admins,
            &sender,
            message.context_id.as_deref(),
            &kind,
        )?;
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

    /// End a turn with its activity's result: what to store, what runs
    /// next (a one-shot task's completion decision), and the reply a
    /// blocking sender gets instead of the task, if the answer asked for one.
    fn conclude_turn(
        &mut self,
        result: TurnResult,
    ) -> Result<(TaskWrite, Option<Work>, Option<Message>), UpdateError> {
        for record in result.records {
            lifecycle::record(self, record);
        }
        let settings = self.settings();
        let finished = lifecycle::finish(self, result.output, &settings);
        let work = match finished.next {
            Next::Completion(requested_by) => Some(Work::Completion(CompletionTurn {
                requested_by,
                view: self.view(),
            })),
            Next::Continue | Next::TurnEnded => None,
        };
        Ok((self.take_write()?, work, finished.direct_reply))
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
        self.record.view(&self.selectable_models)
    }

    /// The settings a decision reads.
    fn settings(&self) -> crate::task::TaskSettings {
        crate::task::TaskSettings {
            admins: self.admins.clone(),
            limits: self.limits,
            ..crate::task::TaskSettings::default()
        }
    }

    /// The store write for the changes since the last one.
    fn take_write(&mut self) -> Result<TaskWrite, UpdateError> {
        let write = self.journal.write(&self.record)?;
        let _published = self.journal.committed(&self.record);
        Ok(write)
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

    fn spawn_subtask(&mut self, _goal: &str) -> Result<SubtaskView, String> {
        Err("sub-tasks are not delegated on the Temporal engine yet".to_owned())
    }

    /// Derived from the task id and a counter, so a replay writes the same.
    fn message_id(&mut self) -> String {
        self.written += 1;
        let digest = Sha256::digest(format!("{}/{}", self.record.id, self.written));
        let mut bytes = [0; 16];
        bytes.copy_from_slice(&digest[..16]);
        uuid::Builder::from_random_bytes(bytes)
            .into_uuid()
            .to_string()
    }
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
async fn run_turn(ctx: &WorkflowContext<TaskWorkflow>, work: Work) -> TurnResult {
    let result = match work {
        Work::Model(request) => {
            ctx.execute_activity(TaskActivities::model_turn, request, retried())
                .await
        }
        Work::Command(request) => {
            ctx.execute_activity(TaskActivities::command_turn, request, once())
                .await
        }
        Work::Completion(request) => {
            ctx.execute_activity(TaskActivities::completion_turn, request, retried())
                .await
        }
    };
    result
        .unwrap_or_else(|error| TurnResult::failed(format!("the turn's activity failed: {error}")))
}

/// Store a step; retried until it lands (a write is idempotent).
async fn project(ctx: &WorkflowContext<TaskWorkflow>, write: TaskWrite) -> Result<(), UpdateError> {
    // A cancellation must still record how the task ended: the projection
    // has a token of its own.
    let options = activity_options(5, Some(WorkflowCancellationToken::new()));
    ctx.execute_activity(TaskActivities::commit, write, options)
        .await
        .map_err(|error| format!("the task could not be stored: {error}").into())
}

/// Cancelled: cut the running turn, let every handler finish (with a token
/// of its own: the workflow's is cancelled), then end the task `CANCELED`.
async fn cancel(ctx: &mut WorkflowContext<TaskWorkflow>) -> WorkflowResult<String> {
    drain(ctx).await;
    let now = clock(ctx);
    let write = ctx.state_mut(|task| {
        task.now = now;
        if task.record.is_terminal() {
            return None;
        }
        let ending = Ending::notice(Ending::default());
        let text = "Task canceled.".to_owned();
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

/// A model call or a completion decision: retried, and stopped when the
/// turn is cut.
fn retried() -> ActivityOptions {
    activity_options(5, None)
}

/// A command body may have had effects outside: it runs once.
fn once() -> ActivityOptions {
    activity_options(1, None)
}

/// At most `attempts` attempts; `token` set, a cancellation of the
/// workflow does not reach the activity.
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
