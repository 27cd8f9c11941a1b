//! The PostgreSQL tables: those of the SQLite store (`store::schema`), in
//! PostgreSQL's types, in a database of their own.
//!
//! The version is the one row of `tiny_harness_schema`; a newer one than
//! this build knows is refused rather than misread. Processes opening one
//! database at once create it once: the migration holds a transaction-scoped
//! advisory lock.

use tokio_postgres::Client;

/// The schema version this build writes.
pub(super) const VERSION: i64 = 1;

/// Held by whichever process creates or upgrades the tables.
const MIGRATION_LOCK: i64 = 0x7468_6d69_6772_6174; // "thmigrat"

const TABLES: &str = "
CREATE TABLE IF NOT EXISTS tiny_harness_schema (version BIGINT NOT NULL);

CREATE TABLE IF NOT EXISTS tasks (
    id           TEXT PRIMARY KEY,
    context_id   TEXT NOT NULL,
    parent_id    TEXT,
    created_by   TEXT,
    state        TEXT NOT NULL,
    terminal     BOOLEAN NOT NULL,
    active       BOOLEAN NOT NULL,
    status_at_ms BIGINT NOT NULL,
    status_rev   BIGINT NOT NULL,
    write_rev    BIGINT NOT NULL,
    head         TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS tasks_by_status_rev ON tasks (status_rev);
CREATE INDEX IF NOT EXISTS tasks_by_context ON tasks (context_id, status_rev);
CREATE INDEX IF NOT EXISTS tasks_by_state ON tasks (state);
CREATE INDEX IF NOT EXISTS tasks_active ON tasks (id) WHERE active;
CREATE INDEX IF NOT EXISTS tasks_by_parent ON tasks (parent_id) WHERE parent_id IS NOT NULL;
CREATE INDEX IF NOT EXISTS tasks_ended ON tasks (status_at_ms) WHERE terminal;

CREATE TABLE IF NOT EXISTS task_log (
    task_id   TEXT NOT NULL,
    position  BIGINT NOT NULL,
    at_ms     BIGINT NOT NULL,
    kind      TEXT NOT NULL,
    change    TEXT NOT NULL,
    event_seq BIGINT,
    event     TEXT,
    PRIMARY KEY (task_id, position)
);
CREATE INDEX IF NOT EXISTS task_log_events ON task_log (task_id, event_seq)
    WHERE event_seq IS NOT NULL;

CREATE TABLE IF NOT EXISTS messages (
    task_id    TEXT NOT NULL,
    position   BIGINT NOT NULL,
    message_id TEXT NOT NULL,
    document   TEXT NOT NULL,
    PRIMARY KEY (task_id, position),
    UNIQUE (task_id, message_id)
);
CREATE INDEX IF NOT EXISTS messages_first ON messages (message_id) WHERE position = 0;

CREATE TABLE IF NOT EXISTS artifacts (
    task_id  TEXT NOT NULL,
    position BIGINT NOT NULL,
    document TEXT NOT NULL,
    PRIMARY KEY (task_id, position)
);

CREATE TABLE IF NOT EXISTS participants (
    task_id        TEXT NOT NULL,
    participant_id TEXT NOT NULL,
    PRIMARY KEY (task_id, participant_id)
);
CREATE INDEX IF NOT EXISTS participants_by_id ON participants (participant_id, task_id);

CREATE TABLE IF NOT EXISTS push_configs (
    task_id       TEXT NOT NULL,
    config_id     TEXT NOT NULL,
    document      TEXT NOT NULL,
    delivered_seq BIGINT NOT NULL DEFAULT 0,
    PRIMARY KEY (task_id, config_id)
);

CREATE TABLE IF NOT EXISTS counters (
    name  TEXT PRIMARY KEY,
    value BIGINT NOT NULL
);
INSERT INTO counters (name, value) VALUES ('write_rev', 0) ON CONFLICT DO NOTHING;
";

/// Create the tables in a new database; refuse one from a newer version.
pub(super) async fn migrate(client: &mut Client) -> Result<(), String> {
    let failed = |error: tokio_postgres::Error| format!("creating the tables: {error}");
    let transaction = client.transaction().await.map_err(failed)?;
    transaction
        .execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK])
        .await
        .map_err(failed)?;
    transaction.batch_execute(TABLES).await.map_err(failed)?;
    let found: Option<i64> = transaction
        .query_opt("SELECT max(version) FROM tiny_harness_schema", &[])
        .await
        .map_err(failed)?
        .and_then(|row| row.get(0));
    match found {
        Some(found) if found > VERSION => {
            return Err(format!(
                "the database has schema version {found}, newer than this build's {VERSION}; \
                 run a newer tiny-harness or point [store] url at another database"
            ));
        }
        Some(_) => {}
        None => {
            transaction
                .execute(
                    "INSERT INTO tiny_harness_schema (version) VALUES ($1)",
                    &[&VERSION],
                )
                .await
                .map_err(failed)?;
        }
    }
    transaction.commit().await.map_err(failed)
}
