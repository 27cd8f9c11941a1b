//! The A2A HTTP server: both standard HTTP bindings over one [`TaskService`], SSE streams,
//! and the public agent card.
//!
//! | Route                                                  | Operation                          |
//! | :----------------------------------------------------- | :--------------------------------- |
//! | `GET  /.well-known/agent-card.json`                    | the agent card (public)            |
//! | `POST /`                                               | JSON-RPC 2.0, every method         |
//! | `POST /message:send`                                   | SendMessage                        |
//! | `POST /message:stream`                                 | SendStreamingMessage (SSE)         |
//! | `GET  /tasks`                                          | ListTasks (query parameters)       |
//! | `GET  /tasks/{id}`                                     | GetTask (`?historyLength=`)        |
//! | `POST /tasks/{id}:cancel`                              | CancelTask                         |
//! | `GET`, `POST /tasks/{id}:subscribe`                    | SubscribeToTask (SSE)              |
//! | `POST`, `GET /tasks/{id}/pushNotificationConfigs`      | Create / List push configs (`push`)|
//! | `GET`, `DELETE /tasks/{id}/pushNotificationConfigs/{c}`| Get / Delete a push config (`push`)|
//! | `GET  /extendedAgentCard`                              | UnsupportedOperation               |
//! | `POST /tasks/{id}/commands:complete`, `/commands:complete` | command completion (`complete`) |
//! | `GET  /ui`, `/ui/{file}`                               | the web page (`ui`)                |
//! | anything else                                          | 404 in the HTTP+JSON error shape   |
//!
//! Every A2A request goes through the same steps, in this order, and the first failure is
//! the answer: authenticate (`auth`), check `A2A-Version` (header, else query parameter),
//! read the body (JSON content type, size limit: `body`), decode and validate the
//! parameters, resolve the caller, take a rate-limit token (message sends only:
//! `rate_limit`), call the [`TaskService`]. Errors are rendered per binding by `respond`;
//! both bindings report the same [`A2aError`].
//!
//! Decisions where the specification leaves room (details in each module):
//!
//! * JSON-RPC errors travel with HTTP 200, the JSON-RPC-over-HTTP convention; the one
//!   exception is authentication (HTTP 401), which happens before there is a JSON-RPC
//!   request to answer.
//! * A JSON-RPC request from a client that does not speak 1.0 gets VersionNotSupported
//!   (-32009) even when its method is unknown: a 0.3 client calling `message/send` learns
//!   what is wrong, not just that the method is missing.
//! * `GetExtendedAgentCard` answers UnsupportedOperation (-32004): the card says
//!   `extendedAgentCard: false`, and spec 3.3.4 requires exactly that error then
//!   (ExtendedAgentCardNotConfigured is for agents that declare support).
//! * Push notifications are on (`capabilities.pushNotifications: true`): configurations
//!   belong to the participant who created them (they hold that participant's webhook
//!   credentials), so Get and List show a caller only their own (an admin, all), and
//!   webhooks on private or loopback addresses are refused unless the operator allows them.

mod auth;
mod body;
mod card;
mod complete;
mod extensions;
mod jsonrpc;
mod push;
mod rate_limit;
mod respond;
mod rest;
mod sse;
#[cfg(test)]
mod tests;
pub mod tls;
mod ui;

use std::collections::BTreeMap;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::routing::get;

use crate::a2a::error::A2aError;
use crate::a2a::types::SendMessageRequest;
use crate::config::Config;
use crate::task::{Caller, TaskService};

pub use auth::{DEFAULT_PARTICIPANT, PARTICIPANT_HEADER, PARTICIPANT_METADATA_KEY};
pub use card::AGENT_CARD_PATH;
pub use complete::{COMPLETION_PATH, COMPLETION_TASK_PATH, MAX_COMPLETION_TEXT};
pub use extensions::{
    COMMANDS_EXTENSION_URI, STATUS_EXTENSION_URI, SUB_STATE_KEY, SUB_STATE_VALUES,
};
pub use ui::UI_PATH;

use auth::Authenticator;
use rate_limit::RateLimiter;

/// How often an idle SSE stream sends a keep-alive comment by default, so proxies and
/// clients do not time out during a long turn.
pub const DEFAULT_KEEP_ALIVE: Duration = Duration::from_secs(15);

/// How long a shutdown waits for open requests and streams before closing them.
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(10);

/// What the server needs besides the task service.
#[derive(Clone, Debug)]
pub struct ServerSettings {
    /// The address the listener is bound to; the agent card's URLs point here.
    pub bound: SocketAddr,
    /// Whether the listener speaks TLS (`[tls] cert_file`): the card's URLs are https.
    pub tls: bool,
    /// Bearer token -> participant id. Empty: callers are self-asserted (loopback only).
    pub tokens: BTreeMap<String, String>,
    /// The largest request body accepted, in bytes.
    pub max_body_bytes: usize,
    /// How long a connection has to send a request's headers.
    pub header_read_timeout: Duration,
    /// Message sends a participant may make in a burst.
    pub rate_limit_burst: u32,
    /// Message sends per second a participant regains.
    pub rate_limit_per_second: f64,
    /// Completion requests a participant may make in a burst.
    pub completion_burst: u32,
    /// Completion requests per second a participant regains.
    pub completion_per_second: f64,
    /// The SSE keep-alive interval.
    pub keep_alive: Duration,
}

impl ServerSettings {
    /// The settings for `config`, served on `bound` (the listener's actual address, so
    /// port 0 is resolved).
    pub fn new(config: &Config, bound: SocketAddr) -> Self {
        ServerSettings {
            bound,
            tls: config.tls.serves_https(),
            tokens: config.auth.tokens.clone(),
            // A limit beyond the address space is no limit at all.
            max_body_bytes: usize::try_from(config.limits.max_body_bytes).unwrap_or(usize::MAX),
            header_read_timeout: Duration::from_secs(config.limits.header_read_timeout_secs),
            rate_limit_burst: config.rate_limit.per_participant_burst,
            rate_limit_per_second: config.rate_limit.per_participant_per_second,
            completion_burst: config.completion.per_participant_burst,
            completion_per_second: config.completion.per_participant_per_second,
            keep_alive: DEFAULT_KEEP_ALIVE,
        }
    }
}

/// What every handler shares. Cheap to clone.
#[derive(Clone)]
pub(crate) struct AppState {
    service: TaskService,
    auth: Arc<Authenticator>,
    limiter: Arc<RateLimiter>,
    /// Command completion requests, apart from sends (`complete`).
    completion_limiter: Arc<RateLimiter>,
    bound: SocketAddr,
    /// `http` or `https`.
    scheme: &'static str,
    max_body_bytes: usize,
    keep_alive: Duration,
}

impl AppState {
    fn new(service: TaskService, settings: ServerSettings) -> Self {
        AppState {
            service,
            auth: Arc::new(Authenticator::new(&settings.tokens)),
            limiter: Arc::new(RateLimiter::new(
                settings.rate_limit_burst,
                settings.rate_limit_per_second,
            )),
            completion_limiter: Arc::new(RateLimiter::new(
                settings.completion_burst,
                settings.completion_per_second,
            )),
            bound: settings.bound,
            scheme: if settings.tls { "https" } else { "http" },
            max_body_bytes: settings.max_body_bytes,
            keep_alive: settings.keep_alive,
        }
    }

    /// Admits a message send: resolves who sends it and takes one of their rate-limit
    /// tokens. Runs after validation, so a malformed request costs nothing, and before the
    /// service, so a refused send is not processed at all.
    fn admit_send(
        &self,
        identity: &auth::Identity,
        request: &SendMessageRequest,
    ) -> Result<Caller, A2aError> {
        let caller = identity.caller(Some(&request.message))?;
        self.limiter.check(&caller.id)?;
        Ok(caller)
    }
}

/// The whole HTTP application: the card, the JSON-RPC endpoint, the HTTP+JSON routes.
pub fn app(service: TaskService, settings: ServerSettings) -> Router {
    let state = AppState::new(service, settings);
    let protocol = jsonrpc::routes()
        .merge(rest::routes())
        .merge(complete::routes())
        .layer(axum::middleware::from_fn(extensions::echo_activated))
        // Read by the body extractor: larger bodies are refused, not buffered.
        .layer(DefaultBodyLimit::max(state.max_body_bytes));
    Router::new()
        .route(AGENT_CARD_PATH, get(card::agent_card))
        .merge(ui::routes())
        .merge(protocol)
        .fallback(rest::not_found)
        .with_state(state)
}

/// Serves `app` on `listener` (HTTP/1.1) until `shutdown` resolves, then stops accepting
/// connections and gives open requests and streams [`SHUTDOWN_GRACE`] to finish before
/// closing them.
///
/// A connection has `header_read_timeout` to send a request's headers (the first request
/// and each next one on a kept-alive connection), so clients that trickle bytes or sit
/// idle cannot pin connections forever. `axum::serve` sets no timer, which leaves hyper's
/// timeout off; hence this loop over hyper directly.
pub async fn serve<L>(
    mut listener: L,
    app: Router,
    header_read_timeout: Duration,
    shutdown: impl Future<Output = ()>,
) -> std::io::Result<()>
where
    L: axum::serve::Listener,
{
    use hyper_util::rt::{TokioIo, TokioTimer};
    use hyper_util::server::graceful::GracefulShutdown;
    use hyper_util::service::TowerToHyperService;

    let mut http = hyper::server::conn::http1::Builder::new();
    http.timer(TokioTimer::new())
        .header_read_timeout(header_read_timeout);
    let connections = GracefulShutdown::new();
    let mut shutdown = std::pin::pin!(shutdown);
    loop {
        let (io, _peer) = tokio::select! {
            connection = listener.accept() => connection,
            () = &mut shutdown => break,
        };
        let service = TowerToHyperService::new(app.clone());
        let connection = http.serve_connection(TokioIo::new(io), service);
        let connection = connections.watch(connection);
        tokio::spawn(async move {
            if let Err(error) = connection.await {
                tracing::debug!(%error, "connection ended with an error");
            }
        });
    }
    drop(listener);
    tracing::info!("shutting down");
    if tokio::time::timeout(SHUTDOWN_GRACE, connections.shutdown())
        .await
        .is_err()
    {
        tracing::warn!(
            "open requests did not finish within {} s; closing them",
            SHUTDOWN_GRACE.as_secs()
        );
    }
    Ok(())
}
