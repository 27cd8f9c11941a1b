//! Retrying a provider request: jittered exponential backoff on what is
//! worth retrying ([`ModelError::Retryable`]: connection errors, 408, 429,
//! 5xx), the provider's `Retry-After` honoured, capped in attempts and in
//! total time. Everything else (another 4xx, an exhausted quota, a prompt
//! too long) fails at once: sending it again would get the same answer.
//!
//! The adapters retry only until an answer's first event: once a piece of
//! the answer has been streamed, a failure goes to the agent loop, which
//! must not see the answer silently start over.

use std::future::Future;
use std::time::{Duration, SystemTime};

use tokio::time::Instant;

use crate::domain::ModelError;

/// How often and how long to retry one request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Attempts in all, the first included (1: never retry).
    pub max_attempts: u32,
    /// The wait before the first retry; it doubles after each, with jitter.
    pub initial_backoff: Duration,
    /// The longest wait between two attempts (a `Retry-After` included).
    pub max_backoff: Duration,
    /// The longest time from the first attempt to the start of the last:
    /// no retry is started that would begin later.
    pub budget: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            max_attempts: 4,
            initial_backoff: Duration::from_millis(500),
            max_backoff: Duration::from_secs(30),
            budget: Duration::from_secs(60),
        }
    }
}

impl RetryPolicy {
    /// The wait before retry number `retry` (1 for the first), when the
    /// provider named none: `initial_backoff * 2^(retry-1)`, capped, then
    /// jittered down by up to half ("equal jitter"), so clients that failed
    /// together do not come back together.
    fn backoff(&self, retry: u32) -> Duration {
        let doubled = self
            .initial_backoff
            .saturating_mul(1_u32 << (retry.saturating_sub(1)).min(20));
        let ceiling = doubled.min(self.max_backoff);
        let half = ceiling / 2;
        half + half.mul_f64(fastrand::f64())
    }

    /// The wait before retry number `retry` after `error`: the provider's
    /// `Retry-After` if it sent one, else the backoff.
    fn wait(&self, retry: u32, error: &ModelError) -> Duration {
        match error {
            ModelError::Retryable {
                retry_after: Some(after),
                ..
            } => *after,
            _ => self.backoff(retry),
        }
    }
}

/// How the wait between attempts is spent: on Tokio's clock, or (in tests)
/// recorded and skipped, so a test can check the waits a real exchange over
/// HTTP asked for without sleeping.
#[derive(Clone, Debug, Default)]
pub(crate) enum Pause {
    #[default]
    Sleep,
    #[cfg(test)]
    Record(std::sync::Arc<std::sync::Mutex<Vec<Duration>>>),
}

impl Pause {
    async fn pause(&self, wait: Duration) {
        match self {
            Pause::Sleep => tokio::time::sleep(wait).await,
            #[cfg(test)]
            Pause::Record(waits) => {
                if let Ok(mut waits) = waits.lock() {
                    waits.push(wait);
                }
            }
        }
    }
}

/// Run `attempt` until it succeeds, fails for good, or the policy gives up;
/// the last error says how many attempts were made.
pub(crate) async fn retrying<T, F, Fut>(
    policy: &RetryPolicy,
    pause: &Pause,
    provider: &str,
    mut attempt: F,
) -> Result<T, ModelError>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, ModelError>>,
{
    let started = Instant::now();
    let mut attempts = 0;
    loop {
        attempts += 1;
        let error = match attempt().await {
            Ok(value) => return Ok(value),
            Err(error) if !error.is_retryable() => return Err(error),
            Err(error) => error,
        };
        if attempts >= policy.max_attempts {
            return Err(gave_up(error, attempts, None));
        }
        let wait = policy.wait(attempts, &error);
        if wait > policy.max_backoff || started.elapsed() + wait > policy.budget {
            return Err(gave_up(error, attempts, Some(wait)));
        }
        tracing::warn!(
            provider,
            attempt = attempts,
            wait_ms = u64::try_from(wait.as_millis()).unwrap_or(u64::MAX),
            %error,
            "retrying the model request"
        );
        pause.pause(wait).await;
    }
}

/// `error`, saying the request was given up on and why.
fn gave_up(error: ModelError, attempts: u32, wait: Option<Duration>) -> ModelError {
    let ModelError::Retryable {
        provider,
        message,
        retry_after,
    } = error
    else {
        return error;
    };
    let tries = if attempts == 1 {
        "1 attempt".to_owned()
    } else {
        format!("{attempts} attempts")
    };
    let why = match wait {
        Some(wait) => format!(
            "gave up after {tries}: the next would start after {} s, beyond the retry limits",
            wait.as_secs_f64().ceil()
        ),
        None => format!("gave up after {tries}"),
    };
    ModelError::Retryable {
        provider,
        message: format!("{message} ({why})"),
        retry_after,
    }
}

/// A `Retry-After` header's wait: delay-seconds, or an HTTP date (a date in
/// the past is no wait). Unreadable values are ignored.
pub(crate) fn retry_after(value: &str, now: SystemTime) -> Option<Duration> {
    let value = value.trim();
    if let Ok(seconds) = value.parse::<u64>() {
        return Some(Duration::from_secs(seconds));
    }
    // Some providers send fractions ("0.5"); not in the RFC, but harmless.
    if let Ok(seconds) = value.parse::<f64>() {
        return Duration::try_from_secs_f64(seconds).ok();
    }
    let date = httpdate::parse_http_date(value).ok()?;
    Some(date.duration_since(now).unwrap_or(Duration::ZERO))
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicU32, Ordering};
    use std::sync::{Arc, Mutex};

    use super::*;

    fn unavailable(retry_after: Option<Duration>) -> ModelError {
        ModelError::Retryable {
            provider: "test".into(),
            message: "HTTP 503".into(),
            retry_after,
        }
    }

    fn policy(max_attempts: u32) -> RetryPolicy {
        RetryPolicy {
            max_attempts,
            initial_backoff: Duration::from_millis(100),
            max_backoff: Duration::from_secs(10),
            budget: Duration::from_secs(30),
        }
    }

    /// Run `retrying` over `answers` (one per attempt), recording waits.
    async fn run(
        policy: &RetryPolicy,
        answers: Vec<Result<u32, ModelError>>,
    ) -> (Result<u32, ModelError>, u32, Vec<Duration>) {
        let waits = Arc::new(Mutex::new(Vec::new()));
        let pause = Pause::Record(waits.clone());
        let calls = AtomicU32::new(0);
        let answers = Mutex::new(answers.into_iter());
        let result = retrying(policy, &pause, "test", || {
            calls.fetch_add(1, Ordering::SeqCst);
            let next = answers.lock().expect("answers").next();
            async move { next.expect("no more answers scripted") }
        })
        .await;
        let waits = waits.lock().expect("waits").clone();
        (result, calls.load(Ordering::SeqCst), waits)
    }

    #[test]
    fn backoff_doubles_with_jitter_within_the_cap() {
        let policy = policy(10);
        for _ in 0..100 {
            let first = policy.backoff(1);
            assert!(
                (Duration::from_millis(50)..=Duration::from_millis(100)).contains(&first),
                "{first:?}"
            );
            let third = policy.backoff(3);
            assert!(
                (Duration::from_millis(200)..=Duration::from_millis(400)).contains(&third),
                "{third:?}"
            );
            let late = policy.backoff(40);
            assert!(
                (Duration::from_secs(5)..=Duration::from_secs(10)).contains(&late),
                "{late:?}"
            );
        }
        // Jittered: not every wait is the same.
        let waits: std::collections::BTreeSet<_> = (0..20).map(|_| policy.backoff(4)).collect();
        assert!(waits.len() > 1);
    }

    #[tokio::test]
    async fn retries_until_success_honouring_retry_after() {
        let (result, calls, waits) = run(
            &policy(4),
            vec![Err(unavailable(Some(Duration::from_secs(2)))), Ok(7)],
        )
        .await;
        assert_eq!(result, Ok(7));
        assert_eq!(calls, 2);
        assert_eq!(waits, vec![Duration::from_secs(2)]);
    }

    #[tokio::test]
    async fn gives_up_after_the_attempts_saying_so() {
        let (result, calls, waits) = run(
            &policy(3),
            vec![
                Err(unavailable(None)),
                Err(unavailable(None)),
                Err(unavailable(None)),
            ],
        )
        .await;
        assert_eq!(calls, 3);
        assert_eq!(waits.len(), 2);
        let error = result.expect_err("gave up").to_string();
        assert!(
            error.contains("HTTP 503 (gave up after 3 attempts)"),
            "{error}"
        );
    }

    #[tokio::test]
    async fn a_retry_after_beyond_the_limits_is_not_waited_for() {
        let (result, calls, waits) = run(
            &policy(5),
            vec![Err(unavailable(Some(Duration::from_secs(3600))))],
        )
        .await;
        assert_eq!(calls, 1);
        assert!(waits.is_empty());
        let error = result.expect_err("gave up");
        assert!(error.to_string().contains("3600 s"), "{error}");
        // The provider's wait is kept, for the loop to report.
        assert!(matches!(
            error,
            ModelError::Retryable { retry_after: Some(after), .. } if after == Duration::from_secs(3600)
        ));
    }

    #[tokio::test]
    async fn errors_that_are_not_retryable_fail_at_once() {
        let quota = ModelError::QuotaExhausted {
            provider: "test".into(),
            message: "insufficient_quota".into(),
        };
        let (result, calls, waits) = run(&policy(5), vec![Err(quota.clone())]).await;
        assert_eq!(result, Err(quota));
        assert_eq!(calls, 1);
        assert!(waits.is_empty());
    }

    #[test]
    fn retry_after_reads_seconds_and_http_dates() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000);
        assert_eq!(retry_after("7", now), Some(Duration::from_secs(7)));
        assert_eq!(retry_after(" 0 ", now), Some(Duration::ZERO));
        assert_eq!(retry_after("1.5", now), Some(Duration::from_millis(1500)));
        let later = httpdate::fmt_http_date(now + Duration::from_secs(30));
        assert_eq!(retry_after(&later, now), Some(Duration::from_secs(30)));
        let earlier = httpdate::fmt_http_date(now - Duration::from_secs(30));
        assert_eq!(retry_after(&earlier, now), Some(Duration::ZERO));
        assert_eq!(retry_after("soon", now), None);
        assert_eq!(retry_after("-3", now), None);
    }
}
