//! A tool call through `tool.invoked` (schema check, then the `in` chain),
//! measured side by side in one run: the tool-kit fixture's `shout` as a
//! Wasm component (warm: a conversation's repeat call; fresh: a new
//! conversation every call, so a new instance) against the same tool as
//! native Rust (`NativeTool`).
//!
//! Run: `cargo bench --bench tools` (optionally `-- --iterations N`).

#[path = "common/stats.rs"]
mod stats;
use stats::iterations_from_args;

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tiny_harness::commands::CommandRegistry;
use tiny_harness::domain::{TaskView, ToolCall, ToolContext, ToolResult};
use tiny_harness::hooks::{HookCall, HookPoint, Operation, Phase};
use tiny_harness::plugins::wasm::{RuntimeConfig, WasmRuntime};
use tiny_harness::plugins::{Grant, Grants, PluginLoader};
use tiny_harness::tools::{NativeTool, ToolDeclaration};

const FIXTURES_DIR: &str = env!("FIXTURES_DIR");
const TOOL_KIT_WASM: &str = env!("FIXTURE_TOOL_KIT_WASM");

fn main() -> anyhow::Result<()> {
    let iterations = iterations_from_args().unwrap_or(20_000).max(1);
    let scratch = tempfile::tempdir()?;
    let runtime = WasmRuntime::new(RuntimeConfig {
        cache_dir: Some(scratch.path().join("cache")),
    })?;
    let tokio = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;

    let wasm = wasm_registry(&runtime, scratch.path())?;
    let native = native_registry(&runtime)?;
    let arguments = json!({ "text": "warm or cold" });
    // Both must answer alike, or the comparison is moot.
    let expected = tokio.block_on(call(&native, &arguments, "bench-task"))?;
    let answered = tokio.block_on(call(&wasm, &arguments, "bench-task"))?;
    anyhow::ensure!(
        answered == expected,
        "wasm and native differ: {answered:?} vs {expected:?}"
    );

    let cases = [
        ("native shout", &native, false),
        ("wasm shout (warm, per-task)", &wasm, false),
        ("wasm shout (fresh instance)", &wasm, true),
    ];
    let latencies = tokio.block_on(measure(&cases, &arguments, iterations))?;
    println!("tool.invoked: {iterations} calls each, interleaved");
    for ((label, _, _), latency) in cases.iter().zip(&latencies) {
        report(label, latency);
    }
    print_ratio("wasm warm / native", &latencies[1], &latencies[0]);
    print_ratio("wasm fresh / native", &latencies[2], &latencies[0]);
    Ok(())
}

/// The tool-kit fixture, granted the network rule it asks for (its
/// component imports wasi:http, so it loads only with a grant).
fn wasm_registry(runtime: &WasmRuntime, scratch: &Path) -> anyhow::Result<CommandRegistry> {
    let source = Path::new(FIXTURES_DIR).join("plugins/tool-kit");
    let target = scratch.join("plugins/tool-kit");
    std::fs::create_dir_all(&target)?;
    for file in ["plugin.json", "tools.json", "hooks.json"] {
        std::fs::copy(source.join(file), target.join(file))?;
    }
    std::fs::copy(TOOL_KIT_WASM, target.join("tool-kit.wasm"))?;
    let mut grants = Grants::default();
    grants.per_plugin.insert(
        "tool-kit".into(),
        Grant {
            network: vec!["GET http://127.0.0.1".parse()?],
            ..Grant::default()
        },
    );
    let loaded = PluginLoader::new(runtime.clone())
        .with_embedded_builtin(false)
        .with_grants(grants)
        .load(Some(&scratch.join("plugins")), CommandRegistry::builder());
    anyhow::ensure!(
        loaded.registry.tool("shout").is_some(),
        "the tool-kit did not load:\n{}",
        loaded.report
    );
    Ok(loaded.registry)
}

/// `shout` as native Rust, declared as tools.json declares it.
fn native_registry(runtime: &WasmRuntime) -> anyhow::Result<CommandRegistry> {
    let tools: Value = serde_json::from_str(&std::fs::read_to_string(
        Path::new(FIXTURES_DIR).join("plugins/tool-kit/tools.json"),
    )?)?;
    let declaration: ToolDeclaration = serde_json::from_value(tools["tools"][0].clone())?;
    anyhow::ensure!(declaration.name == "shout");
    let mut builder = CommandRegistry::builder();
    builder.register_tool(
        declaration,
        Arc::new(NativeTool(|call: &ToolCall, _task: &TaskView| {
            let text = call.arguments["text"].as_str().unwrap_or_default();
            ToolResult::Output(json!(format!("{}!", text.to_uppercase())))
        })),
    )?;
    Ok(PluginLoader::new(runtime.clone())
        .with_embedded_builtin(false)
        .load(None, builder)
        .registry)
}

/// One call as the agent loop makes it: the schema check, then
/// `tool.invoked.in`.
async fn call(
    registry: &CommandRegistry,
    arguments: &Value,
    task_id: &str,
) -> anyhow::Result<ToolResult> {
    let tool = registry
        .tool("shout")
        .ok_or_else(|| anyhow::anyhow!("no shout"))?;
    tool.schema
        .check(arguments)
        .map_err(|problems| anyhow::anyhow!("refused: {problems}"))?;
    let mut task = TaskView::scratch("alice");
    task.id = task_id.to_owned();
    let context = ToolContext {
        task,
        call: ToolCall {
            id: "call-1".into(),
            name: "shout".into(),
            arguments: arguments.clone(),
        },
        result: None,
    };
    let point = HookPoint::new(Operation::ToolInvoked, Phase::In);
    let done = registry
        .hooks()
        .run_typed(HookCall::new(point, Some(task_id)), Some("shout"), context)
        .await?;
    done.result.ok_or_else(|| anyhow::anyhow!("no result"))
}

struct Latency {
    p50: Duration,
    p99: Duration,
}

/// Each case in turn, call by call, so drift affects all alike; a tenth of
/// the iterations warm up first.
async fn measure(
    cases: &[(&str, &CommandRegistry, bool)],
    arguments: &Value,
    iterations: usize,
) -> anyhow::Result<Vec<Latency>> {
    let task = |fresh: bool, call: usize| {
        if fresh {
            format!("bench-task-{call}")
        } else {
            "bench-task".to_owned()
        }
    };
    let warm_up = iterations / 10;
    for (_, registry, fresh) in cases {
        for n in 0..warm_up {
            call(registry, arguments, &task(*fresh, n)).await?;
        }
    }
    let mut samples: Vec<Vec<Duration>> = cases
        .iter()
        .map(|_| Vec::with_capacity(iterations))
        .collect();
    for n in warm_up..warm_up + iterations {
        for ((_, registry, fresh), samples) in cases.iter().zip(samples.iter_mut()) {
            let task = task(*fresh, n);
            let started = Instant::now();
            std::hint::black_box(call(registry, arguments, &task).await?);
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
            }
        })
        .collect())
}

fn report(label: &str, latency: &Latency) {
    println!(
        "{label:<32} p50 {:>8.1} us   p99 {:>8.1} us",
        micros(latency.p50),
        micros(latency.p99)
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
