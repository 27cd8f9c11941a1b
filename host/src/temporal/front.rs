//! The Temporal engine behind a task service: what `TaskService` hands a
//! message or a cancellation to when its tasks run on Temporal.
//!
//! A message's turn runs in the task's workflow, on whichever worker the
//! cluster picks; the server waits for the Update that carries it, then
//! reads the task from the store the workflow projects into. What is not
//! served on this engine yet is refused before anything is accepted:
//! streaming a turn, and subscribing to a task.

use std::sync::Arc;

use tokio::sync::oneshot;

use super::engine::{TemporalEngine, WorkerThread};
use super::workflow::{Answered, Envelope, TaskInput};
use crate::a2a::error::A2aError;
use crate::task::TaskService;
use crate::task::env::{Env, TaskLimits};
use crate::task::inbox::{Admitted, Rendered, Submission, TurnReply};
use crate::task::state::TaskRecord;

/// A task service's way to its tasks on Temporal.
pub struct TemporalFront {
    engine: TemporalEngine,
    admins: Vec<String>,
    limits: TaskLimits,
    selectable_models: Vec<String>,
    /// This process's worker, if it runs one.
    _worker: Option<WorkerThread>,
}

impl TemporalFront {
    pub(crate) fn new(
        engine: TemporalEngine,
        env: &Arc<Env>,
        run_worker: bool,
    ) -> Result<Self, String> {
        let worker = if run_worker {
            Some(engine.spawn_worker(Arc::clone(env))?)
        } else {
            None
        };
        let settings = &env.settings;
        Ok(TemporalFront {
            engine,
            admins: settings.admins.clone(),
            limits: settings.limits,
            selectable_models: settings.selectable_models.clone(),
            _worker: worker,
        })
    }

    /// Start `record`'s workflow with its first message.
    pub(crate) async fn start(
        &self,
        service: &TaskService,
        record: TaskRecord,
        created_by: String,
        submission: Submission,
    ) -> Result<Admitted, A2aError> {
        let head = serde_json::to_string(&record).map_err(|error| {
            A2aError::Internal(format!("a new task could not be recorded: {error}"))
        })?;
        let input = TaskInput {
            head,
            created_by,
            admins: self.admins.clone(),
            limits: self.limits,
            selectable_models: self.selectable_models.clone(),
            continue_after_events: self.engine.options().continue_after_events,
            carried: None,
        };
        self.deliver(service, &record.id, Some(input), submission)
            .await
    }

    /// A message to an existing task.
    pub(crate) async fn submit(
        &self,
        service: &TaskService,
        task_id: &str,
        submission: Submission,
    ) -> Result<Admitted, A2aError> {
        self.deliver(service, task_id, None, submission).await
    }

    /// Cancel a task (the service checked the caller may) and wait until
    /// its end is stored.
    pub(crate) async fn cancel(&self, task_id: &str, by: &str) -> Result<(), A2aError> {
        self.engine
            .cancel(task_id, format!("canceled by {by}"))
            .await
    }

    /// Deliver a message and answer with the task once its turn ended (a
    /// `returnImmediately` sender waits for the turn too, on this engine).
    async fn deliver(
        &self,
        service: &TaskService,
        task_id: &str,
        first: Option<TaskInput>,
        submission: Submission,
    ) -> Result<Admitted, A2aError> {
        let history_length = submission.history_length;
        let envelope = Envelope {
            sender: submission.sender,
            kind: submission.class.kind(),
            message: submission.message,
        };
        let answered = self.engine.send(task_id, first, envelope).await?;
        let wanted = history_length.map(|n| usize::try_from(n).unwrap_or(0));
        let record = service.load(task_id, wanted).await?;
        let rendered = || Rendered {
            task: record.to_task(history_length),
            history_len: record.history_len,
        };
        let reply = match answered {
            Answered::TurnEnded {
                direct_reply: Some(message),
            } => TurnReply::Message(message),
            Answered::TurnEnded { direct_reply: None } | Answered::Duplicate => {
                TurnReply::Task(rendered())
            }
        };
        let (ended, done) = oneshot::channel();
        let _ = ended.send(Ok(reply));
        Ok(Admitted {
            task: rendered(),
            seq: record.seq,
            events: None,
            done,
            finished: true,
            answer_watch: None,
        })
    }
}
