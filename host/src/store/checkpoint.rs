//! Checkpoints of the SQLite store's write-ahead log, on a thread of their own.
//!
//! A checkpoint copies the pages the WAL holds back into the database file,
//! with an fsync before and after. SQLite's default has the committing
//! connection do it whenever the WAL passes 1,000 pages, so the store's one
//! writer, and every job queued behind it, stopped for it: 12% of the
//! writer's time in a profile of the store bench, most of it `fsync`.
//!
//! Here the writer never checkpoints on SQLite's trigger
//! (`wal_autocheckpoint = 0`), only the last few commits once this thread
//! has copied the rest (see "Starting over" below). After a commit it
//! nudges this thread ([`Nudge`]), which waits [`GATHER`] for more
//! commits, then runs a PASSIVE checkpoint on its own connection: it copies
//! what no reader still needs and blocks neither the writer nor the readers;
//! the writer starts the WAL over once everything in it is copied. Gathering
//! also means a page that many commits changed is copied once.
//!
//! Starting over: a write transaction starts the WAL from its first frame
//! only if every frame in it has been copied. Under writes that never pause
//! that is never so after a checkpoint on this thread, because the writer
//! commits more while it copies: the WAL grew to its bound every second or
//! two under load, and the RESTART below then stalled every write for up to
//! 100 ms. So when a checkpoint here has copied all it saw, it asks the
//! writer to finish the job ([`Nudge::take_catch_up`]): between two
//! batches, with no other writer, the writer copies the few commits made
//! since ([`catch_up`]), and its next transaction starts the WAL over: its
//! file is rewritten in place rather than grown.
//!
//! Only once the WAL holds [`WalBounds::catch_up`] pages, though. A catch-up
//! costs the writer two fsyncs and a copy of everything committed while the
//! checkpointer ran, which the checkpointer would copy on its next round
//! anyway: asked after every checkpoint, it copied more pages than the
//! checkpointer itself and took 14% of the writer's time (a profile of new
//! conversations at 16 connections). Asked once the WAL is half its bound,
//! it comes a few times less often: 4% of the writer, the checkpointer
//! copying the rest.
//!
//! The bound: readers pinning old snapshots can still stop a checkpoint from
//! catching up, so the WAL could grow under sustained load. Once it holds more
//! than [`WalBounds::restart`] pages (`[store] max_wal_mib`) after a
//! checkpoint, the next one is a RESTART, which
//! waits for those readers (new writes wait meanwhile, up to the busy
//! timeout) so that the WAL starts over, and `journal_size_limit` then cuts
//! the file back.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, SyncSender};
use std::thread;
use std::time::Duration;

use rusqlite::Connection;

/// How long the checkpointer gathers commits before it copies them.
const GATHER: Duration = Duration::from_millis(100);

/// What the writer holds: tells the checkpointer that something committed,
/// and learns when to catch up. Dropping it (the writer stopping) stops the
/// checkpointer after a last checkpoint.
pub(super) struct Nudge {
    nudges: SyncSender<()>,
    catch_up: Arc<AtomicBool>,
}

impl Nudge {
    /// After a commit. Never blocks: one pending nudge covers any number of
    /// commits.
    pub(super) fn committed(&self) {
        // Full: a nudge is pending already. Disconnected: the checkpointer
        // is gone, and the WAL keeps every commit until a checkpoint.
        let _ = self.nudges.try_send(());
    }

    /// Whether the checkpointer copied everything it saw since the writer
    /// last asked, so the writer should [`catch_up`].
    pub(super) fn take_catch_up(&self) -> bool {
        // Read first: the swap, a write, is only paid when it is set.
        self.catch_up.load(Ordering::Relaxed) && self.catch_up.swap(false, Ordering::Relaxed)
    }
}

/// The writer's part, between two batches, on its own connection: copy the
/// commits made since the checkpointer last caught up, so that the next
/// write transaction starts the WAL over. Only a few milliseconds of
/// commits, and the writer is the only writer: it never waits.
pub(super) fn catch_up(writer: &Connection) {
    // Readers still on older frames can stop it from copying everything;
    // then the WAL goes on, and a later round tries again.
    if let Err(error) = writer.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |_| Ok(())) {
        tracing::warn!(%error, "the task store's writer could not catch up with its WAL");
    }
}

/// The WAL sizes, in pages, at which the checkpointer does more than copy.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct WalBounds {
    /// Once a checkpoint copied all it saw and the WAL holds at least this
    /// many pages, the writer catches up so that the WAL starts over.
    pub(super) catch_up: i64,
    /// Once the WAL holds more than this many pages after a checkpoint, the
    /// next one waits for readers so that it starts over.
    pub(super) restart: i64,
}

/// Start the checkpointer on `connection` (a read-write connection of its
/// own); the writer calls [`Nudge::committed`] after each commit.
pub(super) fn spawn(connection: Connection, bounds: WalBounds) -> std::io::Result<Nudge> {
    let (nudges, nudged) = mpsc::sync_channel(1);
    let catch_up = Arc::new(AtomicBool::new(false));
    let caught_up = Arc::clone(&catch_up);
    thread::Builder::new()
        .name("task-store-checkpoints".into())
        .spawn(move || run(&connection, bounds, &nudged, &caught_up))?;
    Ok(Nudge { nudges, catch_up })
}

fn run(connection: &Connection, bounds: WalBounds, nudged: &Receiver<()>, catch_up: &AtomicBool) {
    let mut mode = Mode::Passive;
    while nudged.recv().is_ok() {
        thread::sleep(GATHER);
        while nudged.try_recv().is_ok() {}
        let done = checkpoint(connection, mode, bounds);
        if done.catch_up {
            catch_up.store(true, Ordering::Relaxed);
        }
        mode = done.next;
    }
    checkpoint(connection, Mode::Passive, bounds);
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    Passive,
    Restart,
}

/// What a checkpoint did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Done {
    /// The mode of the next checkpoint.
    next: Mode,
    /// It copied every page the WAL held when it began, and the WAL is
    /// large enough for the writer to catch up.
    catch_up: bool,
}

/// Run one checkpoint.
fn checkpoint(connection: &Connection, mode: Mode, bounds: WalBounds) -> Done {
    let sql = match mode {
        Mode::Passive => "PRAGMA wal_checkpoint(PASSIVE)",
        Mode::Restart => "PRAGMA wal_checkpoint(RESTART)",
    };
    // The row is (busy, pages in the WAL, pages copied); -1 pages when not
    // in WAL mode.
    let pages = connection.query_row(sql, [], |row| {
        Ok((row.get::<_, i64>(1)?, row.get::<_, i64>(2)?))
    });
    match pages {
        Ok((pages, copied)) => {
            let next = if pages > bounds.restart {
                tracing::warn!(
                    pages,
                    "the task store's WAL is large; the next checkpoint waits for readers"
                );
                Mode::Restart
            } else {
                Mode::Passive
            };
            Done {
                next,
                catch_up: pages >= bounds.catch_up.max(1) && copied == pages,
            }
        }
        // The WAL still holds everything; a later checkpoint copies it.
        Err(error) => {
            tracing::warn!(%error, "a checkpoint of the task store failed");
            Done {
                next: mode,
                catch_up: false,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn wal_pages(connection: &Connection) -> i64 {
        // A passive checkpoint of nothing new reports the WAL's size.
        connection
            .query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |row| row.get(1))
            .expect("checkpoint")
    }

    /// A WAL of `rows` pages or so (a 3,000-byte row each), written in one
    /// transaction, with checkpoints off.
    fn wal_of(path: &std::path::Path, rows: i64) -> Connection {
        let writer = Connection::open(path).expect("opens");
        writer
            .execute_batch(
                "PRAGMA journal_mode = WAL; PRAGMA wal_autocheckpoint = 0;
                 CREATE TABLE t (x BLOB);",
            )
            .expect("set up");
        writer
            .execute(
                "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?1)
                 INSERT INTO t SELECT zeroblob(3000) FROM n",
                [rows],
            )
            .expect("fills");
        writer
    }

    /// Bounds that ask the writer to catch up from `catch_up` pages, with a
    /// restart bound these tests never reach.
    fn never_restarting(catch_up: i64) -> WalBounds {
        WalBounds {
            catch_up,
            restart: 1 << 20,
        }
    }

    #[test]
    fn the_writer_is_asked_to_catch_up_only_once_the_wal_reaches_its_floor() {
        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().join("wal.db");
        let _writer = wal_of(&path, 100);
        let checkpoints = Connection::open(&path).expect("opens");
        let held = wal_pages(&checkpoints);
        assert!(held > 100, "{held}");
        let below = checkpoint(&checkpoints, Mode::Passive, never_restarting(held + 1));
        assert!(!below.catch_up, "a WAL of {held} pages, below its floor");
        let at = checkpoint(&checkpoints, Mode::Passive, never_restarting(held));
        assert!(at.catch_up, "a WAL of {held} pages, at its floor");
        assert_eq!(at.next, Mode::Passive);
    }

    #[test]
    fn the_writer_is_not_asked_to_catch_up_with_what_a_reader_holds_back() {
        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().join("wal.db");
        let writer = wal_of(&path, 10);
        // A reader on the snapshot before the next write keeps the
        // checkpoint from copying that write.
        let reader = Connection::open(&path).expect("opens");
        reader.execute_batch("BEGIN").expect("begins");
        let _: i64 = reader
            .query_row("SELECT COUNT(*) FROM t", [], |row| row.get(0))
            .expect("reads");
        writer
            .execute("INSERT INTO t VALUES (zeroblob(3000))", [])
            .expect("writes");
        let checkpoints = Connection::open(&path).expect("opens");
        let bounds = never_restarting(0);
        assert!(!checkpoint(&checkpoints, Mode::Passive, bounds).catch_up);
        reader.execute_batch("COMMIT").expect("ends");
        assert!(checkpoint(&checkpoints, Mode::Passive, bounds).catch_up);
    }

    #[test]
    fn a_large_wal_makes_the_next_checkpoint_wait_for_readers_and_start_over() {
        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().join("wal.db");
        // More pages than the bound, in one transaction.
        let bounds = WalBounds {
            catch_up: 0,
            restart: 256,
        };
        let writer = wal_of(&path, bounds.restart + 100);
        let checkpoints = Connection::open(&path).expect("opens");
        assert_eq!(
            checkpoint(&checkpoints, Mode::Passive, bounds).next,
            Mode::Restart
        );
        assert_eq!(
            checkpoint(&checkpoints, Mode::Restart, bounds).next,
            Mode::Restart
        );
        // The WAL starts over with the next write, from its first page.
        writer
            .execute("INSERT INTO t VALUES (x'00')", [])
            .expect("writes");
        assert!(wal_pages(&checkpoints) < 10, "{}", wal_pages(&checkpoints));
        assert_eq!(
            checkpoint(&checkpoints, Mode::Restart, bounds).next,
            Mode::Passive
        );
    }
}
