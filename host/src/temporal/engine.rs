//! The Temporal engine as a server uses it: deliver a message to a task's
//! workflow, cancel one, and run a worker.

use std::sync::Arc;
use std::thread::JoinHandle;

use temporalio_client::errors::{WorkflowUpdateError, WorkflowUpdateWithStartError};
use temporalio_client::{
    Client, ClientOptions, Connection, ConnectionOptions, Url, WorkflowCancelOptions,
    WorkflowDescribeOptions, WorkflowExecuteUpdateOptions, WorkflowGetResultOptions,
    WorkflowIdConflictPolicy, WorkflowIdReusePolicy, WorkflowUpdateWithStartOptions,
};
use temporalio_common::protos::temporal::api::enums::v1::PendingActivityState;
use temporalio_sdk::{Runtime, Worker, WorkerOptions};

use super::activities::TaskActivities;
use super::refusal::Refusal;
use super::side_channel::SideChannel;
use super::workflow::{Answered, Envelope, TaskInput, TaskWorkflow};
use crate::a2a::error::A2aError;
use crate::task::env::Env;

/// Where the Temporal cluster is, and which of its queues the tasks use.
#[derive(Clone, Debug)]
pub struct TemporalOptions {
    /// `host:port` of the frontend service.
    pub address: String,
    pub namespace: String,
    /// Every server and worker of one deployment uses the same queue.
    pub task_queue: String,
    /// A task's workflow run continues as new once its history holds this
    /// many events (or sooner, when the cluster suggests it), carrying the
    /// task and the ids of the messages it accepted. Set by the server that
    /// starts the task.
    pub continue_after_events: u32,
    /// How often a stream (`SendStreamingMessage`, `SubscribeToTask`,
    /// `returnImmediately`) reads the store for steps that workers of other
    /// processes projected; this process's own worker wakes its streams at
    /// once.
    pub poll_store_every: std::time::Duration,
    /// How long a stopping worker lets the turns it runs go on; then it
    /// cuts them, and the cluster runs each model turn again on another
    /// worker (a command body is not run again: its turn fails).
    pub shutdown_grace: std::time::Duration,
}

impl TemporalOptions {
    pub const DEFAULT_NAMESPACE: &str = "default";
    pub const DEFAULT_TASK_QUEUE: &str = "tiny-harness-tasks";
    /// About a hundred turns a run: far below the cluster's own limits
    /// (it warns at 10,240 events), and a replay stays short.
    pub const DEFAULT_CONTINUE_AFTER_EVENTS: u32 = 2_000;
    /// A stream learns of another process's step within 50 ms, at one
    /// indexed read of the store each time.
    pub const DEFAULT_POLL_STORE_EVERY: std::time::Duration = std::time::Duration::from_millis(50);
    /// Most turns of an interactive agent end within this; a longer one is
    /// cut and runs again elsewhere rather than holding the stop.
    pub const DEFAULT_SHUTDOWN_GRACE: std::time::Duration = std::time::Duration::from_secs(10);

    /// The default namespace and queue on the cluster at `address`.
    pub fn new(address: impl Into<String>) -> Self {
        TemporalOptions {
            address: address.into(),
            namespace: Self::DEFAULT_NAMESPACE.to_owned(),
            task_queue: Self::DEFAULT_TASK_QUEUE.to_owned(),
            continue_after_events: Self::DEFAULT_CONTINUE_AFTER_EVENTS,
            poll_store_every: Self::DEFAULT_POLL_STORE_EVERY,
            shutdown_grace: Self::DEFAULT_SHUTDOWN_GRACE,
        }
    }
}

/// What the cluster says of a workflow's current run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RunDescription {
    pub run_id: String,
    /// Events in this run's history.
    pub history_length: usize,
    /// Its activities a worker has started and not finished.
    pub running: Vec<RunningActivity>,
}

/// An activity under way on a worker.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RunningActivity {
    /// The activity's type, e.g. `TaskActivities::model_turn`.
    pub kind: String,
    /// 1 for the first attempt.
    pub attempt: i32,
    /// The identity of the worker running it.
    pub worker: String,
}

/// A connection to the cluster the tasks run on.
#[derive(Clone)]
pub struct TemporalEngine {
    client: Client,
    options: TemporalOptions,
}

impl TemporalEngine {
    /// Connect to the cluster `options` names.
    pub async fn connect(options: TemporalOptions) -> Result<Self, String> {
        let client = connect(&options, "tiny-harness").await?;
        Ok(TemporalEngine { client, options })
    }

    /// Deliver `envelope` to task `task_id`, starting its workflow from
    /// `first` when the message creates the task. Returns once the
    /// message's turn ended, or with the workflow's refusal.
    pub(crate) async fn send(
        &self,
        task_id: &str,
        first: Option<TaskInput>,
        envelope: Envelope,
    ) -> Result<Answered, A2aError> {
        // Update ids dedupe within a run: a resend gets its first answer.
        let update_id = envelope.message.message_id.clone();
        match first {
            Some(input) => {
                let options = WorkflowUpdateWithStartOptions::new(
                    self.options.task_queue.as_str(),
                    task_id,
                    WorkflowIdConflictPolicy::UseExisting,
                )
                // A finished task's id never starts a fresh, empty run.
                .id_reuse_policy(WorkflowIdReusePolicy::RejectDuplicate)
                .update_id(update_id)
                .build();
                self.client
                    .execute_update_with_start_workflow(
                        TaskWorkflow::run,
                        input,
                        TaskWorkflow::send,
                        envelope,
                        options,
                    )
                    .await
                    .map_err(|error| match error {
                        WorkflowUpdateWithStartError::Update(error) => refused(error),
                        other => unavailable(other),
                    })
            }
            None => {
                let handle = self.client.get_workflow_handle::<TaskWorkflow>(task_id);
                let options = WorkflowExecuteUpdateOptions::builder()
                    .update_id(update_id)
                    .build();
                handle
                    .execute_update(TaskWorkflow::send, envelope, options)
                    .await
                    .map_err(refused)
            }
        }
    }

    /// Ask task `task_id`'s workflow to delegate `goal`, as a running
    /// model turn's `spawn_subtask` call does (only tests send it from
    /// elsewhere).
    #[cfg(test)]
    pub(crate) async fn delegate(
        &self,
        task_id: &str,
        goal: &str,
    ) -> Result<crate::domain::SubtaskView, A2aError> {
        let handle = self.client.get_workflow_handle::<TaskWorkflow>(task_id);
        let options = WorkflowExecuteUpdateOptions::builder()
            .update_id(uuid::Uuid::new_v4().to_string())
            .build();
        handle
            .execute_update(TaskWorkflow::delegate, goal.to_owned(), options)
            .await
            .map_err(|error| match error {
                WorkflowUpdateError::Failed(failure) => A2aError::Internal(failure.message),
                other => unavailable(other),
            })
    }

    /// Cancel task `task_id`'s workflow and wait until it has ended.
    pub(crate) async fn cancel(&self, task_id: &str, reason: String) -> Result<(), A2aError> {
        let handle = self.client.get_workflow_handle::<TaskWorkflow>(task_id);
        handle
            .cancel(WorkflowCancelOptions::builder().reason(reason).build())
            .await
            .map_err(unavailable)?;
        // It ends CANCELED (an error here) once its handlers have finished
        // and its end is stored.
        let _ended = handle.get_result(WorkflowGetResultOptions::default()).await;
        Ok(())
    }

    /// The options this engine was connected with.
    pub(crate) fn options(&self) -> &TemporalOptions {
        &self.options
    }

    /// The current run of task `task_id`'s workflow.
    pub async fn describe_run(&self, task_id: &str) -> Result<RunDescription, A2aError> {
        let handle = self.client.get_workflow_handle::<TaskWorkflow>(task_id);
        let description = handle
            .describe(WorkflowDescribeOptions::default())
            .await
            .map_err(unavailable)?;
        let started = PendingActivityState::Started as i32;
        let running = description
            .raw_description
            .pending_activities
            .iter()
            .filter(|activity| activity.state == started)
            .map(|activity| RunningActivity {
                kind: activity
                    .activity_type
                    .as_ref()
                    .map(|kind| kind.name.clone())
                    .unwrap_or_default(),
                attempt: activity.attempt,
                worker: activity.last_worker_identity.clone(),
            })
            .collect();
        Ok(RunDescription {
            run_id: description.run_id().to_owned(),
            history_length: description.history_length(),
            running,
        })
    }

    /// Run a worker for this deployment's task queue on a thread of its
    /// own, with `env`'s registries, models and store, until the returned
    /// handle is dropped.
    /// Its model turns publish their live-only events on `side_channel`.
    pub(crate) fn spawn_worker(
        &self,
        env: Arc<Env>,
        side_channel: Arc<SideChannel>,
    ) -> Result<WorkerThread, String> {
        let options = self.options.clone();
        let (started, ready) = std::sync::mpsc::channel();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let thread = std::thread::Builder::new()
            .name("temporal-worker".into())
            .spawn(move || {
                let runtime = match tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                {
                    Ok(runtime) => runtime,
                    Err(error) => {
                        let _ = started.send(Err(error.to_string()));
                        return;
                    }
                };
                runtime.block_on(run_worker(options, env, side_channel, started, stopped));
            })
            .map_err(|error| format!("the Temporal worker's thread could not start: {error}"))?;
        match ready.recv() {
            Ok(Ok(())) => Ok(WorkerThread {
                stop: Some(stop),
                thread: Some(thread),
            }),
            Ok(Err(error)) => Err(error),
            Err(_) => Err("the Temporal worker stopped before it started".to_owned()),
        }
    }
}

/// A running worker; dropping it shuts the worker down: the turns it runs
/// get [`TemporalOptions::shutdown_grace`] to end, then they are cut, and
/// the cluster gives each model turn to another worker.
pub(crate) struct WorkerThread {
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl Drop for WorkerThread {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

async fn run_worker(
    options: TemporalOptions,
    env: Arc<Env>,
    side_channel: Arc<SideChannel>,
    started: std::sync::mpsc::Sender<Result<(), String>>,
    stopped: tokio::sync::oneshot::Receiver<()>,
) {
    let worker = async {
        let runtime = Runtime::from_current_tokio(Default::default())
            .map_err(|error| format!("the Temporal runtime could not start: {error}"))?;
        let identity = format!("tiny-harness-worker-{}", std::process::id());
        let client = connect(&options, &identity).await?;
        // A model turn's `spawn_subtask` calls go to its workflow through
        // this worker's own connection.
        let activities = TaskActivities::new(env, side_channel, client.clone());
        let worker_options = WorkerOptions::new(options.task_queue.as_str())
            .register_workflow::<TaskWorkflow>()
            .map_err(|error| format!("the task workflow could not be registered: {error}"))?
            .register_activities(activities)
            .graceful_shutdown_period(options.shutdown_grace)
            .build();
        Worker::new(&runtime, client, worker_options)
            .map_err(|error| format!("the Temporal worker could not start: {error}"))
    };
    let mut worker = match worker.await {
        Ok(worker) => worker,
        Err(error) => {
            let _ = started.send(Err(error));
            return;
        }
    };
    let shutdown = worker.shutdown_handle();
    let _ = started.send(Ok(()));
    let stop = async {
        let _ = stopped.await;
        shutdown();
    };
    let (ran, ()) = tokio::join!(worker.run(), stop);
    if let Err(error) = ran {
        tracing::error!(%error, "the Temporal worker stopped");
    }
}

async fn connect(options: &TemporalOptions, identity: &str) -> Result<Client, String> {
    let url = Url::parse(&format!("http://{}", options.address))
        .map_err(|error| format!("Temporal address `{}`: {error}", options.address))?;
    let connection_options = ConnectionOptions::new(url)
        .identity(identity.to_owned())
        .build();
    let connection = Connection::connect(connection_options)
        .await
        .map_err(|error| format!("cannot reach Temporal at {}: {error}", options.address))?;
    Client::new(
        connection,
        ClientOptions::new(options.namespace.as_str()).build(),
    )
    .map_err(|error| format!("Temporal namespace `{}`: {error}", options.namespace))
}

/// The workflow refused the message (its validator, or the handler's own
/// check once the message's turn came): the task changed since the server
/// checked it.
fn refused(error: WorkflowUpdateError) -> A2aError {
    match error {
        WorkflowUpdateError::Failed(failure) => {
            Refusal::from_failure_message(&failure.message).into()
        }
        other => unavailable(other),
    }
}

fn unavailable(error: impl std::fmt::Display) -> A2aError {
    A2aError::Internal(format!("the Temporal engine failed: {error}"))
}
