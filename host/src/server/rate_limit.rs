//! Token buckets on message sends, keyed by who is really calling.
//!
//! * A bearer token's participant has a bucket: the token proves the identity.
//! * Without tokens the participant id is only a claim (`X-Participant-Id`, metadata), so a
//!   send takes a token from the claimed id's bucket *and* from the bucket of the IP address
//!   it came from: rotating ids does not lift the limit, and one caller's claims cannot use
//!   up another address's sends. Both must have a token, or neither is taken.
//!
//! Each bucket starts with `burst` tokens and regains `per_second` tokens a second, up to
//! `burst`; a send takes one. Without a token the send is refused with `RateLimited` and the
//! seconds until one is back, and nothing else happens. Reads (get, list, subscribe) are not
//! limited: they cost neither model time nor state.
//!
//! At most `max_buckets` buckets are kept, least recently used first out (`lru`): memory is
//! bounded whatever ids callers invent, and no request scans the others. A forgotten bucket
//! is a full one again; without tokens the address bucket still holds a flood of fresh ids
//! back, and with tokens the ids are the configured ones. For the same reason a bucket that
//! has filled up again is forgotten by a sweep once a minute ([`RateLimiter::sweep`]): callers
//! who went quiet cost no memory, where 10,000 buckets left behind by a burst of callers
//! kept pages of the heap from going back to the OS.

use std::net::IpAddr;
use std::num::NonZeroUsize;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use lru::LruCache;

use crate::a2a::error::A2aError;

/// How a bucket fills.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Rate {
    /// Sends at once.
    pub burst: u32,
    /// Sends regained per second, up to the burst.
    pub per_second: f64,
}

/// The rate limits of `[rate_limit]`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RateLimits {
    /// Per participant: a token's, or a self-asserted id.
    pub per_participant: Rate,
    /// Per IP address, for self-asserted callers.
    pub per_address: Rate,
    /// Buckets kept at once.
    pub max_buckets: usize,
}

/// Who a send is charged to.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Sender<'a> {
    /// A bearer token's participant.
    Authenticated(&'a str),
    /// A self-asserted id, and the address the request came from (unknown only in
    /// in-process tests, which share one bucket for it).
    SelfAsserted {
        id: &'a str,
        address: Option<IpAddr>,
    },
}

#[derive(Clone, Debug, Hash, PartialEq, Eq)]
enum Key {
    Participant(String),
    Address(Option<IpAddr>),
}

/// The buckets, bounded.
pub(crate) struct RateLimiter {
    limits: RateLimits,
    buckets: Mutex<LruCache<Key, Bucket>>,
}

#[derive(Clone, Copy, Debug)]
struct Bucket {
    tokens: f64,
    updated: Instant,
}

impl RateLimiter {
    pub(crate) fn new(limits: RateLimits) -> Self {
        let capacity = NonZeroUsize::new(limits.max_buckets).unwrap_or(NonZeroUsize::MIN);
        RateLimiter {
            limits,
            buckets: Mutex::new(LruCache::new(capacity)),
        }
    }

    /// Takes one of `sender`'s tokens, or says how long until there is one.
    pub(crate) fn check(&self, sender: Sender<'_>) -> Result<(), A2aError> {
        self.check_at(sender, Instant::now())
    }

    fn check_at(&self, sender: Sender<'_>, now: Instant) -> Result<(), A2aError> {
        let charged: Vec<(Key, Rate)> = match sender {
            Sender::Authenticated(id) => {
                vec![(Key::Participant(id.to_owned()), self.limits.per_participant)]
            }
            Sender::SelfAsserted { id, address } => vec![
                (Key::Participant(id.to_owned()), self.limits.per_participant),
                (Key::Address(address), self.limits.per_address),
            ],
        };
        // The lock is never held across an await: this function is synchronous. A poisoned
        // lock still holds whole buckets.
        let mut buckets = self
            .buckets
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let mut wait: f64 = 0.0;
        for (key, rate) in &charged {
            let bucket = buckets.get_or_insert_mut(key.clone(), || Bucket {
                tokens: f64::from(rate.burst),
                updated: now,
            });
            bucket.tokens = refilled(*bucket, *rate, now);
            bucket.updated = now;
            if bucket.tokens < 1.0 {
                wait = wait.max((1.0 - bucket.tokens) / rate.per_second);
            }
        }
        if wait > 0.0 {
            return Err(A2aError::RateLimited {
                // Whole seconds for Retry-After, never 0: a retry at once would fail.
                retry_after_secs: (wait.ceil() as u64).max(1),
            });
        }
        for (key, _) in &charged {
            if let Some(bucket) = buckets.get_mut(key) {
                bucket.tokens -= 1.0;
            }
        }
        Ok(())
    }

    /// Forget every bucket that is full again: nothing changes for its caller (a forgotten
    /// bucket starts full), and its memory goes back.
    pub(crate) fn forget_full(&self) {
        self.forget_full_at(Instant::now());
    }

    fn forget_full_at(&self, now: Instant) {
        let mut buckets = self
            .buckets
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let full: Vec<Key> = buckets
            .iter()
            .filter(|(key, bucket)| {
                let rate = match key {
                    Key::Participant(_) => self.limits.per_participant,
                    Key::Address(_) => self.limits.per_address,
                };
                refilled(**bucket, rate, now) >= f64::from(rate.burst)
            })
            .map(|(key, _)| key.clone())
            .collect();
        for key in &full {
            buckets.pop(key);
        }
        drop(buckets);
        if !full.is_empty() {
            crate::heap::give_back_freed();
        }
    }

    /// Run [`forget_full`](Self::forget_full) once a minute for as long as `limiter` is
    /// used elsewhere, on the current Tokio runtime (none: no sweep, as in a test that
    /// builds the application without one).
    pub(crate) fn sweep(limiter: &Arc<RateLimiter>) {
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let limiter = Arc::downgrade(limiter);
        runtime.spawn(async move {
            let mut sweeps = tokio::time::interval(SWEEP_EVERY);
            sweeps.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            sweeps.tick().await;
            loop {
                sweeps.tick().await;
                let Some(limiter) = limiter.upgrade() else {
                    return;
                };
                limiter.forget_full();
            }
        });
    }
}

/// How often full buckets are forgotten.
const SWEEP_EVERY: Duration = Duration::from_secs(60);

fn refilled(bucket: Bucket, rate: Rate, now: Instant) -> f64 {
    let elapsed = now.saturating_duration_since(bucket.updated).as_secs_f64();
    (bucket.tokens + elapsed * rate.per_second).min(f64::from(rate.burst))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limiter(burst: u32, per_second: f64) -> RateLimiter {
        RateLimiter::new(RateLimits {
            per_participant: Rate { burst, per_second },
            per_address: Rate { burst, per_second },
            max_buckets: 10_000,
        })
    }

    fn token(id: &str) -> Sender<'_> {
        Sender::Authenticated(id)
    }

    fn claimed<'a>(id: &'a str, address: &str) -> Sender<'a> {
        Sender::SelfAsserted {
            id,
            address: Some(address.parse().expect("ip")),
        }
    }

    fn retry_after(result: Result<(), A2aError>) -> u64 {
        match result {
            Err(A2aError::RateLimited { retry_after_secs }) => retry_after_secs,
            other => panic!("expected RateLimited, got {other:?}"),
        }
    }

    #[test]
    fn a_burst_then_refusal_then_refill() {
        let limiter = limiter(3, 2.0);
        let start = Instant::now();
        for _ in 0..3 {
            assert_eq!(limiter.check_at(token("alice"), start), Ok(()));
        }
        assert_eq!(retry_after(limiter.check_at(token("alice"), start)), 1);
        // Half a second later one token is back (2 per second).
        let later = start + Duration::from_millis(500);
        assert_eq!(limiter.check_at(token("alice"), later), Ok(()));
        assert!(limiter.check_at(token("alice"), later).is_err());
    }

    #[test]
    fn participants_have_their_own_buckets() {
        let limiter = limiter(1, 1.0);
        let now = Instant::now();
        assert_eq!(limiter.check_at(token("alice"), now), Ok(()));
        assert!(limiter.check_at(token("alice"), now).is_err());
        assert_eq!(limiter.check_at(token("bob"), now), Ok(()));
    }

    #[test]
    fn rotating_self_asserted_ids_share_their_address_bucket() {
        let limiter = limiter(20, 0.001);
        let now = Instant::now();
        let accepted = (0..200)
            .filter(|n| {
                let id = format!("id-{n}");
                limiter.check_at(claimed(&id, "127.0.0.1"), now).is_ok()
            })
            .count();
        assert_eq!(accepted, 20);
        // Another address has its own bucket; a token holder is charged by token only.
        assert_eq!(limiter.check_at(claimed("id-0", "127.0.0.2"), now), Ok(()));
        assert_eq!(limiter.check_at(token("id-1"), now), Ok(()));
    }

    #[test]
    fn a_refused_send_takes_no_token_from_either_bucket() {
        let limiter = limiter(1, 0.001);
        let now = Instant::now();
        assert_eq!(limiter.check_at(claimed("alice", "127.0.0.1"), now), Ok(()));
        // alice's bucket is empty: refused, and the address keeps nothing it had...
        assert!(
            limiter
                .check_at(claimed("alice", "127.0.0.2"), now)
                .is_err()
        );
        // ...so 127.0.0.2 still has its one token for bob.
        assert_eq!(limiter.check_at(claimed("bob", "127.0.0.2"), now), Ok(()));
    }

    #[test]
    fn slow_refill_says_how_long_to_wait() {
        let limiter = limiter(1, 0.1);
        let now = Instant::now();
        assert_eq!(limiter.check_at(token("alice"), now), Ok(()));
        assert_eq!(retry_after(limiter.check_at(token("alice"), now)), 10);
        let later = now + Duration::from_secs(4);
        assert_eq!(retry_after(limiter.check_at(token("alice"), later)), 6);
    }

    #[test]
    fn refill_never_exceeds_the_burst() {
        let limiter = limiter(2, 100.0);
        let now = Instant::now();
        assert_eq!(limiter.check_at(token("alice"), now), Ok(()));
        let much_later = now + Duration::from_secs(3600);
        assert_eq!(limiter.check_at(token("alice"), much_later), Ok(()));
        assert_eq!(limiter.check_at(token("alice"), much_later), Ok(()));
        assert!(limiter.check_at(token("alice"), much_later).is_err());
    }

    #[test]
    fn buckets_are_bounded_least_recently_used_first() {
        let limiter = RateLimiter::new(RateLimits {
            per_participant: Rate {
                burst: 1,
                per_second: 0.001,
            },
            per_address: Rate {
                burst: 1_000_000,
                per_second: 1.0,
            },
            max_buckets: 100,
        });
        let now = Instant::now();
        assert_eq!(limiter.check_at(token("alice"), now), Ok(()));
        for n in 0..1_000 {
            let id = format!("p{n}");
            assert_eq!(limiter.check_at(token(&id), now), Ok(()));
        }
        assert_eq!(limiter.buckets.lock().expect("lock").len(), 100);
        // alice's empty bucket was the least recently used: forgotten, so full again.
        assert_eq!(limiter.check_at(token("alice"), now), Ok(()));
    }

    #[test]
    fn full_buckets_are_forgotten_and_the_rest_keep_their_tokens() {
        let limiter = limiter(2, 1.0);
        let start = Instant::now();
        limiter.check_at(token("busy"), start).expect("a token");
        limiter.check_at(token("busy"), start).expect("a token");
        limiter.check_at(token("quiet"), start).expect("a token");
        let buckets = || limiter.buckets.lock().expect("lock").len();
        assert_eq!(buckets(), 2);
        // One second on: "quiet" is full again, "busy" has one token of two.
        let later = start + Duration::from_secs(1);
        limiter.forget_full_at(later);
        assert_eq!(buckets(), 1, "only the full bucket is forgotten");
        limiter
            .check_at(token("busy"), later)
            .expect("its regained token");
        assert_eq!(
            retry_after(limiter.check_at(token("busy"), later)),
            1,
            "the bucket kept was not reset"
        );
        limiter
            .check_at(token("quiet"), later)
            .expect("a full bucket again");
    }
}
