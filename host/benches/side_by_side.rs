//! tiny-harness (in memory and on SQLite) side by side with the official A2A
//! Python SDK (a2a-sdk 1.3.0 serving `tests/bench/sdk_echo_agent.py`, an echo
//! agent that parks its tasks like ours), in one run, on one machine.
//!
//! Each server runs pinned to CPU 0 (`taskset`, checked once it serves);
//! this process, the load generator, pins itself to CPU 1. Every server gets
//! the same requests over loopback HTTP/1.1 (JSON-RPC `SendMessage`), from
//! the same client. Printed: one Markdown table per measurement, and
//! everything as JSON (`--out`).
//!
//! * throughput and latency (p50, p99) of new conversations, follow-ups and
//!   `/status` at 1, 16 and 256 connections (medians of `--rounds` rounds);
//! * the cost of one turn at turns 10, 1,000 and 10,000, a conversation
//!   taken to each, measured a turn at each point in turn (one connection,
//!   plain follow-ups asking for the newest two messages back,
//!   `historyLength: 2`, from every server alike), then again for
//!   tiny-harness with an offline context window that is full from the
//!   second turn, so every point sends its model the same context;
//! * resident memory per conversation, with its worker running and parked;
//! * time from process start to serving with 10 plugins, with an empty and
//!   a warm component cache;
//! * the delay from a model's token to an SSE client (the fake provider
//!   stamps each token with its send time), and the time to the first SSE
//!   event of a streamed message.
//!
//! Run: `tests/bench/run.sh` (installs the SDK, then runs this), or
//! `cargo bench --bench side_by_side -- [--quick] [--rounds N] [--seconds S]
//! [--turns 10,1000,10000] [--conversations N] [--no-sdk] [--out FILE]
//! [--only PHASE,...] [--scenarios new,follow-up,status] [--connections
//! 1,16,256]`, where the phases are `throughput`, `first-event`, `turn-cost`,
//! `memory`, `startup`, `token-to-sse` and `write-amplification` (all by
//! default). `--scenarios` and `--connections` narrow the throughput phase to
//! some of its cells, for a profiler attached to one of them.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tiny_harness::model::fake::{Answer, FakeProvider, sent_at};

/// The concurrencies measured.
const CONNECTIONS: [usize; 3] = [1, 16, 256];

/// Follow-up workers start a new conversation after this many turns, so the
/// throughput figures are of conversations of a typical length (the turn
/// cost table covers long ones).
const ROTATE_AFTER: usize = 100;

/// Turns measured around each point of the turn-cost table.
const TURN_SAMPLES: usize = 21;

/// Tokens of the stamped answer, and the pause between them.
const STAMPED_TOKENS: usize = 200;
const STAMP_INTERVAL: Duration = Duration::from_millis(1);

/// Plugins started with, for the start-up time.
const PLUGINS: usize = 10;

/// Longest ramp to one point of the turn-cost table before it is skipped.
const RAMP_BUDGET: Duration = Duration::from_secs(240);
/// The offline context window of the second turn-cost series: one turn of
/// `hello there` and its reply is about 26 tokens, so the window is full
/// from the second turn on.
const FULL_WINDOW_TOKENS: u64 = 64;

/// Longest memory measurement of one server before it is skipped.
const MEMORY_BUDGET: Duration = Duration::from_secs(300);

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
enum Kind {
    Sdk,
    Memory,
    Sqlite,
}

impl Kind {
    fn label(self) -> &'static str {
        match self {
            Kind::Sdk => "a2a-sdk 1.3.0 (Python)",
            Kind::Memory => "tiny-harness, memory",
            Kind::Sqlite => "tiny-harness, SQLite",
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
enum Scenario {
    /// A first message: a new conversation each request.
    New,
    /// A plain follow-up in the worker's conversation.
    FollowUp,
    /// `/status` in the worker's conversation (a command: a Wasm body).
    Status,
}

impl Scenario {
    const ALL: [Scenario; 3] = [Scenario::New, Scenario::FollowUp, Scenario::Status];

    /// The name `--scenarios` takes.
    fn flag(self) -> &'static str {
        match self {
            Scenario::New => "new",
            Scenario::FollowUp => "follow-up",
            Scenario::Status => "status",
        }
    }

    fn label(self) -> &'static str {
        match self {
            Scenario::New => "new conversation",
            Scenario::FollowUp => "follow-up",
            Scenario::Status => "/status",
        }
    }
}

struct Options {
    rounds: usize,
    seconds: f64,
    turns: Vec<usize>,
    conversations: usize,
    sdk: bool,
    out: Option<PathBuf>,
    /// The phases to run; empty runs them all.
    only: Vec<String>,
    /// The throughput phase's cells.
    scenarios: Vec<Scenario>,
    connections: Vec<usize>,
}

/// The phases `--only` names, in the order they run.
const PHASES: [&str; 7] = [
    "throughput",
    "first-event",
    "turn-cost",
    "memory",
    "startup",
    "token-to-sse",
    "write-amplification",
];

impl Options {
    fn from_args() -> anyhow::Result<Self> {
        let args: Vec<String> = std::env::args().skip(1).collect();
        let value = |flag: &str| {
            args.iter()
                .position(|arg| arg == flag)
                .and_then(|at| args.get(at + 1).cloned())
        };
        let quick = args.iter().any(|arg| arg == "--quick");
        let number = |flag: &str, default: f64| -> anyhow::Result<f64> {
            value(flag).map_or(Ok(default), |v| {
                v.parse().with_context(|| format!("{flag} {v}"))
            })
        };
        let turns = match value("--turns") {
            Some(list) => list
                .split(',')
                .map(|n| n.trim().parse().with_context(|| format!("--turns {list}")))
                .collect::<anyhow::Result<_>>()?,
            None if quick => vec![10, 1000],
            None => vec![10, 1000, 10_000],
        };
        Ok(Options {
            rounds: number("--rounds", if quick { 1.0 } else { 3.0 })?.max(1.0) as usize,
            seconds: number("--seconds", if quick { 1.5 } else { 4.0 })?.max(0.2),
            turns,
            conversations: number("--conversations", if quick { 2000.0 } else { 10000.0 })?
                .max(100.0) as usize,
            sdk: !args.iter().any(|arg| arg == "--no-sdk"),
            out: value("--out").map(PathBuf::from),
            only: match value("--only") {
                Some(list) => list
                    .split(',')
                    .map(|phase| {
                        let phase = phase.trim();
                        if PHASES.contains(&phase) {
                            Ok(phase.to_owned())
                        } else {
                            bail!("--only {phase}: the phases are {}", PHASES.join(", "))
                        }
                    })
                    .collect::<anyhow::Result<_>>()?,
                None => Vec::new(),
            },
            scenarios: match value("--scenarios") {
                Some(list) => list
                    .split(',')
                    .map(|name| {
                        let name = name.trim();
                        Scenario::ALL
                            .into_iter()
                            .find(|scenario| scenario.flag() == name)
                            .with_context(|| {
                                format!("--scenarios {name}: they are new, follow-up, status")
                            })
                    })
                    .collect::<anyhow::Result<_>>()?,
                None => Scenario::ALL.to_vec(),
            },
            connections: match value("--connections") {
                Some(list) => list
                    .split(',')
                    .map(|n| {
                        n.trim()
                            .parse()
                            .with_context(|| format!("--connections {list}"))
                    })
                    .collect::<anyhow::Result<_>>()?,
                None => CONNECTIONS.to_vec(),
            },
        })
    }

    fn runs(&self, phase: &str) -> bool {
        // A misspelt phase here would be skipped silently, whatever --only says.
        assert!(PHASES.contains(&phase), "{phase} is not one of PHASES");
        self.only.is_empty() || self.only.iter().any(|wanted| wanted == phase)
    }
}

fn main() -> anyhow::Result<()> {
    let options = Options::from_args()?;
    // reqwest is built without a default TLS provider (as in the harness).
    let _ = rustls::crypto::ring::default_provider().install_default();
    // Counted before this process pins itself: from then on
    // `available_parallelism` reads its affinity and counts CPU 1 alone.
    let cpus = std::thread::available_parallelism().map_or(1, usize::from);
    let pinned = place_processes(cpus);
    let scratch = tempfile::Builder::new()
        .prefix("tiny-harness-bench")
        .tempdir()?;
    let tokio = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()?;
    let mut report = Report {
        command: std::iter::once("cargo bench --bench side_by_side --".to_owned())
            .chain(std::env::args().skip(1).filter(|arg| arg != "--bench"))
            .collect::<Vec<_>>()
            .join(" "),
        machine: Machine {
            cpus,
            pinned,
            rounds: options.rounds,
            seconds_per_measurement: options.seconds,
        },
        ..Report::default()
    };
    // Each phase prints its table and saves the figures so far as it ends,
    // so a run cut short keeps what it measured.
    let outcome = tokio.block_on(run(&options, scratch.path(), &mut report));
    println!("\n## All figures");
    print_report(&report);
    save(&options, &report)?;
    outcome
}

fn save(options: &Options, report: &Report) -> anyhow::Result<()> {
    if let Some(out) = &options.out {
        if let Some(dir) = out.parent() {
            std::fs::create_dir_all(dir).with_context(|| format!("create {}", dir.display()))?;
        }
        std::fs::write(out, serde_json::to_string_pretty(report)? + "\n")
            .with_context(|| format!("write {}", out.display()))?;
        eprintln!("figures so far written to {}", out.display());
    }
    Ok(())
}

/// One phase is over: its table now, its figures saved.
fn phase_done(options: &Options, report: &Report, print: fn(&Report)) -> anyhow::Result<()> {
    print(report);
    save(options, report)
}

// --- The report ------------------------------------------------------------------------------

#[derive(Default, Serialize)]
struct Report {
    command: String,
    machine: Machine,
    throughput: Vec<Throughput>,
    turn_cost: Vec<TurnCost>,
    memory: Vec<Memory>,
    /// Servers whose memory measurement did not finish in its budget.
    memory_unmeasured: Vec<Kind>,
    startup: Vec<Startup>,
    first_event: Vec<FirstEvent>,
    token_to_sse: Option<TokenDelay>,
    /// With the default `accept_commit_delay_ms`, then with 0.
    write_amplification: Vec<WriteAmplification>,
}

#[derive(Serialize)]
struct WriteAmplification {
    /// The `[store] accept_commit_delay_ms` of the server.
    accept_commit_delay_ms: u64,
    /// Follow-ups measured (each adds the participant's message and the
    /// agent's reply).
    messages: usize,
    /// Bytes the SQLite server sent to the disk (`write_bytes` of
    /// /proc/PID/io: pages of the database and its WAL it dirtied) per
    /// accepted message.
    written_per_message: f64,
    /// Bytes it passed to `write` (`wchar`: files and sockets, the answers
    /// included) per accepted message.
    wchar_per_message: f64,
    /// What each message added to the database, compacted (`VACUUM INTO`
    /// before and after).
    added_per_message: f64,
}

#[derive(Default, Serialize)]
struct Machine {
    cpus: usize,
    pinned: bool,
    rounds: usize,
    seconds_per_measurement: f64,
}

#[derive(Clone, Serialize)]
struct Throughput {
    scenario: Scenario,
    connections: usize,
    server: Kind,
    requests_per_second: f64,
    p50_ms: f64,
    p99_ms: f64,
    errors: u64,
    /// Every round's requests per second.
    rounds: Vec<f64>,
    /// The share of one core the load generator (this process) used while
    /// the median round was measured: near 1, the figure is the load
    /// generator's, not the server's.
    load_generator_cpu: Option<f64>,
    /// The share of one core the server used meanwhile.
    server_cpu: Option<f64>,
}

#[derive(Serialize)]
struct TurnCost {
    server: Kind,
    turn: usize,
    /// The offline model's context window when the run set one
    /// ([`FULL_WINDOW_TOKENS`]); `None`: the default window.
    context_window: Option<u64>,
    /// `None`: the ramp to this turn did not finish within its budget.
    p50_ms: Option<f64>,
    p99_ms: Option<f64>,
    /// The same turns less the time the harness waited for its model (the
    /// reply's `metadata.trace.model_us`): the harness's own time. `None`
    /// for the SDK, whose echo agent has no model.
    harness_p50_ms: Option<f64>,
    harness_p99_ms: Option<f64>,
}

#[derive(Serialize)]
struct Memory {
    server: Kind,
    conversations: usize,
    /// Resident memory (RSS, from /proc) per conversation, every worker
    /// running (a server whose workers stay for an hour).
    live_bytes: f64,
    /// The same after the workers stopped (`None` for servers that keep
    /// every task in memory).
    parked_bytes: Option<f64>,
    /// The whole process's resident memory before the conversations were
    /// made, and the lowest it came back to within a minute after their
    /// workers stopped (`None` as above); measured on a second server whose
    /// workers stop after 2 s.
    resident_before_bytes: f64,
    resident_idle_bytes: Option<f64>,
}

#[derive(Serialize)]
struct Startup {
    plugins: usize,
    cache: &'static str,
    ms: f64,
}

#[derive(Serialize)]
struct FirstEvent {
    server: Kind,
    p50_ms: f64,
    p99_ms: f64,
}

#[derive(Serialize)]
struct TokenDelay {
    server: Kind,
    tokens: usize,
    p50_ms: f64,
    p99_ms: f64,
}

async fn run(options: &Options, scratch: &Path, report: &mut Report) -> anyhow::Result<()> {
    let mut kinds = vec![Kind::Memory, Kind::Sqlite];
    if options.sdk {
        kinds.insert(0, Kind::Sdk);
    }
    let client = Client::new()?;
    if options.runs("throughput") || options.runs("first-event") {
        shared_server_phases(options, report, &client, &kinds, scratch).await?;
    }
    if options.runs("turn-cost") {
        eprintln!("turn cost ...");
        for &kind in &kinds {
            let server = Server::start(kind, scratch, Duration::from_secs(3600)).await?;
            let costs = turn_costs(&client, &server, &options.turns, None).await?;
            report.turn_cost.extend(costs);
        }
        // The same turns with a window that is full from the second turn:
        // every point then sends the model the same context, so what is
        // left to differ is what the harness does with the history.
        for &kind in kinds.iter().filter(|&&kind| kind != Kind::Sdk) {
            let window = format!(
                "[models]\ndefault = \"small-window\"\n\n[models.small-window]\n\
                 provider = \"offline\"\ncontext_window = {FULL_WINDOW_TOKENS}\n"
            );
            let idle = Duration::from_secs(3600);
            let server = Server::start_with(kind, scratch, idle, "", &window, None).await?;
            let window = Some(FULL_WINDOW_TOKENS);
            let costs = turn_costs(&client, &server, &options.turns, window).await?;
            report.turn_cost.extend(costs);
        }
        phase_done(options, report, print_turn_cost)?;
    }
    if options.runs("memory") {
        memory_phase(options, report, &client, &kinds, scratch).await?;
    }
    if options.runs("startup") {
        eprintln!("start-up ...");
        report.startup = startup_times(&client, scratch).await?;
        phase_done(options, report, print_startup)?;
    }
    if options.runs("token-to-sse") {
        eprintln!("token to SSE ...");
        report.token_to_sse = Some(token_delays(&client, scratch).await?);
        phase_done(options, report, print_streaming)?;
    }
    if options.runs("write-amplification") {
        eprintln!("write amplification ...");
        for delay_ms in [10, 0] {
            let measured = write_amplification(&client, scratch, delay_ms).await?;
            report.write_amplification.push(measured);
        }
        phase_done(options, report, print_write_amplification)?;
    }
    Ok(())
}

/// Throughput and the first SSE event, on one server of each kind.
async fn shared_server_phases(
    options: &Options,
    report: &mut Report,
    client: &Client,
    kinds: &[Kind],
    scratch: &Path,
) -> anyhow::Result<()> {
    let mut servers = BTreeMap::new();
    for &kind in kinds {
        servers.insert(
            kind,
            Server::start(kind, scratch, Duration::from_secs(3600)).await?,
        );
    }
    if options.runs("throughput") {
        throughput_phase(options, report, client, &servers).await?;
    }
    if options.runs("first-event") {
        first_event_phase(options, report, client, &servers).await?;
    }
    Ok(())
}

async fn throughput_phase(
    options: &Options,
    report: &mut Report,
    client: &Client,
    servers: &BTreeMap<Kind, Server>,
) -> anyhow::Result<()> {
    eprintln!("throughput ...");
    let throughput = &mut report.throughput;
    for &scenario in &options.scenarios {
        for &connections in &options.connections {
            let mut rounds: BTreeMap<Kind, Vec<Load>> = BTreeMap::new();
            for _ in 0..options.rounds {
                for (&kind, server) in servers {
                    let load = drive(client, server, scenario, connections, options.seconds)
                        .await
                        .with_context(|| format!("{} {scenario:?} x{connections}", kind.label()))?;
                    rounds.entry(kind).or_default().push(load);
                }
            }
            for (kind, mut loads) in rounds {
                loads.sort_by(|a, b| a.rate.total_cmp(&b.rate));
                let all: Vec<f64> = loads.iter().map(|load| load.rate).collect();
                let median = &loads[loads.len() / 2];
                throughput.push(Throughput {
                    scenario,
                    connections,
                    server: kind,
                    requests_per_second: median.rate,
                    p50_ms: median.p50,
                    p99_ms: median.p99,
                    errors: loads.iter().map(|load| load.errors).sum(),
                    rounds: all,
                    load_generator_cpu: median.load_generator_cpu,
                    server_cpu: median.server_cpu,
                });
            }
        }
    }

    phase_done(options, report, print_throughput)
}

async fn first_event_phase(
    options: &Options,
    report: &mut Report,
    client: &Client,
    servers: &BTreeMap<Kind, Server>,
) -> anyhow::Result<()> {
    eprintln!("first SSE event ...");
    let first_event = &mut report.first_event;
    for (&kind, server) in servers {
        let mut samples = Vec::new();
        for n in 0..200 {
            samples.push(first_sse_event(client, server, n).await?);
        }
        samples.sort_by(f64::total_cmp);
        first_event.push(FirstEvent {
            server: kind,
            p50_ms: percentile(&samples, 50.0),
            p99_ms: percentile(&samples, 99.0),
        });
    }
    // Printed with the other streaming figures.
    save(options, report)
}

async fn memory_phase(
    options: &Options,
    report: &mut Report,
    client: &Client,
    kinds: &[Kind],
    scratch: &Path,
) -> anyhow::Result<()> {
    eprintln!("memory ...");
    for &kind in kinds {
        // The SDK once stopped answering here (idle, every request pending)
        // and held the whole run; a server that does so is reported, not
        // waited for.
        let measured = memory_per_conversation(client, kind, scratch, options.conversations);
        match tokio::time::timeout(MEMORY_BUDGET, measured).await {
            Ok(memory) => report.memory.push(memory?),
            Err(_) => {
                eprintln!(
                    "{}: no memory figure, still busy after {MEMORY_BUDGET:?}",
                    kind.label()
                );
                report.memory_unmeasured.push(kind);
            }
        }
    }
    phase_done(options, report, print_memory)
}

fn print_report(report: &Report) {
    print_throughput(report);
    print_turn_cost(report);
    print_memory(report);
    print_startup(report);
    print_streaming(report);
    print_write_amplification(report);
    println!("\nreproduce: {}", report.command);
}

/// Requests per second and latency, with the ratios between the servers.
fn print_throughput(report: &Report) {
    let find = |scenario, connections, kind| {
        report
            .throughput
            .iter()
            .find(|t| t.scenario == scenario && t.connections == connections && t.server == kind)
    };
    println!(
        "\n| scenario | connections | SDK req/s (p50 / p99 ms) | memory req/s (p50 / p99 ms) | \
         SQLite req/s (p50 / p99 ms) | SQLite / memory | memory / SDK | SQLite / SDK |"
    );
    println!("| --- | --- | --- | --- | --- | --- | --- | --- |");
    let mut measured: Vec<usize> = report.throughput.iter().map(|t| t.connections).collect();
    measured.sort_unstable();
    measured.dedup();
    for scenario in Scenario::ALL {
        for &connections in &measured {
            if !report
                .throughput
                .iter()
                .any(|t| t.scenario == scenario && t.connections == connections)
            {
                continue;
            }
            let cell = |kind| {
                find(scenario, connections, kind).map_or("-".to_owned(), |t| {
                    format!(
                        "{:.0} ({:.2} / {:.2})",
                        t.requests_per_second, t.p50_ms, t.p99_ms
                    )
                })
            };
            let rate = |kind| find(scenario, connections, kind).map(|t| t.requests_per_second);
            let ratio = |a: Option<f64>, b: Option<f64>| match (a, b) {
                (Some(a), Some(b)) if b > 0.0 => format!("{:.2}x", a / b),
                _ => "-".to_owned(),
            };
            println!(
                "| {} | {connections} | {} | {} | {} | {} | {} | {} |",
                scenario.label(),
                cell(Kind::Sdk),
                cell(Kind::Memory),
                cell(Kind::Sqlite),
                ratio(rate(Kind::Sqlite), rate(Kind::Memory)),
                ratio(rate(Kind::Memory), rate(Kind::Sdk)),
                ratio(rate(Kind::Sqlite), rate(Kind::Sdk)),
            );
        }
    }
    let errors: u64 = report.throughput.iter().map(|t| t.errors).sum();
    if errors > 0 {
        println!("\n{errors} requests failed (see the JSON for where)");
    }
    let busy: Vec<String> = report
        .throughput
        .iter()
        .filter_map(|t| {
            let used = t
                .load_generator_cpu
                .filter(|&used| used > LOAD_GENERATOR_BUSY)?;
            Some(format!(
                "{} x{} on {} ({:.0}%)",
                t.scenario.label(),
                t.connections,
                t.server.label(),
                used * 100.0
            ))
        })
        .collect();
    if !busy.is_empty() {
        println!(
            "\nThe load generator used most of its core in: {}. These figures may be \
             its own limit rather than the server's.",
            busy.join("; ")
        );
    }
}

/// One turn at each length of the conversation.
fn print_turn_cost(report: &Report) {
    println!(
        "\n| one turn, p50 (p99) ms | SDK | memory | SQLite | memory, less the model | \
         SQLite, less the model |"
    );
    println!("| --- | --- | --- | --- | --- | --- |");
    let turns = turn_points(report);
    for &turn in &turns {
        let cell = |kind| {
            turn_cost(report, kind, turn, None).map_or("-".to_owned(), |t| {
                t.p50_ms
                    .zip(t.p99_ms)
                    .map_or("not reached in time".to_owned(), p50_p99)
            })
        };
        let harness = |kind| harness_time(report, kind, turn, None).map_or("-".to_owned(), p50_p99);
        println!(
            "| turn {turn} | {} | {} | {} | {} | {} |",
            cell(Kind::Sdk),
            cell(Kind::Memory),
            cell(Kind::Sqlite),
            harness(Kind::Memory),
            harness(Kind::Sqlite)
        );
    }
    print_full_window_turn_cost(report, &turns);
}

/// The harness's own time per turn with the window full at every point,
/// and its ratio to the first point.
fn print_full_window_turn_cost(report: &Report, turns: &[usize]) {
    let window = Some(FULL_WINDOW_TOKENS);
    let harness = |kind, turn| harness_time(report, kind, turn, window);
    let Some(&first) = turns.first() else { return };
    if harness(Kind::Memory, first).is_none() && harness(Kind::Sqlite, first).is_none() {
        return;
    }
    println!(
        "\n| the harness's own time, window of {FULL_WINDOW_TOKENS} tokens, p50 (p99) ms | \
         memory | SQLite | memory, to turn {first} | SQLite, to turn {first} |"
    );
    println!("| --- | --- | --- | --- | --- |");
    for &turn in turns {
        let cell = |kind| harness(kind, turn).map_or("-".to_owned(), p50_p99);
        let ratio = |kind| {
            harness(kind, turn)
                .zip(harness(kind, first))
                .map_or("-".to_owned(), |((p50, _), (base, _))| {
                    format!("{:.2}x", p50 / base)
                })
        };
        println!(
            "| turn {turn} | {} | {} | {} | {} |",
            cell(Kind::Memory),
            cell(Kind::Sqlite),
            ratio(Kind::Memory),
            ratio(Kind::Sqlite)
        );
    }
}

fn turn_points(report: &Report) -> Vec<usize> {
    let mut turns: Vec<usize> = report.turn_cost.iter().map(|t| t.turn).collect();
    turns.sort_unstable();
    turns.dedup();
    turns
}

/// `kind`'s figures at `turn`, measured with `context_window`.
fn turn_cost(
    report: &Report,
    kind: Kind,
    turn: usize,
    context_window: Option<u64>,
) -> Option<&TurnCost> {
    report
        .turn_cost
        .iter()
        .find(|t| t.server == kind && t.turn == turn && t.context_window == context_window)
}

/// The harness's own p50 and p99 at `turn`, if they were measured.
fn harness_time(
    report: &Report,
    kind: Kind,
    turn: usize,
    context_window: Option<u64>,
) -> Option<(f64, f64)> {
    turn_cost(report, kind, turn, context_window)
        .and_then(|t| t.harness_p50_ms.zip(t.harness_p99_ms))
}

fn p50_p99((p50, p99): (f64, f64)) -> String {
    format!("{p50:.2} ({p99:.2})")
}

/// Resident memory per conversation.
fn print_memory(report: &Report) {
    println!(
        "\n| resident memory per conversation | worker running | parked | \
         process, a minute after going idle |"
    );
    println!("| --- | --- | --- | --- |");
    let mib = |bytes: f64| bytes / (1024.0 * 1024.0);
    for memory in &report.memory {
        let (parked, settled) = match (memory.parked_bytes, memory.resident_idle_bytes) {
            (Some(parked), Some(idle)) => (
                format!("{:.2} KB", parked / 1024.0),
                format!(
                    "{:.2}x its start ({:.0} MiB, was {:.0} MiB)",
                    idle / memory.resident_before_bytes,
                    mib(idle),
                    mib(memory.resident_before_bytes)
                ),
            ),
            _ => ("(keeps every task in memory)".to_owned(), String::new()),
        };
        println!(
            "| {} ({} conversations) | {:.1} KB | {parked} | {settled} |",
            memory.server.label(),
            memory.conversations,
            memory.live_bytes / 1024.0,
        );
    }
    for kind in &report.memory_unmeasured {
        println!("| {} | not finished in {MEMORY_BUDGET:?} | |", kind.label());
    }
}

/// Process start to serving.
fn print_startup(report: &Report) {
    println!("\n| start-up to serving, {PLUGINS} plugins | ms |");
    println!("| --- | --- |");
    for startup in &report.startup {
        println!("| {} component cache | {:.0} |", startup.cache, startup.ms);
    }
}

/// The first SSE event, and a model token to an SSE client.
fn print_streaming(report: &Report) {
    println!("\n| streaming | p50 ms | p99 ms |");
    println!("| --- | --- | --- |");
    for first in &report.first_event {
        println!(
            "| first SSE event, {} | {:.2} | {:.2} |",
            first.server.label(),
            first.p50_ms,
            first.p99_ms
        );
    }
    if let Some(delay) = &report.token_to_sse {
        println!(
            "| model token to SSE client, {} ({} tokens) | {:.2} | {:.2} |",
            delay.server.label(),
            delay.tokens,
            delay.p50_ms,
            delay.p99_ms
        );
    }
}

/// Bytes written per accepted message.
fn print_write_amplification(report: &Report) {
    if report.write_amplification.is_empty() {
        return;
    }
    println!(
        "\n| SQLite, bytes per accepted message | written to disk (database and WAL pages, \
         write_bytes) | passed to write() (files and sockets, wchar) | added to the database \
         (compacted) | write amplification |\n| --- | --- | --- | --- | --- |"
    );
    for written in &report.write_amplification {
        let setting = match written.accept_commit_delay_ms {
            0 => "each message stored before its turn".to_owned(),
            ms => format!("a quick turn's message stored with its reply ({ms} ms)"),
        };
        println!(
            "| {setting}, {} messages | {:.0} | {:.0} | {:.0} | {:.1}x |",
            written.messages,
            written.written_per_message,
            written.wchar_per_message,
            written.added_per_message,
            written.written_per_message / written.added_per_message.max(1.0),
        );
    }
}

// --- Servers ---------------------------------------------------------------------------------

/// Where a server answers, and which it is.
#[derive(Clone)]
struct Endpoint {
    kind: Kind,
    base: String,
}

struct Server {
    endpoint: Endpoint,
    child: Child,
    pid: u32,
    /// Its database file (SQLite servers).
    database: Option<PathBuf>,
    /// The folder it keeps its files in (removed with it).
    _dir: tempfile::TempDir,
}

impl std::ops::Deref for Server {
    type Target = Endpoint;

    fn deref(&self) -> &Endpoint {
        &self.endpoint
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Server {
    async fn start(kind: Kind, scratch: &Path, idle: Duration) -> anyhow::Result<Server> {
        Self::start_with(kind, scratch, idle, "", "", None).await
    }

    /// Start `kind` on a free loopback port, pinned to CPU 0, and wait until
    /// it serves.
    async fn start_with(
        kind: Kind,
        scratch: &Path,
        idle: Duration,
        store_settings: &str,
        extra_config: &str,
        plugins: Option<(&Path, &Path)>,
    ) -> anyhow::Result<Server> {
        let dir = tempfile::Builder::new()
            .prefix("server")
            .tempdir_in(scratch)?;
        let port = free_port()?;
        let mut command = server_command();
        match kind {
            Kind::Sdk => {
                let agent =
                    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/bench/sdk_echo_agent.py");
                command
                    .arg("python3")
                    .arg(agent)
                    .arg("--port")
                    .arg(port.to_string());
            }
            Kind::Memory | Kind::Sqlite => {
                let store = match kind {
                    Kind::Memory => "\":memory:\"".to_owned(),
                    _ => format!("{:?}", dir.path().join("tiny-harness.db")),
                };
                let config = dir.path().join("tiny-harness.toml");
                std::fs::write(
                    &config,
                    format!(
                        "[store]\npath = {store}\nidle_timeout_secs = {}\n{store_settings}\n\n\
                         [rate_limit]\nper_participant_burst = 1000000000\n\
                         per_participant_per_second = 1000000000.0\n\
                         per_address_burst = 1000000000\nper_address_per_second = 1000000000.0\n\n\
                         {extra_config}\n",
                        idle.as_secs().max(1)
                    ),
                )?;
                let (plugins_dir, cache) = match plugins {
                    Some((plugins, cache)) => (plugins.to_owned(), cache.to_owned()),
                    None => (dir.path().join("plugins"), dir.path().join("cache")),
                };
                std::fs::create_dir_all(&plugins_dir)?;
                command
                    .arg(env!("CARGO_BIN_EXE_tiny-harness"))
                    .arg("serve")
                    .arg("--config")
                    .arg(&config)
                    .arg("--listen")
                    .arg(format!("127.0.0.1:{port}"))
                    .arg("--plugins")
                    .arg(plugins_dir)
                    .env("TINY_HARNESS_CACHE_DIR", cache)
                    .env("RUST_LOG", "warn");
            }
        }
        let mut child = command
            .current_dir(dir.path())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .with_context(|| format!("start {}", kind.label()))?;
        let stderr = child.stderr.take().context("stderr")?;
        // Drained for good, so the server never blocks on a full pipe.
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if line.contains("ERROR") || line.contains("Traceback") {
                    eprintln!("  server: {line}");
                }
            }
        });
        let pid = child.id();
        let server = Server {
            endpoint: Endpoint {
                kind,
                base: format!("http://127.0.0.1:{port}"),
            },
            child,
            pid,
            database: (kind == Kind::Sqlite).then(|| dir.path().join("tiny-harness.db")),
            _dir: dir,
        };
        server.wait_until_serving(Duration::from_secs(120)).await?;
        // Serving, so `taskset` has long since moved it and run it.
        if SERVERS_PINNED.get().copied().unwrap_or(false) {
            let cpus = allowed_cpus(server.pid)?;
            if cpus != SERVER_CPU.to_string() {
                bail!(
                    "{} runs on CPUs {cpus}, not CPU {SERVER_CPU} alone",
                    kind.label()
                );
            }
        }
        Ok(server)
    }

    async fn wait_until_serving(&self, limit: Duration) -> anyhow::Result<()> {
        let deadline = Instant::now() + limit;
        let card = format!("{}/.well-known/agent-card.json", self.endpoint.base);
        let http = reqwest::Client::new();
        loop {
            if let Ok(response) = http.get(&card).send().await
                && response.status().is_success()
            {
                return Ok(());
            }
            if Instant::now() > deadline {
                bail!("{} did not serve within {limit:?}", self.kind.label());
            }
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
    }

    /// `write_bytes` and `wchar` of /proc/PID/io so far.
    fn written_bytes(&self) -> anyhow::Result<(f64, f64)> {
        let io = std::fs::read_to_string(format!("/proc/{}/io", self.pid))?;
        let field = |name: &str| -> anyhow::Result<f64> {
            Ok(io
                .lines()
                .find_map(|line| line.strip_prefix(name))
                .with_context(|| name.to_owned())?
                .trim()
                .parse()?)
        };
        Ok((field("write_bytes:")?, field("wchar:")?))
    }

    fn resident_bytes(&self) -> anyhow::Result<f64> {
        let rss = status_field(self.pid, "VmRSS")?;
        let kb: f64 = rss.split_whitespace().next().context("VmRSS")?.parse()?;
        Ok(kb * 1024.0)
    }
}

/// The CPU every server runs on, when [`place_processes`] pinned them.
const SERVER_CPU: usize = 0;
/// The CPU of this process, the load generator, when pinned.
const LOAD_CPU: usize = 1;

/// Whether servers start pinned to [`SERVER_CPU`] (decided once, by
/// [`place_processes`]).
static SERVERS_PINNED: OnceLock<bool> = OnceLock::new();

/// With two CPUs or more and `taskset`, this process moves to [`LOAD_CPU`]
/// and every server it starts to [`SERVER_CPU`]; otherwise nothing is
/// pinned. Both or neither: a server started unpinned would inherit this
/// process's CPU and share it with the load. Returns whether they are.
fn place_processes(cpus: usize) -> bool {
    let unpinned = if cpus < 2 {
        Some("one CPU")
    } else if !Path::new("/usr/bin/taskset").exists() {
        Some("no taskset")
    } else if !pin_self_to_cpu(LOAD_CPU) {
        Some("this process could not pin itself")
    } else {
        None
    };
    if let Some(why) = unpinned {
        eprintln!("{why}: nothing is pinned, figures are not comparable to the README");
    }
    let pinned = unpinned.is_none();
    SERVERS_PINNED.get_or_init(|| pinned);
    pinned
}

/// `taskset -c SERVER_CPU` when servers are pinned, else nothing.
fn server_command() -> Command {
    if SERVERS_PINNED.get().copied().unwrap_or(false) {
        let mut command = Command::new("taskset");
        command.arg("-c").arg(SERVER_CPU.to_string());
        command
    } else {
        // `env` runs the program named next, unpinned.
        Command::new("env")
    }
}

/// The CPUs process `pid` may run on (its main thread's), as `/proc` lists
/// them (`0`, `0-1`).
fn allowed_cpus(pid: u32) -> anyhow::Result<String> {
    status_field(pid, "Cpus_allowed_list")
}

/// Field `name` of `/proc/PID/status`, its value trimmed.
fn status_field(pid: u32, name: &str) -> anyhow::Result<String> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
    status
        .lines()
        .find_map(|line| line.strip_prefix(name)?.strip_prefix(':'))
        .map(|value| value.trim().to_owned())
        .with_context(|| format!("{name} in /proc/{pid}/status"))
}

/// Pin this process (and the threads it starts later) to `cpu`.
fn pin_self_to_cpu(cpu: usize) -> bool {
    #[allow(unsafe_code)]
    // SAFETY: a zeroed cpu_set_t is a valid empty set; the calls only read
    // and write that local set and this thread's affinity.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) == 0
    }
}

fn free_port() -> anyhow::Result<u16> {
    let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
    Ok(listener.local_addr()?.port())
}

// --- Requests --------------------------------------------------------------------------------

#[derive(Clone)]
struct Client {
    http: reqwest::Client,
    ids: Arc<AtomicU64>,
}

/// A conversation as the client knows it.
#[derive(Clone, Debug)]
struct Conversation {
    task_id: String,
    context_id: String,
}

/// A `SendMessage` answer, as far as the client reads it.
#[derive(Deserialize)]
struct SendAnswer {
    result: Option<AnswerResult>,
}

#[derive(Deserialize)]
struct AnswerResult {
    task: Option<AnsweredTask>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct AnsweredTask {
    id: String,
    context_id: String,
    status: AnsweredStatus,
}

#[derive(Deserialize)]
struct AnsweredStatus {
    state: String,
    /// The reply: its trace says how long the turn waited on its model.
    message: Option<TracedMessage>,
}

#[derive(Deserialize)]
struct TracedMessage {
    metadata: Option<TracedMetadata>,
}

#[derive(Deserialize)]
struct TracedMetadata {
    trace: Option<Trace>,
}

#[derive(Deserialize)]
struct Trace {
    model_us: Option<u64>,
}

impl Client {
    fn new() -> anyhow::Result<Self> {
        Ok(Client {
            http: reqwest::Client::builder()
                .tcp_nodelay(true)
                .pool_max_idle_per_host(1024)
                // Under the server's `header_read_timeout_secs` (30): a
                // connection idle since an earlier measurement is dropped
                // here, never reused as the server closes it.
                .pool_idle_timeout(Duration::from_secs(20))
                .timeout(Duration::from_secs(120))
                .build()?,
            ids: Arc::new(AtomicU64::new(0)),
        })
    }

    fn message(&self, text: &str, to: Option<&Conversation>) -> Value {
        let id = self.ids.fetch_add(1, Ordering::Relaxed);
        let mut message = json!({
            "messageId": format!("bench-{}-{id}", std::process::id()),
            "role": "ROLE_USER",
            "parts": [{"text": text}],
        });
        if let Some(conversation) = to {
            message["taskId"] = json!(conversation.task_id);
            message["contextId"] = json!(conversation.context_id);
        }
        message
    }

    /// `SendMessage`; returns what the answer's task says of itself.
    async fn send(
        &self,
        server: &Endpoint,
        participant: &str,
        message: Value,
        history_length: Option<u32>,
    ) -> anyhow::Result<AnsweredTask> {
        let mut params = json!({"message": message});
        if let Some(length) = history_length {
            params["configuration"] = json!({"historyLength": length});
        }
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": params});
        let response = self
            .http
            .post(format!("{}/", server.base))
            .header("A2A-Version", "1.0")
            .header("X-Participant-Id", participant)
            .json(&body)
            .send()
            .await?;
        let status = response.status();
        let bytes = response.bytes().await?;
        // Only the fields checked are built; the rest (a follow-up's
        // answer carries the whole history) is skipped over, so the load
        // generator's own work per answer stays small next to a server's.
        let task = serde_json::from_slice::<SendAnswer>(&bytes)
            .ok()
            .and_then(|answer| answer.result?.task)
            .filter(|_| status.is_success());
        let Some(task) = task else {
            bail!(
                "SendMessage answered {status}: {}",
                String::from_utf8_lossy(&bytes)
            );
        };
        if task.status.state != "TASK_STATE_INPUT_REQUIRED" {
            bail!(
                "the task is {}, not parked: {}",
                task.status.state,
                String::from_utf8_lossy(&bytes)
            );
        }
        Ok(task)
    }

    async fn start_conversation(
        &self,
        server: &Endpoint,
        participant: &str,
    ) -> anyhow::Result<Conversation> {
        let message = self.message("hello there", None);
        let task = self.send(server, participant, message, Some(0)).await?;
        Ok(Conversation {
            task_id: task.id,
            context_id: task.context_id,
        })
    }
}

/// What one measurement saw.
struct Load {
    rate: f64,
    p50: f64,
    p99: f64,
    errors: u64,
    /// Shares of one core used while it was measured (`None` where
    /// `/proc` cannot say).
    load_generator_cpu: Option<f64>,
    server_cpu: Option<f64>,
}

/// Above this share of its core, the load generator is said to be busy:
/// its figure may be its own limit.
const LOAD_GENERATOR_BUSY: f64 = 0.8;

/// CPU time (user and system) process `pid` has used, in seconds; `"self"`
/// for this process.
fn cpu_seconds(pid: &str) -> Option<f64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name, in parentheses, may hold spaces: count fields
    // after it (utime and stime are the 14th and 15th of the line).
    let mut fields = stat.get(stat.rfind(')')? + 1..)?.split_whitespace();
    let utime: f64 = fields.nth(11)?.parse().ok()?;
    let stime: f64 = fields.next()?.parse().ok()?;
    #[allow(unsafe_code)]
    // SAFETY: sysconf reads a constant of the system.
    let ticks = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    (ticks > 0).then(|| (utime + stime) / ticks as f64)
}

/// The CPU time of the load generator and of a server, taken together.
struct CpuClock {
    at: Instant,
    load_generator: Option<f64>,
    server: Option<f64>,
}

impl CpuClock {
    fn read(server_pid: u32) -> Self {
        CpuClock {
            at: Instant::now(),
            load_generator: cpu_seconds("self"),
            server: cpu_seconds(&server_pid.to_string()),
        }
    }

    /// The shares of one core each used since `self`.
    fn shares_since(&self, server_pid: u32) -> (Option<f64>, Option<f64>) {
        let now = CpuClock::read(server_pid);
        let elapsed = now.at.duration_since(self.at).as_secs_f64();
        let share = |before: Option<f64>, after: Option<f64>| {
            Some((after? - before?) / elapsed).filter(|_| elapsed > 0.0)
        };
        (
            share(self.load_generator, now.load_generator),
            share(self.server, now.server),
        )
    }
}

/// `connections` workers each send `scenario` requests back to back for
/// `seconds`; latencies in milliseconds.
async fn drive(
    client: &Client,
    server: &Server,
    scenario: Scenario,
    connections: usize,
    seconds: f64,
) -> anyhow::Result<Load> {
    let pid = server.pid;
    let server = &server.endpoint;
    // The conversations first (not measured).
    let mut workers = Vec::with_capacity(connections);
    for worker in 0..connections {
        let participant = format!("bench-{worker}");
        let conversation = match scenario {
            Scenario::New => None,
            Scenario::FollowUp | Scenario::Status => {
                Some(client.start_conversation(server, &participant).await?)
            }
        };
        workers.push((participant, conversation));
    }
    let warm_up = Duration::from_secs_f64((seconds / 4.0).min(1.0));
    let started = Instant::now() + warm_up;
    let deadline = started + Duration::from_secs_f64(seconds);
    let server = Arc::new(server.clone());
    let mut tasks = tokio::task::JoinSet::new();
    for (participant, mut conversation) in workers {
        let client = client.clone();
        let server = Arc::clone(&server);
        tasks.spawn(async move {
            let mut latencies = Vec::new();
            let mut errors = 0u64;
            let mut turns = 0;
            while Instant::now() < deadline {
                if turns == ROTATE_AFTER
                    && let Some(current) = &mut conversation
                {
                    if let Ok(fresh) = client.start_conversation(&server, &participant).await {
                        *current = fresh;
                    }
                    turns = 0;
                }
                let text = match scenario {
                    Scenario::Status => "/status",
                    _ => "hello there",
                };
                let message = client.message(text, conversation.as_ref());
                let sent = Instant::now();
                let result = client.send(&server, &participant, message, None).await;
                let done = Instant::now();
                turns += 1;
                if sent < started || done > deadline {
                    continue;
                }
                match result {
                    Ok(_) => latencies.push(done.duration_since(sent).as_secs_f64() * 1e3),
                    Err(error) => {
                        if errors == 0 {
                            eprintln!("  {}: {error:#}", server.kind.label());
                        }
                        errors += 1;
                    }
                }
            }
            (latencies, errors)
        });
    }
    tokio::time::sleep_until(started.into()).await;
    let clock = CpuClock::read(pid);
    tokio::time::sleep_until(deadline.into()).await;
    let (load_generator_cpu, server_cpu) = clock.shares_since(pid);
    let mut latencies = Vec::new();
    let mut errors = 0;
    while let Some(done) = tasks.join_next().await {
        let (mine, failed) = done?;
        latencies.extend(mine);
        errors += failed;
    }
    latencies.sort_by(f64::total_cmp);
    Ok(Load {
        rate: latencies.len() as f64 / seconds,
        p50: percentile(&latencies, 50.0),
        p99: percentile(&latencies, 99.0),
        errors,
        load_generator_cpu,
        server_cpu,
    })
}

fn percentile(sorted: &[f64], percent: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let at = ((sorted.len() - 1) as f64 * percent / 100.0).round() as usize;
    sorted[at]
}

// --- Turn cost -------------------------------------------------------------------------------

/// A conversation taken to each of `points`, then the latency of plain
/// follow-ups there (`historyLength: 2`), one turn at each point in turn:
/// the machine's speed moves within minutes, and measuring one point after
/// the other had put that drift between turn 10 and turn 10,000. The ramps
/// ask for no history back.
async fn turn_costs(
    client: &Client,
    server: &Endpoint,
    points: &[usize],
    context_window: Option<u64>,
) -> anyhow::Result<Vec<TurnCost>> {
    let participant = "turn-cost";
    let mut conversations = Vec::with_capacity(points.len());
    // A server too slow to reach one point will not reach a later one.
    let mut gave_up_at = usize::MAX;
    for &point in points {
        let first = point.saturating_sub(TURN_SAMPLES / 2).max(1);
        let conversation = match point >= gave_up_at {
            true => None,
            false => ramp(client, server, participant, first).await?,
        };
        if conversation.is_none() {
            gave_up_at = gave_up_at.min(point);
        }
        conversations.push(conversation);
    }
    let mut samples = vec![Vec::with_capacity(TURN_SAMPLES); points.len()];
    let mut harness = vec![Vec::with_capacity(TURN_SAMPLES); points.len()];
    for _ in 0..TURN_SAMPLES {
        for (k, conversation) in conversations.iter().enumerate() {
            let Some(conversation) = conversation else {
                continue;
            };
            let message = client.message("hello there", Some(conversation));
            let sent = Instant::now();
            // The newest two messages back (the message and its reply):
            // without `historyLength` an answer carries the whole history
            // (A2A's default), and its size, not the turn, would be timed.
            let task = client.send(server, participant, message, Some(2)).await?;
            let took = sent.elapsed().as_secs_f64() * 1e3;
            samples[k].push(took);
            if let Some(model_ms) = model_time_ms(&task) {
                harness[k].push(took - model_ms);
            }
        }
    }
    Ok(points
        .iter()
        .zip(samples.iter_mut().zip(harness.iter_mut()))
        .map(|(&point, (samples, harness))| {
            samples.sort_by(f64::total_cmp);
            harness.sort_by(f64::total_cmp);
            let measured = |samples: &[f64], percent| {
                (samples.len() == TURN_SAMPLES).then(|| percentile(samples, percent))
            };
            TurnCost {
                server: server.kind,
                turn: point,
                context_window,
                p50_ms: measured(samples, 50.0),
                p99_ms: measured(samples, 99.0),
                harness_p50_ms: measured(harness, 50.0),
                harness_p99_ms: measured(harness, 99.0),
            }
        })
        .collect())
}

/// A new conversation of `turns` turns (its first message and its
/// follow-ups), or `None` if it was not there within [`RAMP_BUDGET`].
async fn ramp(
    client: &Client,
    server: &Endpoint,
    participant: &str,
    turns: usize,
) -> anyhow::Result<Option<Conversation>> {
    let conversation = client.start_conversation(server, participant).await?;
    let started = Instant::now();
    for _ in 1..turns {
        if started.elapsed() > RAMP_BUDGET {
            return Ok(None);
        }
        let message = client.message("hello there", Some(&conversation));
        client.send(server, participant, message, Some(0)).await?;
    }
    Ok(Some(conversation))
}

/// How long the turn behind `task`'s last message waited for its model, if
/// that message is a reply with a trace.
fn model_time_ms(task: &AnsweredTask) -> Option<f64> {
    let micros = task
        .status
        .message
        .as_ref()?
        .metadata
        .as_ref()?
        .trace
        .as_ref()?
        .model_us?;
    Some(micros as f64 / 1e3)
}

// --- Memory ----------------------------------------------------------------------------------

/// Resident memory per conversation: `count` conversations started (64 at a
/// time) on a fresh server; then, for tiny-harness, again once their
/// workers stopped (a 2 s idle period) and the server gave the memory back.
async fn memory_per_conversation(
    client: &Client,
    kind: Kind,
    scratch: &Path,
    count: usize,
) -> anyhow::Result<Memory> {
    // Running: workers kept for an hour, so every one is alive when
    // measured (making 50,000 conversations takes longer than any short
    // idle period).
    let server = Server::start(kind, scratch, Duration::from_secs(3600)).await?;
    let (server, before) = warmed_up(client, server, Duration::ZERO).await?;
    let server = fill(client, server, count).await?;
    let live = (server.resident_bytes()? - before) / count as f64;
    drop(server);
    let idle = match kind {
        Kind::Sdk => None,
        Kind::Memory | Kind::Sqlite => {
            Some(resident_after_idle(client, kind, scratch, count).await?)
        }
    };
    Ok(Memory {
        server: kind,
        conversations: count,
        live_bytes: live,
        parked_bytes: idle.map(|(before, lowest)| ((lowest - before) / count as f64).max(0.0)),
        resident_before_bytes: idle.map_or(before, |(before, _)| before),
        resident_idle_bytes: idle.map(|(_, lowest)| lowest),
    })
}

/// A fresh server with workers that stop after 2 s: its resident memory
/// before `count` conversations, and the lowest it comes back to within a
/// minute (and a maintenance sweep) after their workers stopped.
async fn resident_after_idle(
    client: &Client,
    kind: Kind,
    scratch: &Path,
    count: usize,
) -> anyhow::Result<(f64, f64)> {
    let idle = Duration::from_secs(2);
    let server = Server::start(kind, scratch, idle).await?;
    let (server, before) = warmed_up(client, server, idle + Duration::from_secs(1)).await?;
    let server = fill(client, server, count).await?;
    let deadline = Instant::now() + idle + Duration::from_secs(75);
    let mut lowest = f64::MAX;
    while Instant::now() < deadline {
        tokio::time::sleep(Duration::from_secs(1)).await;
        let now = server.resident_bytes()?;
        lowest = lowest.min(now);
        if now <= before * 1.02 {
            break;
        }
    }
    Ok((before, lowest))
}

/// `server` after one conversation and `settle`, so what is allocated once
/// is in the baseline; and its resident memory then.
async fn warmed_up(
    client: &Client,
    server: Server,
    settle: Duration,
) -> anyhow::Result<(Server, f64)> {
    client.start_conversation(&server, "warm-up").await?;
    tokio::time::sleep(settle).await;
    let before = server.resident_bytes()?;
    Ok((server, before))
}

/// Start `count` conversations on `server`, 64 at a time.
async fn fill(client: &Client, server: Server, count: usize) -> anyhow::Result<Server> {
    let lanes = 64.min(count);
    let mut tasks = tokio::task::JoinSet::new();
    let server = Arc::new(server);
    for lane in 0..lanes {
        let client = client.clone();
        let server = Arc::clone(&server);
        tasks.spawn(async move {
            for n in (lane..count).step_by(lanes) {
                client
                    .start_conversation(&server, &format!("memory-{n}"))
                    .await?;
            }
            anyhow::Ok(())
        });
    }
    while let Some(done) = tasks.join_next().await {
        done??;
    }
    Arc::into_inner(server).context("the fill tasks are done")
}

// --- Write amplification -------------------------------------------------------------------

/// Follow-ups on a SQLite server: bytes it wrote to files against bytes
/// the messages added to the (compacted) database.
async fn write_amplification(
    client: &Client,
    scratch: &Path,
    accept_commit_delay_ms: u64,
) -> anyhow::Result<WriteAmplification> {
    const CONVERSATIONS: usize = 20;
    const TURNS: usize = 25;
    let server = Server::start_with(
        Kind::Sqlite,
        scratch,
        Duration::from_secs(3600),
        &format!("accept_commit_delay_ms = {accept_commit_delay_ms}"),
        "",
        None,
    )
    .await?;
    let mut conversations = Vec::new();
    for n in 0..CONVERSATIONS {
        let participant = format!("writes-{n}");
        conversations.push((
            client.start_conversation(&server, &participant).await?,
            participant,
        ));
    }
    let database = server.database.clone().context("a SQLite server")?;
    let before = (
        server.written_bytes()?,
        compacted_size(&database, scratch, "before")?,
    );
    for _ in 0..TURNS {
        for (conversation, participant) in &conversations {
            let message = client.message("hello there", Some(conversation));
            client.send(&server, participant, message, Some(0)).await?;
        }
    }
    let after = (
        server.written_bytes()?,
        compacted_size(&database, scratch, "after")?,
    );
    // Each follow-up adds the participant's message and the agent's reply.
    let messages = CONVERSATIONS * TURNS * 2;
    Ok(WriteAmplification {
        accept_commit_delay_ms,
        messages,
        written_per_message: (after.0.0 - before.0.0) / messages as f64,
        wchar_per_message: (after.0.1 - before.0.1) / messages as f64,
        added_per_message: (after.1 - before.1) / messages as f64,
    })
}

/// The size of `database` copied compactly (`VACUUM INTO`), read while the
/// server runs (WAL lets it).
fn compacted_size(database: &Path, scratch: &Path, label: &str) -> anyhow::Result<f64> {
    let copy = scratch.join(format!("compacted-{label}.db"));
    let _ = std::fs::remove_file(&copy);
    let connection = rusqlite::Connection::open_with_flags(
        database,
        rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY,
    )?;
    connection.execute("VACUUM INTO ?1", [copy.to_string_lossy()])?;
    let size = std::fs::metadata(&copy)?.len() as f64;
    std::fs::remove_file(&copy)?;
    Ok(size)
}

// --- Start-up --------------------------------------------------------------------------------

/// Time from spawning the binary to its first answer, with `PLUGINS` copies
/// of a Rust plugin (each a distinct component), first with an empty
/// component cache, then with the cache that start filled.
async fn startup_times(_client: &Client, scratch: &Path) -> anyhow::Result<Vec<Startup>> {
    let plugins = tempfile::Builder::new()
        .prefix("plugins")
        .tempdir_in(scratch)?;
    let wasm = std::fs::read(env!("FIXTURE_GREETER_WASM"))?;
    let fixtures = Path::new(env!("FIXTURES_DIR")).join("plugins/greeter");
    for n in 0..PLUGINS {
        let dir = plugins.path().join(format!("greeter-{n}"));
        std::fs::create_dir_all(&dir)?;
        std::fs::write(dir.join("greeter.wasm"), distinct_component(&wasm, n))?;
        let rename = |file: &str, from: &str, to: &str| -> anyhow::Result<()> {
            let text = std::fs::read_to_string(fixtures.join(file))?;
            std::fs::write(dir.join(file), text.replace(from, to))?;
            Ok(())
        };
        rename("plugin.json", "\"greeter\"", &format!("\"greeter-{n}\""))?;
        rename("commands.json", "\"greet\"", &format!("\"greet{n}\""))?;
        rename("hooks.json", "\"greet\"", &format!("\"greet{n}\""))?;
    }
    let cache = tempfile::Builder::new()
        .prefix("cache")
        .tempdir_in(scratch)?;
    let mut startup = Vec::new();
    for label in ["empty", "warm"] {
        let mut samples = Vec::new();
        // An empty cache is measured once (it fills); a warm one 5 times.
        let runs = if label == "empty" { 1 } else { 5 };
        for _ in 0..runs {
            let started = Instant::now();
            let server = Server::start_with(
                Kind::Memory,
                scratch,
                Duration::from_secs(3600),
                "",
                "",
                Some((plugins.path(), cache.path())),
            )
            .await?;
            samples.push(started.elapsed().as_secs_f64() * 1e3);
            drop(server);
        }
        samples.sort_by(f64::total_cmp);
        startup.push(Startup {
            plugins: PLUGINS,
            cache: label,
            ms: percentile(&samples, 50.0),
        });
    }
    Ok(startup)
}

/// `component` with a custom section naming copy `n`: the same code, a
/// different content hash (so each copy is compiled and cached on its own).
fn distinct_component(component: &[u8], n: usize) -> Vec<u8> {
    let name = b"tiny-harness-bench-copy";
    let payload = n.to_string().into_bytes();
    let mut section = Vec::new();
    leb128(&mut section, name.len());
    section.extend_from_slice(name);
    section.extend_from_slice(&payload);
    let mut out = component.to_vec();
    out.push(0); // custom section
    leb128(&mut out, section.len());
    out.extend(section);
    out
}

fn leb128(out: &mut Vec<u8>, mut value: usize) {
    loop {
        let byte = (value & 0x7f) as u8;
        value >>= 7;
        if value == 0 {
            out.push(byte);
            return;
        }
        out.push(byte | 0x80);
    }
}

// --- Streaming -------------------------------------------------------------------------------

/// Open a `SendStreamingMessage` and return the response, checked.
async fn stream(
    client: &Client,
    server: &Endpoint,
    participant: &str,
    text: &str,
) -> anyhow::Result<reqwest::Response> {
    let body = json!({
        "jsonrpc": "2.0", "id": 1, "method": "SendStreamingMessage",
        "params": {"message": client.message(text, None)},
    });
    let response = client
        .http
        .post(format!("{}/", server.base))
        .header("A2A-Version", "1.0")
        .header("X-Participant-Id", participant)
        .header("Accept", "text/event-stream")
        .json(&body)
        .send()
        .await?;
    if !response.status().is_success() {
        bail!("SendStreamingMessage answered {}", response.status());
    }
    Ok(response)
}

/// Milliseconds from sending a streamed message to its first SSE event.
async fn first_sse_event(client: &Client, server: &Endpoint, n: usize) -> anyhow::Result<f64> {
    let sent = Instant::now();
    let mut response = stream(client, server, &format!("stream-{n}"), "hello there").await?;
    let mut buffer = Vec::new();
    let mut first = None;
    while let Some(chunk) = response.chunk().await? {
        buffer.extend_from_slice(&chunk);
        // An event ends at a blank line (the SDK's server frames with CRLF).
        if first.is_none()
            && (buffer.windows(2).any(|w| w == b"\n\n")
                || buffer.windows(4).any(|w| w == b"\r\n\r\n"))
        {
            first = Some(sent.elapsed().as_secs_f64() * 1e3);
        }
    }
    first.context("the stream sent no event")
}

/// The delay of every token of stamped answers, from the fake provider's
/// send to this client reading it off the SSE stream.
async fn token_delays(client: &Client, scratch: &Path) -> anyhow::Result<TokenDelay> {
    let fake =
        FakeProvider::start(|_| Answer::openai_stamped(STAMPED_TOKENS, STAMP_INTERVAL)).await;
    let config = format!(
        "[models]\ndefault = \"fake\"\n\n[models.fake]\nprovider = \"openai\"\n\
         base_url = \"{}/v1\"\nmodel = \"fake\"\napi_key = \"fake-key\"\n",
        fake.url()
    );
    let server = Server::start_with(
        Kind::Memory,
        scratch,
        Duration::from_secs(3600),
        "",
        &config,
        None,
    )
    .await?;
    let mut delays = Vec::new();
    for n in 0..5 {
        let mut response = stream(client, &server, &format!("tokens-{n}"), "hello").await?;
        let mut buffer = String::new();
        while let Some(chunk) = response.chunk().await? {
            let received = fake.epoch().elapsed();
            buffer.push_str(&String::from_utf8_lossy(&chunk));
            while let Some(end) = buffer.find("\n\n") {
                let event: String = buffer.drain(..end + 2).collect();
                for data in event.lines().filter_map(|line| line.strip_prefix("data:")) {
                    let Ok(value) = serde_json::from_str::<Value>(data.trim()) else {
                        continue;
                    };
                    let update = &value["result"]["statusUpdate"];
                    if update["metadata"]["stream"] != "text-delta" {
                        continue;
                    }
                    let text = update["status"]["message"]["parts"][0]["text"]
                        .as_str()
                        .unwrap_or("");
                    if let Some(sent) = sent_at(text) {
                        delays.push(received.saturating_sub(sent).as_secs_f64() * 1e3);
                    }
                }
            }
        }
    }
    if delays.is_empty() {
        bail!("no stamped token reached the SSE client");
    }
    delays.sort_by(f64::total_cmp);
    Ok(TokenDelay {
        server: Kind::Memory,
        tokens: delays.len(),
        p50_ms: percentile(&delays, 50.0),
        p99_ms: percentile(&delays, 99.0),
    })
}
