//! The public agent card at `/.well-known/agent-card.json` (spec 8).
//!
//! Built on every request, so the commands extension lists the registry generation being
//! served right now. Its URLs are the server's actual bound address; when that address is
//! unspecified (`0.0.0.0`, `[::]`), which no client can connect to, the `Host` the client
//! used instead. Both bindings are served from the same base URL (JSON-RPC at `POST /`,
//! HTTP+JSON under it), JSON-RPC listed first as the preferred interface.
//!
//! The card is public: it needs no token and no `A2A-Version` (a client reads it to learn
//! the version). It carries `Cache-Control`, an `ETag` over its content and a
//! `Last-Modified` (spec 8.6.1): the time this server first served the card as it is now
//! (a plugin reload that changes the commands moves it). A matching `If-None-Match`, or
//! without one an `If-Modified-Since` no earlier than `Last-Modified`, gets 304
//! (RFC 9110 13.2.2: the entity tag wins when both are sent).

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::Mutex;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use axum::extract::State;
use axum::http::header::{
    CACHE_CONTROL, CONTENT_TYPE, ETAG, HOST, IF_MODIFIED_SINCE, IF_NONE_MATCH, LAST_MODIFIED,
};
use axum::http::uri::Authority;
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use sha2::{Digest, Sha256};

use super::AppState;
use super::extensions::{commands_extension, status_extension};
use super::respond::RestError;
use crate::a2a::error::A2aError;
use crate::a2a::types::{
    AgentCapabilities, AgentCard, AgentInterface, AgentSkill, SecurityRequirement, SecurityScheme,
    StringList,
};
use crate::commands::CommandRegistry;
use crate::task::TaskLifecycle;

/// Where the card is served (spec 8.2).
pub const AGENT_CARD_PATH: &str = "/.well-known/agent-card.json";

/// The name of the bearer scheme in `securitySchemes`.
const BEARER_SCHEME: &str = "bearer";

/// How long clients may cache the card. Short, because a plugin reload changes the
/// commands it lists.
const CACHE_CONTROL_VALUE: &str = "public, max-age=60";

/// The media types the agent reads and writes.
const MODES: [&str; 2] = ["text/plain", "application/json"];

/// What the card says about this deployment.
pub(crate) struct CardContext<'a> {
    /// The base URL of both interfaces, e.g. `http://127.0.0.1:8080`.
    pub(crate) base_url: String,
    /// Whether a bearer token is required.
    pub(crate) bearer: bool,
    /// The commands to list.
    pub(crate) registry: &'a CommandRegistry,
    /// The lifecycle of a task whose first message names none.
    pub(crate) default_lifecycle: TaskLifecycle,
    /// The gRPC binding's `host:port`, when it is served.
    pub(crate) grpc: Option<String>,
    /// Whether the task engine delivers push notifications.
    pub(crate) push_notifications: bool,
}

/// `GET /.well-known/agent-card.json`.
pub(crate) async fn agent_card(State(state): State<AppState>, headers: HeaderMap) -> Response {
    let registry = state.service.registries().current();
    let card = build(&CardContext {
        base_url: base_url(state.scheme, state.bound, headers.get(HOST)),
        bearer: state.auth.requires_token(),
        registry: &registry,
        default_lifecycle: state.service.default_lifecycle(),
        push_notifications: true,
        grpc: state
            .grpc
            .map(|bound| grpc_address(bound, headers.get(HOST))),
    });
    let body = match serde_json::to_vec(&card) {
        Ok(body) => body,
        Err(error) => {
            return RestError::from(A2aError::Internal(format!(
                "the agent card could not be serialized: {error}"
            )))
            .into_response();
        }
    };
    let etag = etag(&body);
    let modified = state.card_changes.last_modified(&etag);
    let cache = [
        (CACHE_CONTROL, HeaderValue::from_static(CACHE_CONTROL_VALUE)),
        (ETAG, etag.clone()),
        (LAST_MODIFIED, http_date(modified)),
    ];
    if not_modified(&headers, &etag, modified) {
        return (StatusCode::NOT_MODIFIED, cache).into_response();
    }
    let json = [(CONTENT_TYPE, HeaderValue::from_static("application/json"))];
    (StatusCode::OK, cache, json, body).into_response()
}

/// When the card last changed: the first time each content (by its ETag) was served.
#[derive(Debug)]
pub(crate) struct CardChanges {
    /// The ETag of the card served last, and since when it has been served.
    last: Mutex<Option<(HeaderValue, SystemTime)>>,
}

impl CardChanges {
    pub(crate) fn new() -> Self {
        CardChanges {
            last: Mutex::new(None),
        }
    }

    /// The `Last-Modified` of the card whose ETag is `etag`, in whole seconds (HTTP dates
    /// have no fraction, and a fraction would make `If-Modified-Since` never match).
    fn last_modified(&self, etag: &HeaderValue) -> SystemTime {
        // A poisoned lock only means another request panicked mid-update; the value is
        // still a valid time.
        let mut last = self
            .last
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        match &*last {
            Some((served, since)) if served == etag => *since,
            _ => {
                let now = whole_seconds(SystemTime::now());
                *last = Some((etag.clone(), now));
                now
            }
        }
    }
}

/// Whether a conditional request already has this card.
fn not_modified(headers: &HeaderMap, etag: &HeaderValue, modified: SystemTime) -> bool {
    if let Some(tags) = headers.get(IF_NONE_MATCH) {
        return tags == etag;
    }
    headers
        .get(IF_MODIFIED_SINCE)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| httpdate::parse_http_date(value).ok())
        .is_some_and(|since| modified <= since)
}

fn whole_seconds(time: SystemTime) -> SystemTime {
    let seconds = time
        .duration_since(UNIX_EPOCH)
        .map(|elapsed| elapsed.as_secs())
        .unwrap_or(0);
    UNIX_EPOCH + Duration::from_secs(seconds)
}

fn http_date(time: SystemTime) -> HeaderValue {
    // An HTTP date is always a valid header value.
    HeaderValue::from_str(&httpdate::fmt_http_date(time))
        .unwrap_or_else(|_| HeaderValue::from_static("Thu, 01 Jan 1970 00:00:00 GMT"))
}

/// The card for a deployment.
pub(crate) fn build(context: &CardContext<'_>) -> AgentCard {
    let (security_schemes, security_requirements) = security(context.bearer);
    AgentCard {
        name: "tiny-harness".to_owned(),
        description: "A conversational agent whose tasks stay open across turns: each reply \
            parks the task in INPUT_REQUIRED until a participant completes it or cancels it. \
            A task whose first message sets metadata.lifecycle to \"task\" completes on its \
            own instead (see the status extension). Harness commands (/status, /model, ...) \
            run in sandboxed WebAssembly plugins."
            .to_owned(),
        supported_interfaces: interfaces(context),
        version: env!("CARGO_PKG_VERSION").to_owned(),
        capabilities: AgentCapabilities {
            streaming: Some(true),
            push_notifications: Some(context.push_notifications),
            extensions: vec![
                status_extension(context.default_lifecycle),
                commands_extension(context.registry),
            ],
            extended_agent_card: Some(false),
        },
        security_schemes,
        security_requirements,
        default_input_modes: MODES.map(str::to_owned).to_vec(),
        default_output_modes: MODES.map(str::to_owned).to_vec(),
        skills: vec![conversation_skill()],
        ..AgentCard::default()
    }
}

/// JSON-RPC first (preferred), HTTP+JSON, and gRPC when it is served (its `url` a bare
/// `host:port`, as gRPC clients and the conformance kit expect).
fn interfaces(context: &CardContext<'_>) -> Vec<AgentInterface> {
    let mut interfaces = vec![
        AgentInterface::new(&context.base_url, AgentInterface::JSONRPC),
        AgentInterface::new(&context.base_url, AgentInterface::HTTP_JSON),
    ];
    if let Some(grpc) = &context.grpc {
        interfaces.push(AgentInterface::new(grpc, AgentInterface::GRPC));
    }
    interfaces
}

/// The gRPC listener's `host:port`: its bound address, or on an unspecified address
/// the host the client used with the gRPC port.
fn grpc_address(bound: SocketAddr, host: Option<&HeaderValue>) -> String {
    let from_host = || {
        let authority: Authority = host?.to_str().ok()?.parse().ok()?;
        (!authority.as_str().contains('@')).then(|| authority.host().to_owned())
    };
    match bound.ip().is_unspecified().then(from_host).flatten() {
        Some(host) => format!("{host}:{}", bound.port()),
        None => bound.to_string(),
    }
}

/// Spec 3.3.4: with `extendedAgentCard: false`, `GetExtendedAgentCard` MUST answer
/// UnsupportedOperation.
pub(crate) fn extended_card_unavailable() -> A2aError {
    A2aError::UnsupportedOperation(
        "this agent has no extended agent card (capabilities.extendedAgentCard is false); \
         the public card at /.well-known/agent-card.json is the whole card"
            .to_owned(),
    )
}

fn conversation_skill() -> AgentSkill {
    AgentSkill {
        id: "conversation".to_owned(),
        name: "Conversation".to_owned(),
        description: "Talk with the agent in one task across many turns. Each reply parks the \
            task in TASK_STATE_INPUT_REQUIRED; send the next message with the same taskId. A \
            message that is exactly `/<command> <arguments>` runs a harness command (see the \
            commands extension). Complete the conversation with a message whose one data part \
            is {\"kind\": \"control\", \"action\": \"complete\"}; cancel it with CancelTask."
            .to_owned(),
        tags: vec![
            "conversation".to_owned(),
            "commands".to_owned(),
            "multi-turn".to_owned(),
        ],
        examples: vec!["Hello!".to_owned(), "/status".to_owned()],
        ..AgentSkill::default()
    }
}

fn security(bearer: bool) -> (BTreeMap<String, SecurityScheme>, Vec<SecurityRequirement>) {
    if !bearer {
        return (BTreeMap::new(), Vec::new());
    }
    let schemes = BTreeMap::from([(BEARER_SCHEME.to_owned(), SecurityScheme::bearer(None))]);
    let requirement = SecurityRequirement {
        schemes: BTreeMap::from([(BEARER_SCHEME.to_owned(), StringList::default())]),
    };
    (schemes, vec![requirement])
}

/// `<scheme>://<bound address>`, or `<scheme>://<Host>` when bound to an unspecified
/// address.
fn base_url(scheme: &str, bound: SocketAddr, host: Option<&HeaderValue>) -> String {
    let from_host = || {
        let authority: Authority = host?.to_str().ok()?.parse().ok()?;
        // A userinfo part has no place in a Host header; do not repeat it.
        (!authority.as_str().contains('@')).then(|| authority.to_string())
    };
    match bound.ip().is_unspecified().then(from_host).flatten() {
        Some(authority) => format!("{scheme}://{authority}"),
        None => format!("{scheme}://{bound}"),
    }
}

/// A strong ETag over the card's bytes.
fn etag(body: &[u8]) -> HeaderValue {
    let digest = Sha256::digest(body);
    let hex: String = digest[..16].iter().map(|b| format!("{b:02x}")).collect();
    // Hex digits and quotes are always a valid header value.
    HeaderValue::from_str(&format!("\"{hex}\""))
        .unwrap_or_else(|_| HeaderValue::from_static("\"0\""))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn addr(text: &str) -> SocketAddr {
        text.parse().expect("address")
    }

    #[test]
    fn urls_use_the_bound_address() {
        assert_eq!(
            base_url("http", addr("127.0.0.1:4321"), None),
            "http://127.0.0.1:4321"
        );
        assert_eq!(base_url("http", addr("[::1]:80"), None), "http://[::1]:80");
        // A Host header does not override a specific address.
        let host = HeaderValue::from_static("evil.example:1");
        assert_eq!(
            base_url("http", addr("127.0.0.1:4321"), Some(&host)),
            "http://127.0.0.1:4321"
        );
    }

    #[test]
    fn an_unspecified_address_uses_the_host_header() {
        let host = HeaderValue::from_static("agent.example:8080");
        assert_eq!(
            base_url("http", addr("0.0.0.0:8080"), Some(&host)),
            "http://agent.example:8080"
        );
        assert_eq!(
            base_url("http", addr("0.0.0.0:8080"), None),
            "http://0.0.0.0:8080"
        );
        let bogus = HeaderValue::from_static("a b");
        assert_eq!(
            base_url("http", addr("0.0.0.0:8080"), Some(&bogus)),
            "http://0.0.0.0:8080"
        );
        let userinfo = HeaderValue::from_static("user@agent.example");
        assert_eq!(
            base_url("http", addr("[::]:8080"), Some(&userinfo)),
            "http://[::]:8080"
        );
    }

    #[test]
    fn conditional_requests_by_tag_or_date() {
        let etag = HeaderValue::from_static("\"abc\"");
        let modified = UNIX_EPOCH + Duration::from_secs(1_700_000_000);
        let with = |name, value: String| {
            let mut headers = HeaderMap::new();
            headers.insert(name, HeaderValue::from_str(&value).expect("header"));
            headers
        };
        let date = |secs: u64| httpdate::fmt_http_date(UNIX_EPOCH + Duration::from_secs(secs));
        assert!(!not_modified(&HeaderMap::new(), &etag, modified));
        assert!(not_modified(
            &with(IF_NONE_MATCH, "\"abc\"".into()),
            &etag,
            modified
        ));
        assert!(!not_modified(
            &with(IF_NONE_MATCH, "\"old\"".into()),
            &etag,
            modified
        ));
        assert!(not_modified(
            &with(IF_MODIFIED_SINCE, date(1_700_000_000)),
            &etag,
            modified
        ));
        assert!(not_modified(
            &with(IF_MODIFIED_SINCE, date(1_800_000_000)),
            &etag,
            modified
        ));
        assert!(!not_modified(
            &with(IF_MODIFIED_SINCE, date(1_600_000_000)),
            &etag,
            modified
        ));
        assert!(!not_modified(
            &with(IF_MODIFIED_SINCE, "yesterday".into()),
            &etag,
            modified
        ));
        // The entity tag wins over the date.
        let mut both = with(IF_NONE_MATCH, "\"old\"".into());
        both.insert(
            IF_MODIFIED_SINCE,
            HeaderValue::from_str(&date(1_800_000_000)).expect("date"),
        );
        assert!(!not_modified(&both, &etag, modified));
    }

    #[test]
    fn the_last_modified_time_moves_only_when_the_card_changes() {
        let changes = CardChanges::new();
        let first = HeaderValue::from_static("\"1\"");
        let since = changes.last_modified(&first);
        assert_eq!(since, whole_seconds(since));
        assert_eq!(changes.last_modified(&first), since);
        let later = changes.last_modified(&HeaderValue::from_static("\"2\""));
        assert!(later >= since);
    }

    #[test]
    fn the_grpc_url_is_host_and_port() {
        assert_eq!(
            grpc_address(addr("127.0.0.1:50051"), None),
            "127.0.0.1:50051"
        );
        assert_eq!(grpc_address(addr("[::1]:9"), None), "[::1]:9");
        let host = HeaderValue::from_static("agent.example:8080");
        assert_eq!(
            grpc_address(addr("0.0.0.0:50051"), Some(&host)),
            "agent.example:50051"
        );
        let registry = CommandRegistry::default();
        let card = build(&CardContext {
            base_url: "http://127.0.0.1:1".into(),
            bearer: false,
            registry: &registry,
            default_lifecycle: TaskLifecycle::Conversation,
            grpc: Some("127.0.0.1:2".into()),
            push_notifications: true,
        });
        let json = serde_json::to_value(&card).expect("json");
        assert_eq!(json["supportedInterfaces"][2]["url"], "127.0.0.1:2");
        assert_eq!(json["supportedInterfaces"][2]["protocolBinding"], "GRPC");
    }

    #[test]
    fn push_notifications_are_advertised_only_where_delivered() {
        let registry = CommandRegistry::default();
        for delivered in [true, false] {
            let card = build(&CardContext {
                base_url: "http://127.0.0.1:1".into(),
                bearer: false,
                registry: &registry,
                default_lifecycle: TaskLifecycle::Conversation,
                grpc: None,
                push_notifications: delivered,
            });
            assert_eq!(card.capabilities.push_notifications, Some(delivered));
        }
    }

    #[test]
    fn security_follows_tokens() {
        let registry = CommandRegistry::default();
        let open = build(&CardContext {
            base_url: "http://127.0.0.1:1".into(),
            bearer: false,
            registry: &registry,
            default_lifecycle: TaskLifecycle::Conversation,
            grpc: None,
            push_notifications: true,
        });
        assert!(open.security_schemes.is_empty() && open.security_requirements.is_empty());
        let closed = build(&CardContext {
            base_url: "http://127.0.0.1:1".into(),
            bearer: true,
            registry: &registry,
            default_lifecycle: TaskLifecycle::Conversation,
            grpc: None,
            push_notifications: true,
        });
        let json = serde_json::to_value(&closed).expect("json");
        assert_eq!(
            json["securitySchemes"]["bearer"]["httpAuthSecurityScheme"]["scheme"],
            "Bearer"
        );
        assert!(json["securityRequirements"][0]["schemes"]["bearer"].is_object());
    }
}
