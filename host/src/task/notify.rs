//! The `post` phases that run after the fact (`request.received`,
//! `task.created`, `task.state_changed`, `subtask.spawned`): once the change
//! is committed, in the order the task produced them, on a Tokio task of
//! their own so a slow executor never holds up the task. An abort or fault
//! is logged, never fatal: what they are told about already happened.

use tokio::sync::mpsc;

use crate::commands::Registries;
use crate::domain::{
    RequestContext, StateChangedContext, SubtaskSpawnedContext, TaskCreatedContext,
};
use crate::hooks::{ChainError, HookCall, HookChains, HookContext, HookPoint, Operation, Phase};

/// Something that happened to a task, for its `post` chain.
#[derive(Debug)]
pub(crate) enum Notification {
    Received(RequestContext),
    Created(TaskCreatedContext),
    StateChanged(StateChangedContext),
    Spawned(SubtaskSpawnedContext),
}

impl Notification {
    fn operation(&self) -> Operation {
        match self {
            Notification::Received(_) => RequestContext::OPERATION,
            Notification::Created(_) => TaskCreatedContext::OPERATION,
            Notification::StateChanged(_) => StateChangedContext::OPERATION,
            Notification::Spawned(_) => SubtaskSpawnedContext::OPERATION,
        }
    }

    async fn run(self, hooks: &HookChains, task_id: &str) -> Result<(), ChainError> {
        match self {
            Notification::Received(context) => post(hooks, task_id, context).await,
            Notification::Created(context) => post(hooks, task_id, context).await,
            Notification::StateChanged(context) => post(hooks, task_id, context).await,
            Notification::Spawned(context) => post(hooks, task_id, context).await,
        }
    }
}

async fn post<C: HookContext>(
    hooks: &HookChains,
    task_id: &str,
    context: C,
) -> Result<(), ChainError> {
    let point = HookPoint::new(C::OPERATION, Phase::Post);
    hooks
        .run_typed(HookCall::new(point, Some(task_id)), None, context)
        .await
        .map(drop)
}

/// One task's notification queue, started on its first notification that
/// has executors to run (most tasks never need one).
pub(crate) struct Notifier {
    registries: Registries,
    task_id: String,
    queue: Option<mpsc::UnboundedSender<Notification>>,
}

impl Notifier {
    pub(crate) fn new(registries: Registries, task_id: String) -> Self {
        Notifier {
            registries,
            task_id,
            queue: None,
        }
    }

    /// Queue `notification`'s `post` chain, if it has executors now.
    pub(crate) fn post(&mut self, notification: Notification) {
        let point = HookPoint::new(notification.operation(), Phase::Post);
        if self.queue.is_none() && !self.registries.current().hooks().has_entries(point, None) {
            return;
        }
        let queue = self
            .queue
            .get_or_insert_with(|| spawn_queue(self.registries.clone(), self.task_id.clone()));
        // Fails only when the queue's task is gone, i.e. the runtime is
        // shutting down.
        let _ = queue.send(notification);
    }
}

fn spawn_queue(registries: Registries, task_id: String) -> mpsc::UnboundedSender<Notification> {
    let (queue, mut pending) = mpsc::unbounded_channel::<Notification>();
    tokio::spawn(async move {
        while let Some(notification) = pending.recv().await {
            // Each notification runs on the generation current when it runs.
            let registry = registries.current();
            if let Err(error) = notification.run(registry.hooks(), &task_id).await {
                tracing::warn!(task = %task_id, %error, "notification hook failed");
            }
        }
    });
    queue
}
