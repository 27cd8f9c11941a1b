//! One event to one webhook: an HTTP POST of the `StreamResponse` JSON
//! (A2A 4.3.3), retried with exponential backoff.
//!
//! Headers: `Content-Type: application/a2a+json`; `Authorization:
//! <scheme> <credentials>` from the configuration's `authentication`; and
//! the configuration's `token`, echoed in `X-A2A-Notification-Token` so the
//! receiver can check where a notification came from (the header the
//! official SDKs use); and `X-Tiny-Harness-Event-Seq`, the event's number in
//! its task's sequence, so a receiver can drop a repeat (delivery is at least
//! once) by `(taskId, seq)`.
//!
//! A 2xx is a delivery. Connection failures, timeouts, 408, 429 and 5xx are
//! retried, waiting `initial_backoff`, then twice as long each time, up to
//! `max_attempts` in all; any other answer (a 4xx: the receiver refuses this
//! notification) is final. Either way the event is then done with for this
//! webhook and its next one goes on, in order. Across restarts the stored
//! delivery cursor (see `push`) makes delivery at least once.

use std::time::Duration;

use reqwest::StatusCode;
use reqwest::header::{AUTHORIZATION, CONTENT_TYPE};

use super::PushSettings;
use super::address;
use crate::a2a::types::TaskPushNotificationConfig;
use crate::outbound;

/// The header carrying a configuration's `token`.
pub const TOKEN_HEADER: &str = "X-A2A-Notification-Token";

/// The header carrying the event's number in its task's sequence.
pub const SEQ_HEADER: &str = "X-Tiny-Harness-Event-Seq";

/// The longest wait between two attempts.
const MAX_BACKOFF: Duration = Duration::from_secs(60);

/// Why a delivery gave up.
#[derive(Debug)]
pub(crate) struct Undelivered {
    pub(crate) attempts: u32,
    pub(crate) last_error: String,
}

/// POST `body`, event number `seq` of its task, to `config`'s webhook until
/// it is accepted or the attempts run out; returns how many attempts it took.
/// A webhook whose address is no longer allowed gets no attempt at all.
pub(crate) async fn deliver(
    client: &reqwest::Client,
    settings: &PushSettings,
    config: &TaskPushNotificationConfig,
    seq: u64,
    body: &[u8],
) -> Result<u32, Undelivered> {
    if let Err(refused) = address::check_literal_at_delivery(&config.url, settings.allow_private) {
        return Err(Undelivered {
            attempts: 0,
            last_error: refused,
        });
    }
    let mut backoff = settings.initial_backoff;
    let mut attempt = 1;
    loop {
        let last_error = match post(client, config, seq, body).await {
            Ok(()) => return Ok(attempt),
            Err(Failure::Final(error)) => {
                return Err(Undelivered {
                    attempts: attempt,
                    last_error: error,
                });
            }
            Err(Failure::Retry(error)) => error,
        };
        if attempt >= settings.max_attempts {
            return Err(Undelivered {
                attempts: attempt,
                last_error,
            });
        }
        tokio::time::sleep(backoff).await;
        backoff = (backoff * 2).min(MAX_BACKOFF);
        attempt += 1;
    }
}

enum Failure {
    Retry(String),
    Final(String),
}

async fn post(
    client: &reqwest::Client,
    config: &TaskPushNotificationConfig,
    seq: u64,
    body: &[u8],
) -> Result<(), Failure> {
    let mut request = client
        .post(&config.url)
        .header(CONTENT_TYPE, "application/a2a+json")
        .header(SEQ_HEADER, seq)
        .body(body.to_vec());
    if let Some(authentication) = &config.authentication {
        let value = match &authentication.credentials {
            Some(credentials) => format!("{} {credentials}", authentication.scheme),
            None => authentication.scheme.clone(),
        };
        request = request.header(AUTHORIZATION, value);
    }
    if let Some(token) = &config.token {
        request = request.header(TOKEN_HEADER, token);
    }
    let response = request
        .send()
        .await
        .map_err(|error| Failure::Retry(outbound::describe(error)))?;
    let status = response.status();
    if status.is_success() {
        Ok(())
    } else if status.is_server_error()
        || status == StatusCode::REQUEST_TIMEOUT
        || status == StatusCode::TOO_MANY_REQUESTS
    {
        Err(Failure::Retry(format!("the webhook answered {status}")))
    } else {
        Err(Failure::Final(format!("the webhook answered {status}")))
    }
}
