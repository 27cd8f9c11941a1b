//! The SQLite tables.
//!
//! * `tasks`: one row per task, the snapshot (`head`) and the columns
//!   listings, recovery and retention search by (`active`: a turn is
//!   running or due, so a restart must pick the task up). Two counters order writes:
//!   `status_rev` moves on status changes only (ListTasks order and cursor),
//!   `write_rev` on every write (recovery compares a parent's with its
//!   sub-tasks' to find a sub-task result the parent may have missed).
//!   `log_len` and `history_len` say where the next log entry and message
//!   go: a write that does not continue them (a step stored twice) is a
//!   conflict. `event_seq` is the newest event's number (where a new
//!   webhook starts), `first_message_id` finds a resent first message.
//! * `commits`: the append-only log, one row per commit (see `commits`):
//!   its log entries with the stream events they produced (replayed to a
//!   lagging or returning subscriber). Rows are numbered in commit order
//!   (`seq`) and appended at the table's end, so a commit writes one page
//!   there, not a page in the middle of a B-tree per entry; a task's newest
//!   events are read by walking `commits_by_task` back from its end.
//! * `history`: the messages, one row per commit and task, keyed by task and
//!   the first message's position, so a task's history is read from a few
//!   neighbouring pages.
//! * `message_ids`: each message's id, position and `history` row; its key
//!   is the last line of defence against applying a message twice.
//! * `artifacts`: a task's artifacts, read whole with the task.
//! * `participants`: who may see a task, so ListTasks finds a caller's tasks
//!   by index.
//! * `push_configs`: push-notification configurations, each with the number
//!   of the last event delivered to it (`delivered_seq`): the log is the
//!   outbox, and a restart resends what comes after.
//! * `counters`: the last write revision, kept there only while several
//!   processes share the store, and the number of the last redo log record
//!   the database has (`redo_applied`, see `redo`).
//!
//! The version is `PRAGMA user_version`; a newer one than this build knows
//! is refused rather than misread, an older one is upgraded in place:
//!
//! * 1 -> 2: `push_configs.delivered_seq`, set to each task's latest event
//!   (what a version 1 database delivered is not known; resending a whole
//!   history would be worse than missing what was in flight).
//! * 2 -> 3: `messages_first` replaces `messages_by_id`. A resent first
//!   message is looked up by id among first messages only (a resend to an
//!   existing task goes through the `(task_id, message_id)` key), so an
//!   index of every message's id was one more B-tree written per message
//!   for lookups that only ever wanted position 0.
//! * 3 -> 4: `counters`, the last write revision handed out, for a store
//!   several processes write (`SqliteOptions::shared`): each of their
//!   transactions takes the next revisions from it. A store one process
//!   owns keeps the counter in memory and leaves the row alone, so a shared
//!   open first brings it up to the tasks' highest revision.
//! * 4 -> 5: `task_log_events` dropped. Events are numbered in log order, so
//!   the events after a number are read by walking the log back from its end;
//!   the index was one more B-tree page written by nearly every commit.
//! * 5 -> 6: `task_log` and `messages` (a row per entry and per message,
//!   keyed by task and position) become `commits`, `history` and
//!   `message_ids`; their rows are moved over in chunks of
//!   [`MIGRATED_CHUNK`] entries or messages.

use rusqlite::Connection;

use super::commits;
use super::{LogEntry, StoredEvent, StoredMessage};

/// The schema version this build writes.
pub(super) const VERSION: i64 = 6;

const TABLES: &str = "
CREATE TABLE IF NOT EXISTS tasks (
    id               TEXT PRIMARY KEY,
    context_id       TEXT NOT NULL,
    parent_id        TEXT,
    created_by       TEXT,
    state            TEXT NOT NULL,
    terminal         INTEGER NOT NULL,
    active           INTEGER NOT NULL,
    status_at_ms     INTEGER NOT NULL,
    status_rev       INTEGER NOT NULL,
    write_rev        INTEGER NOT NULL,
    head             TEXT NOT NULL,
    first_message_id TEXT,
    log_len          INTEGER NOT NULL DEFAULT 0,
    history_len      INTEGER NOT NULL DEFAULT 0,
    event_seq        INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS tasks_by_status_rev ON tasks (status_rev);
CREATE INDEX IF NOT EXISTS tasks_by_context ON tasks (context_id, status_rev);
CREATE INDEX IF NOT EXISTS tasks_by_state ON tasks (state);
CREATE INDEX IF NOT EXISTS tasks_active ON tasks (id) WHERE active = 1;
CREATE INDEX IF NOT EXISTS tasks_by_parent ON tasks (parent_id) WHERE parent_id IS NOT NULL;
CREATE INDEX IF NOT EXISTS tasks_ended ON tasks (status_at_ms) WHERE terminal = 1;

CREATE TABLE IF NOT EXISTS artifacts (
    task_id  TEXT NOT NULL,
    position INTEGER NOT NULL,
    document TEXT NOT NULL,
    PRIMARY KEY (task_id, position)
) WITHOUT ROWID;

CREATE TABLE IF NOT EXISTS participants (
    task_id        TEXT NOT NULL,
    participant_id TEXT NOT NULL,
    PRIMARY KEY (task_id, participant_id)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS participants_by_id ON participants (participant_id, task_id);

CREATE TABLE IF NOT EXISTS push_configs (
    task_id       TEXT NOT NULL,
    config_id     TEXT NOT NULL,
    document      TEXT NOT NULL,
    delivered_seq INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (task_id, config_id)
) WITHOUT ROWID;
";

/// The tables of version 5 that version 6 replaces, for tests that write
/// an older database.
#[cfg(test)]
pub(super) const LEGACY_TABLES: &str = "
CREATE TABLE IF NOT EXISTS task_log (
    task_id   TEXT NOT NULL,
    position  INTEGER NOT NULL,
    at_ms     INTEGER NOT NULL,
    kind      TEXT NOT NULL,
    change    TEXT NOT NULL,
    event_seq INTEGER,
    event     TEXT,
    PRIMARY KEY (task_id, position)
) WITHOUT ROWID;

CREATE TABLE IF NOT EXISTS messages (
    task_id    TEXT NOT NULL,
    position   INTEGER NOT NULL,
    message_id TEXT NOT NULL,
    document   TEXT NOT NULL,
    PRIMARY KEY (task_id, position),
    UNIQUE (task_id, message_id)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS messages_first ON messages (message_id) WHERE position = 0;
";

/// Version 6: the log one row per commit, the history one row per commit
/// and task.
const COMMITS: &str = "
CREATE TABLE IF NOT EXISTS commits (
    seq         INTEGER PRIMARY KEY,
    task_id     TEXT NOT NULL,
    events_from INTEGER,
    entries     TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS commits_by_task ON commits (task_id);

CREATE TABLE IF NOT EXISTS history (
    task_id        TEXT NOT NULL,
    first_position INTEGER NOT NULL,
    messages       TEXT NOT NULL,
    message_ends   TEXT NOT NULL,
    PRIMARY KEY (task_id, first_position)
) WITHOUT ROWID;

CREATE TABLE IF NOT EXISTS message_ids (
    task_id        TEXT NOT NULL,
    message_id     TEXT NOT NULL,
    position       INTEGER NOT NULL,
    first_position INTEGER NOT NULL,
    PRIMARY KEY (task_id, message_id)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS tasks_by_first_message ON tasks (first_message_id)
    WHERE first_message_id IS NOT NULL;
";

/// Version 5 to 6, before the rows move: the task columns that replace
/// reading the log and the history for their ends.
const TASK_ENDS: &str = "
ALTER TABLE tasks ADD COLUMN first_message_id TEXT;
ALTER TABLE tasks ADD COLUMN log_len INTEGER NOT NULL DEFAULT 0;
ALTER TABLE tasks ADD COLUMN history_len INTEGER NOT NULL DEFAULT 0;
ALTER TABLE tasks ADD COLUMN event_seq INTEGER NOT NULL DEFAULT 0;
UPDATE tasks SET
    first_message_id = (SELECT message_id FROM messages WHERE task_id = tasks.id AND position = 0),
    log_len = COALESCE((SELECT MAX(position) + 1 FROM task_log WHERE task_id = tasks.id), 0),
    history_len = COALESCE((SELECT MAX(position) + 1 FROM messages WHERE task_id = tasks.id), 0),
    event_seq = COALESCE((SELECT MAX(event_seq) FROM task_log WHERE task_id = tasks.id), 0);
";

/// Version 5 to 6, once the rows moved.
const LEGACY_DROPPED: &str = "DROP TABLE task_log; DROP TABLE messages;";

/// Version 1 to 2: delivery cursors.
const DELIVERY_CURSORS: &str = "
ALTER TABLE push_configs ADD COLUMN delivered_seq INTEGER NOT NULL DEFAULT 0;
UPDATE push_configs SET delivered_seq = (
    SELECT COALESCE(MAX(event_seq), 0) FROM task_log
    WHERE task_log.task_id = push_configs.task_id
);
";

/// Version 2 to 3: only first messages are looked up by id alone.
const FIRST_MESSAGES: &str = "
DROP INDEX IF EXISTS messages_by_id;
CREATE INDEX IF NOT EXISTS messages_first ON messages (message_id) WHERE position = 0;
";

/// Version 3 to 4 (and part of a new database): the shared revision counter.
const COUNTERS: &str = "
CREATE TABLE IF NOT EXISTS counters (
    name  TEXT PRIMARY KEY,
    value INTEGER NOT NULL
) WITHOUT ROWID;
INSERT OR IGNORE INTO counters (name, value)
    SELECT 'write_rev', COALESCE(MAX(write_rev), 0) FROM tasks;
";

/// Version 4 to 5: the log's events are found through its primary key.
const LOG_EVENTS_UNINDEXED: &str = "DROP INDEX IF EXISTS task_log_events;";

/// How many log entries, and how many messages, one row moved from version
/// 5 holds.
pub(super) const MIGRATED_CHUNK: usize = 16;

/// Create the tables in a new database, upgrade an older one; refuse a
/// database from a newer version.
pub(super) fn migrate(connection: &Connection) -> Result<(), String> {
    let found: i64 = connection
        .query_row("PRAGMA user_version", [], |row| row.get(0))
        .map_err(|error| error.to_string())?;
    if found > VERSION {
        return Err(format!(
            "the database has schema version {found}, newer than this build's {VERSION}; \
             run a newer tiny-harness or point [store] path at another file"
        ));
    }
    if found == VERSION {
        return Ok(());
    }
    // A fresh database gets the current tables at once; an older one is
    // upgraded step by step, all in one transaction.
    let upgrade = || -> rusqlite::Result<()> {
        connection.execute_batch("BEGIN IMMEDIATE")?;
        match found {
            0 => connection.execute_batch(&format!("{TABLES} {COUNTERS} {COMMITS}"))?,
            _ => {
                let earlier = match found {
                    1 => format!(
                        "{DELIVERY_CURSORS} {FIRST_MESSAGES} {COUNTERS} {LOG_EVENTS_UNINDEXED}"
                    ),
                    2 => format!("{FIRST_MESSAGES} {COUNTERS} {LOG_EVENTS_UNINDEXED}"),
                    3 => format!("{COUNTERS} {LOG_EVENTS_UNINDEXED}"),
                    4 => LOG_EVENTS_UNINDEXED.to_owned(),
                    _ => String::new(),
                };
                connection.execute_batch(&format!("{earlier} {TASK_ENDS} {COMMITS}"))?;
                move_to_commits(connection)?;
                connection.execute_batch(LEGACY_DROPPED)?;
            }
        }
        connection.execute_batch(&format!("PRAGMA user_version = {VERSION}; COMMIT;"))
    };
    upgrade().map_err(|error| {
        let _ = connection.execute_batch("ROLLBACK");
        format!("upgrading the database from schema version {found} to {VERSION}: {error}")
    })
}

/// Version 5 to 6: every task's log entries into `commits` and its messages
/// into `history`, [`MIGRATED_CHUNK`] to a row.
fn move_to_commits(connection: &Connection) -> rusqlite::Result<()> {
    let tasks: Vec<String> = connection
        .prepare("SELECT task_id FROM task_log UNION SELECT task_id FROM messages")?
        .query_map([], |row| row.get(0))?
        .collect::<rusqlite::Result<_>>()?;
    let mut log = connection.prepare(
        "SELECT position, at_ms, kind, change, event_seq, event FROM task_log
         WHERE task_id = ?1 ORDER BY position",
    )?;
    let mut history = connection.prepare(
        "SELECT position, message_id, document FROM messages WHERE task_id = ?1 ORDER BY position",
    )?;
    for task in tasks {
        let entries: Vec<LogEntry> = log
            .query_map([&task], |row| {
                let seq: Option<i64> = row.get(4)?;
                let event: Option<String> = row.get(5)?;
                Ok(LogEntry {
                    position: row.get::<_, i64>(0)?.try_into().unwrap_or(0),
                    at_ms: row.get(1)?,
                    kind: row.get(2)?,
                    document: row.get(3)?,
                    event: seq.zip(event).map(|(seq, document)| StoredEvent {
                        seq: seq.try_into().unwrap_or(0),
                        document,
                    }),
                })
            })?
            .collect::<rusqlite::Result<_>>()?;
        let messages: Vec<StoredMessage> = history
            .query_map([&task], |row| {
                Ok(StoredMessage {
                    position: row.get::<_, i64>(0)?.try_into().unwrap_or(0),
                    message_id: row.get(1)?,
                    document: row.get(2)?,
                })
            })?
            .collect::<rusqlite::Result<_>>()?;
        for chunk in entries.chunks(MIGRATED_CHUNK) {
            commits::append(connection, &task, chunk, &[])?;
        }
        for chunk in messages.chunks(MIGRATED_CHUNK) {
            commits::append(connection, &task, &[], chunk)?;
        }
    }
    Ok(())
}
