//! Where task records live: the seam a durable store replaces.
//!
//! In memory for now. Every change goes through [`TaskStore::apply`], which
//! stamps the time, applies it to the record under the lock and hands back
//! the event it produced; reads copy what they need out under a read lock.
//! The lock is never held across an `.await`. Only a task's own actor
//! applies changes to it, so a task's events are produced in one order.

use std::collections::HashMap;
use std::sync::{PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard};

use super::state::{Applied, Change, TaskRecord};
use crate::a2a::types::{StreamResponse, Timestamp};

#[derive(Default)]
pub(crate) struct TaskStore {
    tables: RwLock<Tables>,
}

#[derive(Default)]
struct Tables {
    tasks: HashMap<String, TaskRecord>,
    /// The last revision handed out; orders tasks by last status change.
    revision: u64,
}

impl Tables {
    fn next_revision(&mut self) -> u64 {
        self.revision += 1;
        self.revision
    }
}

impl TaskStore {
    pub(crate) fn insert(&self, mut record: TaskRecord) {
        let mut tables = self.write();
        record.revision = tables.next_revision();
        tables.tasks.insert(record.id.clone(), record);
    }

    /// Apply `change` to task `id`, stamped now. `None` if there is no such
    /// task.
    pub(crate) fn apply(&self, id: &str, change: Change) -> Option<Applied> {
        let mut tables = self.write();
        let revision = tables.next_revision();
        let record = tables.tasks.get_mut(id)?;
        let applied = record.apply(change, Timestamp::now());
        // Listing sorts by status timestamp (spec 3.1.4), so only a status
        // change moves a task up.
        if let Some(sequenced) = &applied.event
            && matches!(sequenced.event, StreamResponse::StatusUpdate(_))
        {
            record.revision = revision;
        }
        Some(applied)
    }

    /// Read task `id` with `read`; `None` if there is no such task.
    pub(crate) fn read<R>(&self, id: &str, read: impl FnOnce(&TaskRecord) -> R) -> Option<R> {
        self.read_lock().tasks.get(id).map(read)
    }

    /// Read every task with `read`.
    pub(crate) fn scan<R>(
        &self,
        read: impl FnOnce(&mut dyn Iterator<Item = &TaskRecord>) -> R,
    ) -> R {
        let tables = self.read_lock();
        read(&mut tables.tasks.values())
    }

    // A poisoned lock means a panic while applying a change; the record may
    // be half-changed, but refusing every later request would be worse.
    fn read_lock(&self) -> RwLockReadGuard<'_, Tables> {
        self.tables.read().unwrap_or_else(PoisonError::into_inner)
    }

    fn write(&self) -> RwLockWriteGuard<'_, Tables> {
        self.tables.write().unwrap_or_else(PoisonError::into_inner)
    }
}
