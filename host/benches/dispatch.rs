//! Dispatch latency of `/status`: through the hook chain to the built-in
//! Wasm body (a fresh instance per call) versus the same body registered as
//! native Rust, measured side by side in one run.
//!
//! Run: `cargo bench --bench dispatch` (optionally `-- --iterations N`).
//! Goal (issue 2): fresh-instance Wasm dispatch at most 30 us p50.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::json;
use tiny_harness::commands::{
    CommandRegistry, CommandSpec, Invocation, NativeBody, Outcome, Reply,
};
use tiny_harness::plugins::PluginLoader;
use tiny_harness::plugins::wasm::{RuntimeConfig, WasmRuntime};
use tiny_harness::task::{Participant, Role, TaskView};

const BUILTIN_DIR: &str = env!("BUILTIN_PLUGIN_DIR");
const BUILTIN_WASM: &str = env!("BUILTIN_PLUGIN_WASM");

fn main() -> anyhow::Result<()> {
    let iterations = iterations_from_args().unwrap_or(20_000);
    let runtime = WasmRuntime::new(RuntimeConfig { cache_dir: None })?;
    let tokio = tokio::runtime::Builder::new_current_thread().enable_all().build()?;

    let scratch = tempfile::tempdir()?;
    let wasm_body = wasm_body_only(&runtime, scratch.path())?;
    let native_body = native_body_only(&runtime)?;
    let full_chain = PluginLoader::new(runtime.clone())
        .load(None, CommandRegistry::builder())
        .registry;

    // The two bodies must answer identically, or the comparison is moot.
    let wasm_reply = tokio.block_on(status(&wasm_body))?;
    let native_reply = tokio.block_on(status(&native_body))?;
    anyhow::ensure!(
        wasm_reply == native_reply,
        "the native body differs from the Wasm one:\n{wasm_reply:?}\n{native_reply:?}"
    );

    println!("/status dispatch through command.invoked, {iterations} iterations each, interleaved");
    let [wasm, native, full] = tokio.block_on(measure(
        [&wasm_body, &native_body, &full_chain],
        iterations,
    ))?;
    report("wasm body (fresh instance)", &wasm);
    report("native Rust body", &native);
    report("wasm body + wasm role policy", &full);
    println!(
        "ratio wasm/native: p50 {:.1}x, p99 {:.1}x",
        ratio(wasm.p50, native.p50),
        ratio(wasm.p99, native.p99)
    );
    let goal = Duration::from_micros(30);
    println!(
        "goal: fresh-instance wasm dispatch p50 <= {} us: {} ({:.1} us)",
        goal.as_micros(),
        if wasm.p50 <= goal { "met" } else { "NOT met" },
        micros(wasm.p50)
    );
    Ok(())
}

fn iterations_from_args() -> Option<usize> {
    let args: Vec<String> = std::env::args().collect();
    let at = args.iter().position(|arg| arg == "--iterations")?;
    args.get(at + 1)?.parse().ok()
}

/// The built-in plugin with only its `/status` body: no role policy, so the
/// chain holds exactly one executor, as in the native registry.
fn wasm_body_only(runtime: &WasmRuntime, scratch: &Path) -> anyhow::Result<CommandRegistry> {
    let plugin = scratch.join("builtin");
    std::fs::create_dir_all(&plugin)?;
    for file in ["plugin.json", "commands.json"] {
        std::fs::copy(Path::new(BUILTIN_DIR).join(file), plugin.join(file))?;
    }
    std::fs::copy(BUILTIN_WASM, plugin.join("builtin.wasm"))?;
    let hooks = json!({"hooks": [{"name": "status-body", "point": "command.invoked.in",
                                  "command": "status", "component": "builtin.wasm"}]});
    std::fs::write(plugin.join("hooks.json"), hooks.to_string())?;
    let loaded = PluginLoader::new(runtime.clone()).load(Some(scratch), CommandRegistry::builder());
    anyhow::ensure!(loaded.registry.get("status").is_some(), "{}", loaded.report);
    Ok(loaded.registry)
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
        let named: Vec<String> =
            task.participants.iter().map(|p| format!("{} ({})", p.id, p.role)).collect();
        named.join(", ")
    };
    let mut text = format!(
        "State: {state}\nModel: {} (effort {})\nParticipants: {participants}\nOpen sub-tasks: {}",
        task.model,
        task.effort,
        open.len()
    );
    for subtask in &open {
        text.push_str(&format!("\n- {}: {} [{}]", subtask.id, subtask.goal, subtask.state));
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
        reply: Reply { text, data: Some(data) },
        effects: Vec::new(),
    })
}

fn is_terminal(state: &str) -> bool {
    matches!(
        state,
        "TASK_STATE_COMPLETED" | "TASK_STATE_FAILED" | "TASK_STATE_CANCELED" | "TASK_STATE_REJECTED"
    )
}

async fn status(registry: &CommandRegistry) -> anyhow::Result<Outcome> {
    let sender = Participant { id: "alice".into(), role: Role::Reporter };
    let call = registry.parse("/status").ok_or_else(|| anyhow::anyhow!("/status not registered"))?;
    Ok(registry.invoke(call, sender, TaskView::scratch("alice")).await?)
}

struct Latency {
    p50: Duration,
    p99: Duration,
    mean: Duration,
}

/// Time each registry in turn, call by call, so that drift on the machine
/// affects all of them alike.
async fn measure<const N: usize>(
    registries: [&CommandRegistry; N],
    iterations: usize,
) -> anyhow::Result<[Latency; N]> {
    for registry in registries {
        for _ in 0..iterations / 10 {
            status(registry).await?;
        }
    }
    let mut samples: [Vec<Duration>; N] = std::array::from_fn(|_| Vec::with_capacity(iterations));
    for _ in 0..iterations {
        for (registry, samples) in registries.iter().zip(samples.iter_mut()) {
            let started = Instant::now();
            std::hint::black_box(status(registry).await?);
            samples.push(started.elapsed());
        }
    }
    Ok(samples.map(|mut samples| {
        samples.sort();
        let at = |q: f64| samples[((samples.len() - 1) as f64 * q) as usize];
        Latency {
            p50: at(0.50),
            p99: at(0.99),
            mean: samples.iter().sum::<Duration>() / samples.len() as u32,
        }
    }))
}

fn report(label: &str, latency: &Latency) {
    println!(
        "{label:<30} p50 {:>8.1} us   p99 {:>8.1} us   mean {:>8.1} us",
        micros(latency.p50),
        micros(latency.p99),
        micros(latency.mean)
    );
}

fn micros(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1e6
}

fn ratio(a: Duration, b: Duration) -> f64 {
    a.as_secs_f64() / b.as_secs_f64().max(1e-9)
}
