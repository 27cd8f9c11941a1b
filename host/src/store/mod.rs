//! Durable task storage: a per-task append-only log and a snapshot row per
//! task, behind a trait a second backend (a durable-execution engine) can
//! implement later.
//!
//! The store knows nothing of A2A or of the lifecycle: it keeps JSON
//! documents the task layer produces, and a few plain columns it needs to
//! index them (state, timestamps, participants). Everything a task is follows
//! from its log; the snapshot ("head") and the history and artifact rows are
//! there so reads do not replay it.
//!
//! * `sqlite`: the embedded default, WAL, one writer thread doing group
//!   commit, a small pool of readers.
//! * `memory`: the same contract in a map, for tests, benchmarks and
//!   `path = ":memory:"`.
//! * `schema`: the SQLite tables.
//! * `commits`: the SQLite log and history, one row per commit.
//! * `lock`: one server per SQLite database, taken before it is opened.
//!
//! The contract every backend keeps:
//!
//! * [`TaskStore::commit`] is atomic over all the writes it is given (several
//!   tasks included: a parent and the sub-task it spawns) and returns only
//!   once they are durable to the backend's setting. Callers acknowledge
//!   nothing before it returns.
//! * A message id appears at most once per task; a write that would repeat
//!   one fails with [`StoreError::Conflict`] and changes nothing.
//! * Reads see every committed write.

mod checkpoint;
mod commits;
mod hot;
mod lock;
mod memory;
#[cfg(feature = "postgres")]
pub mod postgres;
mod redo;
mod schema;
mod sqlite;
mod uncommitted;

use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::Arc;

pub use hot::DEFAULT_CACHE_MIB;
pub use memory::MemoryStore;
pub use sqlite::{
    DEFAULT_CATCH_UP_WAL_BYTES, DEFAULT_COMMIT_INTERVAL_MS, DEFAULT_MAX_WAL_MIB, SqliteOptions,
    SqliteStore, Synchronous,
};

/// What every store operation returns.
pub type StoreFuture<'a, T> = Pin<Box<dyn Future<Output = Result<T, StoreError>> + Send + 'a>>;

/// Why a store operation failed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum StoreError {
    /// The store cannot take writes or answer reads right now: the disk is
    /// full, the database is read-only or locked by another process, an I/O
    /// error. Nothing of the failed operation was stored.
    #[error("the task store is unavailable: {0}")]
    Unavailable(String),
    /// The write contradicts what is stored (a message id repeated in a
    /// task, a task created twice). Nothing of it was stored.
    #[error("the write conflicts with the stored data: {0}")]
    Conflict(String),
    /// Stored data this version cannot read.
    #[error("the task store holds data that cannot be read: {0}")]
    Corrupt(String),
}

/// Where the tasks live, from the configuration.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StoreLocation {
    /// A SQLite file.
    File(PathBuf),
    /// Nothing survives the process.
    Memory,
    /// A PostgreSQL database (a build with the `postgres` feature).
    Postgres(PostgresLocation),
}

/// A PostgreSQL database, as configured.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PostgresLocation {
    /// `postgres://user@host:5432/db`.
    pub url: String,
    /// The environment variable holding the password, if the URL has none.
    pub password_env: Option<String>,
    pub max_connections: usize,
}

/// How to open the store.
#[derive(Clone, Debug)]
pub struct StoreOptions {
    pub location: StoreLocation,
    /// For a SQLite file (its `shared` is set from the field below).
    pub sqlite: SqliteOptions,
    /// Whether several processes write the store (the Temporal engine's
    /// servers and workers); otherwise one server owns it.
    pub shared: bool,
}

/// Open the configured store.
pub fn open(options: &StoreOptions) -> Result<Arc<dyn TaskStore>, StoreError> {
    match &options.location {
        StoreLocation::Memory => Ok(Arc::new(MemoryStore::new())),
        StoreLocation::File(path) => {
            let sqlite = SqliteOptions {
                shared: options.shared,
                ..options.sqlite
            };
            Ok(Arc::new(SqliteStore::open_with_options(path, sqlite)?))
        }
        StoreLocation::Postgres(location) => open_postgres(location, options.shared),
    }
}

#[cfg(feature = "postgres")]
fn open_postgres(
    location: &PostgresLocation,
    shared: bool,
) -> Result<Arc<dyn TaskStore>, StoreError> {
    let password = match &location.password_env {
        Some(name) => Some(std::env::var(name).map_err(|_| {
            StoreError::Unavailable(format!(
                "the task store's password variable {name} ([store] password_env) is not set"
            ))
        })?),
        None => None,
    };
    let options = postgres::PostgresOptions {
        url: location.url.clone(),
        password,
        max_connections: location.max_connections,
        shared,
    };
    Ok(Arc::new(postgres::PostgresStore::open(&options)?))
}

#[cfg(not(feature = "postgres"))]
fn open_postgres(_: &PostgresLocation, _: bool) -> Result<Arc<dyn TaskStore>, StoreError> {
    Err(StoreError::Unavailable(
        "this build has no PostgreSQL store ([store] url): build with `--features postgres` \
         (the Temporal engine's builds include it)"
            .into(),
    ))
}

/// Persistence for tasks. Implementations are shared by every task actor and
/// request handler; methods take owned arguments so a backend can move them
/// to another thread or across the network.
pub trait TaskStore: Send + Sync + 'static {
    /// Store `writes` atomically and durably.
    fn commit(&self, writes: Vec<TaskWrite>) -> StoreFuture<'_, ()>;

    /// Give back memory kept only for speed (page caches, idle connections),
    /// for a server that has gone idle; whatever is needed again is read
    /// back. Keeping nothing of the kind, a store need not implement it.
    fn release_memory(&self) -> StoreFuture<'_, ()> {
        Box::pin(async { Ok(()) })
    }

    /// Task `task_id`: its head, its most recent `history` messages (all when
    /// `None`) and its artifacts.
    fn load(&self, task_id: String, history: Option<usize>) -> StoreFuture<'_, Option<StoredTask>>;

    /// Only the head of task `task_id` (no history, no artifacts): enough
    /// to check access and describe the task.
    fn head(&self, task_id: String) -> StoreFuture<'_, Option<String>>;

    /// The stream events of task `task_id` numbered after `after`, in order.
    fn events_after(&self, task_id: String, after: u64) -> StoreFuture<'_, Vec<StoredEvent>>;

    /// The whole log of task `task_id`, in order (audits, replay checks).
    fn log(&self, task_id: String) -> StoreFuture<'_, Vec<LogEntry>>;

    /// One page of tasks, most recent status change first.
    fn list(&self, query: ListQuery) -> StoreFuture<'_, ListPage>;

    /// The task holding message `message_id`, if one does (see [`MessageLookup`]).
    fn find_message(&self, lookup: MessageLookup) -> StoreFuture<'_, Option<String>>;

    /// Message `message_id` of task `task_id`'s history, if it has one.
    fn message(&self, task_id: String, message_id: String) -> StoreFuture<'_, Option<String>>;

    /// Tasks to bring back right after a start: those a turn was running in
    /// (or about to start in), and open parents that may have missed the end
    /// of one of their sub-tasks.
    fn recovery_candidates(&self) -> StoreFuture<'_, Vec<String>>;

    /// Delete every terminal task whose last status change is older than
    /// `before_ms` (Unix milliseconds), with everything it holds. Returns the
    /// ids of the tasks that went.
    fn purge_terminal(&self, before_ms: i64) -> StoreFuture<'_, Vec<String>>;

    /// Store (or replace) push-notification configuration `config`, and
    /// return its delivery cursor (see [`PushConfigRecord`]). A new
    /// configuration starts at the task's latest stored event: it is owed
    /// nothing from before it existed. A replaced one keeps its cursor.
    fn put_push_config(&self, config: StoredPushConfig) -> StoreFuture<'_, u64>;

    /// Record that every event of task `task_id` numbered up to `seq` has
    /// been delivered (or given up on) to configuration `config_id`. A
    /// cursor never moves back; a configuration deleted meanwhile is left
    /// deleted.
    fn push_delivered(&self, task_id: String, config_id: String, seq: u64) -> StoreFuture<'_, ()>;

    /// Delete a push-notification configuration; `false` if there was none.
    fn delete_push_config(&self, task_id: String, config_id: String) -> StoreFuture<'_, bool>;

    /// Every push-notification configuration with its delivery cursor, for
    /// the delivery cache.
    fn push_configs(&self) -> StoreFuture<'_, Vec<PushConfigRecord>>;

    /// Task `task_id`'s push-notification configurations with their
    /// cursors: what a pusher sharing the store with other processes reads
    /// before it uses them.
    fn push_configs_of(&self, task_id: String) -> StoreFuture<'_, Vec<PushConfigRecord>> {
        Box::pin(async move {
            let every = self.push_configs().await?;
            Ok(every
                .into_iter()
                .filter(|record| record.config.task_id == task_id)
                .collect())
        })
    }
}

/// Everything one commit changes in one task. Serializable, so a write can
/// be made by another process than the one that decided it (the Temporal
/// engine's workers commit what a workflow decided).
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct TaskWrite {
    pub task_id: String,
    /// Set on the write that creates the task.
    pub created: Option<Created>,
    /// The task's snapshot after this write.
    pub head: Head,
    /// Appended to the task's log, positions continuing it.
    pub entries: Vec<LogEntry>,
    /// Appended to the task's history.
    pub messages: Vec<StoredMessage>,
    /// Appended to the task's artifacts, positions continuing them.
    pub artifacts: Vec<StoredArtifact>,
    /// The participant ids, when they changed (always on creation).
    pub participants: Option<Vec<String>>,
}

/// Facts about a task fixed when it is created.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Created {
    /// The participant whose message started it (none for a sub-task).
    pub created_by: Option<String>,
    /// The task that delegated it.
    pub parent_id: Option<String>,
}

/// A task's snapshot and the columns it is found by.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Head {
    pub context_id: String,
    /// The A2A state name, e.g. `TASK_STATE_INPUT_REQUIRED`.
    pub state: String,
    pub terminal: bool,
    /// Whether a turn is running or due: such a task is brought back right
    /// after a restart ([`TaskStore::recovery_candidates`]).
    pub active: bool,
    /// When the status last changed, Unix milliseconds.
    pub status_at_ms: i64,
    /// Whether this write changed the status: only that moves a task up in
    /// listings (A2A orders them by status change).
    pub status_changed: bool,
    /// The task as a JSON document (without history and artifacts).
    pub document: String,
}

/// One change in a task's log.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct LogEntry {
    /// The entry's place in the task's log, from 0 (the creation).
    pub position: u64,
    /// When it happened, Unix milliseconds.
    pub at_ms: i64,
    /// What kind of change (`created`, `received`, `status`, ...).
    pub kind: String,
    /// The change as a JSON document.
    pub document: String,
    /// The stream event the change produced, if any.
    pub event: Option<StoredEvent>,
}

/// A stream event as clients received it.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct StoredEvent {
    /// The task's event sequence number.
    pub seq: u64,
    /// The `StreamResponse` JSON.
    pub document: String,
}

/// A message in a task's history.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct StoredMessage {
    /// Its place in the history, from 0.
    pub position: u64,
    pub message_id: String,
    pub document: String,
}

/// An artifact of a task.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct StoredArtifact {
    /// Its place among the task's artifacts, from 0.
    pub position: u64,
    pub document: String,
}

/// A task as read back.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoredTask {
    pub head: String,
    /// Oldest first.
    pub history: Vec<String>,
    pub artifacts: Vec<String>,
    /// Its place in the order of status changes (the list cursor).
    pub revision: u64,
    /// How many messages its whole history has (`history` may be only the
    /// newest of them).
    pub history_len: u64,
}

/// What [`TaskStore::list`] selects.
#[derive(Clone, Debug, Default)]
pub struct ListQuery {
    /// Only tasks this participant takes part in; `None`: every task.
    pub participant: Option<String>,
    pub context_id: Option<String>,
    /// Only tasks in this state (A2A state name).
    pub state: Option<String>,
    /// Only tasks whose status changed at or after this instant (Unix ms).
    pub status_after_ms: Option<i64>,
    /// Only tasks that come after this revision in the order (the cursor).
    pub before_revision: Option<u64>,
    /// The most tasks to return.
    pub limit: usize,
    /// The most history messages per task (`None`: all).
    pub history: Option<usize>,
    /// Whether to read artifacts.
    pub artifacts: bool,
}

/// One page of tasks.
#[derive(Clone, Debug, Default)]
pub struct ListPage {
    pub tasks: Vec<StoredTask>,
    /// How many tasks match, over all pages.
    pub total: u64,
    /// Whether more tasks follow this page.
    pub more: bool,
}

/// How to find an already-accepted message (messageId deduplication).
#[derive(Clone, Debug)]
pub enum MessageLookup {
    /// The message `message_id` in task `task_id`.
    InTask { task_id: String, message_id: String },
    /// The message `message_id` that started a task `created_by` created: a
    /// resend of a first message has no task id yet.
    Started {
        created_by: String,
        message_id: String,
    },
}

/// A push-notification configuration.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoredPushConfig {
    pub task_id: String,
    pub config_id: String,
    /// The `TaskPushNotificationConfig` JSON.
    pub document: String,
}

/// A stored push-notification configuration and how far delivery to it got.
///
/// The task's log is the outbox: an event is committed before it is pushed,
/// so after a crash the events numbered after `delivered_seq` are exactly
/// those the webhook may not have received, and they are sent again.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PushConfigRecord {
    pub config: StoredPushConfig,
    /// Every event of the task numbered up to this was delivered or given up on.
    pub delivered_seq: u64,
}

#[cfg(test)]
pub(crate) mod tests;
