//! The SQLite tables.
//!
//! * `tasks`: one row per task, the snapshot (`head`) and the columns
//!   listings, recovery and retention search by (`active`: a turn is
//!   running or due, so a restart must pick the task up). Two counters order writes:
//!   `status_rev` moves on status changes only (ListTasks order and cursor),
//!   `write_rev` on every write (recovery compares a parent's with its
//!   sub-tasks' to find a sub-task result the parent may have missed).
//! * `task_log`: the append-only log, one row per change, with the stream
//!   event it produced (replayed to a lagging or returning subscriber).
//! * `messages`, `artifacts`: the history and artifacts, so a read does not
//!   replay the log; `UNIQUE (task_id, message_id)` is the last line of
//!   defence against applying a message twice.
//! * `participants`: who may see a task, so ListTasks finds a caller's tasks
//!   by index.
//! * `push_configs`: push-notification configurations, each with the number
//!   of the last event delivered to it (`delivered_seq`): the log is the
//!   outbox, and a restart resends what comes after.
//! * `counters`: the last write revision, kept there only while several
//!   processes share the store.
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
//!   the events after a number are read by walking the log back from its end
//!   (`sqlite::LOG_NEWEST_FIRST`); the index was one more B-tree page written
//!   by nearly every commit.

use rusqlite::Connection;

/// The schema version this build writes.
pub(super) const VERSION: i64 = 5;

const TABLES: &str = "
CREATE TABLE IF NOT EXISTS tasks (
    id           TEXT PRIMARY KEY,
    context_id   TEXT NOT NULL,
    parent_id    TEXT,
    created_by   TEXT,
    state        TEXT NOT NULL,
    terminal     INTEGER NOT NULL,
    active       INTEGER NOT NULL,
    status_at_ms INTEGER NOT NULL,
    status_rev   INTEGER NOT NULL,
    write_rev    INTEGER NOT NULL,
    head         TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS tasks_by_status_rev ON tasks (status_rev);
CREATE INDEX IF NOT EXISTS tasks_by_context ON tasks (context_id, status_rev);
CREATE INDEX IF NOT EXISTS tasks_by_state ON tasks (state);
CREATE INDEX IF NOT EXISTS tasks_active ON tasks (id) WHERE active = 1;
CREATE INDEX IF NOT EXISTS tasks_by_parent ON tasks (parent_id) WHERE parent_id IS NOT NULL;
CREATE INDEX IF NOT EXISTS tasks_ended ON tasks (status_at_ms) WHERE terminal = 1;

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
    // A fresh database gets the current tables at once; an older one is
    // upgraded step by step, all in one transaction.
    let steps = match found {
        0 => format!("{TABLES} {COUNTERS}"),
        1 => format!("{DELIVERY_CURSORS} {FIRST_MESSAGES} {COUNTERS} {LOG_EVENTS_UNINDEXED}"),
        2 => format!("{FIRST_MESSAGES} {COUNTERS} {LOG_EVENTS_UNINDEXED}"),
        3 => format!("{COUNTERS} {LOG_EVENTS_UNINDEXED}"),
        4 => LOG_EVENTS_UNINDEXED.to_owned(),
        _ => return Ok(()),
    };
    connection
        .execute_batch(&format!(
            "BEGIN IMMEDIATE; {steps} PRAGMA user_version = {VERSION}; COMMIT;"
        ))
        .map_err(|error| {
            let _ = connection.execute_batch("ROLLBACK");
            format!("upgrading the database from schema version {found} to {VERSION}: {error}")
        })
}
