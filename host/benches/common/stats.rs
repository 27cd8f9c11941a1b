//! What the benches share to read their arguments and sum up their samples.

#![allow(dead_code)] // Each bench uses its own part of this.

use std::future::Future;
use std::time::Duration;

/// `--iterations N` from the bench's arguments, if given.
pub(crate) fn iterations_from_args() -> Option<usize> {
    let args: Vec<String> = std::env::args().collect();
    let at = args.iter().position(|arg| arg == "--iterations")?;
    args.get(at + 1)?.parse().ok()
}

/// The median of `iterations` runs of `measure`, after `warm_ups` runs that
/// are not counted (connections, allocations, lazy setup).
pub(crate) async fn median<F, Fut>(iterations: usize, warm_ups: usize, mut measure: F) -> Duration
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Duration>,
{
    for _ in 0..warm_ups {
        measure().await;
    }
    let mut samples = Vec::with_capacity(iterations);
    for _ in 0..iterations {
        samples.push(measure().await);
    }
    samples.sort();
    percentile(&samples, 50)
}

/// The `percent`th of `sorted` samples (zero when there are none).
pub(crate) fn percentile(sorted: &[Duration], percent: usize) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    sorted[(sorted.len() - 1) * percent / 100]
}

/// `value` over `base`.
pub(crate) fn ratio(value: Duration, base: Duration) -> f64 {
    value.as_secs_f64() / base.as_secs_f64().max(f64::MIN_POSITIVE)
}
