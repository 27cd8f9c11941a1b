//! What the SQLite store's writer has answered for but not yet committed
//! (the writes in its open transaction, made durable by the redo log), as
//! far as a read needs to know: which tasks they touch, each one's newest
//! head, and the message ids they add.
//!
//! Readers use their own connections, which see committed data only. A
//! read of a task with uncommitted writes runs on the writer's connection
//! instead (`sqlite::ReadOn`). The reads every `SendMessage` makes answer
//! from here when the task is uncommitted, and from the database
//! otherwise, so they never queue behind the writer: the task's head, and
//! the lookup of the message's id.
//!
//! The writer adds a batch's writes before it answers them and removes them
//! only once their commit returned, so a read that finds nothing here reads
//! a database that has everything answered before it looked.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError};

use super::TaskWrite;

#[derive(Default)]
pub(super) struct Uncommitted {
    /// Whether `state` holds anything: most reads only load this.
    any: AtomicBool,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    tasks: HashMap<String, Pending>,
    /// `(creator, first message id)` of uncommitted new tasks, to the task.
    started: HashMap<(String, String), String>,
}

/// One task's uncommitted writes.
struct Pending {
    /// The newest write's head.
    head: String,
    message_ids: HashSet<String>,
}

impl Uncommitted {
    /// `writes` are answered for before they are committed.
    pub(super) fn add<'a>(&self, writes: impl IntoIterator<Item = &'a TaskWrite>) {
        let mut state = self.state();
        for write in writes {
            let ids = write.messages.iter().map(|m| m.message_id.clone());
            match state.tasks.get_mut(&write.task_id) {
                Some(pending) => {
                    pending.head.clone_from(&write.head.document);
                    pending.message_ids.extend(ids);
                }
                None => {
                    let pending = Pending {
                        head: write.head.document.clone(),
                        message_ids: ids.collect(),
                    };
                    state.tasks.insert(write.task_id.clone(), pending);
                }
            }
            let creator = write.created.as_ref().and_then(|c| c.created_by.as_ref());
            if let (Some(creator), Some(first)) = (creator, write.messages.first()) {
                let key = (creator.clone(), first.message_id.clone());
                state.started.insert(key, write.task_id.clone());
            }
        }
        self.any.store(!state.tasks.is_empty(), Ordering::SeqCst);
    }

    /// Everything added is committed.
    pub(super) fn clear(&self) {
        let mut state = self.state();
        state.tasks.clear();
        state.started.clear();
        // A burst's maps do not stay at their largest.
        state.tasks.shrink_to(64);
        state.started.shrink_to(64);
        self.any.store(false, Ordering::SeqCst);
    }

    pub(super) fn any(&self) -> bool {
        self.any.load(Ordering::SeqCst)
    }

    /// Whether task `task_id` has uncommitted writes.
    pub(super) fn touches(&self, task_id: &str) -> bool {
        self.any() && self.state().tasks.contains_key(task_id)
    }

    /// The head task `task_id` has after its uncommitted writes.
    pub(super) fn head(&self, task_id: &str) -> Option<String> {
        if !self.any() {
            return None;
        }
        self.state().tasks.get(task_id).map(|p| p.head.clone())
    }

    /// Whether task `task_id` has an uncommitted message `message_id`.
    pub(super) fn has_message(&self, task_id: &str, message_id: &str) -> bool {
        self.any()
            && self
                .state()
                .tasks
                .get(task_id)
                .is_some_and(|pending| pending.message_ids.contains(message_id))
    }

    /// The uncommitted task `creator` started with message `message_id`.
    pub(super) fn started(&self, creator: &str, message_id: &str) -> Option<String> {
        if !self.any() {
            return None;
        }
        let key = (creator.to_owned(), message_id.to_owned());
        self.state().started.get(&key).cloned()
    }

    fn state(&self) -> MutexGuard<'_, State> {
        // Every update leaves the maps whole: a panic cannot tear them.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{Created, Head, StoredMessage};

    fn write(task: &str, created_by: Option<&str>, ids: &[&str]) -> TaskWrite {
        TaskWrite {
            task_id: task.into(),
            created: created_by.map(|by| Created {
                created_by: Some(by.into()),
                parent_id: None,
            }),
            head: Head {
                context_id: "c".into(),
                state: "TASK_STATE_WORKING".into(),
                terminal: false,
                active: true,
                status_at_ms: 1,
                status_changed: true,
                document: format!("{{\"messages\":{}}}", ids.len()),
            },
            entries: Vec::new(),
            messages: ids
                .iter()
                .enumerate()
                .map(|(position, id)| StoredMessage {
                    position: position as u64,
                    message_id: (*id).into(),
                    document: "{}".into(),
                })
                .collect(),
            artifacts: Vec::new(),
            participants: None,
        }
    }

    #[test]
    fn tasks_messages_and_first_messages_are_known_until_cleared() {
        let uncommitted = Uncommitted::default();
        assert!(!uncommitted.any());
        uncommitted.add([
            &write("t1", Some("alice"), &["hello"]),
            &write("t2", None, &["m1", "m2"]),
        ]);
        assert!(uncommitted.any());
        assert!(uncommitted.touches("t1") && uncommitted.touches("t2"));
        assert!(!uncommitted.touches("t3"));
        assert!(uncommitted.has_message("t2", "m2"));
        assert!(!uncommitted.has_message("t1", "m2"));
        assert_eq!(uncommitted.head("t2").as_deref(), Some(r#"{"messages":2}"#));
        // A later write of the task: its head is the newest, its ids join.
        uncommitted.add([&write("t2", None, &["m3", "m4", "m5"])]);
        assert_eq!(uncommitted.head("t2").as_deref(), Some(r#"{"messages":3}"#));
        assert!(uncommitted.has_message("t2", "m1") && uncommitted.has_message("t2", "m5"));
        assert_eq!(uncommitted.started("alice", "hello").as_deref(), Some("t1"));
        // A write that continues a task names no creator.
        assert_eq!(uncommitted.started("alice", "m1"), None);
        assert_eq!(uncommitted.started("bob", "hello"), None);
        uncommitted.clear();
        assert!(!uncommitted.any() && !uncommitted.touches("t1"));
        assert_eq!(uncommitted.head("t2"), None);
        assert_eq!(uncommitted.started("alice", "hello"), None);
    }
}
