//! Dispatch latency through the `command.invoked` chain, measured side by
//! side in one run:
//!
//! * `/status`: the built-in Wasm body in a fresh instance per call
//!   (`reuse: never`), from the warm pool (`stateless`), under the default
//!   `per-task` (a conversation's repeat call, and a new task every call),
//!   the same body as native Rust, and the full built-in chain;
//! * each example plugin found under `examples/plugins/<lang>` (see
//!   [`EXAMPLES`]): its body in a fresh instance versus from the warm pool.
//!
//! * reload latency (files written to command available), as in the `reload`
//!   bench.
//!
//! Run: `cargo bench --bench dispatch` (optionally `-- --iterations N`).
//! Goals: fresh-instance Wasm dispatch at most 30 us p50 (issue 2); warm
//! dispatch fast for every language ("fast dispatch for every language").

#[path = "common/reload_latency.rs"]
mod reload_latency;

#[path = "common/stats.rs"]
mod stats;
use stats::iterations_from_args;

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tiny_harness::commands::{
    CommandRegistry, CommandSpec, Invocation, NativeBody, Outcome, Reply,
};
use tiny_harness::plugins::wasm::{RuntimeConfig, WasmRuntime};
use tiny_harness::plugins::{Grants, PluginLoader};
use tiny_harness::task::{Participant, Role, TaskView};

const BUILTIN_DIR: &str = env!("BUILTIN_PLUGIN_DIR");
const BUILTIN_WASM: &str = env!("BUILTIN_PLUGIN_WASM");

/// Example plugins to measure, when built: the folder under
/// `examples/plugins` (its component is `<lang>.wasm`) and the message to
/// send. Add a language here once its example exists.
const EXAMPLES: &[(&str, &str)] = &[
    ("rust", "/echo warm or cold"),
    ("c", "/echo warm or cold"),
    ("go", "/echo warm or cold"),
    ("js", "/echo warm or cold"),
    ("python", "/echo warm or cold"),
];

/// Examples get a tenth of the `/status` iterations: a fresh Python instance
/// costs ~1 ms, and 2000 samples already give a stable p99.
const EXAMPLE_ITERATION_SHARE: usize = 10;

/// Drop-ins per plugin for the reload latency at the end of the run.
const RELOAD_ITERATIONS: usize = 10;

fn main() -> anyhow::Result<()> {
    let iterations = iterations_from_args().unwrap_or(20_000).max(1);
    let scratch = tempfile::tempdir()?;
    // A compile cache, so an example loaded in two variants (and Python's
    // ~20 MB component in particular) is compiled once.
    let runtime = WasmRuntime::new(RuntimeConfig {
        cache_dir: Some(scratch.path().join("cache")),
    })?;
    let tokio = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;

    let builtin = Path::new(BUILTIN_DIR);
    let fresh = body_only(&runtime, scratch.path(), builtin, "status", "never")?;
    let warm = body_only(&runtime, scratch.path(), builtin, "status", "stateless")?;
    let per_task = body_only(&runtime, scratch.path(), builtin, "status", "per-task")?;
    let native = native_body_only(&runtime)?;
    let full_chain = PluginLoader::new(runtime.clone())
        .load(None, CommandRegistry::builder())
        .registry;

    // The bodies must answer identically, or the comparison is moot.
    let expected = tokio.block_on(dispatch(&native, "/status", "bench-task"))?;
    for (label, registry) in [("fresh", &fresh), ("warm", &warm), ("per-task", &per_task)] {
        let reply = tokio.block_on(dispatch(registry, "/status", "bench-task"))?;
        anyhow::ensure!(
            reply == expected,
            "the {label} Wasm body differs from the native one:\n{reply:?}\n{expected:?}"
        );
    }

    println!("/status dispatch through command.invoked, {iterations} iterations each, interleaved");
    let cases = [
        Case::new("wasm, fresh instance (never)", &fresh, "/status"),
        Case::new("wasm, warm pool (stateless)", &warm, "/status"),
        Case::new("wasm, per-task, same task", &per_task, "/status"),
        Case::new("wasm, per-task, new task/call", &per_task, "/status").new_task_each_call(),
        Case::new("native Rust body", &native, "/status"),
        Case::new("wasm body + wasm role policy", &full_chain, "/status"),
    ];
    let [fresh, warm, same_task, new_task, native, full] =
        <[Latency; 6]>::try_from(tokio.block_on(measure(&cases, iterations))?)
            .map_err(|_| anyhow::anyhow!("one measurement per case"))?;
    for (case, latency) in cases
        .iter()
        .zip([&fresh, &warm, &same_task, &new_task, &native, &full])
    {
        report(case.label, latency);
    }
    print_ratio("fresh / native", &fresh, &native);
    print_ratio("warm / native", &warm, &native);
    print_ratio("fresh / warm", &fresh, &warm);
    print_ratio("per-task new task / fresh", &new_task, &fresh);
    let goal = Duration::from_micros(30);
    println!(
        "goal: fresh-instance wasm dispatch p50 <= {} us: {} ({:.1} us)",
        goal.as_micros(),
        if fresh.p50 <= goal { "met" } else { "NOT met" },
        micros(fresh.p50)
    );

    let examples = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/plugins");
    let example_iterations = (iterations / EXAMPLE_ITERATION_SHARE).max(100);
    println!(
        "\nexample plugins (examples/plugins/<lang>), body only, {example_iterations} iterations each"
    );
    for (lang, message) in EXAMPLES {
        let dir = examples.join(lang);
        if !dir.join(format!("{lang}.wasm")).is_file() {
            println!("{lang:<8} not built (examples/plugins/build.sh {lang}); skipped");
            continue;
        }
        match fresh_versus_warm(
            &runtime,
            &tokio,
            scratch.path(),
            &dir,
            message,
            example_iterations,
        ) {
            Ok([fresh, warm]) => {
                report(&format!("{lang}, fresh instance"), &fresh);
                report(&format!("{lang}, warm pool"), &warm);
                print_ratio(&format!("{lang} fresh / warm"), &fresh, &warm);
            }
            Err(err) => println!("{lang:<8} cannot be measured: {err:#}"),
        }
    }

    // The reload watcher runs on worker threads while the measurement
    // polls from this one, so it gets a multi-threaded runtime of its own.
    println!();
    let reloads = tokio::runtime::Runtime::new()?;
    let _reloads = reloads.enter();
    reload_latency::measure_reload_latency(RELOAD_ITERATIONS)
}

/// Measure `message`'s body from `plugin_dir` in a fresh instance per call
/// and from the warm pool, interleaved, after checking both answer alike.
fn fresh_versus_warm(
    runtime: &WasmRuntime,
    tokio: &tokio::runtime::Runtime,
    scratch: &Path,
    plugin_dir: &Path,
    message: &str,
    iterations: usize,
) -> anyhow::Result<[Latency; 2]> {
    let command = command_of(message)?;
    let fresh = body_only(runtime, scratch, plugin_dir, command, "never")?;
    let warm = body_only(runtime, scratch, plugin_dir, command, "stateless")?;
    let fresh_reply = tokio.block_on(dispatch(&fresh, message, "bench-task"))?;
    let warm_reply = tokio.block_on(dispatch(&warm, message, "bench-task"))?;
    anyhow::ensure!(
        fresh_reply == warm_reply,
        "fresh and warm answers differ:\n{fresh_reply:?}\n{warm_reply:?}"
    );
    let cases = [
        Case::new("fresh", &fresh, message),
        Case::new("warm", &warm, message),
    ];
    let latencies = tokio.block_on(measure(&cases, iterations))?;
    <[Latency; 2]>::try_from(latencies).map_err(|_| anyhow::anyhow!("one measurement per case"))
}

fn command_of(message: &str) -> anyhow::Result<&str> {
    message
        .strip_prefix('/')
        .and_then(|rest| rest.split_whitespace().next())
        .ok_or_else(|| anyhow::anyhow!("`{message}` is not a command"))
}

/// A plugins folder with only `plugin_dir`'s body for `command` (no other
/// hooks, so the chain holds exactly one executor, as in the native
/// registry) and plugin.json's `instances.reuse` set to `reuse`.
fn body_only(
    runtime: &WasmRuntime,
    scratch: &Path,
    plugin_dir: &Path,
    command: &str,
    reuse: &str,
) -> anyhow::Result<CommandRegistry> {
    let name = plugin_dir
        .file_name()
        .ok_or_else(|| anyhow::anyhow!("{} has no name", plugin_dir.display()))?;
    let folder = scratch.join(format!("{}-{reuse}", name.to_string_lossy()));
    let plugin = folder.join(name);
    std::fs::create_dir_all(&plugin)?;
    for entry in std::fs::read_dir(plugin_dir)? {
        let path = entry?.path();
        if path.is_file()
            && path
                .extension()
                .is_some_and(|ext| ext == "json" || ext == "wasm")
        {
            std::fs::copy(&path, plugin.join(path.file_name().unwrap_or_default()))?;
        }
    }
    if plugin_dir == Path::new(BUILTIN_DIR) {
        // The freshly built component, whatever the folder holds.
        std::fs::copy(BUILTIN_WASM, plugin.join("builtin.wasm"))?;
    }

    let mut manifest: Value = read_json(&plugin.join("plugin.json"))?;
    manifest["instances"] = json!({"reuse": reuse});
    std::fs::write(plugin.join("plugin.json"), manifest.to_string())?;
    let hooks: Value = read_json(&plugin.join("hooks.json"))?;
    let body: Vec<&Value> = hooks["hooks"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|hook| hook["point"] == "command.invoked.in" && hook["command"] == command)
        .collect();
    std::fs::write(
        plugin.join("hooks.json"),
        json!({"hooks": body}).to_string(),
    )?;

    // `stateless` reuse is a capability the operator grants.
    let loaded = PluginLoader::new(runtime.clone())
        .with_grants(Grants::all())
        .with_embedded_builtin(false)
        .load(Some(&folder), CommandRegistry::builder());
    anyhow::ensure!(loaded.registry.get(command).is_some(), "{}", loaded.report);
    Ok(loaded.registry)
}

fn read_json(path: &Path) -> anyhow::Result<Value> {
    let text = std::fs::read_to_string(path)
        .map_err(|err| anyhow::anyhow!("{}: {err}", path.display()))?;
    Ok(serde_json::from_str(&text)?)
}

fn native_body_only(runtime: &WasmRuntime) -> anyhow::Result<CommandRegistry> {
    let spec: CommandSpec = serde_json::from_value(json!({
        "name": "status", "description": "native /status", "usage": "/status"
    }))?;
    let mut builder = CommandRegistry::builder();
    builder.register(spec, Arc::new(NativeBody(native_status)))?;
    Ok(PluginLoader::new(runtime.clone())
        .with_embedded_builtin(false)
        .load(None, builder)
        .registry)
}

/// The built-in `/status` body (plugins/builtin/src/commands.rs) in Rust.
fn native_status(invocation: &Invocation) -> Result<Outcome, tiny_harness::commands::CommandError> {
    let task = &invocation.task;
    let open: Vec<_> = task
        .subtasks
        .iter()
        .filter(|s| !is_terminal(&s.state))
        .collect();
    let state = match &task.sub_state {
        Some(sub_state) if !sub_state.is_empty() => format!("{} ({sub_state})", task.state),
        _ => task.state.clone(),
    };
    let participants = if task.participants.is_empty() {
        "none".to_owned()
    } else {
        let named: Vec<String> = task
            .participants
            .iter()
            .map(|p| format!("{} ({})", p.id, p.role))
            .collect();
        named.join(", ")
    };
    let mut text = format!(
        "State: {state}\nModel: {} (effort {})\nParticipants: {participants}\nOpen sub-tasks: {}",
        task.model,
        task.effort,
        open.len()
    );
    for subtask in &open {
        text.push_str(&format!(
            "\n- {}: {} [{}]",
            subtask.id, subtask.goal, subtask.state
        ));
    }
    text.push_str(&format!("\nTurns: {}", task.turn_count));
    let data = json!({
        "state": task.state,
        "sub_state": task.sub_state,
        "model": task.model,
        "effort": task.effort,
        "participants": task.participants.iter()
            .map(|p| json!({"id": p.id, "role": p.role.as_str()})).collect::<Vec<_>>(),
        "open_subtasks": open.iter()
            .map(|s| json!({"id": s.id, "goal": s.goal, "state": s.state})).collect::<Vec<_>>(),
        "turn_count": task.turn_count,
    });
    Ok(Outcome {
        reply: Reply {
            text,
            data: Some(data),
        },
        effects: Vec::new(),
    })
}

fn is_terminal(state: &str) -> bool {
    matches!(
        state,
        "TASK_STATE_COMPLETED"
            | "TASK_STATE_FAILED"
            | "TASK_STATE_CANCELED"
            | "TASK_STATE_REJECTED"
    )
}

/// Send `message` as the reporter of task `task`.
async fn dispatch(
    registry: &CommandRegistry,
    message: &str,
    task: &str,
) -> anyhow::Result<Outcome> {
    let sender = Participant {
        id: "alice".into(),
        role: Role::Reporter,
    };
    let call = registry
        .parse(message)
        .ok_or_else(|| anyhow::anyhow!("{message} is not registered"))?;
    let mut view = TaskView::scratch("alice");
    view.id = task.to_owned();
    Ok(registry.invoke(call, sender, view).await?)
}

/// One row of a measurement: a registry, the message sent to it, and which
/// task each call belongs to.
struct Case<'a> {
    label: &'a str,
    registry: &'a CommandRegistry,
    message: &'a str,
    /// A task of its own for every call (a conversation's first command),
    /// rather than one task throughout (its follow-ups).
    new_task_each_call: bool,
}

impl<'a> Case<'a> {
    fn new(label: &'a str, registry: &'a CommandRegistry, message: &'a str) -> Self {
        Case {
            label,
            registry,
            message,
            new_task_each_call: false,
        }
    }

    fn new_task_each_call(mut self) -> Self {
        self.new_task_each_call = true;
        self
    }

    fn task(&self, call: usize) -> String {
        if self.new_task_each_call {
            format!("bench-task-{call}")
        } else {
            "bench-task".to_owned()
        }
    }
}

struct Latency {
    p50: Duration,
    p99: Duration,
    mean: Duration,
}

/// Time each case in turn, call by call, so that drift on the machine
/// affects all of them alike. A tenth of the iterations warm up first (and
/// fill the pools).
async fn measure(cases: &[Case<'_>], iterations: usize) -> anyhow::Result<Vec<Latency>> {
    let warm_up = iterations / 10;
    for case in cases {
        for call in 0..warm_up {
            dispatch(case.registry, case.message, &case.task(call)).await?;
        }
    }
    let mut samples: Vec<Vec<Duration>> = cases
        .iter()
        .map(|_| Vec::with_capacity(iterations))
        .collect();
    for call in warm_up..warm_up + iterations {
        for (case, samples) in cases.iter().zip(samples.iter_mut()) {
            let task = case.task(call);
            let started = Instant::now();
            std::hint::black_box(dispatch(case.registry, case.message, &task).await?);
            samples.push(started.elapsed());
        }
    }
    Ok(samples
        .into_iter()
        .map(|mut samples| {
            samples.sort();
            let at = |q: f64| samples[((samples.len() - 1) as f64 * q) as usize];
            Latency {
                p50: at(0.50),
                p99: at(0.99),
                mean: samples.iter().sum::<Duration>() / samples.len().max(1) as u32,
            }
        })
        .collect())
}

fn report(label: &str, latency: &Latency) {
    println!(
        "{label:<32} p50 {:>8.1} us   p99 {:>8.1} us   mean {:>8.1} us",
        micros(latency.p50),
        micros(latency.p99),
        micros(latency.mean)
    );
}

fn print_ratio(label: &str, a: &Latency, b: &Latency) {
    println!(
        "  ratio {label}: p50 {:.1}x, p99 {:.1}x",
        ratio(a.p50, b.p50),
        ratio(a.p99, b.p99)
    );
}

fn micros(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1e6
}

fn ratio(a: Duration, b: Duration) -> f64 {
    a.as_secs_f64() / b.as_secs_f64().max(1e-9)
}
