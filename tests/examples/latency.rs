//! A rough per-command latency of each example, for comparing languages:
//! `cargo test --release -p tiny-harness --test examples -- --ignored --nocapture`.
//!
//! One `/dice 2d6` goes through the built-in role policy, the example's
//! policy and its body: three calls into components. "fresh" sends each
//! command to a new conversation, so every call instantiates its component;
//! "warm" sends them all to one conversation, whose calls may reuse
//! instances (the plugin.json `instances` default).

use std::time::{Duration, Instant};

use tiny_harness::task::Role;

use crate::support::Example;

const CALLS: usize = 200;

#[tokio::test]
#[ignore = "a measurement, not a test; run with --release"]
async fn per_command_latency() {
    println!("/dice 2d6, {CALLS} calls each after 10 to warm up");
    for lang in ["rust", "c", "go", "python", "js"] {
        let example = Example::load(lang);
        let fresh = measure(|| example.send("/dice 2d6")).await;
        let warm = measure(|| example.send_in("one-task", Role::Reporter, "/dice 2d6")).await;
        println!(
            "{lang:<7} fresh {}   warm {}",
            summary(&fresh),
            summary(&warm)
        );
    }
}

async fn measure<F, Fut, T, E>(mut call: F) -> Vec<Duration>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, E>>,
    E: std::fmt::Debug,
{
    for _ in 0..10 {
        call().await.expect("the command succeeds");
    }
    let mut times = Vec::with_capacity(CALLS);
    for _ in 0..CALLS {
        let start = Instant::now();
        call().await.expect("the command succeeds");
        times.push(start.elapsed());
    }
    times.sort();
    times
}

fn summary(times: &[Duration]) -> String {
    let micros = |d: Duration| d.as_secs_f64() * 1e6;
    format!(
        "p50 {:>7.1} us p90 {:>7.1} us",
        micros(times[times.len() / 2]),
        micros(times[times.len() * 9 / 10])
    )
}
