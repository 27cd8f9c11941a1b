//! The Temporal engine behind a task service: what `TaskService` hands a
//! message, a cancellation or a subscription to when its tasks run on
//! Temporal.
//!
//! A message's turn runs in the task's workflow, on whichever worker the
//! cluster picks. A blocking sender waits for the Update that carries it,
//! then reads the task from the store the workflow projects into. A sender
//! that streams, or wants the answer at once (`returnImmediately`), is
//! answered as soon as the store holds the message (the workflow accepted
//! it); the Update goes on in the background, and the turn's events are
//! tailed from the store (`side_channel`).

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{broadcast, oneshot};
use tokio::task::JoinHandle;
use tokio::time::MissedTickBehavior;

use super::engine::{TemporalEngine, WorkerThread};
use super::side_channel::{self, SideChannel};
use super::workflow::{Answered, Envelope, TaskInput};
use crate::a2a::error::A2aError;
use crate::store::TaskStore;
use crate::task::access;
use crate::task::env::{Env, TaskLimits};
use crate::task::events::Sequenced;
use crate::task::inbox::{Admitted, AnswerWatch, Answering, Rendered, Submission, TurnReply};
use crate::task::state::{Lifecycle, TaskRecord};

/// A task service's way to its tasks on Temporal.
pub struct TemporalFront {
    engine: TemporalEngine,
    admins: Vec<String>,
    limits: TaskLimits,
    selectable_models: Vec<String>,
    /// The read model the workflows project into.
    store: Arc<dyn TaskStore>,
    /// What this process's worker tells its streams.
    side_channel: Arc<SideChannel>,
    /// This process's worker, if it runs one.
    _worker: Option<WorkerThread>,
}

impl TemporalFront {
    pub(crate) fn new(
        engine: TemporalEngine,
        env: &Arc<Env>,
        run_worker: bool,
    ) -> Result<Self, String> {
        let side_channel = Arc::new(SideChannel::default());
        let worker = if run_worker {
            Some(engine.spawn_worker(Arc::clone(env), Arc::clone(&side_channel))?)
        } else {
            None
        };
        let settings = &env.settings;
        Ok(TemporalFront {
            engine,
            admins: settings.admins.clone(),
            limits: settings.limits,
            selectable_models: settings.selectable_models.clone(),
            store: Arc::clone(&env.store),
            side_channel,
            _worker: worker,
        })
    }

    /// Start `record`'s workflow with its first message.
    pub(crate) async fn start(
        &self,
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
        // A one-shot task may answer with a message alone.
        let one_shot = record.lifecycle == Lifecycle::Task;
        self.deliver(&record.id, Some(input), submission, one_shot)
            .await
    }

    /// A message to an existing task.
    pub(crate) async fn submit(
        &self,
        task_id: &str,
        submission: Submission,
    ) -> Result<Admitted, A2aError> {
        self.deliver(task_id, None, submission, false).await
    }

    /// Cancel a task (the service checked the caller may) and wait until
    /// its end is stored.
    pub(crate) async fn cancel(&self, task_id: &str, by: &str) -> Result<(), A2aError> {
        self.engine
            .cancel(task_id, format!("canceled by {by}"))
            .await
    }

    /// Task `task_id`'s events after stored event `after`.
    pub(crate) fn follow(&self, task_id: &str, after: u64) -> broadcast::Receiver<Sequenced> {
        side_channel::follow(
            Arc::clone(&self.store),
            Arc::clone(&self.side_channel),
            task_id.to_owned(),
            after,
            self.poll(),
        )
    }

    fn poll(&self) -> Duration {
        self.engine.options().poll_store_every
    }

    /// Deliver a message; answer when its sender wants: once its turn
    /// ended, or once it is accepted (with the turn's events for a sender
    /// that streams).
    async fn deliver(
        &self,
        task_id: &str,
        first: Option<TaskInput>,
        submission: Submission,
        one_shot: bool,
    ) -> Result<Admitted, A2aError> {
        let history_length = submission.history_length;
        let answering = submission.answering;
        let message_id = submission.message.message_id.clone();
        let envelope = Envelope {
            sender: submission.sender,
            kind: submission.class.kind(),
            message: submission.message,
        };
        // A resent message is answered as its turn left the task (looked up
        // only for a sender who would otherwise be answered earlier).
        let at_turn_end = answering == Answering::AtTurnEnd
            || (first.is_none() && self.holds(task_id, &message_id).await?);
        if at_turn_end {
            let answered = self.engine.send(task_id, first, envelope).await?;
            return finished(self.store.as_ref(), task_id, history_length, answered).await;
        }
        let engine = self.engine.clone();
        let id = task_id.to_owned();
        let mut update = tokio::spawn(async move { engine.send(&id, first, envelope).await });
        if let Some(answered) = self.accepted(task_id, &message_id, &mut update).await? {
            // The turn ended before the store was looked at again.
            return finished(self.store.as_ref(), task_id, history_length, answered).await;
        }
        let (record, task) = load(self.store.as_ref(), task_id, history_length).await?;
        let turn_over = record.state().ends_turn();
        let events = (answering == Answering::Streamed && !turn_over)
            .then(|| self.follow(task_id, record.seq));
        Ok(Admitted {
            task,
            seq: record.seq,
            events,
            done: answer_when_done(
                Arc::clone(&self.store),
                task_id.to_owned(),
                history_length,
                update,
            ),
            finished: turn_over,
            answer_watch: (one_shot && answering == Answering::Streamed)
                .then(AnswerWatch::at_turn_end),
        })
    }

    /// Whether the store holds message `message_id` in task `task_id`.
    async fn holds(&self, task_id: &str, message_id: &str) -> Result<bool, A2aError> {
        let stored = self
            .store
            .message(task_id.to_owned(), message_id.to_owned())
            .await
            .map_err(A2aError::from)?;
        Ok(stored.is_some())
    }

    /// Wait until the store holds the message (`None`: the workflow
    /// accepted it), or the Update ended first (its answer, or the
    /// workflow's refusal).
    async fn accepted(
        &self,
        task_id: &str,
        message_id: &str,
        update: &mut JoinHandle<Result<Answered, A2aError>>,
    ) -> Result<Option<Answered>, A2aError> {
        let mut changes = self.side_channel.changes();
        let mut tick = tokio::time::interval(self.poll());
        tick.set_missed_tick_behavior(MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                biased;
                answered = &mut *update => return joined(answered).map(Some),
                _ = changes.changed() => {}
                _ = tick.tick() => {}
            }
            if self.holds(task_id, message_id).await? {
                return Ok(None);
            }
        }
    }
}

/// The answer of a turn that ended.
async fn finished(
    store: &dyn TaskStore,
    task_id: &str,
    history_length: Option<i32>,
    answered: Answered,
) -> Result<Admitted, A2aError> {
    let (record, task) = load(store, task_id, history_length).await?;
    let (ended, done) = oneshot::channel();
    let _ = ended.send(Ok(reply(answered, task.clone())));
    Ok(Admitted {
        task,
        seq: record.seq,
        events: None,
        done,
        finished: true,
        answer_watch: None,
    })
}

/// The turn's answer once the Update that carries it ends.
fn answer_when_done(
    store: Arc<dyn TaskStore>,
    task_id: String,
    history_length: Option<i32>,
    update: JoinHandle<Result<Answered, A2aError>>,
) -> oneshot::Receiver<Result<TurnReply, A2aError>> {
    let (ended, done) = oneshot::channel();
    tokio::spawn(async move {
        let answer = async {
            let answered = joined(update.await)?;
            let (_, task) = load(store.as_ref(), &task_id, history_length).await?;
            Ok(reply(answered, task))
        };
        let _ = ended.send(answer.await);
    });
    done
}

/// Task `task_id` as the store holds it: its record (without history) to
/// decide with, and the task with the history its sender asked for, kept as
/// the store's text (see [`crate::a2a::types::History`]).
async fn load(
    store: &dyn TaskStore,
    task_id: &str,
    history_length: Option<i32>,
) -> Result<(TaskRecord, Rendered), A2aError> {
    let wanted = history_length.map(|n| usize::try_from(n).unwrap_or(0));
    let stored = store
        .load(task_id.to_owned(), wanted)
        .await
        .map_err(A2aError::from)?
        .ok_or_else(|| access::not_found(task_id))?;
    let (record, task) =
        TaskRecord::with_rendered(stored, history_length).map_err(A2aError::Internal)?;
    let history_len = record.history_len;
    Ok((record, Rendered { task, history_len }))
}

/// What the sender of a message whose turn ended gets.
fn reply(answered: Answered, rendered: Rendered) -> TurnReply {
    match answered {
        Answered::TurnEnded {
            direct_reply: Some(message),
        } => TurnReply::Message(message),
        Answered::TurnEnded { direct_reply: None } | Answered::Duplicate => {
            TurnReply::Task(rendered)
        }
    }
}

fn joined(
    outcome: Result<Result<Answered, A2aError>, tokio::task::JoinError>,
) -> Result<Answered, A2aError> {
    outcome
        .map_err(|error| A2aError::Internal(format!("the message's delivery failed: {error}")))?
}
