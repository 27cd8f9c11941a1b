//! The embedded store: one SQLite file in WAL mode.
//!
//! * Writes go to one writer thread that owns the only write connection
//!   (`writer`). It takes every job waiting in its queue and runs them as
//!   one batch (a conflicting job still fails alone): group commit. A batch
//!   of task writes is answered once it is in the redo log (`redo`), in a
//!   transaction the writer keeps open for up to
//!   [`SqliteOptions::commit_interval`], so that one commit carries many
//!   batches; anything else commits before it is answered. Reads see every
//!   answered write: a read of a task with uncommitted writes runs on the
//!   writer's connection ([`ReadOn`], `uncommitted`). With `synchronous =
//!   NORMAL` a redo record or a commit reaches the OS but is not fsynced,
//!   so it survives the process dying (SIGKILL, OOM kill, panic) but not the
//!   machine losing power; `FULL` fsyncs both, and concurrent writes share
//!   that fsync.
//! * WAL checkpoints run on a thread of their own; the writer only copies
//!   the last few commits once that thread has caught up, so that the WAL
//!   can start over while writes never pause (`checkpoint`).
//! * Reads run over at most [`READERS`] read-only connections, kept open;
//!   WAL lets them read while the writer writes. A small read runs on the
//!   task that asks; a large one, or one that would wait for a lock, on
//!   `spawn_blocking` ([`SqliteStore::read_small`]).
//!
//! * The tasks being read are cached whole, kept in step by the writer
//!   (`hot`), so a busy conversation's turns and answers read no pages.
//!
//! * Before the database is opened, the store takes its exclusive lock
//!   (`lock`): a second server on the same file is refused before it reads
//!   or writes anything, with the holder's process id. Dropping the store
//!   releases it.
//!
//! Any SQLite error is classified once ([`classify`]): constraint violations
//! are conflicts, everything else (disk full, read-only, locked, I/O) makes
//! the store unavailable for that operation, and nothing of it is kept.

use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::sync::{Arc, Mutex, PoisonError};
use std::thread;
use std::time::Duration;

use rusqlite::config::DbConfig;
use rusqlite::types::Value as SqlValue;
use rusqlite::{Connection, ErrorCode, OpenFlags, OptionalExtension, params, params_from_iter};
use serde::Deserialize;
use tokio::sync::{OwnedSemaphorePermit, Semaphore, oneshot};

mod writer;

use super::checkpoint;
use super::commits::{self, Budget};
use super::hot::{DEFAULT_CACHE_MIB, HotTasks};
use super::lock::DatabaseLock;
use super::redo::RedoLog;
use super::schema;
use super::uncommitted::Uncommitted;
use super::{
    Created, ListPage, ListQuery, LogEntry, MessageLookup, PushConfigRecord, StoreError,
    StoreFuture, StoredEvent, StoredPushConfig, StoredTask, TaskStore, TaskWrite,
};
use writer::{Action, Job, Outcome, Writer, WriterHandle};

/// How long a statement waits for a lock held by another process before the
/// store reports itself unavailable. Long enough to ride out a checkpoint or
/// a backup, short enough that a sender is told promptly.
const BUSY_TIMEOUT: Duration = Duration::from_secs(2);

/// The most jobs one transaction takes.
const MAX_BATCH: usize = 512;

/// Read connections: at most this many reads run at once, each on a
/// connection kept for the next. Opening one costs far more than a point
/// read (the file, the schema parsed, a cold page cache), so a burst of
/// reads queues for these rather than opening more.
const READERS: usize = 4;

/// The most a read returns on the async task that asks for it
/// ([`SqliteStore::read_small`]): a few pages' worth, tens of microseconds
/// from the page cache.
const INLINE_READ_BYTES: usize = 256 * 1024;

/// The WAL's bound in MiB unless configured (`[store] max_wal_mib`).
pub const DEFAULT_MAX_WAL_MIB: u32 = 64;

/// How long the writer keeps a transaction open unless configured
/// (`[store] commit_interval_ms`).
pub const DEFAULT_COMMIT_INTERVAL_MS: u32 = 20;

/// The most the WAL holds before the writer catches up with the
/// checkpointer so that it starts over, unless half its bound is less
/// (`checkpoint`, "Starting over").
pub const DEFAULT_CATCH_UP_WAL_BYTES: u64 = 32 << 20;

/// A transaction commits before its redo log passes this, whatever its age.
const MAX_REDO_BYTES: u64 = 8 << 20;

/// How to open a SQLite store.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SqliteOptions {
    pub synchronous: Synchronous,
    /// Once the WAL holds more than this, the next checkpoint waits for the
    /// readers of older pages so that it can start over, and its file is
    /// cut back to this size. It can grow past it between checkpoints.
    pub max_wal_bytes: u64,
    /// Once a checkpoint has copied the whole WAL and it holds this much
    /// (or half of `max_wal_bytes`, if less), the writer copies the commits
    /// made meanwhile so that the WAL starts over; below it the WAL grows.
    pub catch_up_wal_bytes: u64,
    /// Whether several processes write the database: the servers and
    /// workers of the Temporal engine, where each task's workflow orders its
    /// writes. A shared store takes a share of the lock (`lock`), and each
    /// transaction takes its write revisions from the `counters` table
    /// rather than from its process's memory. Never for the embedded engine:
    /// two servers there would each run the other's tasks.
    pub shared: bool,
    /// The bytes of documents the cache of hot tasks holds (`hot`); 0
    /// turns it off. A shared store has none: other processes write it.
    pub cache_bytes: usize,
    /// The longest the writer keeps a transaction open, answering for task
    /// writes once they are in the redo log (`redo`); zero commits every
    /// batch before it is answered, as does a shared store (other
    /// processes read it).
    pub commit_interval: Duration,
}

impl SqliteOptions {
    /// With the WAL bounded at [`DEFAULT_MAX_WAL_MIB`].
    pub fn new(synchronous: Synchronous) -> Self {
        Self::bounded(synchronous, DEFAULT_MAX_WAL_MIB)
    }

    /// With the WAL bounded at `max_wal_mib` MiB.
    pub fn bounded(synchronous: Synchronous, max_wal_mib: u32) -> Self {
        SqliteOptions {
            synchronous,
            max_wal_bytes: u64::from(max_wal_mib) << 20,
            catch_up_wal_bytes: DEFAULT_CATCH_UP_WAL_BYTES,
            shared: false,
            cache_bytes: (DEFAULT_CACHE_MIB as usize) << 20,
            commit_interval: Duration::from_millis(DEFAULT_COMMIT_INTERVAL_MS.into()),
        }
    }

    /// The same, keeping a transaction open at most `interval_ms` (0: every
    /// batch commits before it is answered).
    pub fn committing_every(self, interval_ms: u32) -> Self {
        SqliteOptions {
            commit_interval: Duration::from_millis(interval_ms.into()),
            ..self
        }
    }

    /// The same, with a cache of hot tasks of `cache_mib` MiB (0: none).
    pub fn cached(self, cache_mib: u32) -> Self {
        SqliteOptions {
            cache_bytes: (cache_mib as usize) << 20,
            ..self
        }
    }

    /// The same, for a database several processes write.
    pub fn shared(self) -> Self {
        SqliteOptions {
            shared: true,
            ..self
        }
    }
}

/// What a commit waits for (SQLite's `synchronous` pragma in WAL mode).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Synchronous {
    /// Committed writes survive the process dying; the last commits before a
    /// power loss or kernel crash may be lost (the database stays consistent).
    #[default]
    Normal,
    /// Every commit is fsynced: committed writes survive power loss too.
    Full,
}

impl Synchronous {
    fn pragma(self) -> &'static str {
        match self {
            Synchronous::Normal => "NORMAL",
            Synchronous::Full => "FULL",
        }
    }
}

/// The SQLite task store. Cheap to share; dropping the last reference stops
/// the writer once its queue is empty.
pub struct SqliteStore {
    /// Before `_lock`: the writer finishes before the lock is released.
    writer: WriterHandle,
    readers: Arc<Readers>,
    /// None on a shared store, or with the cache turned off.
    hot: Option<Arc<HotTasks>>,
    /// What the writer answered for but has not committed; None when it
    /// commits before it answers.
    uncommitted: Option<Arc<Uncommitted>>,
    /// This process's claim on the database (alone, or a share of it), for
    /// as long as the store lives.
    _lock: DatabaseLock,
}

impl SqliteStore {
    /// Open (creating if needed) the database at `path`, its WAL bounded
    /// at [`DEFAULT_MAX_WAL_MIB`].
    pub fn open(path: &Path, synchronous: Synchronous) -> Result<Self, StoreError> {
        Self::open_with_options(path, SqliteOptions::new(synchronous))
    }

    /// Open (creating if needed) the database at `path`.
    pub fn open_with_options(path: &Path, options: SqliteOptions) -> Result<Self, StoreError> {
        Self::open_with(path, options, "")
    }

    /// A store whose writer connection runs `pragmas` after opening: tests
    /// stage a full disk (`max_page_count`) or a read-only database
    /// (`query_only`) with the same errors SQLite reports for the real thing.
    #[cfg(test)]
    pub(super) fn open_with_pragmas(path: &Path, pragmas: &str) -> Result<Self, StoreError> {
        Self::open_with(path, SqliteOptions::new(Synchronous::Normal), pragmas)
    }

    fn open_with(path: &Path, options: SqliteOptions, pragmas: &str) -> Result<Self, StoreError> {
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent).map_err(|error| {
                StoreError::Unavailable(format!("cannot create {}: {error}", parent.display()))
            })?;
        }
        let lock = match options.shared {
            true => DatabaseLock::share(path)?,
            false => DatabaseLock::acquire(path)?,
        };
        let opening = |error: String| {
            StoreError::Unavailable(format!(
                "cannot open the task store {}: {error}",
                path.display()
            ))
        };
        let connection = open_writer(path, options).map_err(|e| opening(e.to_string()))?;
        schema::migrate(&connection).map_err(opening)?;
        connection
            .execute_batch(pragmas)
            .map_err(|e| opening(e.to_string()))?;
        let checkpoints = open_checkpointer(path).map_err(|e| opening(e.to_string()))?;
        let bounds = wal_bounds(&connection, &options).map_err(|e| opening(e.to_string()))?;
        let checkpoints =
            checkpoint::spawn(checkpoints, bounds).map_err(|e| opening(e.to_string()))?;
        let hot = (!options.shared && options.cache_bytes > 0)
            .then(|| Arc::new(HotTasks::new(options.cache_bytes)));
        let redo = RedoLog::open(
            &RedoLog::path_of(path),
            options.synchronous == Synchronous::Full,
        )
        .map_err(|e| opening(format!("its redo log: {e}")))?;
        let uncommitted = (!options.shared && !options.commit_interval.is_zero())
            .then(|| Arc::new(Uncommitted::default()));
        let defer = uncommitted
            .clone()
            .map(|uncommitted| (options.commit_interval, uncommitted));
        let writer = Writer::new(
            connection,
            checkpoints,
            options.shared,
            hot.clone(),
            redo,
            defer,
        )
        .map_err(opening)?;
        let (jobs, queue) = mpsc::channel();
        let thread = thread::Builder::new()
            .name("task-store-writer".into())
            .spawn(move || writer.run(queue))
            .map_err(|error| opening(error.to_string()))?;
        Ok(SqliteStore {
            writer: WriterHandle {
                jobs: Some(jobs),
                thread: Some(thread),
            },
            readers: Arc::new(Readers {
                path: path.to_owned(),
                idle: Mutex::new(Vec::new()),
                permits: Arc::new(Semaphore::new(READERS)),
            }),
            hot,
            uncommitted,
            _lock: lock,
        })
    }

    /// Hand `action` to the writer; resolves once it is durable (committed,
    /// or task writes in the redo log), or a read has run.
    fn write(&self, action: Action) -> StoreFuture<'_, Outcome> {
        let (reply, answer) = oneshot::channel();
        let sent = self.writer.send(Job { action, reply });
        Box::pin(async move {
            sent?;
            answer.await.map_err(|_| writer_gone())?
        })
    }

    /// Run `read` on a pooled connection (or on the writer's: [`ReadOn`]),
    /// on the task that asks, if it is small: it returns at most [`INLINE_READ_BYTES`] and never waits for
    /// a lock. Otherwise (or with no idle connection to take) it runs again
    /// off the async workers, with no budget.
    ///
    /// Why: handing a read to the blocking pool and back costs two thread
    /// switches, more than a point read or a short history takes on a core
    /// that is busy anyway. A profile of follow-ups on SQLite had the
    /// blocking pool's threads at 29% of the server, with 15% of all
    /// samples in the kernel switching threads; reads run here took
    /// follow-ups at 16 and 256 connections from 0.44x-0.49x of the memory
    /// store to 0.51x-0.61x, and the p99 of new conversations at 16
    /// connections from 12.5 ms to 9.2 ms. The budget keeps any read that
    /// could hold an async worker for long (a large history, a busy lock:
    /// the connection's busy timeout is zero meanwhile) off it.
    fn read_small<'a, T: Send + 'static>(
        &'a self,
        on: ReadOn,
        read: impl Fn(&Connection, &Budget) -> rusqlite::Result<T> + Send + 'static,
    ) -> StoreFuture<'a, T> {
        if on == ReadOn::Writer {
            return self.read_by_writer(move |connection| read(connection, &Budget::unbounded()));
        }
        let readers = Arc::clone(&self.readers);
        Box::pin(async move {
            let permit = readers.permit().await?;
            let budget = Budget::bytes(INLINE_READ_BYTES);
            match readers.try_inline(|connection| read(connection, &budget)) {
                Some(Ok(value)) if !budget.exhausted() => return Ok(value),
                Some(Err(error)) if !waits_for_lock(&error) => return Err(classify(error)),
                // Too large, or a lock to wait for, or no idle connection.
                Some(_) | None => {}
            }
            Readers::off_the_workers(readers, permit, move |connection| {
                read(connection, &Budget::unbounded())
            })
            .await
        })
    }

    /// Run `read` on a pooled connection, off the async workers (or on the
    /// writer's: [`ReadOn`]).
    fn read<T: Send + 'static>(
        &self,
        on: ReadOn,
        read: impl FnOnce(&Connection) -> rusqlite::Result<T> + Send + 'static,
    ) -> StoreFuture<'_, T> {
        if on == ReadOn::Writer {
            return self.read_by_writer(read);
        }
        let readers = Arc::clone(&self.readers);
        Box::pin(async move {
            let permit = readers.permit().await?;
            Readers::off_the_workers(readers, permit, read).await
        })
    }

    /// Where a read that `sees` runs: readers see committed data only.
    fn read_on(&self, sees: Sees<'_>) -> ReadOn {
        let Some(uncommitted) = &self.uncommitted else {
            return ReadOn::Readers;
        };
        let needed = match sees {
            Sees::Committed => false,
            Sees::Task(task_id) => uncommitted.touches(task_id),
            Sees::Everything => uncommitted.any(),
        };
        match needed {
            true => ReadOn::Writer,
            false => ReadOn::Readers,
        }
    }

    /// Run `read` on the writer's connection, between two batches: it sees
    /// every answered write, committed or not, and needs no commit (so it
    /// works while the disk is full).
    fn read_by_writer<T: Send + 'static>(
        &self,
        read: impl FnOnce(&Connection) -> rusqlite::Result<T> + Send + 'static,
    ) -> StoreFuture<'_, T> {
        let (answer, answered) = oneshot::channel();
        let read = move |connection: &Connection| {
            let _ = answer.send(read(connection).map_err(classify));
        };
        let done = self.write(Action::Read(Box::new(read)));
        Box::pin(async move {
            done.await?;
            answered.await.map_err(|_| writer_gone())?
        })
    }
}

/// Where a read runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ReadOn {
    /// A pooled read connection: it sees committed data.
    Readers,
    /// The writer's connection, in its open transaction: the read needs
    /// writes answered but not yet committed. Rare: a task's worker holds
    /// its state, the cache of hot tasks and `Uncommitted` answer the reads
    /// of a busy conversation.
    Writer,
}

/// What a read must see of the writes answered for but not yet committed.
#[derive(Clone, Copy)]
enum Sees<'a> {
    /// None of them: it reads what they never change, or looks them up in
    /// `Uncommitted` itself.
    Committed,
    /// Those of one task.
    Task(&'a str),
    /// All of them.
    Everything,
}

/// Run `read`'s statements on one snapshot of the database: in a read
/// transaction of their own, or in the writer's open one.
fn in_one_snapshot<T>(
    connection: &Connection,
    read: impl FnOnce(&Connection) -> rusqlite::Result<T>,
) -> rusqlite::Result<T> {
    if !connection.is_autocommit() {
        return read(connection);
    }
    let transaction = connection.unchecked_transaction()?;
    let value = read(&transaction)?;
    transaction.finish()?;
    Ok(value)
}

/// Whether `error` is SQLite declining to wait for a lock (busy timeout zero).
fn waits_for_lock(error: &rusqlite::Error) -> bool {
    matches!(
        error.sqlite_error_code(),
        Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked)
    )
}

fn writer_gone() -> StoreError {
    StoreError::Unavailable("the store's writer has stopped".into())
}

/// The task `?2` created whose first message has id `?1` (through
/// `tasks_by_first_message`).
pub(super) const STARTED_BY: &str =
    "SELECT id FROM tasks WHERE first_message_id = ?1 AND created_by = ?2 LIMIT 1";

impl TaskStore for SqliteStore {
    fn commit(&self, writes: Vec<TaskWrite>) -> StoreFuture<'_, ()> {
        let done = self.write(Action::Commit(writes));
        Box::pin(async move { done.await.map(|_| ()) })
    }

    /// The writer's page cache and the hot tasks are emptied; the idle
    /// readers are closed (a read opens one again).
    fn release_memory(&self) -> StoreFuture<'_, ()> {
        self.readers.pool().clear();
        if let Some(hot) = &self.hot {
            hot.clear();
        }
        let released = self.write(Action::ReleaseMemory);
        Box::pin(async move { released.await.map(|_| ()) })
    }

    fn load(&self, task_id: String, history: Option<usize>) -> StoreFuture<'_, Option<StoredTask>> {
        let hot = self.hot.clone();
        if let Some(task) = hot.as_ref().and_then(|hot| hot.load(&task_id, history)) {
            return Box::pin(std::future::ready(Ok(Some(task))));
        }
        // Marked before the read starts, for the read to fill the cache.
        if let Some(hot) = &hot {
            hot.reading(&task_id);
        }
        let id = task_id.clone();
        let on = self.read_on(Sees::Task(&task_id));
        let read = self.read_small(on, move |connection, budget| {
            in_one_snapshot(connection, |read| {
                load_task(read, &id, history, true, budget)
            })
        });
        Box::pin(async move {
            let task = read.await;
            if let Some(hot) = hot {
                hot.read(&task_id, task.as_ref().ok().and_then(Option::as_ref));
            }
            task
        })
    }

    /// Every `SendMessage` to a task reads its head: an uncommitted one is
    /// answered from memory, so the read never waits for a commit.
    fn head(&self, task_id: String) -> StoreFuture<'_, Option<String>> {
        let remembered = self.hot.as_ref().and_then(|hot| hot.head(&task_id));
        let remembered = remembered.or_else(|| self.uncommitted.as_ref()?.head(&task_id));
        if let Some(head) = remembered {
            return Box::pin(std::future::ready(Ok(Some(head))));
        }
        self.read_small(self.read_on(Sees::Committed), move |connection, _| {
            connection
                .prepare_cached("SELECT head FROM tasks WHERE id = ?1")?
                .query_row([&task_id], |row| row.get(0))
                .optional()
        })
    }

    fn events_after(&self, task_id: String, after: u64) -> StoreFuture<'_, Vec<StoredEvent>> {
        self.read(self.read_on(Sees::Task(&task_id)), move |connection| {
            commits::events_after(connection, &task_id, after)
        })
    }

    fn log(&self, task_id: String) -> StoreFuture<'_, Vec<LogEntry>> {
        self.read(self.read_on(Sees::Task(&task_id)), move |connection| {
            commits::log(connection, &task_id)
        })
    }

    fn list(&self, query: ListQuery) -> StoreFuture<'_, ListPage> {
        self.read(self.read_on(Sees::Everything), move |connection| {
            in_one_snapshot(connection, |read| list(read, &query))
        })
    }

    /// Every `SendMessage` looks its message up: one written since the
    /// last commit is found among the uncommitted ones, so the lookup never
    /// waits for a commit.
    fn find_message(&self, lookup: MessageLookup) -> StoreFuture<'_, Option<String>> {
        if let Some(uncommitted) = &self.uncommitted {
            let found = match &lookup {
                MessageLookup::InTask {
                    task_id,
                    message_id,
                } => uncommitted
                    .has_message(task_id, message_id)
                    .then(|| task_id.clone()),
                MessageLookup::Started {
                    created_by,
                    message_id,
                } => uncommitted.started(created_by, message_id),
            };
            if found.is_some() {
                return Box::pin(std::future::ready(Ok(found)));
            }
        }
        self.read_small(
            self.read_on(Sees::Committed),
            move |connection, _| match &lookup {
                MessageLookup::InTask {
                    task_id,
                    message_id,
                } => connection
                    .prepare_cached(
                        "SELECT task_id FROM message_ids WHERE task_id = ?1 AND message_id = ?2",
                    )?
                    .query_row([task_id, message_id], |row| row.get(0))
                    .optional(),
                MessageLookup::Started {
                    created_by,
                    message_id,
                } => connection
                    .prepare_cached(STARTED_BY)?
                    .query_row([message_id, created_by], |row| row.get(0))
                    .optional(),
            },
        )
    }

    fn message(&self, task_id: String, message_id: String) -> StoreFuture<'_, Option<String>> {
        self.read_small(
            self.read_on(Sees::Task(&task_id)),
            move |connection, budget| commits::message(connection, &task_id, &message_id, budget),
        )
    }

    fn recovery_candidates(&self) -> StoreFuture<'_, Vec<String>> {
        self.read(self.read_on(Sees::Everything), |connection| {
            // Tasks with a turn running or due, then open parents written
            // before one of their finished sub-tasks: they may not have
            // recorded its result. (`parent_id > ''` lets SQLite find the
            // sub-tasks by `tasks_by_parent` instead of reading every
            // finished task.)
            let mut statement = connection.prepare_cached(
                "SELECT id FROM tasks WHERE active = 1
                 UNION
                 SELECT p.id FROM tasks c JOIN tasks p ON p.id = c.parent_id
                 WHERE c.parent_id > '' AND c.terminal = 1 AND p.terminal = 0 AND c.write_rev > p.write_rev",
            )?;
            let rows = statement.query_map([], |row| row.get(0))?;
            rows.collect()
        })
    }

    fn purge_terminal(&self, before_ms: i64) -> StoreFuture<'_, Vec<String>> {
        let done = self.write(Action::Purge { before_ms });
        Box::pin(async move {
            match done.await? {
                Outcome::Purged(ids) => Ok(ids),
                _ => Err(StoreError::Corrupt("purging returned no task ids".into())),
            }
        })
    }

    fn put_push_config(&self, config: StoredPushConfig) -> StoreFuture<'_, u64> {
        let done = self.write(Action::PutPushConfig(config));
        Box::pin(async move {
            match done.await? {
                Outcome::Cursor(seq) => Ok(seq),
                _ => Err(StoreError::Corrupt(
                    "storing a push configuration returned no cursor".into(),
                )),
            }
        })
    }

    fn push_delivered(&self, task_id: String, config_id: String, seq: u64) -> StoreFuture<'_, ()> {
        let done = self.write(Action::PushDelivered {
            task_id,
            config_id,
            seq,
        });
        Box::pin(async move { done.await.map(|_| ()) })
    }

    fn delete_push_config(&self, task_id: String, config_id: String) -> StoreFuture<'_, bool> {
        let done = self.write(Action::DeletePushConfig { task_id, config_id });
        Box::pin(async move { Ok(matches!(done.await?, Outcome::Count(n) if n > 0)) })
    }

    /// Push configurations are written by jobs that commit before they
    /// are answered.
    fn push_configs(&self) -> StoreFuture<'_, Vec<PushConfigRecord>> {
        self.read(self.read_on(Sees::Committed), |connection| {
            let mut statement = connection.prepare_cached(
                "SELECT task_id, config_id, document, delivered_seq FROM push_configs",
            )?;
            let rows = statement.query_map([], |row| {
                Ok(PushConfigRecord {
                    config: StoredPushConfig {
                        task_id: row.get(0)?,
                        config_id: row.get(1)?,
                        document: row.get(2)?,
                    },
                    delivered_seq: uint(row.get(3)?),
                })
            })?;
            rows.collect()
        })
    }

    fn push_configs_of(&self, task_id: String) -> StoreFuture<'_, Vec<PushConfigRecord>> {
        self.read(self.read_on(Sees::Committed), move |connection| {
            let mut statement = connection.prepare_cached(
                "SELECT config_id, document, delivered_seq FROM push_configs WHERE task_id = ?1",
            )?;
            let rows = statement.query_map([&task_id], |row| {
                Ok(PushConfigRecord {
                    config: StoredPushConfig {
                        task_id: task_id.clone(),
                        config_id: row.get(0)?,
                        document: row.get(1)?,
                    },
                    delivered_seq: uint(row.get(2)?),
                })
            })?;
            rows.collect()
        })
    }
}

// --- Connections -----------------------------------------------------------------------------

fn open_writer(path: &Path, options: SqliteOptions) -> rusqlite::Result<Connection> {
    let flags = OpenFlags::SQLITE_OPEN_READ_WRITE
        | OpenFlags::SQLITE_OPEN_CREATE
        | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let connection = Connection::open_with_flags(path, flags)?;
    configure(&connection)?;
    let mode: String = connection.query_row("PRAGMA journal_mode = WAL", [], |row| row.get(0))?;
    if !mode.eq_ignore_ascii_case("wal") {
        tracing::warn!(%mode, path = %path.display(), "the task store could not switch to WAL mode");
    }
    connection.execute_batch(&format!(
        "PRAGMA synchronous = {};",
        options.synchronous.pragma()
    ))?;
    // The checkpointer copies the WAL back, not the writer; once the WAL
    // starts over its file is cut back to this size.
    connection.execute_batch(&format!(
        "PRAGMA wal_autocheckpoint = 0; PRAGMA journal_size_limit = {};",
        options.max_wal_bytes
    ))?;
    Ok(connection)
}

/// The checkpointer's bounds on the WAL, in pages.
fn wal_bounds(
    connection: &Connection,
    options: &SqliteOptions,
) -> rusqlite::Result<checkpoint::WalBounds> {
    let catch_up = options.catch_up_wal_bytes.min(options.max_wal_bytes / 2);
    Ok(checkpoint::WalBounds {
        catch_up: wal_pages(connection, catch_up)?,
        restart: wal_pages(connection, options.max_wal_bytes)?,
    })
}

/// `max_wal_bytes` in the database's pages (at least one).
fn wal_pages(connection: &Connection, max_wal_bytes: u64) -> rusqlite::Result<i64> {
    let page_size: i64 = connection.query_row("PRAGMA page_size", [], |row| row.get(0))?;
    let pages = max_wal_bytes / u64::try_from(page_size).unwrap_or(1).max(1);
    Ok(i64::try_from(pages).unwrap_or(i64::MAX).max(1))
}

/// The checkpointer's connection: it writes only the database file, from the WAL.
fn open_checkpointer(path: &Path) -> rusqlite::Result<Connection> {
    let flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let connection = Connection::open_with_flags(path, flags)?;
    configure(&connection)?;
    Ok(connection)
}

/// What every connection of the store is set to.
///
/// The query planner's stability guarantee (QPSG) makes a statement's plan
/// independent of the values bound to it. Without it SQLite recompiles a
/// cached statement each time it is bound to a value its plan might depend
/// on, such as a `LIMIT` that a worker starting, a turn and `GetTask` each
/// bind differently: the store's reads spent more time in the SQL parser
/// than in the B-trees. Every query here has one plan anyway.
fn configure(connection: &Connection) -> rusqlite::Result<()> {
    connection.busy_timeout(BUSY_TIMEOUT)?;
    connection.set_db_config(DbConfig::SQLITE_DBCONFIG_ENABLE_QPSG, true)?;
    Ok(())
}

/// Read connections, opened on demand and kept for reuse; a read holds one
/// of `permits` for as long as it uses a connection, so there are never
/// more than [`READERS`].
struct Readers {
    path: PathBuf,
    idle: Mutex<Vec<Connection>>,
    permits: Arc<Semaphore>,
}

impl Readers {
    /// A place among the reads that run at once.
    async fn permit(&self) -> Result<OwnedSemaphorePermit, StoreError> {
        Arc::clone(&self.permits)
            .acquire_owned()
            .await
            .map_err(|_| StoreError::Unavailable("the store is closing".into()))
    }

    /// Run `read` on a pooled connection on the blocking pool, holding
    /// `permit` until it is done.
    async fn off_the_workers<T: Send + 'static>(
        readers: Arc<Readers>,
        permit: OwnedSemaphorePermit,
        read: impl FnOnce(&Connection) -> rusqlite::Result<T> + Send + 'static,
    ) -> Result<T, StoreError> {
        tokio::task::spawn_blocking(move || {
            let _permit = permit;
            readers.with(read)
        })
        .await
        .map_err(|error| StoreError::Unavailable(format!("a read failed: {error}")))?
    }

    fn with<T>(
        &self,
        read: impl FnOnce(&Connection) -> rusqlite::Result<T>,
    ) -> Result<T, StoreError> {
        let pooled = self.pool().pop();
        let connection = match pooled {
            Some(connection) => connection,
            None => self.open().map_err(classify)?,
        };
        let result = read(&connection).map_err(classify);
        self.pool().push(connection);
        result
    }

    /// Run `read` on an idle connection, one that does not wait for locks
    /// meanwhile; `None` when no connection is idle (opening one is itself
    /// no quick read).
    fn try_inline<T>(
        &self,
        read: impl FnOnce(&Connection) -> rusqlite::Result<T>,
    ) -> Option<rusqlite::Result<T>> {
        let connection = self.pool().pop()?;
        let result = connection
            .busy_timeout(Duration::ZERO)
            .and_then(|()| read(&connection));
        match connection.busy_timeout(BUSY_TIMEOUT) {
            Ok(()) => self.pool().push(connection),
            // Never pooled without its busy timeout: dropped, and the
            // next read opens another.
            Err(error) => tracing::warn!(%error, "a task store reader was closed"),
        }
        Some(result)
    }

    fn open(&self) -> rusqlite::Result<Connection> {
        let flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let connection = Connection::open_with_flags(&self.path, flags)?;
        configure(&connection)?;
        // These connections only read; say so, so a bug cannot make them write.
        connection.execute_batch("PRAGMA query_only = ON;")?;
        Ok(connection)
    }

    // A panic while reading cannot leave a connection half-used: the pool
    // only holds connections nobody is using.
    fn pool(&self) -> std::sync::MutexGuard<'_, Vec<Connection>> {
        self.idle.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Store one task's write at write revision `revision`: its log entries and
/// messages (`commits`), its row, its artifacts and participants.
fn write_task(connection: &Connection, write: &TaskWrite, revision: u64) -> rusqlite::Result<()> {
    let revision = int(revision);
    let last_event = commits::append(connection, &write.task_id, &write.entries, &write.messages)?;
    let ends = Ends::of(write, last_event);
    match &write.created {
        Some(created) => insert_task(connection, write, created, &ends, revision)?,
        None => update_task(connection, write, &ends, revision)?,
    }
    append_rows(connection, write)
}

/// Where a write leaves a task's log, history and events, and where it
/// must find them.
struct Ends {
    /// The first entry's and first message's positions: the stored log
    /// and history must end just before them.
    log_from: Option<i64>,
    history_from: Option<i64>,
    log_len: Option<i64>,
    history_len: Option<i64>,
    event_seq: Option<i64>,
}

impl Ends {
    fn of(write: &TaskWrite, last_event: Option<u64>) -> Self {
        let after = |position: u64| int(position.saturating_add(1));
        Ends {
            log_from: write.entries.first().map(|e| int(e.position)),
            history_from: write.messages.first().map(|m| int(m.position)),
            log_len: write.entries.last().map(|e| after(e.position)),
            history_len: write.messages.last().map(|m| after(m.position)),
            event_seq: last_event.map(int),
        }
    }
}

fn insert_task(
    connection: &Connection,
    write: &TaskWrite,
    created: &Created,
    ends: &Ends,
    revision: i64,
) -> rusqlite::Result<()> {
    // A new task's log and history start at 0.
    if ends.log_from.is_some_and(|p| p != 0) || ends.history_from.is_some_and(|p| p != 0) {
        return Err(constraint(format!(
            "task {} is created with a log or history that does not start at position 0",
            write.task_id
        )));
    }
    let head = &write.head;
    let first_message = write.messages.first().map(|m| &m.message_id);
    connection
        .prepare_cached(
            "INSERT INTO tasks (id, context_id, parent_id, created_by, state, terminal,
                 active, status_at_ms, status_rev, write_rev, head, first_message_id,
                 log_len, history_len, event_seq)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?9, ?10, ?11, ?12, ?13, ?14)",
        )?
        .execute(params![
            write.task_id,
            head.context_id,
            created.parent_id,
            created.created_by,
            head.state,
            head.terminal,
            head.active,
            head.status_at_ms,
            revision,
            head.document,
            first_message,
            ends.log_len.unwrap_or(0),
            ends.history_len.unwrap_or(0),
            ends.event_seq.unwrap_or(0),
        ])?;
    Ok(())
}

/// Update a stored task's row, where its log and history end just before
/// the write's first entry and message (a step stored twice is refused).
/// SQLite rewrites the index entries of every column an UPDATE sets,
/// changed or not, so an indexed column is set only when it may have
/// changed: a turn that starts and ends in INPUT_REQUIRED does not write a
/// page of `tasks_by_state`, and a write that changed no status none of the
/// two indexes ordered by `status_rev`.
fn update_task(
    connection: &Connection,
    write: &TaskWrite,
    ends: &Ends,
    revision: i64,
) -> rusqlite::Result<()> {
    let head = &write.head;
    let updated = connection
        .prepare_cached(
            "UPDATE tasks SET terminal = ?2, status_at_ms = ?3, write_rev = ?4, head = ?5,
                 log_len = COALESCE(?6, log_len), history_len = COALESCE(?7, history_len),
                 event_seq = MAX(event_seq, COALESCE(?8, 0))
             WHERE id = ?1 AND (?9 IS NULL OR log_len = ?9)
                 AND (?10 IS NULL OR history_len = ?10)",
        )?
        .execute(params![
            write.task_id,
            head.terminal,
            head.status_at_ms,
            revision,
            head.document,
            ends.log_len,
            ends.history_len,
            ends.event_seq,
            ends.log_from,
            ends.history_from,
        ])?;
    if updated == 0 {
        return Err(not_continued(connection, write, ends));
    }
    if head.status_changed {
        connection
            .prepare_cached("UPDATE tasks SET status_rev = ?2 WHERE id = ?1")?
            .execute(params![write.task_id, revision])?;
    }
    connection
        .prepare_cached("UPDATE tasks SET state = ?2 WHERE id = ?1 AND state IS NOT ?2")?
        .execute(params![write.task_id, head.state])?;
    connection
        .prepare_cached("UPDATE tasks SET active = ?2 WHERE id = ?1 AND active IS NOT ?2")?
        .execute(params![write.task_id, head.active])?;
    if let Some(first) = write.messages.iter().find(|m| m.position == 0) {
        // A task created before its first message (none is, today).
        connection
            .prepare_cached("UPDATE tasks SET first_message_id = ?2 WHERE id = ?1")?
            .execute(params![write.task_id, first.message_id])?;
    }
    Ok(())
}

/// Why an update found no row to change: no such task, or a log or history
/// that ends elsewhere than the write continues it.
fn not_continued(connection: &Connection, write: &TaskWrite, ends: &Ends) -> rusqlite::Error {
    let stored: rusqlite::Result<Option<(i64, i64)>> = connection
        .prepare_cached("SELECT log_len, history_len FROM tasks WHERE id = ?1")
        .and_then(|mut statement| {
            statement
                .query_row([&write.task_id], |row| Ok((row.get(0)?, row.get(1)?)))
                .optional()
        });
    match stored {
        Ok(None) => missing_task(&write.task_id),
        Ok(Some((log_len, history_len))) => constraint(format!(
            "task {} has {log_len} log entries and {history_len} messages; the write continues \
             them at {:?} and {:?}",
            write.task_id, ends.log_from, ends.history_from
        )),
        Err(error) => error,
    }
}

/// The artifacts and participants of a write.
fn append_rows(connection: &Connection, write: &TaskWrite) -> rusqlite::Result<()> {
    let id = &write.task_id;
    let mut artifacts = connection.prepare_cached(
        "INSERT INTO artifacts (task_id, position, document) VALUES (?1, ?2, ?3)",
    )?;
    for artifact in &write.artifacts {
        artifacts.execute(params![id, int(artifact.position), artifact.document])?;
    }
    if let Some(participants) = &write.participants {
        // A task this write creates has none to replace.
        if write.created.is_none() {
            connection
                .prepare_cached("DELETE FROM participants WHERE task_id = ?1")?
                .execute([id])?;
        }
        let mut insert = connection.prepare_cached(
            "INSERT OR IGNORE INTO participants (task_id, participant_id) VALUES (?1, ?2)",
        )?;
        for participant in participants {
            insert.execute([id, participant])?;
        }
    }
    Ok(())
}

/// An update of a task that was never created is a bug in the caller;
/// reported as a constraint violation so it fails alone, as a conflict.
fn missing_task(id: &str) -> rusqlite::Error {
    constraint(format!("task {id} does not exist"))
}

fn constraint(message: String) -> rusqlite::Error {
    rusqlite::Error::SqliteFailure(
        rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_CONSTRAINT),
        Some(message),
    )
}

fn purge(connection: &Connection, before_ms: i64) -> rusqlite::Result<Vec<String>> {
    const ENDED: &str = "SELECT id FROM tasks WHERE terminal = 1 AND status_at_ms < ?1";
    let ids: Vec<String> = connection
        .prepare(ENDED)?
        .query_map([before_ms], |row| row.get(0))?
        .collect::<rusqlite::Result<_>>()?;
    for table in [
        "commits",
        "history",
        "message_ids",
        "artifacts",
        "participants",
        "push_configs",
    ] {
        connection.execute(
            &format!("DELETE FROM {table} WHERE task_id IN ({ENDED})"),
            [before_ms],
        )?;
    }
    connection.execute(
        "DELETE FROM tasks WHERE terminal = 1 AND status_at_ms < ?1",
        [before_ms],
    )?;
    // Same transaction, same condition: exactly the tasks listed above went.
    Ok(ids)
}

// --- Reads -----------------------------------------------------------------------------------

fn load_task(
    connection: &Connection,
    id: &str,
    history: Option<usize>,
    artifacts: bool,
    budget: &Budget,
) -> rusqlite::Result<Option<StoredTask>> {
    let head: Option<(String, i64, i64)> = connection
        .prepare_cached("SELECT head, status_rev, history_len FROM tasks WHERE id = ?1")?
        .query_row([id], |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?)))
        .optional()?;
    let Some((head, revision, history_len)) = head else {
        return Ok(None);
    };
    if !budget.spend(head.len()) {
        return Ok(None);
    }
    let mut history = commits::newest_messages(connection, id, history, budget)?;
    history.reverse();
    Ok(Some(StoredTask {
        head,
        history_len: uint(history_len),
        history,
        artifacts: if artifacts {
            load_artifacts(connection, id, budget)?
        } else {
            Vec::new()
        },
        revision: uint(revision),
    }))
}

fn load_artifacts(
    connection: &Connection,
    id: &str,
    budget: &Budget,
) -> rusqlite::Result<Vec<String>> {
    let mut statement = connection
        .prepare_cached("SELECT document FROM artifacts WHERE task_id = ?1 ORDER BY position")?;
    let mut rows = statement.query([id])?;
    let mut artifacts = Vec::new();
    while let Some(row) = rows.next()? {
        let document: String = row.get(0)?;
        if !budget.spend(document.len()) {
            break;
        }
        artifacts.push(document);
    }
    Ok(artifacts)
}

fn list(connection: &Connection, query: &ListQuery) -> rusqlite::Result<ListPage> {
    let mut from = String::from("FROM tasks t");
    let mut filters = Vec::new();
    let mut values: Vec<SqlValue> = Vec::new();
    if let Some(participant) = &query.participant {
        from.push_str(" JOIN participants p ON p.task_id = t.id AND p.participant_id = ?");
        values.push(participant.clone().into());
    }
    if let Some(context_id) = &query.context_id {
        filters.push("t.context_id = ?");
        values.push(context_id.clone().into());
    }
    if let Some(state) = &query.state {
        filters.push("t.state = ?");
        values.push(state.clone().into());
    }
    if let Some(after) = query.status_after_ms {
        filters.push("t.status_at_ms >= ?");
        values.push(after.into());
    }
    let filter = |extra: Option<&str>| {
        let all: Vec<&str> = filters.iter().copied().chain(extra).collect();
        if all.is_empty() {
            String::new()
        } else {
            format!(" WHERE {}", all.join(" AND "))
        }
    };
    let total: i64 = connection.query_row(
        &format!("SELECT COUNT(*) {from}{}", filter(None)),
        params_from_iter(values.iter()),
        |row| row.get(0),
    )?;
    let cursor = query.before_revision.map(|_| "t.status_rev < ?");
    if let Some(before) = query.before_revision {
        values.push(int(before).into());
    }
    // One more than the page, to know whether another page follows.
    let limit = i64::try_from(query.limit).unwrap_or(i64::MAX - 1) + 1;
    values.push(limit.into());
    let sql = format!(
        "SELECT t.id {from}{} ORDER BY t.status_rev DESC LIMIT ?",
        filter(cursor)
    );
    let ids: Vec<String> = connection
        .prepare(&sql)?
        .query_map(params_from_iter(values.iter()), |row| row.get(0))?
        .collect::<rusqlite::Result<_>>()?;
    let more = ids.len() > query.limit;
    let mut tasks = Vec::with_capacity(query.limit.min(ids.len()));
    for id in ids.iter().take(query.limit) {
        let budget = Budget::unbounded();
        if let Some(task) = load_task(connection, id, query.history, query.artifacts, &budget)? {
            tasks.push(task);
        }
    }
    Ok(ListPage {
        tasks,
        total: uint(total),
        more,
    })
}

// --- Values ----------------------------------------------------------------------------------

/// SQLite integers are signed; counters never get near the limit.
fn int(value: u64) -> i64 {
    i64::try_from(value).unwrap_or(i64::MAX)
}

fn uint(value: i64) -> u64 {
    u64::try_from(value).unwrap_or(0)
}

/// What a SQLite error means for the caller.
fn classify(error: rusqlite::Error) -> StoreError {
    let rusqlite::Error::SqliteFailure(failure, message) = &error else {
        // Type conversions and the like: stored data this build cannot read.
        return StoreError::Corrupt(error.to_string());
    };
    let detail = message.clone().unwrap_or_else(|| failure.to_string());
    match failure.code {
        ErrorCode::ConstraintViolation => StoreError::Conflict(detail),
        ErrorCode::DatabaseCorrupt | ErrorCode::NotADatabase => StoreError::Corrupt(detail),
        ErrorCode::DiskFull => StoreError::Unavailable(format!("the disk is full ({detail})")),
        ErrorCode::ReadOnly => {
            StoreError::Unavailable(format!("the database is read-only ({detail})"))
        }
        ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked => StoreError::Unavailable(format!(
            "the database is locked by another process ({detail})"
        )),
        ErrorCode::SystemIoFailure => {
            StoreError::Unavailable(format!("an I/O error occurred ({detail})"))
        }
        _ => StoreError::Unavailable(detail),
    }
}

#[cfg(test)]
mod tests {
    use std::time::Instant;

    use rusqlite::StatementStatus;

    use super::*;
    use crate::store::tests::{create, entry};

    fn migrated(dir: &Path) -> Connection {
        let connection =
            open_writer(&dir.join("t.db"), SqliteOptions::new(Synchronous::Normal)).expect("opens");
        schema::migrate(&connection).expect("migrates");
        connection
    }

    fn job(writes: Vec<TaskWrite>) -> (Job, oneshot::Receiver<Result<Outcome, StoreError>>) {
        let (reply, answer) = oneshot::channel();
        let action = Action::Commit(writes);
        (Job { action, reply }, answer)
    }

    /// A writer on a new database in `dir`, answering from its redo log
    /// with `uncommitted` (committing every batch without).
    fn writer(dir: &Path, uncommitted: Option<Arc<Uncommitted>>) -> Writer {
        let connection = migrated(dir);
        let checkpoints = open_checkpointer(&dir.join("t.db")).expect("opens");
        let bounds = checkpoint::WalBounds {
            catch_up: 8_192,
            restart: 16_384,
        };
        let checkpoints = checkpoint::spawn(checkpoints, bounds).expect("spawns");
        let redo = RedoLog::open(&RedoLog::path_of(&dir.join("t.db")), false).expect("opens");
        let defer = uncommitted.map(|u| (Duration::from_secs(3600), u));
        Writer::new(connection, checkpoints, false, None, redo, defer).expect("writer")
    }

    fn answer(
        mut answer: oneshot::Receiver<Result<Outcome, StoreError>>,
    ) -> Result<Outcome, StoreError> {
        answer.try_recv().expect("answered")
    }

    fn stored_messages(connection: &Connection) -> Vec<(String, String)> {
        connection
            .prepare("SELECT task_id, message_id FROM message_ids ORDER BY task_id")
            .expect("prepares")
            .query_map([], |row| Ok((row.get(0)?, row.get(1)?)))
            .expect("reads")
            .collect::<rusqlite::Result<_>>()
            .expect("reads")
    }

    #[test]
    fn a_conflicting_job_fails_alone_and_the_rest_of_its_batch_commits() {
        let dir = tempfile::tempdir().expect("tempdir");
        let uncommitted = Arc::new(Uncommitted::default());
        let mut writer = writer(dir.path(), Some(Arc::clone(&uncommitted)));
        // Answered from the redo log, in the transaction the next batch runs in.
        let (before, before_answer) = job(vec![create("t0", "carol", "m0")]);
        writer.run_batch(vec![before]);
        assert!(matches!(answer(before_answer), Ok(Outcome::Committed(r)) if r == [1]));
        let (first, first_answer) = job(vec![create("t1", "alice", "m1")]);
        // The same task created again: a conflict, in the middle of the batch.
        let (again, again_answer) = job(vec![create("t1", "alice", "m2")]);
        let (last, last_answer) = job(vec![create("t2", "bob", "m3")]);
        writer.run_batch(vec![first, again, last]);
        // Each commit answers with the revisions its writes took: the
        // conflicting job's was given back to the next.
        assert!(matches!(answer(first_answer), Ok(Outcome::Committed(r)) if r == [2]));
        assert!(matches!(answer(again_answer), Err(StoreError::Conflict(_))));
        assert!(matches!(answer(last_answer), Ok(Outcome::Committed(r)) if r == [3]));
        assert!(uncommitted.touches("t0") && uncommitted.touches("t2"));
        let expected =
            [("t0", "m0"), ("t1", "m1"), ("t2", "m3")].map(|(t, m)| (t.to_owned(), m.to_owned()));
        assert_eq!(stored_messages(&writer.connection), expected);
        // Nothing of it is committed yet; then all of it.
        let other = Connection::open(dir.path().join("t.db")).expect("opens");
        assert_eq!(stored_messages(&other), []);
        writer.commit_open().expect("commits");
        assert_eq!(stored_messages(&other), expected);
        assert!(!uncommitted.any());
        // The revisions the conflicting job took were given back.
        assert_eq!(writer.revision, 3);
    }

    /// The tasks the database file itself holds, ignoring the WAL: what
    /// checkpoints have copied (none before the schema itself is copied).
    fn checkpointed_tasks(path: &Path) -> i64 {
        let uri = format!("file:{}?immutable=1", path.display());
        let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_URI;
        let file = Connection::open_with_flags(uri, flags).expect("opens the file alone");
        file.query_row("SELECT COUNT(*) FROM tasks", [], |row| row.get(0))
            .unwrap_or(0)
    }

    #[test]
    fn the_wal_bound_is_the_writers_file_limit_and_the_checkpointers_page_counts() {
        let dir = tempfile::tempdir().expect("tempdir");
        let options = SqliteOptions {
            max_wal_bytes: 1 << 20,
            ..SqliteOptions::new(Synchronous::Normal)
        };
        let writer = open_writer(&dir.path().join("t.db"), options).expect("opens");
        let limit: i64 = writer
            .query_row("PRAGMA journal_size_limit", [], |row| row.get(0))
            .expect("reads");
        assert_eq!(limit, 1 << 20);
        assert_eq!(wal_pages(&writer, 1 << 20).expect("reads"), 256);
        assert_eq!(wal_pages(&writer, 1).expect("reads"), 1, "at least a page");
        let bounds = |options| wal_bounds(&writer, &options).expect("reads");
        assert_eq!(
            bounds(options),
            checkpoint::WalBounds {
                catch_up: 128,
                restart: 256
            },
            "the writer catches up at half a small bound"
        );
        assert_eq!(
            bounds(SqliteOptions::new(Synchronous::Normal)),
            checkpoint::WalBounds {
                catch_up: 8_192,
                restart: 16_384
            },
        );
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn commits_reach_the_database_file_by_the_checkpointer_not_the_writer() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("t.db");
        let store = SqliteStore::open(&path, Synchronous::Normal).expect("opens");
        let writer_checkpoints: i64 = open_writer(&path, SqliteOptions::new(Synchronous::Normal))
            .expect("opens")
            .query_row("PRAGMA wal_autocheckpoint", [], |row| row.get(0))
            .expect("reads");
        assert_eq!(writer_checkpoints, 0, "the writer never checkpoints");
        for n in 0..3 {
            let id = format!("t{n}");
            store
                .commit(vec![create(&id, "alice", &format!("m{n}"))])
                .await
                .expect("commits");
        }
        // Far fewer pages than SQLite's own 1,000-page trigger, yet copied
        // soon after: the checkpointer gathers for 100 ms.
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while checkpointed_tasks(&path) < 3 {
            assert!(
                std::time::Instant::now() < deadline,
                "no checkpoint copied the commits"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    fn cached(store: &SqliteStore, id: &str) -> bool {
        store
            .hot
            .as_ref()
            .and_then(|hot| hot.load(id, None))
            .is_some()
    }

    /// `id`'s head, set behind the store's back by another connection.
    fn set_head_behind(path: &Path, id: &str, head: &str) {
        Connection::open(path)
            .expect("opens")
            .execute("UPDATE tasks SET head = ?2 WHERE id = ?1", [id, head])
            .expect("updates");
    }

    /// A store opened at `path` with task `t` created in it.
    async fn store_with_a_task(path: &Path) -> SqliteStore {
        let store = SqliteStore::open(path, Synchronous::Normal).expect("opens");
        store
            .commit(vec![create("t", "alice", "m")])
            .await
            .expect("creates");
        store
    }

    /// The scheduling policies of this process's threads named `name`
    /// (as `/proc` shortens it).
    #[cfg(target_os = "linux")]
    fn policies_of_threads(name: &str) -> Vec<i32> {
        let tasks = std::fs::read_dir("/proc/self/task").expect("lists threads");
        tasks
            .filter_map(|task| {
                let task = task.ok()?;
                let comm = std::fs::read_to_string(task.path().join("comm")).ok()?;
                let tid: libc::pid_t = task.file_name().to_str()?.parse().ok()?;
                #[allow(unsafe_code)]
                // SAFETY: reads the policy of a thread of this process.
                let policy = unsafe { libc::sched_getscheduler(tid) };
                (comm.trim_end() == name).then_some(policy)
            })
            .collect()
    }

    #[cfg(target_os = "linux")]
    #[tokio::test]
    async fn the_writer_runs_as_a_batch_thread() {
        let dir = tempfile::tempdir().expect("tempdir");
        // Answered by the writer, which set its policy before its first job.
        let _store = store_with_a_task(&dir.path().join("t.db")).await;
        // Other tests' writers may be starting meanwhile; this one is batch.
        let policies = policies_of_threads("task-store-writ");
        assert!(policies.contains(&libc::SCHED_BATCH), "{policies:?}");
    }

    #[tokio::test]
    async fn a_task_read_whole_is_answered_from_memory_in_step_with_commits_until_idle() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("t.db");
        let store = store_with_a_task(&path).await;
        let read = |history| store.load("t".into(), history);
        let first = read(None).await.expect("reads").expect("exists");
        store
            .commit(vec![follow_up("t", 0)])
            .await
            .expect("follows up");
        assert!(!cached(&store, "t"), "a first exchange is not kept");
        let after = read(None).await.expect("reads").expect("exists");
        assert!(cached(&store, "t"));
        assert_eq!(after.history.len(), 3);
        assert_eq!(&after.history[..1], &first.history[..]);
        let committed = follow_up("t", 0);
        assert_eq!(after.head, committed.head.document);
        assert_eq!(
            read(Some(2)).await.expect("reads").expect("exists").history,
            [
                committed.messages[0].document.clone(),
                committed.messages[1].document.clone()
            ]
        );

        // The cache answers, not the database: a change behind the
        // store's back is not seen until the server goes idle.
        set_head_behind(&path, "t", "{\"behind\":1}");
        assert_eq!(read(None).await.expect("reads"), Some(after.clone()));
        assert_eq!(
            store.head("t".into()).await.expect("reads"),
            Some(after.head.clone())
        );
        store.release_memory().await.expect("releases");
        assert_eq!(
            store.head("t".into()).await.expect("reads").as_deref(),
            Some("{\"behind\":1}")
        );

        // Without the cache, every read is the database's.
        drop(store);
        let uncached = SqliteStore::open_with_options(
            &path,
            SqliteOptions::new(Synchronous::Normal).cached(0),
        )
        .expect("opens");
        assert!(uncached.hot.is_none());
        uncached.load("t".into(), None).await.expect("reads");
        set_head_behind(&path, "t", "{\"behind\":2}");
        let head = uncached.load("t".into(), None).await.expect("reads");
        assert_eq!(head.map(|t| t.head).as_deref(), Some("{\"behind\":2}"));
    }

    #[tokio::test]
    async fn a_purged_task_leaves_the_cache_with_the_database() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = store_with_a_task(&dir.path().join("t.db")).await;
        let mut ended = follow_up("t", 0);
        ended.head.terminal = true;
        ended.head.status_at_ms = 1;
        store.commit(vec![ended]).await.expect("commits");
        assert!(store.load("t".into(), None).await.expect("reads").is_some());
        assert!(cached(&store, "t"));
        assert_eq!(store.purge_terminal(100).await.expect("purges"), ["t"]);
        assert!(store.load("t".into(), None).await.expect("reads").is_none());
        assert!(store.head("t".into()).await.expect("reads").is_none());
    }

    #[tokio::test]
    async fn an_idle_store_closes_its_readers_and_keeps_working() {
        let dir = tempfile::tempdir().expect("tempdir");
        // Every write committed at once, so that reads go to the readers.
        let options = SqliteOptions::new(Synchronous::Normal).committing_every(0);
        let store =
            SqliteStore::open_with_options(&dir.path().join("t.db"), options).expect("opens");
        store
            .commit(vec![create("t1", "alice", "m1")])
            .await
            .expect("commits");
        assert!(store.head("t1".into()).await.expect("reads").is_some());
        assert_eq!(store.readers.pool().len(), 1, "a read keeps its connection");
        store.release_memory().await.expect("releases");
        assert_eq!(store.readers.pool().len(), 0);
        // Reads open a connection again; the writer writes on.
        store
            .commit(vec![create("t2", "alice", "m2")])
            .await
            .expect("commits after");
        assert!(
            store
                .head("t2".into())
                .await
                .expect("reads after")
                .is_some()
        );
        assert_eq!(store.readers.pool().len(), 1);
    }

    /// How many times the WAL of `path` started over: SQLite counts them in
    /// the WAL header (its checkpoint sequence number).
    fn wal_restarts(path: &Path) -> u32 {
        let mut wal = path.as_os_str().to_owned();
        wal.push("-wal");
        let header = std::fs::read(&wal).unwrap_or_default();
        header
            .get(12..16)
            .and_then(|bytes| bytes.try_into().ok())
            .map_or(0, u32::from_be_bytes)
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_wal_starts_over_while_writes_never_pause() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("t.db");
        // A bound far beyond what this writes: only catching up can start
        // the WAL over, never the RESTART that waits for readers; and a
        // writer that catches up whatever the WAL's size, so that it does
        // three times in a short test.
        let options = SqliteOptions {
            max_wal_bytes: 1 << 40,
            catch_up_wal_bytes: 0,
            ..SqliteOptions::new(Synchronous::Normal)
        };
        let store = Arc::new(SqliteStore::open_with_options(&path, options).expect("opens"));
        store
            .commit(vec![create("first", "alice", "m")])
            .await
            .expect("commits");
        let started = wal_restarts(&path);
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        // Committers that never pause: the writer always has a batch.
        let committers: Vec<_> = (0..4)
            .map(|k| {
                let (store, stop) = (Arc::clone(&store), Arc::clone(&stop));
                tokio::spawn(async move {
                    let mut n = 0;
                    while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                        let id = format!("w{k}-{n}");
                        store
                            .commit(vec![create(&id, "alice", &id)])
                            .await
                            .expect("commits");
                        n += 1;
                    }
                })
            })
            .collect();
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        while wal_restarts(&path) < started + 3 && std::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        for committer in committers {
            committer.await.expect("committer");
        }
        let restarts = wal_restarts(&path) - started;
        assert!(
            restarts >= 3,
            "the WAL started over {restarts} times in 30 s of writes"
        );
    }

    /// The pages committing `write` added to the WAL (from an empty one).
    fn pages_written(
        connection: &Connection,
        path: &Path,
        write: &TaskWrite,
        revision: u64,
    ) -> u64 {
        connection
            .execute_batch("PRAGMA wal_checkpoint(TRUNCATE)")
            .expect("checkpoints");
        connection.execute_batch("BEGIN").expect("begins");
        write_task(connection, write, revision).expect("writes");
        connection.execute_batch("COMMIT").expect("commits");
        let page = uint(
            connection
                .query_row("PRAGMA page_size", [], |row| row.get(0))
                .expect("reads"),
        );
        let wal = std::fs::metadata(path.with_extension("db-wal"))
            .expect("the WAL")
            .len();
        // A 32-byte header, then a 24-byte header before each page.
        (wal - 32) / (page + 24)
    }

    #[test]
    fn a_write_that_keeps_the_state_writes_only_the_tasks_own_page() {
        let dir = tempfile::tempdir().expect("tempdir");
        let connection = migrated(dir.path());
        let path = dir.path().join("t.db");
        connection.execute_batch("BEGIN").expect("begins");
        // Enough tasks that each index of them spans pages.
        for n in 0..400 {
            write_task(
                &connection,
                &create(&format!("t{n:03}"), "alice", "m1"),
                n + 1,
            )
            .expect("creates");
        }
        connection.execute_batch("COMMIT").expect("commits");
        let mut keep = create("t200", "alice", "m1");
        keep.created = None;
        keep.entries.clear();
        keep.messages.clear();
        keep.participants = None;
        keep.head.status_changed = false;
        keep.head.document = "{\"a new\":\"snapshot\"}".into();
        // A running task that stays running, then one that stays parked.
        for (active, revision) in [(true, 500), (false, 501), (false, 502)] {
            keep.head.active = active;
            let pages = pages_written(&connection, &path, &keep, revision);
            // Going from running to parked leaves `tasks_active`: one page more.
            let expected = if revision == 501 { 2 } else { 1 };
            assert_eq!(pages, expected, "revision {revision}: the task's row only");
        }
        // A new status moves the task in the indexes that order by it.
        let mut change = keep.clone();
        change.head.status_changed = true;
        change.head.state = "completed".into();
        assert!(pages_written(&connection, &path, &change, 503) > 1);
    }

    /// A follow-up as the agent loop writes it, with documents of the sizes
    /// it writes: five log entries (two with events) and two messages.
    fn follow_up(task: &str, turn: u64) -> TaskWrite {
        let document = |bytes: usize| format!("\"{}\"", "x".repeat(bytes));
        let entries = [
            (200, None),
            (110, Some(200)),
            (110, None),
            (60, None),
            (470, Some(640)),
        ]
        .into_iter()
        .enumerate()
        .map(|(n, (change, event))| LogEntry {
            position: 5 * turn + n as u64 + 2,
            at_ms: 1,
            kind: "status".into(),
            document: document(change),
            event: event.map(|bytes| StoredEvent {
                seq: 2 * turn + 2 + u64::from(n == 4),
                document: document(bytes),
            }),
        })
        .collect();
        let messages = [170, 345]
            .into_iter()
            .enumerate()
            .map(|(n, bytes)| super::super::StoredMessage {
                position: 2 * turn + n as u64 + 1,
                message_id: format!("{task}-{turn}-{n}"),
                document: document(bytes),
            })
            .collect();
        let mut write = create(task, "alice", "first");
        write.created = None;
        write.participants = None;
        write.entries = entries;
        write.messages = messages;
        write.head.state = "input-required".into();
        write.head.active = false;
        write.head.document = document(870);
        write
    }

    #[test]
    fn a_follow_up_writes_a_bounded_number_of_pages_whatever_the_history() {
        let dir = tempfile::tempdir().expect("tempdir");
        let connection = migrated(dir.path());
        let path = dir.path().join("t.db");
        // Twenty conversations taking turns, as the write-amplification
        // bench drives them: each one's rows interleave with the others'.
        let tasks: Vec<String> = (0..20).map(|n| format!("task-{n:02}")).collect();
        let mut revision = 0;
        connection.execute_batch("BEGIN").expect("begins");
        for task in &tasks {
            revision += 1;
            write_task(&connection, &create(task, "alice", "first"), revision).expect("creates");
        }
        for turn in 0..12 {
            for task in &tasks {
                revision += 1;
                write_task(&connection, &follow_up(task, turn), revision).expect("writes");
            }
        }
        connection.execute_batch("COMMIT").expect("commits");
        let mut pages = 0;
        for task in &tasks {
            revision += 1;
            pages += pages_written(&connection, &path, &follow_up(task, 12), revision);
        }
        let per_follow_up = pages as f64 / tasks.len() as f64;
        // A row per entry and per message, keyed by task, took 15.8 pages
        // (leaf splits in the middle of three B-trees, overflow pages); the
        // log as one row at the end of its table and the messages as one
        // row by task, 11.
        assert!(
            per_follow_up <= 12.0,
            "a follow-up wrote {per_follow_up} WAL pages"
        );
    }

    /// A task whose log has `entries` entries, one per commit, every other
    /// one with an event, and a message in every fourth commit.
    fn logged(connection: &Connection, id: &str, entries: u64) {
        for position in 0..entries {
            let seq = (position % 2 == 1).then_some(position.div_ceil(2));
            let entry = entry(position, seq);
            let message = (position % 4 == 0).then(|| super::super::StoredMessage {
                position: position / 4,
                message_id: format!("m{position}"),
                document: format!("{{\"n\":{}}}", position / 4),
            });
            commits::append(connection, id, &[entry], message.as_slice()).expect("appends");
        }
    }

    /// The virtual machine steps `read` took through the cached statement `sql`.
    fn steps<T>(connection: &Connection, sql: &str, read: impl FnOnce() -> T) -> (T, i32) {
        let before = connection
            .prepare_cached(sql)
            .expect("prepares")
            .get_status(StatementStatus::VmStep);
        let read = read();
        let after = connection
            .prepare_cached(sql)
            .expect("prepares")
            .get_status(StatementStatus::VmStep);
        (read, after - before)
    }

    /// The events `events_after` returned above `after`, and the steps it took.
    fn steps_reading(connection: &Connection, id: &str, after: u64) -> (Vec<u64>, i32) {
        steps(connection, commits::NEWEST_EVENTS_FIRST, || {
            commits::events_after(connection, id, after)
                .expect("reads")
                .into_iter()
                .map(|event| event.seq)
                .collect()
        })
    }

    #[test]
    fn the_events_after_a_point_are_read_from_the_logs_end_whatever_its_length() {
        let dir = tempfile::tempdir().expect("tempdir");
        let connection = migrated(dir.path());
        logged(&connection, "short", 20);
        logged(&connection, "long", 2_000);
        // The last three events of each, oldest first.
        let (short, short_steps) = steps_reading(&connection, "short", 7);
        assert_eq!(short, [8, 9, 10]);
        let (long, long_steps) = steps_reading(&connection, "long", 997);
        assert_eq!(long, [998, 999, 1000]);
        assert_eq!(
            long_steps, short_steps,
            "reading a log's last events walked more of a longer log"
        );
        // From the start, every event; past the end, none.
        assert_eq!(
            steps_reading(&connection, "short", 0).0,
            (1..=10).collect::<Vec<_>>()
        );
        assert!(steps_reading(&connection, "long", 1000).0.is_empty());
    }

    #[test]
    fn the_newest_messages_are_read_from_the_historys_end_whatever_its_length() {
        let dir = tempfile::tempdir().expect("tempdir");
        let connection = migrated(dir.path());
        logged(&connection, "short", 20);
        logged(&connection, "long", 2_000);
        let newest = |id: &str, limit| {
            steps(&connection, commits::NEWEST_MESSAGES_FIRST, || {
                commits::newest_messages(&connection, id, limit, &Budget::unbounded())
                    .expect("reads")
            })
        };
        let (short, short_steps) = newest("short", Some(3));
        assert_eq!(short, ["{\"n\":4}", "{\"n\":3}", "{\"n\":2}"]);
        let (long, long_steps) = newest("long", Some(3));
        assert_eq!(long, ["{\"n\":499}", "{\"n\":498}", "{\"n\":497}"]);
        assert_eq!(
            long_steps, short_steps,
            "reading a history's newest messages walked more of a longer one"
        );
        assert_eq!(newest("short", None).0.len(), 5);
        assert!(newest("long", Some(0)).0.is_empty());
    }

    // --- Answering from the redo log -------------------------------------------------------

    /// A store answering from its redo log, committing at most every
    /// `interval_ms`.
    fn deferring(path: &Path, interval_ms: u32) -> SqliteStore {
        let options = SqliteOptions::new(Synchronous::Normal).committing_every(interval_ms);
        SqliteStore::open_with_options(path, options).expect("opens")
    }

    /// Long enough that nothing commits on time within a test.
    const NEVER_MS: u32 = 600_000;

    /// The tasks another connection sees: what is committed.
    fn committed_tasks(path: &Path) -> Vec<String> {
        let connection = Connection::open(path).expect("opens");
        let mut statement = connection
            .prepare("SELECT id FROM tasks ORDER BY id")
            .expect("prepares");
        let ids = statement.query_map([], |row| row.get(0)).expect("reads");
        ids.collect::<rusqlite::Result<_>>().expect("reads")
    }

    #[tokio::test]
    async fn a_write_answered_from_the_redo_log_survives_a_crash_before_its_commit() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("t.db");
        let store = deferring(&path, NEVER_MS);
        store
            .commit(vec![create("t", "alice", "m")])
            .await
            .expect("creates");
        store
            .commit(vec![follow_up("t", 0)])
            .await
            .expect("answers");
        assert!(
            committed_tasks(&path).is_empty(),
            "nothing is committed yet"
        );
        // The files as a crash would leave them: what the process wrote is
        // in the kernel's page cache, the transaction never committed.
        let crashed = dir.path().join("crashed");
        std::fs::create_dir(&crashed).expect("creates");
        for file in ["t.db", "t.db-wal", "t.db-redo"] {
            std::fs::copy(dir.path().join(file), crashed.join(file)).expect("copies");
        }
        drop(store);

        let path = crashed.join("t.db");
        let recovered = deferring(&path, NEVER_MS);
        // Applied and committed while the store opened.
        assert_eq!(committed_tasks(&path), ["t"]);
        let task = recovered
            .load("t".into(), None)
            .await
            .expect("reads")
            .expect("exists");
        let written = follow_up("t", 0);
        assert_eq!(task.head, written.head.document);
        assert_eq!(task.history.len(), 3);
        assert_eq!(
            task.revision, 2,
            "the revisions the writes were answered with"
        );
        // The log and history go on where the answered writes left them.
        recovered
            .commit(vec![follow_up("t", 1)])
            .await
            .expect("continues");
        drop(recovered);
        // Opened again, nothing is applied twice.
        let reopened = deferring(&path, NEVER_MS);
        let task = reopened.load("t".into(), None).await.expect("reads");
        assert_eq!(task.expect("exists").history.len(), 5);
    }

    #[tokio::test]
    async fn reads_see_every_answered_write_and_those_of_a_send_never_wait_for_its_commit() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("t.db");
        let store = deferring(&path, NEVER_MS);
        store
            .commit(vec![create("t1", "alice", "m1")])
            .await
            .expect("creates");
        let find = |lookup| store.find_message(lookup);
        let started = |who: &str, id: &str| MessageLookup::Started {
            created_by: who.into(),
            message_id: id.into(),
        };
        let in_task = |task: &str, id: &str| MessageLookup::InTask {
            task_id: task.into(),
            message_id: id.into(),
        };
        assert_eq!(find(started("alice", "m1")).await, Ok(Some("t1".into())));
        assert_eq!(find(started("bob", "m1")).await, Ok(None));
        assert_eq!(find(in_task("t1", "m1")).await, Ok(Some("t1".into())));
        assert_eq!(find(in_task("t1", "m2")).await, Ok(None));
        let head = store.head("t1".into()).await.expect("reads");
        assert_eq!(head, Some(create("t1", "alice", "m1").head.document));
        assert!(committed_tasks(&path).is_empty(), "the lookups committed");

        // Other reads of the task run on the writer's connection, in its
        // open transaction: they need no commit.
        let task = store.load("t1".into(), None).await.expect("reads");
        assert_eq!(task.expect("exists").history.len(), 1);
        let events = store.events_after("t1".into(), 0).await.expect("reads");
        assert_eq!(events.len(), 1);
        // A listing sees every answered write.
        store
            .commit(vec![create("t2", "bob", "m2")])
            .await
            .expect("creates");
        let page = store
            .list(ListQuery {
                limit: 10,
                ..ListQuery::default()
            })
            .await
            .expect("lists");
        assert_eq!(page.tasks.len(), 2);
        assert!(committed_tasks(&path).is_empty(), "a read committed");

        // Committed, they are read from the database.
        drop(store);
        let store = deferring(&path, NEVER_MS);
        let found = store.find_message(started("alice", "m1")).await;
        assert_eq!(found, Ok(Some("t1".into())));
        let page = store.list(ListQuery {
            limit: 10,
            ..ListQuery::default()
        });
        assert_eq!(page.await.expect("lists").tasks.len(), 2);
        assert_eq!(store.readers.pool().len(), 1, "read by a reader");
    }

    #[tokio::test]
    async fn an_open_transaction_commits_within_its_interval() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("t.db");
        let store = deferring(&path, 20);
        store
            .commit(vec![create("t1", "alice", "m1")])
            .await
            .expect("creates");
        let deadline = Instant::now() + Duration::from_secs(10);
        while committed_tasks(&path).is_empty() {
            assert!(Instant::now() < deadline, "never committed");
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        // With the store gone, its redo log is empty.
        drop(store);
        let redo = std::fs::metadata(RedoLog::path_of(&path)).expect("exists");
        assert_eq!(redo.len(), 0);
    }

    #[tokio::test]
    async fn writes_answered_before_a_full_disk_refused_a_batch_are_kept() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("t.db");
        drop(deferring(&path, NEVER_MS));
        let pages: i64 = Connection::open(&path)
            .expect("opens")
            .query_row("PRAGMA page_count", [], |row| row.get(0))
            .expect("page count");
        let options = SqliteOptions::new(Synchronous::Normal).committing_every(NEVER_MS);
        let capped = SqliteStore::open_with(
            &path,
            options,
            &format!("PRAGMA max_page_count = {};", pages + 12),
        )
        .expect("opens");
        capped
            .commit(vec![create("t1", "alice", "m1")])
            .await
            .expect("fits");
        let mut big = create("t2", "bob", "m2");
        big.messages[0].document = format!("\"{}\"", "x".repeat(1 << 20));
        let refused = capped.commit(vec![big]).await;
        let Err(StoreError::Unavailable(reason)) = &refused else {
            panic!("expected unavailable, got {refused:?}");
        };
        assert!(reason.contains("full"), "{reason}");
        // Whether SQLite kept the transaction or rolled it back, what was
        // answered in it is read back, and committed in the end.
        let t1 = capped.load("t1".into(), None).await.expect("reads");
        assert_eq!(t1.expect("exists").history.len(), 1);
        assert!(capped.head("t1".into()).await.expect("reads").is_some());
        assert!(capped.head("t2".into()).await.expect("reads").is_none());
        capped
            .commit(vec![create("t3", "carol", "m3")])
            .await
            .expect("small writes fit");
        drop(capped);
        assert_eq!(committed_tasks(&path), ["t1", "t3"]);
    }
}
