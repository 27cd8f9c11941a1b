//! The SQLite store's writer: one thread owning the only write connection.
//!
//! It takes every job waiting in its queue and runs them as one batch:
//! group commit. A batch of task writes is answered once it is in the redo
//! log (`redo`), in a transaction kept open for up to
//! [`SqliteOptions::commit_interval`](super::SqliteOptions), so that one
//! commit carries many batches; anything else commits before it is
//! answered. A read that must see uncommitted writes runs here too, on the
//! writer's connection, between two batches ([`Action::Read`]).

use std::sync::Arc;
use std::sync::mpsc::{self, RecvTimeoutError};
use std::thread;
use std::time::{Duration, Instant};

use rusqlite::{Connection, OptionalExtension, params};
use tokio::sync::oneshot;

use super::super::checkpoint::{self, Nudge};
use super::super::hot::HotTasks;
use super::super::redo::{Record, RedoLog};
use super::super::uncommitted::Uncommitted;
use super::super::{StoreError, StoredPushConfig, TaskWrite};
use super::{MAX_BATCH, MAX_REDO_BYTES, classify, int, purge, uint, write_task, writer_gone};

/// The writer thread and its queue. Dropping it lets the writer finish
/// (its open transaction committed, the redo log emptied) and waits for
/// it, so that the next store opened on the file finds it whole.
pub(super) struct WriterHandle {
    pub(super) jobs: Option<mpsc::Sender<Job>>,
    pub(super) thread: Option<thread::JoinHandle<()>>,
}

impl WriterHandle {
    pub(super) fn send(&self, job: Job) -> Result<(), StoreError> {
        let jobs = self.jobs.as_ref().ok_or_else(writer_gone)?;
        jobs.send(job).map_err(|_| writer_gone())
    }
}

impl Drop for WriterHandle {
    fn drop(&mut self) {
        self.jobs = None;
        if let Some(thread) = self.thread.take()
            && thread.join().is_err()
        {
            tracing::error!("the task store's writer panicked");
        }
    }
}

/// One unit of work for the writer.
pub(super) struct Job {
    pub(super) action: Action,
    pub(super) reply: oneshot::Sender<Result<Outcome, StoreError>>,
}

pub(super) enum Action {
    Commit(Vec<TaskWrite>),
    Purge {
        before_ms: i64,
    },
    PutPushConfig(StoredPushConfig),
    PushDelivered {
        task_id: String,
        config_id: String,
        seq: u64,
    },
    DeletePushConfig {
        task_id: String,
        config_id: String,
    },
    /// Empty the writer's page cache.
    ReleaseMemory,
    /// A read that must see writes answered but not yet committed: run on
    /// the writer's connection, in its open transaction. It sends its own
    /// answer.
    Read(Box<dyn FnOnce(&Connection) + Send>),
}

impl Action {
    /// Whether the job may be answered before its transaction commits, its
    /// writes made durable by the redo log. Only task writes go there;
    /// anything else commits the transaction it ran in.
    fn may_defer(&self) -> bool {
        matches!(self, Action::Commit(_))
    }
}

pub(super) enum Outcome {
    Done,
    /// The write revision each of a commit's writes took.
    Committed(Vec<u64>),
    Count(u64),
    /// A push configuration's delivery cursor.
    Cursor(u64),
    /// The ids of purged tasks.
    Purged(Vec<String>),
}

/// Answering for task writes before their commit (see `redo`).
struct Deferred {
    redo: RedoLog,
    /// The longest a transaction stays open.
    interval: Duration,
    uncommitted: Arc<Uncommitted>,
    /// The last redo record the database has (`counters.redo_applied`).
    applied: u64,
}

/// The writer's open transaction.
struct Open {
    since: Instant,
    /// The write revision when it began.
    revision: u64,
    /// The writes answered for in it, in order: what the redo log holds
    /// for it, applied again if SQLite loses the transaction.
    answered: Vec<TaskWrite>,
    /// Its commit failed: no batch joins it until a commit succeeds.
    failed: bool,
}

pub(super) struct Writer {
    pub(super) connection: Connection,
    checkpoints: Nudge,
    /// Kept in step with every write, before its job is answered.
    hot: Option<Arc<HotTasks>>,
    /// The last write revision handed out (see `schema`); on a shared store,
    /// as of this process's last transaction.
    pub(super) revision: u64,
    shared: bool,
    /// None when every batch commits before it is answered.
    deferred: Option<Deferred>,
    open: Option<Open>,
    /// Set once writes answered for could be neither committed nor applied
    /// again: every job fails from then on, and the next opening of the
    /// store applies them from the redo log.
    lost: Option<StoreError>,
}

impl Writer {
    /// The writer of `connection`. The writes of `records` the database
    /// does not have yet are applied first; with `defer`, batches of task
    /// writes are then answered once they are in `redo`, and committed
    /// within its interval.
    pub(super) fn new(
        connection: Connection,
        checkpoints: Nudge,
        shared: bool,
        hot: Option<Arc<HotTasks>>,
        (mut redo, records): (RedoLog, Vec<Record>),
        defer: Option<(Duration, Arc<Uncommitted>)>,
    ) -> Result<Self, String> {
        let sql = |error: rusqlite::Error| error.to_string();
        if shared {
            // The counter may lag behind what a process owning the store
            // wrote (it keeps its counter in memory).
            connection
                .execute_batch(
                    "BEGIN IMMEDIATE;
                     UPDATE counters SET value = MAX(value, (SELECT COALESCE(MAX(write_rev), 0) FROM tasks))
                         WHERE name = 'write_rev';
                     COMMIT;",
                )
                .map_err(sql)?;
        }
        let revision: i64 = connection
            .query_row("SELECT COALESCE(MAX(write_rev), 0) FROM tasks", [], |row| {
                row.get(0)
            })
            .map_err(sql)?;
        let mut writer = Writer {
            connection,
            checkpoints,
            hot,
            revision: uint(revision),
            shared,
            deferred: None,
            open: None,
            lost: None,
        };
        let applied = writer.replay(&redo, &records).map_err(|error| {
            format!(
                "the redo log {} holds writes the database refuses ({error}); \
                 move it aside to open the store without them",
                redo.path().display()
            )
        })?;
        redo.continue_after(applied);
        match defer {
            Some((interval, uncommitted)) => {
                redo.start_over();
                writer.deferred = Some(Deferred {
                    redo,
                    interval,
                    uncommitted,
                    applied,
                });
            }
            None => redo.close().map_err(|error| error.to_string())?,
        }
        Ok(writer)
    }

    /// Apply the writes of the redo log's `records` the database does not
    /// have (a crash before their commit); returns the last record the
    /// database has since.
    fn replay(&mut self, redo: &RedoLog, records: &[Record]) -> rusqlite::Result<u64> {
        let applied = |connection: &Connection| -> rusqlite::Result<u64> {
            let applied = connection
                .query_row(
                    "SELECT value FROM counters WHERE name = 'redo_applied'",
                    [],
                    |row| row.get::<_, i64>(0),
                )
                .optional()?;
            Ok(applied.map_or(0, uint))
        };
        let Some(last) = records.last().map(|record| record.seq) else {
            return applied(&self.connection);
        };
        let revision = self.revision;
        let mut replayed = 0;
        // Inside the transaction: on a shared store, another process may
        // have applied them meanwhile.
        let done = self.begin().and_then(|()| {
            let before = applied(&self.connection)?;
            let due = records.iter().filter(|record| record.seq > before);
            for write in due.flat_map(|record| &record.writes) {
                self.write(write)?;
                replayed += 1;
            }
            let after = before.max(last);
            record_applied(&self.connection, after)?;
            self.commit()?;
            Ok(after)
        });
        let after = done.inspect_err(|_| self.abandon(revision))?;
        if replayed > 0 {
            tracing::info!(
                writes = replayed,
                redo = %redo.path().display(),
                "the task store applied writes answered for before a restart"
            );
        }
        Ok(after)
    }

    /// Start a write transaction; on a shared store, from the revision the
    /// last transaction of any process left.
    fn begin(&mut self) -> rusqlite::Result<()> {
        self.connection.execute_batch("BEGIN IMMEDIATE")?;
        if self.shared {
            let revision: i64 = self
                .connection
                .prepare_cached("SELECT value FROM counters WHERE name = 'write_rev'")?
                .query_row([], |row| row.get(0))?;
            self.revision = uint(revision);
        }
        Ok(())
    }

    /// Commit the transaction; on a shared store, with the revisions it took.
    fn commit(&mut self) -> rusqlite::Result<()> {
        if self.shared {
            self.connection
                .prepare_cached("UPDATE counters SET value = ?1 WHERE name = 'write_rev'")?
                .execute([int(self.revision)])?;
        }
        self.connection.execute_batch("COMMIT")
    }

    /// Take jobs until every sender is gone, as many per batch as are
    /// waiting: while one batch is made durable, the next queues up.
    pub(super) fn run(mut self, queue: mpsc::Receiver<Job>) {
        yield_to_waking_threads();
        while let Some(first) = self.next_job(&queue) {
            let mut batch = vec![first];
            while batch.len() < MAX_BATCH {
                match queue.try_recv() {
                    Ok(job) => batch.push(job),
                    Err(_) => break,
                }
            }
            self.run_batch(batch);
        }
        self.close();
    }

    /// The next job, committing the open transaction meanwhile once it is
    /// due; `None` once every sender is gone.
    fn next_job(&mut self, queue: &mpsc::Receiver<Job>) -> Option<Job> {
        loop {
            let Some(due) = self.commit_due() else {
                return queue.recv().ok();
            };
            match queue.recv_timeout(due.saturating_duration_since(Instant::now())) {
                Ok(job) => return Some(job),
                // A failed commit is tried again an interval later; no job
                // waits for it.
                Err(RecvTimeoutError::Timeout) => {
                    let _ = self.commit_open();
                }
                Err(RecvTimeoutError::Disconnected) => return None,
            }
        }
    }

    /// When the open transaction must commit.
    fn commit_due(&self) -> Option<Instant> {
        let open = self.open.as_ref()?;
        Some(open.since + self.deferred.as_ref()?.interval)
    }

    /// The store is closing: what is open commits, and the redo log, then
    /// empty, is emptied.
    fn close(&mut self) {
        let committed = self.commit_open();
        if let (Ok(()), None, Some(deferred)) = (committed, &self.lost, &mut self.deferred)
            && let Err(error) = deferred.redo.close()
        {
            tracing::warn!(%error, "the task store's redo log was not emptied");
        }
    }

    /// The batch's writes, then its reads, which see them.
    pub(super) fn run_batch(&mut self, batch: Vec<Job>) {
        let (reads, writes): (Vec<Job>, Vec<Job>) = batch
            .into_iter()
            .partition(|job| matches!(job.action, Action::Read(_)));
        if !writes.is_empty() {
            self.run_writes(writes);
        }
        for job in reads {
            let outcome = match (&self.lost, job.action) {
                (Some(error), _) => Err(error.clone()),
                (None, Action::Read(read)) => {
                    read(&self.connection);
                    Ok(Outcome::Done)
                }
                (None, _) => Ok(Outcome::Done),
            };
            let _ = job.reply.send(outcome);
        }
    }

    /// Run `batch` in the open transaction (opening one), make it durable
    /// (in the redo log, or committed) and answer its jobs.
    fn run_writes(&mut self, batch: Vec<Job>) {
        if let Some(error) = &self.lost {
            return fail_all(batch, error);
        }
        let defer = self.may_defer(&batch);
        // What is open commits before a batch that cannot join it, so that
        // a failed commit never takes a refused batch's changes with it.
        if !defer && let Err(error) = self.commit_open() {
            return fail_all(batch, &error);
        }
        if let Err(error) = self.open_transaction() {
            return fail_all(batch, &error);
        }
        let results = self.apply_batch(&batch).and_then(|results| {
            match defer {
                true => self.log_batch(&batch, &results),
                false => self.commit_open(),
            }
            .map(|()| results)
        });
        let results = match results {
            Ok(results) => results,
            Err(error) => {
                self.end_unless_deferring();
                return fail_all(batch, &error);
            }
        };
        for (job, result) in batch.into_iter().zip(results) {
            let answered = result.is_ok();
            if let Ok(outcome) = &result {
                self.settled(&job.action, outcome);
            }
            let _ = job.reply.send(result);
            // Still open: the batch's writes are in the redo log.
            if let (true, Some(open), Action::Commit(writes)) =
                (answered, &mut self.open, job.action)
            {
                open.answered.extend(writes);
            }
        }
    }

    /// Whether `batch` may be answered before it commits: the writer defers
    /// commits, the batch holds task writes only, and the open transaction
    /// (if any) is neither due nor large.
    fn may_defer(&self, batch: &[Job]) -> bool {
        let Some(deferred) = &self.deferred else {
            return false;
        };
        let joins = self.open.as_ref().is_none_or(|open| {
            !open.failed
                && open.since.elapsed() < deferred.interval
                && deferred.redo.len() < MAX_REDO_BYTES
        });
        joins && batch.iter().all(|job| job.action.may_defer())
    }

    fn open_transaction(&mut self) -> Result<(), StoreError> {
        if self.open.is_some() {
            return Ok(());
        }
        let revision = self.revision;
        if let Err(error) = self.begin() {
            self.abandon(revision);
            return Err(classify(error));
        }
        self.open = Some(Open {
            since: Instant::now(),
            revision: self.revision,
            answered: Vec::new(),
            failed: false,
        });
        Ok(())
    }

    /// Without deferred commits a transaction never outlives its batch
    /// (other processes wait for its lock).
    fn end_unless_deferring(&mut self) {
        if self.deferred.is_none()
            && let Some(open) = self.open.take()
        {
            self.abandon(open.revision);
        }
    }

    /// Every job of `batch` in the open transaction. Conflicts are rare (a
    /// resend that raced its original), so the jobs first run together
    /// with nothing between them: a savepoint keeps a journal of every page
    /// it changes, and one per batch was a sixth of the writer's time in a
    /// profile of follow-ups. Only if one fails is the batch undone (the
    /// transaction rolled back and its answered writes applied again:
    /// [`Writer::undo_batch`]); on a conflict it then runs again with a
    /// savepoint per job, so that the job fails alone. Any other error
    /// fails the whole batch.
    fn apply_batch(
        &mut self,
        batch: &[Job],
    ) -> Result<Vec<Result<Outcome, StoreError>>, StoreError> {
        let together = batch
            .iter()
            .map(|job| self.apply(&job.action))
            .collect::<rusqlite::Result<Vec<_>>>()
            .map_err(classify);
        match together {
            Ok(outcomes) => Ok(outcomes.into_iter().map(Ok).collect()),
            Err(StoreError::Conflict(_)) if batch.len() > 1 => {
                self.undo_batch()?;
                self.apply_apart(batch)
            }
            Err(error) => {
                // The batch's error is the one to tell.
                let _ = self.undo_batch();
                Err(error)
            }
        }
    }

    /// The jobs of `batch` again, each in a savepoint of its own: a
    /// conflict fails its job alone.
    fn apply_apart(
        &mut self,
        batch: &[Job],
    ) -> Result<Vec<Result<Outcome, StoreError>>, StoreError> {
        let mut results = Vec::with_capacity(batch.len());
        for job in batch {
            match self.run_job(&job.action) {
                Err(error) if !matches!(error, StoreError::Conflict(_)) => {
                    let _ = self.undo_batch();
                    return Err(error);
                }
                result => results.push(result),
            }
        }
        Ok(results)
    }

    /// Undo what the current batch changed: the transaction is rolled back
    /// and the writes answered in it are applied again, in an open
    /// transaction as before.
    fn undo_batch(&mut self) -> Result<(), StoreError> {
        self.restore();
        if let Some(error) = &self.lost {
            return Err(error.clone());
        }
        self.open_transaction()
    }

    /// Make the batch that ran durable in the redo log: its task writes
    /// appended as one record. If the log refuses them, the batch is undone.
    fn log_batch(
        &mut self,
        batch: &[Job],
        results: &[Result<Outcome, StoreError>],
    ) -> Result<(), StoreError> {
        let writes: Vec<&TaskWrite> = batch
            .iter()
            .zip(results)
            .filter(|(_, result)| result.is_ok())
            .flat_map(|(job, _)| match &job.action {
                Action::Commit(writes) => writes.as_slice(),
                _ => &[],
            })
            .collect();
        let Some(deferred) = &mut self.deferred else {
            return Err(StoreError::Unavailable(
                "the task store has no redo log".into(),
            ));
        };
        if !writes.is_empty()
            && let Err(error) = deferred.redo.append(&writes)
        {
            let path = deferred.redo.path().display().to_string();
            let _ = self.undo_batch();
            return Err(StoreError::Unavailable(format!(
                "cannot write the redo log {path}: {error}"
            )));
        }
        deferred.uncommitted.add(writes);
        Ok(())
    }

    /// Commit the open transaction, if any. If the commit fails, the
    /// writes answered in it stay uncommitted (and readable, through the
    /// writer) for the next try, by the next batch or an interval later;
    /// meanwhile no batch joins them.
    pub(super) fn commit_open(&mut self) -> Result<(), StoreError> {
        if self.open.is_none() {
            return Ok(());
        }
        match self.record_applied().and_then(|()| self.commit()) {
            Ok(()) => {
                self.open = None;
                self.committed();
                Ok(())
            }
            Err(error) => {
                if self.connection.is_autocommit() {
                    self.restore();
                }
                if let Some(open) = &mut self.open {
                    open.since = Instant::now();
                    open.failed = true;
                }
                Err(classify(error))
            }
        }
    }

    /// SQLite rolled the open transaction back (or is asked to): the
    /// writes answered in it are applied again in a new one. Nothing is
    /// written before its commit, so this holds while the disk is full,
    /// and reads keep seeing them. Only if that fails too does the store
    /// stop writing; the next opening applies them from the redo log.
    fn restore(&mut self) {
        let Some(open) = self.open.take() else {
            return;
        };
        self.abandon(open.revision);
        if open.answered.is_empty() {
            return;
        }
        let again = self.begin().and_then(|()| {
            open.answered
                .iter()
                .try_for_each(|w| self.write(w).map(drop))
        });
        match again {
            Ok(()) => self.open = Some(open),
            Err(error) => {
                self.abandon(open.revision);
                let redo = self
                    .deferred
                    .as_ref()
                    .map(|d| d.redo.path().display().to_string());
                let lost = StoreError::Unavailable(format!(
                    "writes already answered for could not be applied again ({error}); the \
                     store refuses writes until it is opened again, which applies them from {}",
                    redo.unwrap_or_default()
                ));
                tracing::error!(%lost, "the task store stopped writing");
                self.lost = Some(lost);
            }
        }
    }

    /// The last redo record into the transaction, if it changed.
    fn record_applied(&mut self) -> rusqlite::Result<()> {
        let Some(deferred) = &mut self.deferred else {
            return Ok(());
        };
        let last = deferred.redo.last_seq();
        if last != deferred.applied {
            record_applied(&self.connection, last)?;
        }
        Ok(())
    }

    /// After a commit: the redo log starts over, the checkpointer hears of
    /// it, and the writer catches up with it if asked.
    fn committed(&mut self) {
        if let Some(deferred) = &mut self.deferred {
            deferred.applied = deferred.redo.last_seq();
            deferred.redo.start_over();
            deferred.uncommitted.clear();
        }
        if self.checkpoints.take_catch_up() {
            checkpoint::catch_up(&self.connection);
        }
        self.checkpoints.committed();
    }

    /// What a job changed, told to the cache of hot tasks before the job is
    /// answered.
    fn settled(&self, action: &Action, outcome: &Outcome) {
        let Some(hot) = &self.hot else {
            return;
        };
        match (action, outcome) {
            (Action::Commit(writes), Outcome::Committed(revisions)) => {
                for (write, &revision) in writes.iter().zip(revisions) {
                    hot.committed(write, revision);
                }
            }
            (_, Outcome::Purged(ids)) => {
                for id in ids {
                    hot.forget(id);
                }
            }
            _ => {}
        }
    }

    /// Roll the transaction back (SQLite may already have) and forget the
    /// revisions it used.
    fn abandon(&mut self, revision: u64) {
        if !self.connection.is_autocommit() {
            let _ = self.connection.execute_batch("ROLLBACK");
        }
        self.revision = revision;
    }

    /// One job in its own savepoint.
    fn run_job(&mut self, action: &Action) -> Result<Outcome, StoreError> {
        self.connection
            .execute_batch("SAVEPOINT job")
            .map_err(classify)?;
        let revision = self.revision;
        match self.apply(action).map_err(classify) {
            Ok(outcome) => {
                self.connection
                    .execute_batch("RELEASE job")
                    .map_err(classify)?;
                Ok(outcome)
            }
            Err(error) => {
                self.revision = revision;
                // Some errors (a full disk) make SQLite roll the whole
                // transaction back itself; then the savepoint is gone too.
                let undone = !self.connection.is_autocommit()
                    && self
                        .connection
                        .execute_batch("ROLLBACK TO job; RELEASE job")
                        .is_ok();
                match error {
                    StoreError::Conflict(_) if !undone => Err(StoreError::Unavailable(format!(
                        "a conflicting write could not be undone alone: {error}"
                    ))),
                    error => Err(error),
                }
            }
        }
    }

    /// Store `write` at the next write revision, which it returns. Every
    /// write goes through here, so a write applied again (a replayed redo
    /// record, a restored transaction) takes the revision it was answered
    /// with.
    fn write(&mut self, write: &TaskWrite) -> rusqlite::Result<u64> {
        self.revision += 1;
        write_task(&self.connection, write, self.revision)?;
        Ok(self.revision)
    }

    fn apply(&mut self, action: &Action) -> rusqlite::Result<Outcome> {
        match action {
            Action::Commit(writes) => {
                let revisions = writes.iter().map(|write| self.write(write));
                Ok(Outcome::Committed(
                    revisions.collect::<rusqlite::Result<_>>()?,
                ))
            }
            Action::Purge { before_ms } => purge(&self.connection, *before_ms).map(Outcome::Purged),
            Action::PutPushConfig(config) => {
                let cursor: i64 = self
                    .connection
                    .prepare_cached(
                        "INSERT INTO push_configs (task_id, config_id, document, delivered_seq)
                         VALUES (?1, ?2, ?3, COALESCE((SELECT event_seq FROM tasks WHERE id = ?1), 0))
                         ON CONFLICT (task_id, config_id) DO UPDATE SET document = excluded.document
                         RETURNING delivered_seq",
                    )?
                    .query_row(
                        params![config.task_id, config.config_id, config.document],
                        |row| row.get(0),
                    )?;
                Ok(Outcome::Cursor(uint(cursor)))
            }
            Action::PushDelivered {
                task_id,
                config_id,
                seq,
            } => {
                self.connection
                    .prepare_cached(
                        "UPDATE push_configs SET delivered_seq = MAX(delivered_seq, ?3)
                         WHERE task_id = ?1 AND config_id = ?2",
                    )?
                    .execute(params![task_id, config_id, int(*seq)])?;
                Ok(Outcome::Done)
            }
            // Inside the batch's transaction, which has changed no page
            // yet when this comes alone: every cached page can go. Never a
            // reason to fail the commits batched with it.
            Action::ReleaseMemory => {
                if let Err(error) = self.connection.release_memory() {
                    tracing::warn!(%error, "the task store's writer kept its page cache");
                }
                Ok(Outcome::Done)
            }
            // Run apart from the writes (`Writer::run_batch`).
            Action::Read(_) => Ok(Outcome::Done),
            Action::DeletePushConfig { task_id, config_id } => {
                let deleted = self
                    .connection
                    .prepare_cached(
                        "DELETE FROM push_configs WHERE task_id = ?1 AND config_id = ?2",
                    )?
                    .execute([task_id, config_id])?;
                Ok(Outcome::Count(deleted as u64))
            }
        }
    }
}

fn fail_all(batch: Vec<Job>, error: &StoreError) {
    for job in batch {
        let _ = job.reply.send(Err(error.clone()));
    }
}

/// Record, in the transaction, that the database has the redo log's
/// records up to `seq`.
fn record_applied(connection: &Connection, seq: u64) -> rusqlite::Result<()> {
    connection
        .prepare_cached(
            "INSERT INTO counters (name, value) VALUES ('redo_applied', ?1)
             ON CONFLICT (name) DO UPDATE SET value = excluded.value",
        )?
        .execute([int(seq)])?;
    Ok(())
}

/// Schedule the calling thread as a batch thread (Linux `SCHED_BATCH`):
/// woken, it no longer preempts the thread that woke it, but runs when
/// that one yields its core or its time slice ends.
///
/// Why: on a server with one core, each job sent to the writer preempted
/// the request worker at once, so every batch held one job (one context
/// switch per request, measured), and paid alone for its redo record's
/// `write()` and the two switches. Left to wait, the writer finds the jobs
/// of every request the worker took meanwhile. With a core to spare, it
/// runs at once as before.
fn yield_to_waking_threads() {
    #[cfg(target_os = "linux")]
    {
        let param = libc::sched_param { sched_priority: 0 };
        #[allow(unsafe_code)]
        // SAFETY: `param` is a valid sched_param for SCHED_BATCH (priority
        // 0), and pid 0 names the calling thread.
        let refused = unsafe { libc::sched_setscheduler(0, libc::SCHED_BATCH, &param) } != 0;
        if refused {
            tracing::debug!(
                error = %std::io::Error::last_os_error(),
                "the task store's writer keeps the default scheduling"
            );
        }
    }
}
