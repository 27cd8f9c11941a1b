//! The A2A server: the two HTTP bindings over one [`TaskService`], SSE streams, the
//! public agent card, and (on a listener of its own, [`grpc`]) the gRPC binding.
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
//! Every request, the card included, first passes the `Host` and `Origin` checks
//! (`origin`: no DNS rebinding, no cross-site requests). Every A2A request then goes
//! through the same steps, in this order, and the first failure is the answer:
//! authenticate (`auth`), check `A2A-Version` (header, else query parameter), read the body
//! (JSON content type, size limit: `body`), decode and validate the parameters, check a
//! message against its budgets (parts, JSON nesting and values: `limits`), resolve the
//! caller, take a rate-limit token (message sends only: `rate_limit`), call the
//! [`TaskService`]. Errors are rendered per binding by `respond`; both bindings report the
//! same [`A2aError`].
//!
//! Connections are accepted by [`serve`] under a cap (`connections`): a flood of idle
//! sockets displaces the longest idle, never the clients being served.
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
mod connections;
mod extensions;
pub mod grpc;
mod jsonrpc;
mod limits;
mod origin;
mod push;
mod rate_limit;
mod respond;
mod rest;
mod serve;
mod sse;
#[cfg(test)]
mod tests;
pub mod tls;
mod ui;

use std::collections::BTreeMap;
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
pub use complete::{COMPLETION_PATH, COMPLETION_TASK_PATH, CompletionLimits};
pub use extensions::{
    COMMANDS_EXTENSION_URI, STATUS_EXTENSION_URI, SUB_STATE_KEY, SUB_STATE_VALUES,
};
pub use limits::MessageLimits;
pub use rate_limit::{Rate, RateLimits};
pub use serve::{ConnectionLimits, serve};
pub use ui::UI_PATH;

use auth::Authenticator;
use body::BodyLimits;
use origin::Origins;
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
    /// The configured admins: a self-asserted id may never claim one of them.
    pub admins: Vec<String>,
    /// `Host` names besides loopback and the bound address (`[http] public_names`).
    pub public_names: Vec<String>,
    /// Browser origins besides the server's own (`[http] allowed_origins`).
    pub allowed_origins: Vec<String>,
    /// The largest request body accepted, in bytes.
    pub max_body_bytes: usize,
    /// How long a request body may take to arrive.
    pub body_read_timeout: Duration,
    /// The budgets of one message.
    pub message_limits: MessageLimits,
    /// Message sends per participant and, for self-asserted callers, per address.
    pub rate_limits: RateLimits,
    /// Command completion requests: their own buckets, and the longest text.
    pub completion: CompletionLimits,
    /// Connections, header and handshake timeouts (for [`serve`]).
    pub connection_limits: ConnectionLimits,
    /// The SSE keep-alive interval.
    pub keep_alive: Duration,
    /// The address the gRPC listener is bound to, when the gRPC binding is served; the
    /// card lists it.
    pub grpc: Option<SocketAddr>,
}

impl ServerSettings {
    /// The settings for `config`, served on `bound` (the listener's actual address, so
    /// port 0 is resolved).
    pub fn new(config: &Config, bound: SocketAddr) -> Self {
        let limits = &config.limits;
        let rate = &config.rate_limit;
        // A limit beyond the address space is no limit at all.
        let size = |value: u64| usize::try_from(value).unwrap_or(usize::MAX);
        ServerSettings {
            bound,
            tls: config.tls.serves_https(),
            tokens: config.auth.tokens.clone(),
            admins: config.admins.clone(),
            public_names: config.http.public_names.clone(),
            allowed_origins: config.http.allowed_origins.clone(),
            max_body_bytes: size(limits.max_body_bytes),
            body_read_timeout: Duration::from_secs(limits.body_read_timeout_secs),
            message_limits: MessageLimits {
                max_parts: size(limits.max_parts_per_message.into()),
                max_json_depth: size(limits.max_json_depth.into()),
                max_json_values: size(limits.max_json_values_per_message.into()),
            },
            rate_limits: RateLimits {
                per_participant: Rate {
                    burst: rate.per_participant_burst,
                    per_second: rate.per_participant_per_second,
                },
                per_address: Rate {
                    burst: rate.per_address_burst,
                    per_second: rate.per_address_per_second,
                },
                max_buckets: size(rate.max_buckets.into()),
            },
            completion: {
                let completion = Rate {
                    burst: config.completion.per_participant_burst,
                    per_second: config.completion.per_participant_per_second,
                };
                CompletionLimits {
                    rate: RateLimits {
                        per_participant: completion,
                        per_address: completion,
                        max_buckets: size(rate.max_buckets.into()),
                    },
                    max_text_bytes: size(config.completion.max_text_bytes.into()),
                }
            },
            connection_limits: ConnectionLimits {
                max_connections: size(limits.max_connections.into()),
                header_read_timeout: Duration::from_secs(limits.header_read_timeout_secs),
                tls_handshake_timeout: Duration::from_secs(limits.tls_handshake_timeout_secs),
            },
            keep_alive: DEFAULT_KEEP_ALIVE,
            grpc: None,
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
    completion: CompletionLimits,
    message_limits: MessageLimits,
    bound: SocketAddr,
    /// `http` or `https`.
    scheme: &'static str,
    body: BodyLimits,
    keep_alive: Duration,
    /// When the agent card last changed (its `Last-Modified`).
    card_changes: Arc<card::CardChanges>,
    /// Where the gRPC binding is served, if it is.
    grpc: Option<SocketAddr>,
}

impl AppState {
    fn new(service: TaskService, settings: &ServerSettings) -> Self {
        let limiter = Arc::new(RateLimiter::new(settings.rate_limits));
        let completion_limiter = Arc::new(RateLimiter::new(settings.completion.rate));
        RateLimiter::sweep(&limiter);
        RateLimiter::sweep(&completion_limiter);
        AppState {
            service,
            auth: Arc::new(Authenticator::new(&settings.tokens, &settings.admins)),
            limiter,
            completion_limiter,
            completion: settings.completion,
            message_limits: settings.message_limits,
            bound: settings.bound,
            scheme: if settings.tls { "https" } else { "http" },
            body: BodyLimits {
                max_bytes: settings.max_body_bytes,
                read_timeout: settings.body_read_timeout,
            },
            keep_alive: settings.keep_alive,
            card_changes: Arc::new(card::CardChanges::new()),
            grpc: settings.grpc,
        }
    }

    /// Admits a message send: checks it against the message budgets, resolves who sends it
    /// and takes one of their rate-limit tokens. Runs after validation, so a malformed
    /// request costs nothing, and before the service, so a refused send is not processed
    /// at all.
    fn admit_send(
        &self,
        identity: &auth::Identity,
        request: &SendMessageRequest,
    ) -> Result<Caller, A2aError> {
        self.message_limits.check(request)?;
        let caller = identity.caller(Some(&request.message))?;
        self.limiter.check(identity.sender(&caller))?;
        Ok(caller)
    }
}

/// The whole HTTP application: the card, the JSON-RPC endpoint, the HTTP+JSON routes,
/// behind the `Host` and `Origin` checks.
pub fn app(service: TaskService, settings: ServerSettings) -> Router {
    bindings(service, settings).0
}

/// The HTTP application and the gRPC binding, sharing one authenticator and one rate
/// limiter, so a caller's sends count once whatever binding they use. Serve the gRPC
/// side with [`grpc::serve`] on the listener `settings.grpc` names.
pub fn bindings(service: TaskService, settings: ServerSettings) -> (Router, grpc::GrpcBinding) {
    let origins = Arc::new(Origins::new(
        settings.bound,
        &settings.public_names,
        &settings.allowed_origins,
    ));
    let state = AppState::new(service, &settings);
    let binding = grpc::GrpcBinding {
        service: grpc::GrpcService {
            state: state.clone(),
        },
    };
    (http_app(state, origins), binding)
}

fn http_app(state: AppState, origins: Arc<Origins>) -> Router {
    let protocol = jsonrpc::routes()
        .merge(rest::routes())
        .merge(complete::routes())
        .layer(axum::middleware::from_fn(extensions::echo_activated))
        // Read by the body extractor: larger bodies are refused, not buffered.
        .layer(DefaultBodyLimit::max(state.body.max_bytes));
    Router::new()
        .route(AGENT_CARD_PATH, get(card::agent_card))
        .merge(ui::routes())
        .merge(protocol)
        .fallback(rest::not_found)
        .with_state(state)
        // Last, so it wraps every route (any added above included) and the fallback.
        .layer(axum::middleware::from_fn_with_state(origins, origin::guard))
}
