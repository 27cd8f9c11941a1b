//! The harness as an A2A client of one remote agent: its card, a streamed
//! send (JSON-RPC `SendStreamingMessage`, SSE), plain calls (`SendMessage`,
//! `CancelTask`). Every request's URL is checked (`address`), redirects are
//! never followed, and every body read is bounded by `max_event_bytes`.

use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use eventsource_stream::Eventsource;
use futures_core::Stream;
use futures_util::StreamExt as _;
use reqwest::Url;
use reqwest::header::{ACCEPT, AUTHORIZATION, CONTENT_TYPE, HeaderValue};
use serde_json::{Value, json};

use super::address::{self, AgentResolver};
use super::settings::DelegateSettings;
use crate::a2a::types::{AgentCard, AgentInterface, StreamResponse};
use crate::outbound::{self, ExtraRoots};
use crate::secret::Secret;

/// The events of one stream, until the agent closes it.
pub(crate) type Events = Pin<Box<dyn Stream<Item = Result<StreamResponse, String>> + Send>>;

/// One remote agent's client.
pub(crate) struct RemoteAgent {
    pub(crate) name: String,
    base: Url,
    http: reqwest::Client,
    token: Option<Secret>,
    allow_private: bool,
    max_event_bytes: usize,
}

/// The A2A version this client speaks.
const VERSION: &str = "1.0";

impl RemoteAgent {
    pub(crate) fn new(settings: &DelegateSettings, roots: &ExtraRoots) -> Result<Self, String> {
        let http = outbound::client_builder(roots)
            .redirect(reqwest::redirect::Policy::none())
            .connect_timeout(std::time::Duration::from_secs(10))
            .dns_resolver(Arc::new(AgentResolver {
                agent: settings.name.clone(),
                allow_private: settings.allow_private,
            }))
            .build()
            .map_err(outbound::describe)?;
        Ok(RemoteAgent {
            name: settings.name.clone(),
            base: settings.url.clone(),
            http,
            token: settings.token.clone(),
            allow_private: settings.allow_private,
            max_event_bytes: settings.max_event_bytes,
        })
    }

    /// The agent's card, from `<url>/.well-known/agent-card.json`.
    pub(crate) async fn card(&self) -> Result<AgentCard, String> {
        let path = crate::server::AGENT_CARD_PATH.trim_start_matches('/');
        let mut base = self.base.clone();
        if !base.path().ends_with('/') {
            base.set_path(&format!("{}/", base.path()));
        }
        let url = base
            .join(path)
            .map_err(|error| format!("no card URL under `{}`: {error}", self.base))?;
        address::check(&self.name, &url, self.allow_private).await?;
        let response = self
            .with_auth(self.http.get(url.clone()))
            .send()
            .await
            .map_err(|error| {
                format!(
                    "its card at {url} cannot be read: {}",
                    outbound::describe(error)
                )
            })?;
        if !response.status().is_success() {
            return Err(format!(
                "its card at {url} answered HTTP {}",
                response.status()
            ));
        }
        let body = self.read(response).await?;
        serde_json::from_slice(&body)
            .map_err(|error| format!("its card at {url} is not an agent card: {error}"))
    }

    /// Where the card says JSON-RPC is served (A2A 1.0), checked.
    pub(crate) async fn endpoint(&self, card: &AgentCard) -> Result<Url, String> {
        let interface = card
            .supported_interfaces
            .iter()
            .find(|interface| {
                interface.protocol_binding == AgentInterface::JSONRPC
                    && interface.protocol_version.starts_with("1.")
            })
            .ok_or_else(|| {
                "its card lists no A2A 1.x JSON-RPC interface (the one binding this harness \
                 delegates over)"
                    .to_owned()
            })?;
        let url = self.base.join(&interface.url).map_err(|error| {
            format!("its JSON-RPC URL `{}` is not a URL: {error}", interface.url)
        })?;
        address::check(&self.name, &url, self.allow_private).await?;
        Ok(url)
    }

    /// `SendStreamingMessage` with `params`; the stream's events.
    pub(crate) async fn stream(&self, endpoint: &Url, params: Value) -> Result<Events, String> {
        let response = self
            .post(endpoint, "SendStreamingMessage", params)
            .header(ACCEPT, "text/event-stream")
            .send()
            .await
            .map_err(|error| format!("it cannot be reached: {}", outbound::describe(error)))?;
        let is_stream = response
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|value| value.to_str().ok())
            .is_some_and(|value| value.starts_with("text/event-stream"));
        if !is_stream {
            // Refused before the stream started: a plain JSON-RPC answer.
            let status = response.status();
            let body = self.read(response).await?;
            return Err(rpc_error(&body)
                .unwrap_or_else(|| format!("it answered HTTP {status} without an event stream")));
        }
        let max = self.max_event_bytes;
        // Bytes since the last whole event: one event may not pass `max`.
        let pending = Arc::new(AtomicUsize::new(0));
        let counted = pending.clone();
        let bytes = response.bytes_stream().map(move |chunk| match chunk {
            Ok(chunk) if counted.fetch_add(chunk.len(), Ordering::Relaxed) + chunk.len() > max => {
                Err(BodyFailure::TooLarge(max))
            }
            Ok(chunk) => Ok(chunk),
            Err(error) => Err(BodyFailure::Broke(outbound::describe(error))),
        });
        let events = bytes.eventsource().map(move |event| {
            pending.store(0, Ordering::Relaxed);
            let event = event.map_err(|error| format!("its stream broke off: {error}"))?;
            let body: Value = serde_json::from_str(&event.data)
                .map_err(|error| format!("it sent a stream event that is not JSON: {error}"))?;
            if let Some(error) = rpc_error_of(&body) {
                return Err(error);
            }
            serde_json::from_value(body["result"].clone())
                .map_err(|error| format!("it sent a stream event out of shape: {error}"))
        });
        Ok(Box::pin(events))
    }

    /// A plain JSON-RPC call; its `result`.
    pub(crate) async fn call(
        &self,
        endpoint: &Url,
        method: &str,
        params: Value,
    ) -> Result<Value, String> {
        address::check(&self.name, endpoint, self.allow_private).await?;
        let response = self
            .post(endpoint, method, params)
            .send()
            .await
            .map_err(|error| format!("it cannot be reached: {}", outbound::describe(error)))?;
        let body = self.read(response).await?;
        if let Some(error) = rpc_error(&body) {
            return Err(error);
        }
        let body: Value = serde_json::from_slice(&body)
            .map_err(|error| format!("its {method} answer is not JSON: {error}"))?;
        Ok(body["result"].clone())
    }

    fn post(&self, endpoint: &Url, method: &str, params: Value) -> reqwest::RequestBuilder {
        let request = json!({ "jsonrpc": "2.0", "id": 1, "method": method, "params": params });
        self.with_auth(self.http.post(endpoint.clone()))
            .header("A2A-Version", VERSION)
            .json(&request)
    }

    fn with_auth(&self, request: reqwest::RequestBuilder) -> reqwest::RequestBuilder {
        match &self.token {
            Some(token) => match HeaderValue::from_str(&format!("Bearer {}", token.expose())) {
                Ok(mut value) => {
                    value.set_sensitive(true);
                    request.header(AUTHORIZATION, value)
                }
                Err(_) => request,
            },
            None => request,
        }
    }

    /// A whole body, at most `max_event_bytes`.
    async fn read(&self, mut response: reqwest::Response) -> Result<Vec<u8>, String> {
        let mut body = Vec::new();
        while let Some(chunk) = response
            .chunk()
            .await
            .map_err(|error| format!("its answer broke off: {}", outbound::describe(error)))?
        {
            if body.len() + chunk.len() > self.max_event_bytes {
                return Err(format!(
                    "it answered more than {} bytes ([agents.{}] max_event_bytes)",
                    self.max_event_bytes, self.name
                ));
            }
            body.extend_from_slice(&chunk);
        }
        Ok(body)
    }
}

/// Why a stream's body failed.
#[derive(Debug)]
enum BodyFailure {
    TooLarge(usize),
    Broke(String),
}

impl std::fmt::Display for BodyFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            BodyFailure::TooLarge(max) => {
                write!(f, "an event is larger than {max} bytes (max_event_bytes)")
            }
            BodyFailure::Broke(why) => f.write_str(why),
        }
    }
}

impl std::error::Error for BodyFailure {}

/// The JSON-RPC error in `body`, as a sentence, if it holds one.
fn rpc_error(body: &[u8]) -> Option<String> {
    rpc_error_of(&serde_json::from_slice(body).ok()?)
}

fn rpc_error_of(body: &Value) -> Option<String> {
    let error = body.get("error")?;
    let message = error["message"]
        .as_str()
        .unwrap_or("an error without a message");
    let reason = error["data"]
        .as_array()
        .into_iter()
        .flatten()
        .chain(error["details"].as_array().into_iter().flatten())
        .find_map(|detail| detail["reason"].as_str());
    Some(match (error["code"].as_i64(), reason) {
        (Some(code), Some(reason)) => format!("it refused ({code}, {reason}): {message}"),
        (Some(code), None) => format!("it refused ({code}): {message}"),
        _ => format!("it refused: {message}"),
    })
}
