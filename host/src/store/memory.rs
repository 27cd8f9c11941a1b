//! The store contract in memory: nothing survives the process. For tests,
//! benchmarks (the baseline the SQLite store is measured against) and
//! `[store] path = ":memory:"`.
//!
//! Every operation finishes under one lock, never held across an `.await`
//! (the futures it returns are already complete).

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::{Mutex, MutexGuard, PoisonError};

use super::{
    Created, ListPage, ListQuery, LogEntry, MessageLookup, PushConfigRecord, StoreError,
    StoreFuture, StoredArtifact, StoredEvent, StoredMessage, StoredPushConfig, StoredTask,
    TaskStore, TaskWrite,
};

/// Tasks in a map.
#[derive(Default)]
pub struct MemoryStore {
    tables: Mutex<Tables>,
}

#[derive(Default)]
struct Tables {
    tasks: HashMap<String, Row>,
    /// The last write revision handed out.
    revision: u64,
    /// (task, config) -> (document, delivered_seq).
    push_configs: BTreeMap<(String, String), (String, u64)>,
    /// (creator, id of the first message) -> task, for resent first messages.
    first_messages: HashMap<(String, String), String>,
}

struct Row {
    context_id: String,
    parent_id: Option<String>,
    created_by: Option<String>,
    state: String,
    terminal: bool,
    active: bool,
    status_at_ms: i64,
    status_rev: u64,
    write_rev: u64,
    head: String,
    log: Vec<LogEntry>,
    messages: Vec<StoredMessage>,
    /// The ids in `messages` and where each is, for deduplication and
    /// lookups without a scan.
    message_ids: HashMap<String, usize>,
    artifacts: Vec<StoredArtifact>,
    participants: Vec<String>,
}

impl MemoryStore {
    pub fn new() -> Self {
        MemoryStore::default()
    }

    fn tables(&self) -> MutexGuard<'_, Tables> {
        // Every operation checks before it changes anything, so a panic
        // cannot leave the tables half-written.
        self.tables.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

fn ready<'a, T: Send + 'a>(result: Result<T, StoreError>) -> StoreFuture<'a, T> {
    Box::pin(std::future::ready(result))
}

impl TaskStore for MemoryStore {
    fn commit(&self, writes: Vec<TaskWrite>) -> StoreFuture<'_, ()> {
        let mut tables = self.tables();
        let result = tables.check(&writes).map(|()| {
            for write in writes {
                tables.apply(write);
            }
        });
        ready(result)
    }

    fn load(&self, task_id: String, history: Option<usize>) -> StoreFuture<'_, Option<StoredTask>> {
        ready(Ok(self
            .tables()
            .tasks
            .get(&task_id)
            .map(|row| row.stored(history, true))))
    }

    fn head(&self, task_id: String) -> StoreFuture<'_, Option<String>> {
        ready(Ok(self
            .tables()
            .tasks
            .get(&task_id)
            .map(|row| row.head.clone())))
    }

    fn events_after(&self, task_id: String, after: u64) -> StoreFuture<'_, Vec<StoredEvent>> {
        let tables = self.tables();
        let events = tables.tasks.get(&task_id).map_or_else(Vec::new, |row| {
            row.log
                .iter()
                .filter_map(|entry| entry.event.clone())
                .filter(|event| event.seq > after)
                .collect()
        });
        ready(Ok(events))
    }

    fn log(&self, task_id: String) -> StoreFuture<'_, Vec<LogEntry>> {
        let tables = self.tables();
        ready(Ok(tables
            .tasks
            .get(&task_id)
            .map_or_else(Vec::new, |row| row.log.clone())))
    }

    fn list(&self, query: ListQuery) -> StoreFuture<'_, ListPage> {
        let tables = self.tables();
        let mut matching: Vec<&Row> = tables
            .tasks
            .values()
            .filter(|row| row.selected(&query))
            .collect();
        matching.sort_by_key(|row| std::cmp::Reverse(row.status_rev));
        let total = matching.len() as u64;
        let after_cursor = matching.into_iter().filter(|row| {
            query
                .before_revision
                .is_none_or(|before| row.status_rev < before)
        });
        let mut page: Vec<&Row> = after_cursor.take(query.limit.saturating_add(1)).collect();
        let more = page.len() > query.limit;
        page.truncate(query.limit);
        ready(Ok(ListPage {
            tasks: page
                .into_iter()
                .map(|row| row.stored(query.history, query.artifacts))
                .collect(),
            total,
            more,
        }))
    }

    fn find_message(&self, lookup: MessageLookup) -> StoreFuture<'_, Option<String>> {
        let tables = self.tables();
        let found = match lookup {
            MessageLookup::InTask {
                task_id,
                message_id,
            } => tables
                .tasks
                .get(&task_id)
                .filter(|row| row.message_ids.contains_key(&message_id))
                .map(|_| task_id),
            MessageLookup::Started {
                created_by,
                message_id,
            } => tables
                .first_messages
                .get(&(created_by, message_id))
                .cloned(),
        };
        ready(Ok(found))
    }

    fn message(&self, task_id: String, message_id: String) -> StoreFuture<'_, Option<String>> {
        let tables = self.tables();
        let found = tables.tasks.get(&task_id).and_then(|row| {
            let at = *row.message_ids.get(&message_id)?;
            Some(row.messages.get(at)?.document.clone())
        });
        ready(Ok(found))
    }

    fn recovery_candidates(&self) -> StoreFuture<'_, Vec<String>> {
        let tables = self.tables();
        let mut ids: Vec<String> = tables
            .tasks
            .iter()
            .filter(|(_, row)| row.active)
            .map(|(id, _)| id.clone())
            .collect();
        for row in tables.tasks.values().filter(|row| row.terminal) {
            let Some(parent_id) = &row.parent_id else {
                continue;
            };
            if let Some(parent) = tables.tasks.get(parent_id)
                && !parent.terminal
                && row.write_rev > parent.write_rev
                && !ids.contains(parent_id)
            {
                ids.push(parent_id.clone());
            }
        }
        ready(Ok(ids))
    }

    fn purge_terminal(&self, before_ms: i64) -> StoreFuture<'_, Vec<String>> {
        let mut tables = self.tables();
        let ended: Vec<String> = tables
            .tasks
            .iter()
            .filter(|(_, row)| row.terminal && row.status_at_ms < before_ms)
            .map(|(id, _)| id.clone())
            .collect();
        for id in &ended {
            if let Some(row) = tables.tasks.remove(id)
                && let (Some(creator), Some(first)) = (row.created_by, row.messages.first())
            {
                tables
                    .first_messages
                    .remove(&(creator, first.message_id.clone()));
            }
        }
        let gone: HashSet<&String> = ended.iter().collect();
        tables
            .push_configs
            .retain(|(task_id, _), _| !gone.contains(task_id));
        ready(Ok(ended))
    }

    fn put_push_config(&self, config: StoredPushConfig) -> StoreFuture<'_, u64> {
        let mut tables = self.tables();
        let latest = tables
            .tasks
            .get(&config.task_id)
            .and_then(|row| row.log.iter().rev().find_map(|entry| entry.event.as_ref()))
            .map_or(0, |event| event.seq);
        let entry = tables
            .push_configs
            .entry((config.task_id, config.config_id))
            .or_insert((String::new(), latest));
        entry.0 = config.document;
        ready(Ok(entry.1))
    }

    fn push_delivered(&self, task_id: String, config_id: String, seq: u64) -> StoreFuture<'_, ()> {
        if let Some((_, delivered)) = self.tables().push_configs.get_mut(&(task_id, config_id)) {
            *delivered = (*delivered).max(seq);
        }
        ready(Ok(()))
    }

    fn delete_push_config(&self, task_id: String, config_id: String) -> StoreFuture<'_, bool> {
        let removed = self
            .tables()
            .push_configs
            .remove(&(task_id, config_id))
            .is_some();
        ready(Ok(removed))
    }

    fn push_configs(&self) -> StoreFuture<'_, Vec<PushConfigRecord>> {
        let tables = self.tables();
        ready(Ok(tables
            .push_configs
            .iter()
            .map(
                |((task_id, config_id), (document, delivered_seq))| PushConfigRecord {
                    config: StoredPushConfig {
                        task_id: task_id.clone(),
                        config_id: config_id.clone(),
                        document: document.clone(),
                    },
                    delivered_seq: *delivered_seq,
                },
            )
            .collect()))
    }
}

impl Tables {
    /// Whether `writes` may all apply: created tasks are new, updated ones
    /// exist, and no message id repeats in a task.
    fn check(&self, writes: &[TaskWrite]) -> Result<(), StoreError> {
        let mut created = HashSet::new();
        // Message ids this batch adds, per task.
        let mut added: HashMap<&str, HashSet<&str>> = HashMap::new();
        for write in writes {
            let id = write.task_id.as_str();
            let exists = self.tasks.contains_key(id) || created.contains(id);
            match (&write.created, exists) {
                (Some(_), true) => return Err(conflict(format!("task {id} already exists"))),
                (None, false) => return Err(conflict(format!("task {id} does not exist"))),
                (Some(_), false) => {
                    created.insert(id);
                }
                (None, true) => {}
            }
            let stored = self.tasks.get(id).map(|row| &row.message_ids);
            let batch = added.entry(id).or_default();
            for message in &write.messages {
                let message_id = message.message_id.as_str();
                if stored.is_some_and(|ids| ids.contains_key(message_id))
                    || !batch.insert(message_id)
                {
                    return Err(conflict(format!(
                        "message {} is already in task {id}",
                        message.message_id
                    )));
                }
            }
        }
        Ok(())
    }

    fn apply(&mut self, write: TaskWrite) {
        self.revision += 1;
        let revision = self.revision;
        if let Some(Created {
            created_by: Some(creator),
            ..
        }) = &write.created
            && let Some(first) = write.messages.iter().find(|m| m.position == 0)
        {
            self.first_messages.insert(
                (creator.clone(), first.message_id.clone()),
                write.task_id.clone(),
            );
        }
        let head = write.head;
        let row = match write.created {
            Some(created) => self.tasks.entry(write.task_id).or_insert(Row {
                context_id: head.context_id.clone(),
                parent_id: created.parent_id,
                created_by: created.created_by,
                state: String::new(),
                terminal: false,
                active: false,
                status_at_ms: 0,
                status_rev: revision,
                write_rev: revision,
                head: String::new(),
                log: Vec::new(),
                messages: Vec::new(),
                message_ids: HashMap::new(),
                artifacts: Vec::new(),
                participants: Vec::new(),
            }),
            None => match self.tasks.get_mut(&write.task_id) {
                Some(row) => row,
                // `check` refused this already.
                None => return,
            },
        };
        row.state = head.state;
        row.terminal = head.terminal;
        row.active = head.active;
        row.status_at_ms = head.status_at_ms;
        if head.status_changed {
            row.status_rev = revision;
        }
        row.write_rev = revision;
        row.head = head.document;
        row.log.extend(write.entries);
        for message in write.messages {
            row.message_ids
                .insert(message.message_id.clone(), row.messages.len());
            row.messages.push(message);
        }
        row.artifacts.extend(write.artifacts);
        if let Some(participants) = write.participants {
            row.participants = participants;
        }
    }
}

impl Row {
    fn selected(&self, query: &ListQuery) -> bool {
        query
            .participant
            .as_ref()
            .is_none_or(|p| self.participants.contains(p))
            && query
                .context_id
                .as_ref()
                .is_none_or(|c| &self.context_id == c)
            && query.state.as_ref().is_none_or(|s| &self.state == s)
            && query
                .status_after_ms
                .is_none_or(|after| self.status_at_ms >= after)
    }

    fn stored(&self, history: Option<usize>, artifacts: bool) -> StoredTask {
        let skip = history.map_or(0, |n| self.messages.len().saturating_sub(n));
        StoredTask {
            head: self.head.clone(),
            history: self.messages[skip..]
                .iter()
                .map(|m| m.document.clone())
                .collect(),
            artifacts: if artifacts {
                self.artifacts.iter().map(|a| a.document.clone()).collect()
            } else {
                Vec::new()
            },
            revision: self.status_rev,
            history_len: self.messages.len() as u64,
        }
    }
}

fn conflict(message: String) -> StoreError {
    StoreError::Conflict(message)
}
