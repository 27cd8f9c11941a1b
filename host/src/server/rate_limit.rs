//! A token bucket per participant on message sends.
//!
//! Each participant starts with `burst` tokens and regains `per_second` tokens a second, up
//! to `burst`; a send takes one. Without a token the send is refused with `RateLimited`
//! and the seconds until one is back, and nothing else happens. Reads (get, list,
//! subscribe) are not limited: they cost neither model time nor state.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Instant;

use crate::a2a::error::A2aError;

/// Above this many buckets, buckets that have refilled completely are dropped: they are
/// indistinguishable from new ones, so memory stays bounded by recent senders.
const PRUNE_ABOVE: usize = 10_000;

/// Per-participant token buckets.
pub(crate) struct RateLimiter {
    burst: f64,
    per_second: f64,
    buckets: Mutex<HashMap<String, Bucket>>,
}

#[derive(Clone, Copy)]
struct Bucket {
    tokens: f64,
    updated: Instant,
}

impl RateLimiter {
    /// `burst` sends at once, `per_second` more each second.
    pub(crate) fn new(burst: u32, per_second: f64) -> Self {
        RateLimiter {
            burst: f64::from(burst),
            per_second,
            buckets: Mutex::new(HashMap::new()),
        }
    }

    /// Takes one of `participant`'s tokens, or says how long until there is one.
    pub(crate) fn check(&self, participant: &str) -> Result<(), A2aError> {
        self.check_at(participant, Instant::now())
    }

    fn check_at(&self, participant: &str, now: Instant) -> Result<(), A2aError> {
        // The lock is never held across an await: this function is synchronous. A
        // poisoned lock still holds whole buckets.
        let mut buckets = self
            .buckets
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if buckets.len() > PRUNE_ABOVE {
            buckets.retain(|_, bucket| self.refilled(*bucket, now) < self.burst);
        }
        let bucket = buckets.entry(participant.to_owned()).or_insert(Bucket {
            tokens: self.burst,
            updated: now,
        });
        bucket.tokens = self.refilled(*bucket, now);
        bucket.updated = now;
        if bucket.tokens >= 1.0 {
            bucket.tokens -= 1.0;
            Ok(())
        } else {
            let wait = (1.0 - bucket.tokens) / self.per_second;
            Err(A2aError::RateLimited {
                // Whole seconds for Retry-After, never 0: a retry at once would fail.
                retry_after_secs: (wait.ceil() as u64).max(1),
            })
        }
    }

    fn refilled(&self, bucket: Bucket, now: Instant) -> f64 {
        let elapsed = now.saturating_duration_since(bucket.updated).as_secs_f64();
        (bucket.tokens + elapsed * self.per_second).min(self.burst)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn retry_after(result: Result<(), A2aError>) -> u64 {
        match result {
            Err(A2aError::RateLimited { retry_after_secs }) => retry_after_secs,
            other => panic!("expected RateLimited, got {other:?}"),
        }
    }

    #[test]
    fn a_burst_then_refusal_then_refill() {
        let limiter = RateLimiter::new(3, 2.0);
        let start = Instant::now();
        for _ in 0..3 {
            assert_eq!(limiter.check_at("alice", start), Ok(()));
        }
        assert_eq!(retry_after(limiter.check_at("alice", start)), 1);
        // Half a second later one token is back (2 per second).
        let later = start + Duration::from_millis(500);
        assert_eq!(limiter.check_at("alice", later), Ok(()));
        assert!(limiter.check_at("alice", later).is_err());
    }

    #[test]
    fn participants_have_their_own_buckets() {
        let limiter = RateLimiter::new(1, 1.0);
        let now = Instant::now();
        assert_eq!(limiter.check_at("alice", now), Ok(()));
        assert!(limiter.check_at("alice", now).is_err());
        assert_eq!(limiter.check_at("bob", now), Ok(()));
    }

    #[test]
    fn slow_refill_says_how_long_to_wait() {
        let limiter = RateLimiter::new(1, 0.1);
        let now = Instant::now();
        assert_eq!(limiter.check_at("alice", now), Ok(()));
        assert_eq!(retry_after(limiter.check_at("alice", now)), 10);
        let later = now + Duration::from_secs(4);
        assert_eq!(retry_after(limiter.check_at("alice", later)), 6);
    }

    #[test]
    fn refill_never_exceeds_the_burst() {
        let limiter = RateLimiter::new(2, 100.0);
        let now = Instant::now();
        assert_eq!(limiter.check_at("alice", now), Ok(()));
        let much_later = now + Duration::from_secs(3600);
        assert_eq!(limiter.check_at("alice", much_later), Ok(()));
        assert_eq!(limiter.check_at("alice", much_later), Ok(()));
        assert!(limiter.check_at("alice", much_later).is_err());
    }

    #[test]
    fn full_buckets_are_pruned() {
        let limiter = RateLimiter::new(1, 1000.0);
        let now = Instant::now();
        for n in 0..=PRUNE_ABOVE {
            assert_eq!(limiter.check_at(&format!("p{n}"), now), Ok(()));
        }
        let later = now + Duration::from_secs(1);
        assert_eq!(limiter.check_at("newcomer", later), Ok(()));
        let buckets = limiter.buckets.lock().expect("not poisoned");
        assert!(buckets.len() < 10, "{} buckets left", buckets.len());
    }
}
