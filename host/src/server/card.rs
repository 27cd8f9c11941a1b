//! The public agent card at `/.well-known/agent-card.json` (spec 8).
//!
//! Built on every request, so the commands extension lists the registry generation being
//! served right now. Its URLs are the server's actual bound address; when that address is
//! unspecified (`0.0.0.0`, `[::]`), which no client can connect to, the `Host` the client
//! used instead. Both bindings are served from the same base URL (JSON-RPC at `POST /`,
//! HTTP+JSON under it), JSON-RPC listed first as the preferred interface.
//!
//! The card is public: it needs no token and no `A2A-Version` (a client reads it to learn
//! the version). It carries `Cache-Control` and an `ETag` over its content (spec 8.6.1),
//! and answers a matching `If-None-Match` with 304.

use std::collections::BTreeMap;
use std::net::SocketAddr;

use axum::extract::State;
use axum::http::header::{CACHE_CONTROL, CONTENT_TYPE, ETAG, HOST, IF_NONE_MATCH};
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
}

/// `GET /.well-known/agent-card.json`.
pub(crate) async fn agent_card(State(state): State<AppState>, headers: HeaderMap) -> Response {
    let registry = state.service.registries().current();
    let card = build(&CardContext {
        base_url: base_url(state.scheme, state.bound, headers.get(HOST)),
        bearer: state.auth.requires_token(),
        registry: &registry,
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
    let cache = [
        (CACHE_CONTROL, HeaderValue::from_static(CACHE_CONTROL_VALUE)),
        (ETAG, etag.clone()),
    ];
    if headers.get(IF_NONE_MATCH) == Some(&etag) {
        return (StatusCode::NOT_MODIFIED, cache).into_response();
    }
    let json = [(CONTENT_TYPE, HeaderValue::from_static("application/json"))];
    (StatusCode::OK, cache, json, body).into_response()
}

/// The card for a deployment.
pub(crate) fn build(context: &CardContext<'_>) -> AgentCard {
    let (security_schemes, security_requirements) = security(context.bearer);
    AgentCard {
        name: "tiny-harness".to_owned(),
        description: "A conversational agent whose tasks stay open across turns: each reply \
            parks the task in INPUT_REQUIRED until a participant completes it or cancels it. \
            Harness commands (/status, /model, ...) run in sandboxed WebAssembly plugins."
            .to_owned(),
        supported_interfaces: vec![
            AgentInterface::new(&context.base_url, AgentInterface::JSONRPC),
            AgentInterface::new(&context.base_url, AgentInterface::HTTP_JSON),
        ],
        version: env!("CARGO_PKG_VERSION").to_owned(),
        capabilities: AgentCapabilities {
            streaming: Some(true),
            push_notifications: Some(true),
            extensions: vec![status_extension(), commands_extension(context.registry)],
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
    fn security_follows_tokens() {
        let registry = CommandRegistry::default();
        let open = build(&CardContext {
            base_url: "http://127.0.0.1:1".into(),
            bearer: false,
            registry: &registry,
        });
        assert!(open.security_schemes.is_empty() && open.security_requirements.is_empty());
        let closed = build(&CardContext {
            base_url: "http://127.0.0.1:1".into(),
            bearer: true,
            registry: &registry,
        });
        let json = serde_json::to_value(&closed).expect("json");
        assert_eq!(
            json["securitySchemes"]["bearer"]["httpAuthSecurityScheme"]["scheme"],
            "Bearer"
        );
        assert!(json["securityRequirements"][0]["schemes"]["bearer"].is_object());
    }
}
