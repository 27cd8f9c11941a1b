//! How much a plugin may write to the harness's log through `host.log`: a
//! budget per call (lines and bytes) and a rate per plugin (a token bucket
//! over all its calls). Lines beyond either are counted, not written; at
//! the end of the call (however it ends) one notice says how many were
//! dropped.

use std::sync::{Mutex, PoisonError};
use std::time::Instant;

use crate::plugins::settings::LogLimits;

/// A plugin's log rate, shared by all its instances.
pub(crate) struct LogRate {
    limits: LogLimits,
    bucket: Mutex<Bucket>,
}

struct Bucket {
    tokens: f64,
    refilled: Instant,
}

impl LogRate {
    pub(crate) fn new(limits: LogLimits) -> Self {
        LogRate {
            limits,
            bucket: Mutex::new(Bucket {
                tokens: f64::from(limits.burst),
                refilled: Instant::now(),
            }),
        }
    }

    /// Take one line's token, if the plugin has one left.
    fn take(&self) -> bool {
        let mut bucket = self.bucket.lock().unwrap_or_else(PoisonError::into_inner);
        let now = Instant::now();
        let regained = now.duration_since(bucket.refilled).as_secs_f64()
            * f64::from(self.limits.lines_per_second);
        bucket.tokens = (bucket.tokens + regained).min(f64::from(self.limits.burst));
        bucket.refilled = now;
        if bucket.tokens >= 1.0 {
            bucket.tokens -= 1.0;
            true
        } else {
            false
        }
    }
}

/// What the current call has logged.
#[derive(Debug, Default)]
pub(crate) struct CallLog {
    lines: u32,
    bytes: u64,
    dropped_lines: u64,
    dropped_bytes: u64,
}

impl CallLog {
    /// Whether a line of `len` bytes may be written; if not, it is counted
    /// as dropped.
    pub(crate) fn admit(&mut self, rate: &LogRate, len: usize) -> bool {
        let len = len as u64;
        let limits = &rate.limits;
        let fits = self.lines < limits.lines_per_call
            && self.bytes.saturating_add(len) <= limits.bytes_per_call;
        // The call's own budget first, so a call over it spends none of the
        // plugin's rate.
        if fits && rate.take() {
            self.lines += 1;
            self.bytes += len;
            true
        } else {
            self.dropped_lines += 1;
            self.dropped_bytes = self.dropped_bytes.saturating_add(len);
            false
        }
    }

    /// End the call: say what was dropped, once, and start afresh.
    pub(crate) fn finish(&mut self, plugin: &str, rate: &LogRate) {
        let call = std::mem::take(self);
        if call.dropped_lines == 0 {
            return;
        }
        let limits = &rate.limits;
        tracing::warn!(
            plugin,
            dropped_lines = call.dropped_lines,
            dropped_bytes = call.dropped_bytes,
            "plugin {plugin}: dropped {} log line(s) ({} bytes) of one call; the budget is {} lines and {} bytes per call ([plugins.logs] lines_per_call, bytes_per_call) and {} lines per second per plugin (lines_per_second, burst {})",
            call.dropped_lines,
            call.dropped_bytes,
            limits.lines_per_call,
            limits.bytes_per_call,
            limits.lines_per_second,
            limits.burst,
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits(lines_per_call: u32, bytes_per_call: u64, burst: u32) -> LogLimits {
        LogLimits {
            lines_per_call,
            bytes_per_call,
            lines_per_second: 1,
            burst,
        }
    }

    #[test]
    fn a_call_writes_at_most_its_lines_and_bytes() {
        let rate = LogRate::new(limits(3, 1000, 100));
        let mut call = CallLog::default();
        let admitted: Vec<bool> = (0..5).map(|_| call.admit(&rate, 10)).collect();
        assert_eq!(admitted, [true, true, true, false, false]);
        assert_eq!((call.dropped_lines, call.dropped_bytes), (2, 20));
        call.finish("p", &rate);
        assert_eq!(call.dropped_lines, 0, "a new call starts afresh");
        assert!(call.admit(&rate, 10));

        let rate = LogRate::new(limits(100, 25, 100));
        let mut call = CallLog::default();
        assert!(call.admit(&rate, 20));
        assert!(!call.admit(&rate, 10), "over the bytes");
        assert!(call.admit(&rate, 5), "a shorter line still fits");
    }

    #[test]
    fn the_plugin_rate_spans_its_calls() {
        let rate = LogRate::new(limits(100, 1 << 20, 4));
        let mut first = CallLog::default();
        let mut second = CallLog::default();
        assert!((0..3).all(|_| first.admit(&rate, 1)));
        assert!(second.admit(&rate, 1));
        assert!(!second.admit(&rate, 1), "the burst is spent");
        assert!(!first.admit(&rate, 1));
    }
}
