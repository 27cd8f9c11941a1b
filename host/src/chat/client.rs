//! The terminal client's side of A2A: JSON-RPC 2.0 at `POST /` with SSE for the streaming
//! methods, the agent card, and the harness's command completion route. Responses decode
//! into the crate's own A2A types, so client and server agree on the wire by construction.

use std::pin::Pin;

use eventsource_stream::Eventsource;
use futures_core::Stream;
use reqwest::header::{ACCEPT, AUTHORIZATION, CONTENT_TYPE, HeaderMap, HeaderValue};
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use tokio_stream::StreamExt;

use crate::a2a::error::{ErrorDetail, JsonRpcErrorObject};
use crate::a2a::types::{AgentCard, StreamResponse};
use crate::server::PARTICIPANT_HEADER;

/// Who the client speaks as.
#[derive(Clone, Debug)]
pub(crate) enum Speaker {
    /// Self-asserted (loopback servers without tokens); `None` is the server's default.
    Named(Option<String>),
    /// A bearer token (`[auth] tokens`).
    Token(String),
}

/// What went wrong talking to the server.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ClientError {
    /// The server answered with an A2A error.
    #[error("{message}{}", reason.as_deref().map(|r| format!(" ({r})")).unwrap_or_default())]
    Refused {
        code: i32,
        message: String,
        reason: Option<String>,
    },
    /// The server could not be reached, or a stream broke off.
    #[error("{0}")]
    Connection(String),
    /// The server answered something this client cannot read.
    #[error("unexpected answer from the server: {0}")]
    Protocol(String),
}

impl ClientError {
    fn from_rpc(error: JsonRpcErrorObject) -> Self {
        let reason = error.data.into_iter().find_map(|detail| match detail {
            ErrorDetail::ErrorInfo(info) => Some(info.reason),
            ErrorDetail::BadRequest(_) => None,
        });
        ClientError::Refused {
            code: error.code,
            message: error.message,
            reason,
        }
    }

    fn connection(error: reqwest::Error) -> Self {
        ClientError::Connection(format!(
            "the server cannot be reached: {}",
            crate::outbound::describe(error)
        ))
    }

    /// The ErrorInfo reason of a refusal, e.g. `UNSUPPORTED_OPERATION`.
    pub(crate) fn reason(&self) -> Option<&str> {
        match self {
            ClientError::Refused { reason, .. } => reason.as_deref(),
            _ => None,
        }
    }
}

/// The events of one stream, in order, until the server closes it.
pub(crate) type Events = Pin<Box<dyn Stream<Item = Result<StreamResponse, ClientError>> + Send>>;

/// The command completion route's answer.
#[derive(Clone, Debug, Deserialize)]
pub(crate) struct Completion {
    pub(crate) role: String,
    pub(crate) suggestions: Vec<crate::commands::Suggestion>,
}

/// An A2A client of one server. Cheap to clone.
#[derive(Clone)]
pub(crate) struct Client {
    http: reqwest::Client,
    base: String,
    headers: HeaderMap,
}

/// One JSON-RPC response: a result or an error.
#[derive(Deserialize)]
struct RpcResponse<T> {
    result: Option<T>,
    error: Option<JsonRpcErrorObject>,
}

impl Client {
    pub(crate) fn new(base: &str, speaker: &Speaker) -> Result<Self, ClientError> {
        let mut headers = HeaderMap::new();
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        headers.insert("A2A-Version", HeaderValue::from_static("1.0"));
        let invalid =
            |what: &str| ClientError::Protocol(format!("{what} cannot be sent in a header"));
        match speaker {
            Speaker::Named(Some(name)) => {
                let value = HeaderValue::from_str(name).map_err(|_| invalid("that name"))?;
                headers.insert(PARTICIPANT_HEADER, value);
            }
            Speaker::Named(None) => {}
            Speaker::Token(token) => {
                let mut value = HeaderValue::from_str(&format!("Bearer {token}"))
                    .map_err(|_| invalid("that token"))?;
                value.set_sensitive(true);
                headers.insert(AUTHORIZATION, value);
            }
        }
        let http = crate::outbound::client_builder(&Default::default())
            .build()
            .map_err(ClientError::connection)?;
        Ok(Client {
            http,
            base: base.trim_end_matches('/').to_owned(),
            headers,
        })
    }

    pub(crate) fn base(&self) -> &str {
        &self.base
    }

    /// The public agent card.
    pub(crate) async fn agent_card(&self) -> Result<AgentCard, ClientError> {
        let response = self
            .http
            .get(format!("{}{}", self.base, crate::server::AGENT_CARD_PATH))
            .send()
            .await
            .map_err(ClientError::connection)?;
        if !response.status().is_success() {
            return Err(ClientError::Protocol(format!(
                "the agent card answered HTTP {}",
                response.status()
            )));
        }
        response
            .json()
            .await
            .map_err(|e| ClientError::Protocol(e.to_string()))
    }

    /// One JSON-RPC call.
    pub(crate) async fn rpc<T: DeserializeOwned>(
        &self,
        method: &str,
        params: Value,
    ) -> Result<T, ClientError> {
        let request = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
        let response = self
            .http
            .post(format!("{}/", self.base))
            .headers(self.headers.clone())
            .json(&request)
            .send()
            .await
            .map_err(ClientError::connection)?;
        let body: RpcResponse<T> = response
            .json()
            .await
            .map_err(|e| ClientError::Protocol(format!("{method}: {e}")))?;
        match (body.result, body.error) {
            (_, Some(error)) => Err(ClientError::from_rpc(error)),
            (Some(result), None) => Ok(result),
            (None, None) => Err(ClientError::Protocol(format!("{method}: no result"))),
        }
    }

    /// A streaming JSON-RPC call (SendStreamingMessage, SubscribeToTask).
    pub(crate) async fn stream(&self, method: &str, params: Value) -> Result<Events, ClientError> {
        let request = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
        let response = self
            .http
            .post(format!("{}/", self.base))
            .headers(self.headers.clone())
            .header(ACCEPT, "text/event-stream")
            .json(&request)
            .send()
            .await
            .map_err(ClientError::connection)?;
        let is_stream = response
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|value| value.to_str().ok())
            .is_some_and(|value| value.starts_with("text/event-stream"));
        if !is_stream {
            // Refused before the stream started: a plain JSON-RPC error.
            let body: RpcResponse<Value> = response
                .json()
                .await
                .map_err(|e| ClientError::Protocol(format!("{method}: {e}")))?;
            return Err(body.error.map_or_else(
                || ClientError::Protocol(format!("{method}: expected an event stream")),
                ClientError::from_rpc,
            ));
        }
        let events = response.bytes_stream().eventsource().map(|event| {
            let event =
                event.map_err(|e| ClientError::Connection(format!("the stream broke off: {e}")))?;
            let body: RpcResponse<StreamResponse> = serde_json::from_str(&event.data)
                .map_err(|e| ClientError::Protocol(format!("a stream event: {e}")))?;
            match (body.result, body.error) {
                (_, Some(error)) => Err(ClientError::from_rpc(error)),
                (Some(item), None) => Ok(item),
                (None, None) => Err(ClientError::Protocol("an empty stream event".to_owned())),
            }
        });
        Ok(Box::pin(events))
    }

    /// What may follow `text` in task `task_id` (or a new conversation), for this speaker.
    pub(crate) async fn complete(
        &self,
        task_id: Option<&str>,
        text: &str,
    ) -> Result<Completion, ClientError> {
        let path = match task_id {
            Some(id) => crate::server::COMPLETION_TASK_PATH.replace("{id}", &encode(id)),
            None => crate::server::COMPLETION_PATH.to_owned(),
        };
        let response = self
            .http
            .post(format!("{}{path}", self.base))
            .headers(self.headers.clone())
            .json(&json!({ "text": text }))
            .send()
            .await
            .map_err(ClientError::connection)?;
        if response.status().is_success() {
            return response
                .json()
                .await
                .map_err(|e| ClientError::Protocol(format!("completion: {e}")));
        }
        let body: Value = response
            .json()
            .await
            .map_err(|e| ClientError::Protocol(format!("completion: {e}")))?;
        let error = &body["error"];
        Err(ClientError::Refused {
            code: error["code"]
                .as_i64()
                .and_then(|c| i32::try_from(c).ok())
                .unwrap_or(0),
            message: error["message"]
                .as_str()
                .unwrap_or("completion failed")
                .to_owned(),
            reason: error["details"][0]["reason"].as_str().map(str::to_owned),
        })
    }
}

/// A task id as one path segment: ids are the server's own (UUIDs), but a typed id must
/// not be able to reach another route.
fn encode(id: &str) -> String {
    id.bytes()
        .map(|byte| match byte {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                char::from(byte).to_string()
            }
            _ => format!("%{byte:02X}"),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_stay_one_path_segment() {
        assert_eq!(encode("3fa2-b"), "3fa2-b");
        assert_eq!(encode("../x y"), "..%2Fx%20y");
    }
}
