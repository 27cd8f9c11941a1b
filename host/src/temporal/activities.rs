//! What a task's workflow asks a worker to do: run a turn, store a step.
//!
//! A turn runs exactly as on the embedded engine (`ModelTurn`, the command
//! body, the `task.complete` decision), on the worker's own registries,
//! models and store. Its steps do not reach the workflow while it runs: the
//! tool activity it journals comes back with its result and is recorded
//! before the reply; its progress and streamed text go to the streams of
//! the worker's own process (`side_channel`), never into the history. The
//! one exception is a `spawn_subtask` call: the turn asks its workflow to
//! delegate (an Update, which stores and starts the sub-task), then waits
//! for the sub-task's workflow to close and reads its end from the store.

use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use temporalio_client::errors::WorkflowUpdateError;
use temporalio_client::{Client, WorkflowExecuteUpdateOptions, WorkflowGetResultOptions};
use temporalio_macros::activities;
use temporalio_sdk::activities::{ActivityContext, ActivityError};
use tokio::sync::oneshot;
use tokio::task::JoinSet;

use super::side_channel::{LiveTurn, SideChannel};
use super::workflow::TaskWorkflow;
use crate::domain::{Participant, TaskView};
use crate::store::{StoreError, TaskStore, TaskWrite};
use crate::task::agent::ModelTurn;
use crate::task::completion;
use crate::task::env::Env;
use crate::task::job::{Job, Record, Spawned, Step, SubtaskEnd, TurnEnd, TurnOutput};
use crate::task::state::TaskRecord;
use crate::task::subtasks::Report;
use crate::task::turn;

/// The model turn a task is running.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ModelTurnRequest {
    /// The task's head as the turn starts (its `turn` says whose it is).
    pub head: String,
    pub view: TaskView,
    /// The participant's message the turn answers.
    pub turn_message: Option<String>,
}

/// A command, with the task as its message found it.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct CommandTurn {
    pub text: String,
    pub sender: Participant,
    pub view: TaskView,
}

/// The `task.complete` decision on behalf of `requested_by`.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct CompletionTurn {
    pub requested_by: Participant,
    pub view: TaskView,
}

/// How a turn ended, and the tool activity it journaled on the way.
#[derive(Debug, Serialize, Deserialize)]
pub struct TurnResult {
    pub output: TurnOutput,
    pub records: Vec<Record>,
}

impl TurnResult {
    pub(super) fn failed(reason: impl Into<String>) -> Self {
        TurnResult {
            output: TurnOutput::untraced(TurnEnd::Failed(reason.into())),
            records: Vec::new(),
        }
    }
}

/// A worker's activities, on the worker's own task environment.
pub struct TaskActivities {
    env: Arc<Env>,
    side_channel: Arc<SideChannel>,
    client: Client,
}

impl TaskActivities {
    pub(super) fn new(env: Arc<Env>, side_channel: Arc<SideChannel>, client: Client) -> Self {
        TaskActivities {
            env,
            side_channel,
            client,
        }
    }
}

#[activities]
impl TaskActivities {
    /// Store a step the workflow decided: the task's write, then the
    /// creation of each sub-task it delegated, in one commit. Retried until
    /// it lands, so a step the store already holds (the first attempt
    /// committed, its answer was lost) is success.
    #[activity]
    pub async fn commit(
        self: Arc<Self>,
        _ctx: ActivityContext,
        writes: Vec<TaskWrite>,
    ) -> Result<(), ActivityError> {
        let store = self.env.store.as_ref();
        let Some(write) = writes.first() else {
            return Ok(());
        };
        let task_id = write.task_id.clone();
        let last = write.entries.last().map(|entry| entry.position);
        let events = stored_events(&writes);
        let committed = store.commit(writes).await;
        if committed.is_ok() {
            self.side_channel.projected();
            // Pushed by the worker that stored them, once (a step stored by
            // an earlier attempt was pushed by it).
            for (task_id, events) in events {
                self.env.push.post_stored(&task_id, events).await;
            }
        }
        match committed {
            Ok(()) => Ok(()),
            Err(StoreError::Conflict(conflict)) if already_stored(store, task_id, last).await => {
                tracing::debug!(%conflict, "a projected write was already stored");
                Ok(())
            }
            Err(error) => Err(anyhow::anyhow!(error).into()),
        }
    }

    /// A model turn: the agent loop with its tools.
    #[activity]
    pub async fn model_turn(
        self: Arc<Self>,
        ctx: ActivityContext,
        request: ModelTurnRequest,
    ) -> Result<TurnResult, ActivityError> {
        let record = TaskRecord::from_head(&request.head).map_err(anyhow::Error::msg)?;
        let turn = ModelTurn::prepare(&self.env, &record, request.view, request.turn_message);
        let delegator = Arc::new(Delegator {
            client: self.client.clone(),
            store: Arc::clone(&self.env.store),
            task_id: record.id.clone(),
        });
        let live = LiveTurn::new(Arc::clone(&self.side_channel), record);
        let job = Job::spawn(move |link| turn.run(link));
        drain(&ctx, job, Some(&live), Some(delegator)).await
    }

    /// A command body; the workflow never retries it.
    #[activity]
    pub async fn command_turn(
        self: Arc<Self>,
        ctx: ActivityContext,
        request: CommandTurn,
    ) -> Result<TurnResult, ActivityError> {
        let registry = self.env.registries.current();
        let CommandTurn { text, sender, view } = request;
        let job = Job::spawn(move |_| turn::command_turn(registry, text, sender, view));
        drain(&ctx, job, None, None).await
    }

    /// The `task.complete` decision.
    #[activity]
    pub async fn completion_turn(
        self: Arc<Self>,
        ctx: ActivityContext,
        request: CompletionTurn,
    ) -> Result<TurnResult, ActivityError> {
        let registry = self.env.registries.current();
        let CompletionTurn { requested_by, view } = request;
        let open: Vec<_> = view.open_subtasks().cloned().collect();
        let context = completion::context(view, &requested_by, &open);
        let job = Job::spawn(|_| async move {
            let trace = crate::hooks::Trace::default();
            let verdict = completion::decide(registry, context, &trace).await;
            TurnOutput {
                trace: trace.finish(),
                ..TurnOutput::untraced(TurnEnd::Completion(verdict))
            }
        });
        drain(&ctx, job, None, None).await
    }
}

/// How a model turn's `spawn_subtask` calls reach its task's workflow,
/// which delegates (stores and starts the sub-task), and how the call
/// learns the sub-task's end.
struct Delegator {
    client: Client,
    store: Arc<dyn TaskStore>,
    task_id: String,
}

impl Delegator {
    /// Delegate `goal`; answer the call with the sub-task, then with its end.
    async fn spawn(
        self: Arc<Self>,
        goal: String,
        answer: oneshot::Sender<Result<Spawned, String>>,
    ) {
        let handle = self
            .client
            .get_workflow_handle::<TaskWorkflow>(&self.task_id);
        let options = WorkflowExecuteUpdateOptions::builder()
            .update_id(uuid::Uuid::new_v4().to_string())
            .build();
        let subtask = match handle
            .execute_update(TaskWorkflow::delegate, goal, options)
            .await
        {
            Ok(subtask) => subtask,
            Err(error) => {
                let _ = answer.send(Err(refusal(error)));
                return;
            }
        };
        let (ended, end) = oneshot::channel();
        let id = subtask.id.clone();
        if answer
            .send(Ok(Spawned {
                subtask,
                ended: end,
            }))
            .is_err()
        {
            return;
        }
        // Dropped unsent if its end cannot be read: the call then says its
        // result arrives as an artifact.
        if let Some(end) = self.end_of(id).await {
            let _ = ended.send(end);
        }
    }

    /// Wait for sub-task `id`'s workflow to close, then read how it ended.
    async fn end_of(&self, id: String) -> Option<SubtaskEnd> {
        let child = self.client.get_workflow_handle::<TaskWorkflow>(&id);
        // It closes CANCELED or FAILED as an error: either way it has ended.
        let _closed = child.get_result(WorkflowGetResultOptions::default()).await;
        let head = self.store.head(id.clone()).await.ok()??;
        let record = TaskRecord::from_head(&head).ok()?;
        let report = Report::of(&record)?;
        Some(SubtaskEnd {
            state: report.subtask.state,
            text: report.result?,
        })
    }
}

/// The workflow's reason for not delegating, as the tool call reads it.
fn refusal(error: WorkflowUpdateError) -> String {
    match error {
        WorkflowUpdateError::Failed(failure) => failure.message,
        other => format!("the sub-task could not be delegated: {other}"),
    }
}

/// Each write's events, numbered and as stored, for its task's webhooks.
fn stored_events(writes: &[TaskWrite]) -> Vec<(String, Vec<(u64, String)>)> {
    writes
        .iter()
        .map(|write| {
            let events = write
                .entries
                .iter()
                .filter_map(|entry| entry.event.as_ref())
                .map(|event| (event.seq, event.document.clone()))
                .collect();
            (write.task_id.clone(), events)
        })
        .collect()
}

/// Whether the store already holds a task at log position `last` or later.
async fn already_stored(store: &dyn TaskStore, task_id: String, last: Option<u64>) -> bool {
    let Ok(Some(head)) = store.head(task_id).await else {
        return false;
    };
    match (TaskRecord::from_head(&head), last) {
        (Ok(record), Some(last)) => record.changes >= last,
        (Ok(_), None) => true,
        (Err(_), _) => false,
    }
}

/// How often a running turn tells the cluster its worker is alive; the
/// workflow gives each turn a heartbeat timeout of three times this, after
/// which the cluster retries the turn elsewhere (a worker killed mid-turn).
pub(super) const HEARTBEAT_EVERY: Duration = Duration::from_secs(2);

/// Run a turn to its end, keeping what it journals, heartbeating and
/// telling `live` what it says meanwhile. A turn whose activity is
/// cancelled is stopped and fails the activity: the workflow cut it (and
/// no longer listens), or the worker is stopping, and then the cluster
/// retries it on another worker as its retry policy allows.
async fn drain(
    ctx: &ActivityContext,
    mut job: Job,
    live: Option<&LiveTurn>,
    delegator: Option<Arc<Delegator>>,
) -> Result<TurnResult, ActivityError> {
    let mut records = Vec::new();
    // Calls waiting on their sub-tasks; dropped (stopped) with the turn.
    let mut delegations = JoinSet::new();
    let mut heartbeat = tokio::time::interval(HEARTBEAT_EVERY);
    loop {
        let step = tokio::select! {
            step = job.next() => step,
            _ = heartbeat.tick() => {
                // A lost heartbeat is only a late one: the next may land.
                let _ = ctx.record_heartbeat(()).await;
                continue;
            }
            () = ctx.cancelled() => {
                return Err(anyhow::anyhow!("the turn was cut on this worker").into());
            }
        };
        match step {
            Some(Step::Record(record, committed)) => {
                records.push(record);
                let _ = committed.send(());
            }
            Some(Step::Progress(text)) => {
                if let Some(live) = live {
                    live.progress(text);
                }
            }
            Some(Step::Delta(text)) => {
                if let Some(live) = live {
                    live.delta(text);
                }
            }
            Some(Step::Spawn { goal, answer }) => match &delegator {
                Some(delegator) => {
                    delegations.spawn(Arc::clone(delegator).spawn(goal, answer));
                }
                None => {
                    let _ = answer.send(Err("only a model turn delegates sub-tasks".to_owned()));
                }
            },
            Some(Step::Done(output)) => return Ok(TurnResult { output, records }),
            None => return Ok(TurnResult::failed("the turn stopped unexpectedly")),
        }
    }
}
