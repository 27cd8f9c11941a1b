//! Accepted messages per second through the task service, with durability
//! on (SQLite, `synchronous` NORMAL and FULL) versus the in-memory store, in
//! one run.
//!
//! Each message is a whole acknowledged exchange: the (offline, instant)
//! model answers, and the message and its reply are committed together
//! before the sender gets it (`[store] accept_commit_delay_ms`: a quick
//! turn is one commit). Measured with one conversation (every commit waits alone: the
//! fsync of FULL is paid in full) and with many at once (concurrent commits
//! share a transaction: group commit).
//!
//! The database lives in a scratch folder under the system temp dir; point
//! `TMPDIR` at the disk you care about.
//!
//! Run: `cargo bench --bench store` (optionally `-- --messages N`, per
//! conversation; default 200).

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::bail;
use tiny_harness::a2a::types::{
    Message, Part, Role, SendMessageConfiguration, SendMessageRequest, SendMessageResponse,
};
use tiny_harness::store::{MemoryStore, SqliteStore, Synchronous, TaskStore};
use tiny_harness::task::{Caller, Durability, TaskService};

#[path = "common/offline_service.rs"]
mod offline_service;
use offline_service::offline_service;

/// Concurrent conversations measured.
const CONVERSATIONS: [usize; 2] = [1, 64];

fn main() -> anyhow::Result<()> {
    let messages = messages_from_args().unwrap_or(200).max(1);
    let scratch = tempfile::tempdir()?;
    let tokio = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    println!(
        "{:<15} {:>13} {:>9} {:>9} {:>10} {:>10}",
        "store", "conversations", "messages", "seconds", "msgs/s", "vs memory"
    );
    for conversations in CONVERSATIONS {
        let mut baseline = None;
        for (name, store) in stores(scratch.path(), conversations)? {
            let (count, elapsed) = tokio.block_on(measure(store, conversations, messages))?;
            let rate = count as f64 / elapsed.as_secs_f64();
            let base = *baseline.get_or_insert(rate);
            println!(
                "{name:<15} {conversations:>13} {count:>9} {:>9.2} {rate:>10.0} {:>9.2}x",
                elapsed.as_secs_f64(),
                rate / base,
            );
        }
    }
    Ok(())
}

/// The stores to compare, the in-memory baseline first; a fresh database
/// per run.
fn stores(
    dir: &std::path::Path,
    conversations: usize,
) -> anyhow::Result<Vec<(&'static str, Arc<dyn TaskStore>)>> {
    let sqlite = |synchronous: Synchronous, file: &str| -> anyhow::Result<Arc<dyn TaskStore>> {
        let path = dir.join(format!("{conversations}-{file}"));
        Ok(Arc::new(SqliteStore::open(&path, synchronous)?))
    };
    Ok(vec![
        ("memory", Arc::new(MemoryStore::new())),
        ("sqlite normal", sqlite(Synchronous::Normal, "normal.db")?),
        ("sqlite full", sqlite(Synchronous::Full, "full.db")?),
    ])
}

/// `conversations` participants each send `messages` messages to a
/// conversation of their own, waiting for each answer; returns how many
/// were answered and how long it all took.
async fn measure(
    store: Arc<dyn TaskStore>,
    conversations: usize,
    messages: usize,
) -> anyhow::Result<(usize, Duration)> {
    let service = offline_service(store, Durability::DEFAULT_IDLE_TIMEOUT);
    service.recover().await?;
    let started = Instant::now();
    let mut senders = tokio::task::JoinSet::new();
    for participant in 0..conversations {
        let service = service.clone();
        senders.spawn(async move { converse(&service, participant, messages).await });
    }
    let mut answered = 0;
    while let Some(done) = senders.join_next().await {
        answered += done??;
    }
    Ok((answered, started.elapsed()))
}

async fn converse(
    service: &TaskService,
    participant: usize,
    messages: usize,
) -> anyhow::Result<usize> {
    let caller = Caller {
        id: format!("participant-{participant}"),
    };
    let mut task_id = None;
    for n in 0..messages {
        let message = Message {
            task_id: task_id.clone(),
            ..Message::new(
                Role::User,
                format!("{participant}-{n}"),
                vec![Part::text("hello there")],
            )
        };
        let request = SendMessageRequest {
            tenant: None,
            message,
            // Like a client keeping its own transcript: no history back, so
            // the figures show the store, not copies of a growing history.
            configuration: Some(SendMessageConfiguration {
                history_length: Some(0),
                ..Default::default()
            }),
            metadata: Default::default(),
        };
        match service.send_message(&caller, request).await? {
            SendMessageResponse::Task(task) => task_id = Some(task.id),
            SendMessageResponse::Message(_) => bail!("expected a task"),
        }
    }
    Ok(messages)
}

fn messages_from_args() -> Option<usize> {
    let args: Vec<String> = std::env::args().collect();
    let at = args.iter().position(|arg| arg == "--messages")?;
    args.get(at + 1)?.parse().ok()
}
