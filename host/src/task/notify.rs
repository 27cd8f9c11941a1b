//! Notification hooks (`task.created`, `task.state_changed`,
//! `subtask.spawned`): their `post` chains run after the fact, in the order
//! the task produced them, on a Tokio task of their own so a slow executor
//! never holds up the task. An abort or fault is logged, never fatal.

use serde_json::Value;
use tokio::sync::mpsc;

use crate::commands::Registries;
use crate::hooks::{HookCall, HookPoint, Operation, Phase};

/// One task's notification queue.
pub(crate) struct Notifier {
    queue: mpsc::UnboundedSender<(Operation, Value)>,
}

impl Notifier {
    /// Start the queue of task `task_id`; it ends when the notifier is dropped.
    pub(crate) fn spawn(registries: Registries, task_id: String) -> Self {
        let (queue, mut pending) = mpsc::unbounded_channel::<(Operation, Value)>();
        tokio::spawn(async move {
            while let Some((operation, context)) = pending.recv().await {
                let point = HookPoint::new(operation, Phase::Post);
                // Each notification runs on the generation current when it runs.
                let registry = registries.current();
                if let Err(error) = registry
                    .hooks()
                    .run(HookCall::new(point, Some(&task_id)), None, context)
                    .await
                {
                    tracing::warn!(task = %task_id, %point, %error, "notification hook failed");
                }
            }
        });
        Notifier { queue }
    }

    /// Queue `operation`'s `post` chain on `context`.
    pub(crate) fn post(&self, operation: Operation, context: Value) {
        // Fails only when the queue's task is gone, i.e. the runtime is
        // shutting down.
        let _ = self.queue.send((operation, context));
    }
}
