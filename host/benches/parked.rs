//! What a parked conversation costs in memory, with its actor running and
//! after the actor went idle and left memory, in one run.
//!
//! Issue 5's goal: 100,000 parked conversations cost a few KB each at most.
//! Each conversation here is a participant's first message, answered by the
//! (offline, instant) model, so the task is parked in INPUT_REQUIRED and
//! waits for a next message that never comes. Two phases, each on a fresh
//! SQLite database (`synchronous = NORMAL`, the default):
//!
//! 1. `--running N` conversations (default 10,000) with an idle period
//!    longer than the run: every actor stays in memory. This is the cost of
//!    a conversation someone is actively using.
//! 2. `--parked N` conversations (default 100,000) with a one-second idle
//!    period, then a wait until no actor runs. This is the cost of the
//!    conversations that wait for days.
//!
//! Memory is the live heap, counted by this binary's global allocator (what
//! is allocated and not yet freed), so it is exact and unaffected by how the
//! allocator returns pages to the system; the resident set size is printed
//! beside it for reference. The database's size on disk is printed too.
//!
//! The database lives in a scratch folder under the system temp dir; point
//! `TMPDIR` at the disk you care about.
//!
//! Run: `cargo bench --bench parked` (optionally `-- --parked N --running N`).

use std::alloc::{GlobalAlloc, Layout, System};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicIsize, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use tiny_harness::a2a::types::{
    Message, Part, Role, SendMessageConfiguration, SendMessageRequest, SendMessageResponse,
    TaskState,
};
use tiny_harness::store::{SqliteStore, Synchronous};
use tiny_harness::task::{Caller, TaskService};

#[path = "common/offline_service.rs"]
mod offline_service;
use offline_service::offline_service;

/// Counts the bytes allocated and not yet freed.
struct Counting;

static LIVE_BYTES: AtomicIsize = AtomicIsize::new(0);

// SAFETY: every call is forwarded unchanged to the system allocator; the
// counter is only arithmetic on the sizes it was given.
#[allow(unsafe_code)]
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        LIVE_BYTES.fetch_add(layout.size() as isize, Ordering::Relaxed);
        // SAFETY: the caller's contract is passed on as is.
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        LIVE_BYTES.fetch_add(layout.size() as isize, Ordering::Relaxed);
        // SAFETY: the caller's contract is passed on as is.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE_BYTES.fetch_sub(layout.size() as isize, Ordering::Relaxed);
        // SAFETY: the caller's contract is passed on as is.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        LIVE_BYTES.fetch_add(
            new_size as isize - layout.size() as isize,
            Ordering::Relaxed,
        );
        // SAFETY: the caller's contract is passed on as is.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// Conversations started at once (participants typing at the same time).
const CONCURRENCY: usize = 64;

fn main() -> anyhow::Result<()> {
    let running = count_from_args("--running").unwrap_or(10_000).max(1);
    let parked = count_from_args("--parked").unwrap_or(100_000).max(1);
    let scratch = tempfile::tempdir()?;
    let tokio = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;

    println!(
        "{:<22} {:>13} {:>14} {:>14} {:>14} {:>9}",
        "conversations", "count", "heap/conv", "rss/conv", "disk/conv", "seconds"
    );
    let hot = tokio.block_on(phase(
        &scratch.path().join("running.db"),
        running,
        Duration::from_secs(3600),
    ))?;
    hot.print("actor running");
    let cold = tokio.block_on(phase(
        &scratch.path().join("parked.db"),
        parked,
        Duration::from_secs(1),
    ))?;
    cold.print("parked, actor stopped");
    println!(
        "heap per conversation: {:.0} B with its actor running, {:.0} B parked \
         (goal: a few KB at most for a parked one)",
        hot.heap_per_conversation(),
        cold.heap_per_conversation(),
    );
    Ok(())
}

/// What one phase measured.
struct Measured {
    conversations: usize,
    heap_bytes: isize,
    rss_bytes: isize,
    disk_bytes: u64,
    elapsed: Duration,
}

impl Measured {
    fn heap_per_conversation(&self) -> f64 {
        self.heap_bytes as f64 / self.conversations as f64
    }

    fn print(&self, what: &str) {
        let per = |bytes: f64| format!("{:.0} B", bytes / self.conversations as f64);
        println!(
            "{what:<22} {:>13} {:>14} {:>14} {:>14} {:>9.1}",
            self.conversations,
            per(self.heap_bytes as f64),
            per(self.rss_bytes as f64),
            per(self.disk_bytes as f64),
            self.elapsed.as_secs_f64(),
        );
    }
}

/// Start `conversations` conversations on a fresh database at `path`, each
/// left parked; once actors idle for `idle_timeout` have stopped (if they
/// are due to within the run), measure what stayed.
async fn phase(
    path: &Path,
    conversations: usize,
    idle_timeout: Duration,
) -> anyhow::Result<Measured> {
    let store = Arc::new(SqliteStore::open(path, Synchronous::Normal)?);
    let service = offline_service(store, idle_timeout);
    service.recover().await?;
    // One conversation first, so what is allocated once (the database's
    // page cache, the runtime's lazily built parts) is in the baseline.
    start_conversations(&service, "warm-up", 1).await?;
    let evicts = idle_timeout < Duration::from_secs(60);
    if evicts {
        wait_for_no_actors(&service, idle_timeout).await;
    }
    let heap_before = LIVE_BYTES.load(Ordering::Relaxed);
    let rss_before = resident_bytes()?;

    let started = Instant::now();
    start_conversations(&service, "participant", conversations).await?;
    if evicts {
        wait_for_no_actors(&service, idle_timeout).await;
        if service.running_tasks() != 0 {
            bail!(
                "{} actors still run after their idle period",
                service.running_tasks()
            );
        }
    } else if service.running_tasks() != conversations + 1 {
        bail!(
            "expected {conversations} running actors, found {}",
            service.running_tasks()
        );
    }
    let elapsed = started.elapsed();
    let measured = Measured {
        conversations,
        heap_bytes: LIVE_BYTES.load(Ordering::Relaxed) - heap_before,
        rss_bytes: resident_bytes()? - rss_before,
        disk_bytes: database_bytes(path),
        elapsed,
    };
    drop(service);
    Ok(measured)
}

/// `count` participants each start a conversation of their own, at most
/// [`CONCURRENCY`] at a time, and check it parked.
async fn start_conversations(
    service: &TaskService,
    prefix: &str,
    count: usize,
) -> anyhow::Result<()> {
    let mut senders = tokio::task::JoinSet::new();
    for lane in 0..CONCURRENCY.min(count) {
        let service = service.clone();
        let prefix = prefix.to_owned();
        senders.spawn(async move {
            for participant in (lane..count).step_by(CONCURRENCY) {
                start_one(&service, &format!("{prefix}-{participant}")).await?;
            }
            anyhow::Ok(())
        });
    }
    while let Some(done) = senders.join_next().await {
        done??;
    }
    Ok(())
}

async fn start_one(service: &TaskService, participant: &str) -> anyhow::Result<()> {
    let caller = Caller {
        id: participant.to_owned(),
    };
    let request = SendMessageRequest {
        tenant: None,
        message: Message::new(
            Role::User,
            format!("{participant}-1"),
            vec![Part::text("hello there, this waits for an answer")],
        ),
        configuration: Some(SendMessageConfiguration {
            history_length: Some(0),
            ..Default::default()
        }),
        metadata: Default::default(),
    };
    match service.send_message(&caller, request).await? {
        SendMessageResponse::Task(task) if task.status.state == TaskState::InputRequired => Ok(()),
        SendMessageResponse::Task(task) => {
            bail!("task {} is {:?}, not parked", task.id, task.status.state)
        }
        SendMessageResponse::Message(_) => bail!("expected a task"),
    }
}

/// Wait (at most the idle period and ten seconds more) until no actor runs.
async fn wait_for_no_actors(service: &TaskService, idle_timeout: Duration) {
    let deadline = Instant::now() + idle_timeout + Duration::from_secs(10);
    while service.running_tasks() > 0 && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// This process's resident set size, from `/proc/self/statm` (in 4 KiB
/// pages on x86_64 Linux).
fn resident_bytes() -> anyhow::Result<isize> {
    let statm = std::fs::read_to_string("/proc/self/statm").context("read /proc/self/statm")?;
    let pages: isize = statm
        .split_whitespace()
        .nth(1)
        .context("statm has a resident field")?
        .parse()
        .context("statm's resident field is a number")?;
    Ok(pages * 4096)
}

/// The database with its write-ahead log.
fn database_bytes(path: &Path) -> u64 {
    let size = |path: &Path| std::fs::metadata(path).map_or(0, |meta| meta.len());
    size(path) + size(&path.with_extension("db-wal"))
}

fn count_from_args(flag: &str) -> Option<usize> {
    let args: Vec<String> = std::env::args().collect();
    let at = args.iter().position(|arg| arg == flag)?;
    args.get(at + 1)?.parse().ok()
}
