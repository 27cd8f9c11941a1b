//! The SQLite store's log and history: a commit's log entries as one row of
//! `commits`, its messages as one row of `history`, each a JSON array, and
//! the reads that walk them.
//!
//! Why rows per commit: a follow-up adds about five log entries and two
//! messages. As a row each in tables keyed by `(task, position)`, every
//! commit inserted into the middle of three B-trees, where a leaf fills and
//! splits every few commits (SQLite's `balance_nonroot` rewrites three
//! siblings and their parent), and log rows over a kilobyte spilled to
//! overflow pages of their own: 15.8 WAL pages per follow-up. The log is
//! written far more than read, so its row is appended at the end of
//! `commits`, in commit order, and found through a small index. The
//! history is read with nearly every answer, so its rows stay together by
//! task: a conversation's 200 messages are a dozen neighbouring pages, not
//! a hundred pages scattered between other tasks' commits. Together 11
//! WAL pages per follow-up.
//!
//! The documents are JSON (the store's contract), so they are embedded as
//! they are, not escaped: a row reads back with `sqlite3` and its JSON
//! functions, and a document comes back byte for byte as it was written.

use std::cell::Cell;

use rusqlite::{Connection, OptionalExtension, params};
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

use super::{LogEntry, StoredEvent, StoredMessage};

/// The bytes a read may still return: a read of the history stops early
/// once it has spent them, and whoever gave the budget reads again without
/// one (`sqlite::SqliteStore::read_small`).
pub(super) struct Budget {
    left: Cell<usize>,
    exhausted: Cell<bool>,
}

impl Budget {
    pub(super) fn unbounded() -> Self {
        Self::bytes(usize::MAX)
    }

    pub(super) fn bytes(bytes: usize) -> Self {
        Budget {
            left: Cell::new(bytes),
            exhausted: Cell::new(false),
        }
    }

    /// Spend `bytes`; `false` (and from then on [`Budget::exhausted`]) if
    /// there were not that many left.
    pub(super) fn spend(&self, bytes: usize) -> bool {
        match self.left.get().checked_sub(bytes) {
            Some(left) => {
                self.left.set(left);
                true
            }
            None => {
                self.exhausted.set(true);
                false
            }
        }
    }

    /// Whether a read stopped short for want of bytes: its answer is not whole.
    pub(super) fn exhausted(&self) -> bool {
        self.exhausted.get()
    }
}

/// Append a row of `entries` to the log and a row of `messages` to the
/// history of task `task_id` (each only if there are any), and index the
/// messages' ids (a repeated id is a constraint violation). Returns the
/// newest event among the entries.
pub(super) fn append(
    connection: &Connection,
    task_id: &str,
    entries: &[LogEntry],
    messages: &[StoredMessage],
) -> rusqlite::Result<Option<u64>> {
    let last_event = entries
        .iter()
        .filter_map(|e| e.event.as_ref())
        .map(|e| e.seq)
        .max();
    if !entries.is_empty() {
        let (array, events_from) = encode_entries(entries).map_err(refused)?;
        connection
            .prepare_cached(
                "INSERT INTO commits (task_id, events_from, entries) VALUES (?1, ?2, ?3)",
            )?
            .execute(params![task_id, events_from.map(int), array])?;
    }
    if let Some(first) = messages.first() {
        let (array, ends) = encode_messages(messages).map_err(refused)?;
        let first_position = int(first.position);
        connection
            .prepare_cached(
                "INSERT INTO history (task_id, first_position, messages, message_ends)
                 VALUES (?1, ?2, ?3, ?4)",
            )?
            .execute(params![task_id, first_position, array, ends])?;
        let mut ids = connection.prepare_cached(
            "INSERT INTO message_ids (task_id, message_id, position, first_position)
             VALUES (?1, ?2, ?3, ?4)",
        )?;
        for message in messages {
            ids.execute(params![
                task_id,
                message.message_id,
                int(message.position),
                first_position
            ])?;
        }
    }
    Ok(last_event)
}

/// The newest `limit` messages of task `task_id` (all when `None`), newest
/// first, reading its history rows back from the newest.
pub(super) fn newest_messages(
    connection: &Connection,
    task_id: &str,
    limit: Option<usize>,
    budget: &Budget,
) -> rusqlite::Result<Vec<String>> {
    let mut newest = Vec::new();
    if limit == Some(0) {
        return Ok(newest);
    }
    let mut statement = connection.prepare_cached(NEWEST_MESSAGES_FIRST)?;
    let mut rows = statement.query([task_id])?;
    while let Some(row) = rows.next()? {
        let array = row.get_ref(0)?.as_str()?;
        if !budget.spend(array.len()) {
            return Ok(newest);
        }
        let ends = row.get_ref(1)?.as_str()?;
        let documents = decode_messages(array, ends).map_err(unreadable)?;
        for document in documents.into_iter().rev() {
            newest.push(document.to_owned());
            if limit.is_some_and(|limit| newest.len() >= limit) {
                return Ok(newest);
            }
        }
    }
    Ok(newest)
}

/// A task's history rows, from the newest back.
pub(super) const NEWEST_MESSAGES_FIRST: &str = "SELECT messages, message_ends FROM history
     WHERE task_id = ?1 ORDER BY first_position DESC";

/// The events of task `task_id` numbered above `after`, oldest first: its
/// commits walked back from the newest until one holds an event at or
/// below `after`, reading only what is returned (and the commits without
/// an event between).
pub(super) fn events_after(
    connection: &Connection,
    task_id: &str,
    after: u64,
) -> rusqlite::Result<Vec<StoredEvent>> {
    let mut statement = connection.prepare_cached(NEWEST_EVENTS_FIRST)?;
    let mut rows = statement.query([task_id])?;
    let mut newest_first = Vec::new();
    while let Some(row) = rows.next()? {
        let Some(events_from) = row.get::<_, Option<i64>>(0)?.map(uint) else {
            continue;
        };
        let array = row.get_ref(1)?.as_str()?;
        let events = decode_events(array).map_err(unreadable)?;
        newest_first.extend(events.into_iter().rev().filter(|event| event.seq > after));
        if events_from <= after {
            break;
        }
    }
    newest_first.reverse();
    Ok(newest_first)
}

/// A task's commits from the newest back, for their events.
pub(super) const NEWEST_EVENTS_FIRST: &str = "SELECT events_from, entries FROM commits
     WHERE task_id = ?1 ORDER BY seq DESC";

/// Every log entry of task `task_id`, in order.
pub(super) fn log(connection: &Connection, task_id: &str) -> rusqlite::Result<Vec<LogEntry>> {
    let mut statement =
        connection.prepare_cached("SELECT entries FROM commits WHERE task_id = ?1 ORDER BY seq")?;
    let mut rows = statement.query([task_id])?;
    let mut log = Vec::new();
    while let Some(row) = rows.next()? {
        log.extend(decode_entries(row.get_ref(0)?.as_str()?).map_err(unreadable)?);
    }
    Ok(log)
}

/// Message `message_id` of task `task_id`, as it was written.
pub(super) fn message(
    connection: &Connection,
    task_id: &str,
    message_id: &str,
    budget: &Budget,
) -> rusqlite::Result<Option<String>> {
    let found: Option<(i64, i64, String, String)> = connection
        .prepare_cached(
            "SELECT i.position - h.first_position, h.first_position, h.messages, h.message_ends
             FROM message_ids i
             JOIN history h ON h.task_id = i.task_id AND h.first_position = i.first_position
             WHERE i.task_id = ?1 AND i.message_id = ?2",
        )?
        .query_row([task_id, message_id], |row| {
            Ok((row.get(0)?, row.get(1)?, row.get(2)?, row.get(3)?))
        })
        .optional()?;
    let Some((index, row, array, ends)) = found else {
        return Ok(None);
    };
    if !budget.spend(array.len()) {
        return Ok(None);
    }
    let documents = decode_messages(&array, &ends).map_err(unreadable)?;
    let document = usize::try_from(index)
        .ok()
        .and_then(|index| documents.get(index));
    match document {
        Some(document) => Ok(Some((*document).to_owned())),
        None => Err(unreadable(RecordError::Missing { row, index })),
    }
}

/// A write the store refuses on its own (a document that is not JSON,
/// positions with a gap), as a constraint violation: it fails alone, as a
/// conflict, and changes nothing.
fn refused(error: RecordError) -> rusqlite::Error {
    rusqlite::Error::SqliteFailure(
        rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_CONSTRAINT),
        Some(error.to_string()),
    )
}

fn unreadable(error: RecordError) -> rusqlite::Error {
    rusqlite::Error::FromSqlConversionFailure(0, rusqlite::types::Type::Text, Box::new(error))
}

/// SQLite integers are signed; positions never get near the limit.
fn int(value: u64) -> i64 {
    i64::try_from(value).unwrap_or(i64::MAX)
}

fn uint(value: i64) -> u64 {
    u64::try_from(value).unwrap_or(0)
}

/// Why a stream could not be encoded or decoded.
#[derive(Debug, thiserror::Error)]
pub(super) enum RecordError {
    #[error("{what} is not JSON: {source}")]
    NotJson {
        what: String,
        source: serde_json::Error,
    },
    #[error("the {stream} of a commit do not follow on from each other at position {position}")]
    Gap { stream: &'static str, position: u64 },
    #[error("a stored commit cannot be read: {0}")]
    Unreadable(serde_json::Error),
    #[error("a stored commit's message offsets do not cut its messages")]
    Ends,
    #[error(
        "the history row from position {row} has no message at index {index}, where its id points"
    )]
    Missing { row: i64, index: i64 },
}

/// One log entry in a commit's `entries` array.
#[derive(Serialize, Deserialize)]
struct EntryRecord<'a> {
    position: u64,
    at_ms: i64,
    #[serde(borrow)]
    kind: std::borrow::Cow<'a, str>,
    #[serde(borrow)]
    change: &'a RawValue,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    event_seq: Option<u64>,
    #[serde(borrow, default, skip_serializing_if = "Option::is_none")]
    event: Option<&'a RawValue>,
}

/// A commit's log entries as one JSON array, with the lowest event number
/// among them (`None` when none has an event). Their positions must follow
/// on from each other.
fn encode_entries(entries: &[LogEntry]) -> Result<(String, Option<u64>), RecordError> {
    consecutive("log entries", entries.iter().map(|entry| entry.position))?;
    let records = entries
        .iter()
        .map(|entry| {
            let what = || format!("log entry {}", entry.position);
            Ok(EntryRecord {
                position: entry.position,
                at_ms: entry.at_ms,
                kind: entry.kind.as_str().into(),
                change: json(&entry.document, what)?,
                event_seq: entry.event.as_ref().map(|event| event.seq),
                event: match &entry.event {
                    Some(event) => Some(json(&event.document, what)?),
                    None => None,
                },
            })
        })
        .collect::<Result<Vec<_>, RecordError>>()?;
    let events_from = entries
        .iter()
        .filter_map(|e| e.event.as_ref())
        .map(|e| e.seq)
        .min();
    Ok((to_string(&records)?, events_from))
}

/// A commit's messages (their documents) as one JSON array, and where in
/// it each document ends (byte offsets, comma-separated): a read slices the
/// documents out without parsing them. Their positions must follow on from
/// each other; the first is kept beside them.
fn encode_messages(messages: &[StoredMessage]) -> Result<(String, String), RecordError> {
    consecutive("messages", messages.iter().map(|m| m.position))?;
    let length: usize = messages.iter().map(|m| m.document.len() + 1).sum();
    let mut array = String::with_capacity(length + 1);
    let mut ends = String::new();
    for message in messages {
        json(&message.document, || {
            format!("message {}", message.message_id)
        })?;
        array.push(if array.is_empty() { '[' } else { ',' });
        array.push_str(&message.document);
        if !ends.is_empty() {
            ends.push(',');
        }
        ends.push_str(&array.len().to_string());
    }
    array.push(']');
    Ok((array, ends))
}

/// Every log entry of an `entries` array, in order.
fn decode_entries(array: &str) -> Result<Vec<LogEntry>, RecordError> {
    let records: Vec<EntryRecord<'_>> =
        serde_json::from_str(array).map_err(RecordError::Unreadable)?;
    Ok(records
        .into_iter()
        .map(|record| LogEntry {
            position: record.position,
            at_ms: record.at_ms,
            kind: record.kind.into_owned(),
            document: record.change.get().to_owned(),
            event: record
                .event_seq
                .zip(record.event)
                .map(|(seq, event)| StoredEvent {
                    seq,
                    document: event.get().to_owned(),
                }),
        })
        .collect())
}

/// The events of an `entries` array, in order, without the rest of each
/// entry.
fn decode_events(array: &str) -> Result<Vec<StoredEvent>, RecordError> {
    let records: Vec<EntryRecord<'_>> =
        serde_json::from_str(array).map_err(RecordError::Unreadable)?;
    Ok(records
        .into_iter()
        .filter_map(|record| record.event_seq.zip(record.event))
        .map(|(seq, event)| StoredEvent {
            seq,
            document: event.get().to_owned(),
        })
        .collect())
}

/// The message documents of a `messages` array, in order, as the text
/// they were written as, cut where `ends` says.
fn decode_messages<'a>(array: &'a str, ends: &str) -> Result<Vec<&'a str>, RecordError> {
    let mut start = 1;
    ends.split(',')
        .map(|end| {
            let end: usize = end.parse().map_err(|_| RecordError::Ends)?;
            let document = array.get(start..end).ok_or(RecordError::Ends)?;
            start = end + 1;
            Ok(document)
        })
        .collect()
}

fn json(document: &str, what: impl FnOnce() -> String) -> Result<&RawValue, RecordError> {
    serde_json::from_str(document).map_err(|source| RecordError::NotJson {
        what: what(),
        source,
    })
}

fn to_string(value: &impl Serialize) -> Result<String, RecordError> {
    serde_json::to_string(value).map_err(RecordError::Unreadable)
}

fn consecutive(
    stream: &'static str,
    mut positions: impl Iterator<Item = u64>,
) -> Result<(), RecordError> {
    let Some(mut last) = positions.next() else {
        return Ok(());
    };
    for position in positions {
        if Some(position) != last.checked_add(1) {
            return Err(RecordError::Gap { stream, position });
        }
        last = position;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(position: u64, event: Option<(u64, &str)>) -> LogEntry {
        LogEntry {
            position,
            at_ms: 7,
            kind: "status".into(),
            document: "{\"state\": \"working\"}".into(),
            event: event.map(|(seq, document)| StoredEvent {
                seq,
                document: document.into(),
            }),
        }
    }

    #[test]
    fn entries_read_back_byte_for_byte_with_their_lowest_event() {
        let entries = vec![
            entry(3, None),
            entry(4, Some((2, "{ \"seq\" : 2 }"))),
            entry(5, Some((3, "[1, 2]"))),
        ];
        let (array, events_from) = encode_entries(&entries).expect("encodes");
        assert_eq!(events_from, Some(2));
        assert_eq!(decode_entries(&array).expect("decodes"), entries);
        let events = decode_events(&array).expect("decodes");
        assert_eq!(
            events
                .iter()
                .map(|e| (e.seq, e.document.as_str()))
                .collect::<Vec<_>>(),
            [(2, "{ \"seq\" : 2 }"), (3, "[1, 2]")]
        );
    }

    #[test]
    fn messages_read_back_as_their_text() {
        let messages = [(4, "{\"messageId\": \"a\"}"), (5, "{\"messageId\":\"b\"}")].map(
            |(position, document)| StoredMessage {
                position,
                message_id: "x".into(),
                document: document.into(),
            },
        );
        let (array, ends) = encode_messages(&messages).expect("encodes");
        let parsed: Vec<serde_json::Value> = serde_json::from_str(&array).expect("a JSON array");
        assert_eq!(parsed.len(), 2);
        let read = decode_messages(&array, &ends).expect("decodes");
        assert_eq!(read, ["{\"messageId\": \"a\"}", "{\"messageId\":\"b\"}"]);
        assert!(matches!(
            decode_messages(&array, "999"),
            Err(RecordError::Ends)
        ));
    }

    #[test]
    fn a_document_that_is_not_json_or_a_gap_in_positions_is_refused() {
        let mut broken = entry(0, None);
        broken.document = "{\"unterminated\": ".into();
        assert!(matches!(
            encode_entries(&[broken]),
            Err(RecordError::NotJson { .. })
        ));
        assert!(matches!(
            encode_entries(&[entry(0, None), entry(2, None)]),
            Err(RecordError::Gap { position: 2, .. })
        ));
        assert!(matches!(
            decode_entries("[{\"position\": 1}"),
            Err(RecordError::Unreadable(_))
        ));
    }
}
