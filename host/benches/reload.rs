//! Hot-reload latency on its own: see `reload_latency.rs`.
//!
//! Run: `cargo bench --bench reload` (optionally `-- --iterations N`).

#[path = "common/reload_latency.rs"]
mod reload_latency;

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let iterations = args
        .iter()
        .position(|arg| arg == "--iterations")
        .and_then(|at| args.get(at + 1)?.parse().ok())
        .unwrap_or(20);
    let tokio = tokio::runtime::Runtime::new()?;
    let _runtime = tokio.enter();
    reload_latency::measure_reload_latency(iterations)
}
