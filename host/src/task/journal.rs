//! A task's changes on their way to the store.
//!
//! The actor applies changes to its record at once (later decisions in the
//! same step see them) and notes each one here. Nothing leaves the actor
//! until the journal's write is committed: then, and only then, the events
//! are published, the hooks hear of state changes and senders get their
//! answers. So whatever anyone was told is in the store.

use super::events::Sequenced;
use super::state::{Applied, Change, Lifecycle, TaskRecord};
use super::transcript::Unstored;
use crate::a2a::error::A2aError;
use crate::a2a::types::{StreamResponse, TaskState, Timestamp};
use crate::store::{
    Created, Head, LogEntry, StoredArtifact, StoredEvent, StoredMessage, TaskWrite,
};

/// Changes applied to one record and not committed yet.
pub(crate) struct Journal {
    /// Set until the write that creates the task is committed.
    created: Option<Created>,
    entries: Vec<LogEntry>,
    events: Vec<Sequenced>,
    transitions: Vec<(TaskState, TaskState)>,
    status_changed: bool,
    participants_changed: bool,
    /// How much of the history (messages, counted from the first) and of
    /// the artifacts the store already has.
    history_stored: usize,
    artifacts_stored: usize,
}

/// What a commit lets the actor tell the world, in order.
pub(crate) struct Published {
    pub(crate) events: Vec<Sequenced>,
    pub(crate) transitions: Vec<(TaskState, TaskState)>,
    /// Whether this commit created the task.
    pub(crate) created: bool,
}

impl Journal {
    /// The journal of a task that is not stored yet: its first write creates
    /// it, as log entry 0.
    pub(crate) fn new_task(
        record: &TaskRecord,
        created_by: Option<String>,
    ) -> Result<Self, A2aError> {
        let parent_id = match &record.lifecycle {
            Lifecycle::Delegated { parent_id, .. } => Some(parent_id.clone()),
            Lifecycle::Conversation | Lifecycle::Task => None,
        };
        let mut journal = Journal::stored(record);
        journal.created = Some(Created {
            created_by,
            parent_id,
        });
        journal.participants_changed = true;
        journal.status_changed = true;
        journal.entries.push(LogEntry {
            position: 0,
            at_ms: now_ms(record),
            kind: "created".into(),
            document: to_json(record)?,
            event: None,
        });
        Ok(journal)
    }

    /// The journal of a task the store already holds as `record` is.
    pub(crate) fn stored(record: &TaskRecord) -> Self {
        Journal {
            created: None,
            entries: Vec::new(),
            events: Vec::new(),
            transitions: Vec::new(),
            status_changed: false,
            participants_changed: false,
            history_stored: record.history_len,
            artifacts_stored: record.artifacts.len(),
        }
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Apply `change` to `record` at `now` and note it.
    pub(crate) fn apply(
        &mut self,
        record: &mut TaskRecord,
        change: Change,
        now: Timestamp,
    ) -> Result<(), A2aError> {
        let kind = change.kind();
        let document = to_json(&change)?;
        let participants = matches!(change, Change::Participants(_));
        let before = record.changes;
        let Applied { event, transition } = record.apply(change, now);
        if record.changes == before {
            // Ignored (a change to a finished task): nothing to log.
            return Ok(());
        }
        let event = match event {
            Some(sequenced) => {
                let stored = StoredEvent {
                    seq: sequenced.seq,
                    document: to_json(sequenced.event.as_ref())?,
                };
                if matches!(*sequenced.event, StreamResponse::StatusUpdate(_)) {
                    self.status_changed = true;
                }
                self.events.push(sequenced);
                Some(stored)
            }
            None => None,
        };
        self.participants_changed |= participants;
        self.transitions.extend(transition);
        self.entries.push(LogEntry {
            position: record.changes,
            at_ms: now.unix_millis(),
            kind: kind.into(),
            document,
            event,
        });
        Ok(())
    }

    /// The messages of `record` not committed yet.
    pub(crate) fn unstored_messages(&self, record: &TaskRecord) -> Unstored {
        Unstored {
            messages: record.history[self.first_unstored(record)..].to_vec(),
            whole_history: self.history_stored == 0,
        }
    }

    /// Where the uncommitted messages start in `record`'s history: the
    /// record holds the newest messages, and those from `history_stored` on
    /// are new.
    fn first_unstored(&self, record: &TaskRecord) -> usize {
        let held_from = record.history_len - record.history.len();
        self.history_stored
            .saturating_sub(held_from)
            .min(record.history.len())
    }

    /// The store write for everything noted since the last commit.
    pub(crate) fn write(&self, record: &TaskRecord) -> Result<TaskWrite, A2aError> {
        let held_from = record.history_len - record.history.len();
        let new = self.first_unstored(record);
        let messages = record.history[new..]
            .iter()
            .zip(held_from + new..)
            .map(|(message, position)| {
                Ok(StoredMessage {
                    position: position as u64,
                    message_id: message.message_id.clone(),
                    document: to_json(message)?,
                })
            })
            .collect::<Result<_, A2aError>>()?;
        let artifacts = record.artifacts[self.artifacts_stored.min(record.artifacts.len())..]
            .iter()
            .zip(self.artifacts_stored..)
            .map(|(artifact, position)| {
                Ok(StoredArtifact {
                    position: position as u64,
                    document: to_json(artifact)?,
                })
            })
            .collect::<Result<_, A2aError>>()?;
        Ok(TaskWrite {
            task_id: record.id.clone(),
            created: self.created.clone(),
            head: Head {
                context_id: record.context_id.clone(),
                state: record.state().as_str().to_owned(),
                terminal: record.is_terminal(),
                active: record.is_active(),
                status_at_ms: record.status.timestamp.map_or(0, |t| t.unix_millis()),
                status_changed: self.status_changed,
                document: to_json(record)?,
            },
            entries: self.entries.clone(),
            messages,
            artifacts,
            participants: self
                .participants_changed
                .then(|| record.participants.iter().map(|p| p.id.clone()).collect()),
        })
    }

    /// The write was committed: start afresh and hand back what may now be
    /// told.
    pub(crate) fn committed(&mut self, record: &TaskRecord) -> Published {
        let created = self.created.is_some();
        let published = Published {
            events: std::mem::take(&mut self.events),
            transitions: std::mem::take(&mut self.transitions),
            created,
        };
        *self = Journal::stored(record);
        published
    }
}

/// The creation's time: the task's first status timestamp, or now.
fn now_ms(record: &TaskRecord) -> i64 {
    record
        .status
        .timestamp
        .unwrap_or_else(Timestamp::now)
        .unix_millis()
}

fn to_json<T: serde::Serialize>(value: &T) -> Result<String, A2aError> {
    serde_json::to_string(value).map_err(|error| {
        A2aError::Internal(format!("a task change could not be recorded: {error}"))
    })
}

#[cfg(test)]
/// Rebuild a task from its log: the creation, then every change at the
/// time it was recorded. The workflow's decisions depend only on this.
pub(crate) fn replay(entries: &[LogEntry]) -> Result<TaskRecord, String> {
    let (first, rest) = entries.split_first().ok_or("the log is empty")?;
    if first.kind != "created" {
        return Err(format!(
            "the log starts with `{}`, not `created`",
            first.kind
        ));
    }
    let mut record = TaskRecord::from_head(&first.document)?;
    for entry in rest {
        let change: Change = serde_json::from_str(&entry.document)
            .map_err(|error| format!("log entry {} is unreadable: {error}", entry.position))?;
        record.apply(change, Timestamp::from_unix_millis(entry.at_ms));
    }
    Ok(record)
}
