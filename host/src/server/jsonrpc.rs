//! The JSON-RPC 2.0 binding (spec 9) at `POST /`.
//!
//! One request per call, in this order: authenticate (401 before anything is read), read
//! the body (size limit, JSON content type), scan it against the message budgets (before it
//! is parsed into values: `limits`), parse the envelope, check the version, decode and
//! validate the parameters, then call the service. Every failure after authentication
//! is a JSON-RPC error with HTTP 200, answering the request's `id` once it is known (`null`
//! before).
//!
//! The version is checked after the envelope is parsed so the error can carry the request's
//! id, and it wins over an unknown method: a client speaking another version (0.3's
//! `message/send`, say) is told to speak 1.0, which is what it needs to hear. A body that
//! is not a JSON-RPC request at all still gets -32700 or -32600.

use axum::Router;
use axum::extract::{Request, State};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use serde::de::DeserializeOwned;

use super::AppState;
use super::auth::{AuthError, Identity};
use super::body::{Validate, read_json_body};
use super::card::extended_card_unavailable;
use super::push;
use super::respond::{RpcError, rpc_ok};
use super::rest::not_found;
use super::sse;
use crate::a2a::error::A2aError;
use crate::a2a::jsonrpc::{JsonRpcRequest, Method, RequestId, parse_request};
use crate::a2a::types::{
    CancelTaskRequest, GetTaskRequest, ListTasksRequest, SendMessageRequest, SubscribeToTaskRequest,
};
use crate::a2a::version;

/// The JSON-RPC endpoint; other methods on `/` are unknown routes.
pub(crate) fn routes() -> Router<AppState> {
    Router::new().route("/", post(endpoint).fallback(not_found))
}

/// `POST /`.
async fn endpoint(
    State(state): State<AppState>,
    identity: Result<Identity, AuthError>,
    request: Request,
) -> Response {
    let identity = match identity {
        Ok(identity) => identity,
        Err(refused) => return RpcError::unauthenticated(refused).into_response(),
    };
    let version = version::check_request(request.headers(), request.uri().query());
    let body = match read_json_body(request, state.body).await {
        Ok(body) => body,
        Err(error) => return RpcError::new(RequestId::Null, &error).into_response(),
    };
    // Before the body becomes values: their number, not its bytes, is what costs.
    if let Err((id, refused)) = state.message_limits.scan(&body) {
        return RpcError::new(id.unwrap_or(RequestId::Null), &refused).into_response();
    }
    let call = match accept(&body, version) {
        Ok(call) => call,
        Err(refused) => return refused.into_response(),
    };
    tracing::debug!(
        method = call.method.as_str(),
        streaming = call.method.is_streaming(),
        "JSON-RPC call"
    );
    match dispatch(&state, &identity, &call).await {
        Ok(response) => response,
        Err(error) => RpcError::answering(&call, &error).into_response(),
    }
}

/// Parses the envelope and applies the version check; see the module documentation for
/// which error wins.
fn accept(body: &[u8], version: Result<(), A2aError>) -> Result<JsonRpcRequest, RpcError> {
    match (parse_request(body), version) {
        (Ok(call), Ok(())) => Ok(call),
        (Ok(call), Err(unsupported)) => Err(RpcError::answering(&call, &unsupported)),
        (Err(rejected), Err(unsupported)) if !is_malformed(&rejected.error) => {
            Err(RpcError::new(rejected.id, &unsupported))
        }
        (Err(rejected), _) => Err(RpcError::rejected(&rejected)),
    }
}

/// Not JSON, or not a JSON-RPC request object.
fn is_malformed(error: &A2aError) -> bool {
    matches!(error, A2aError::JsonParse(_) | A2aError::InvalidRequest(_))
}

/// The call's parameters, decoded and validated.
fn params<T: DeserializeOwned + Validate>(call: &JsonRpcRequest) -> Result<T, A2aError> {
    let params: T = call.params()?;
    params.validate()?;
    Ok(params)
}

async fn dispatch(
    state: &AppState,
    identity: &Identity,
    call: &JsonRpcRequest,
) -> Result<Response, A2aError> {
    let service = &state.service;
    match call.method {
        Method::SendMessage => {
            let request: SendMessageRequest = params(call)?;
            let caller = state.admit_send(identity, &request)?;
            let result = service.send_message(&caller, request).await?;
            Ok(rpc_ok(call, &result))
        }
        Method::SendStreamingMessage => {
            let request: SendMessageRequest = params(call)?;
            let caller = state.admit_send(identity, &request)?;
            let events = service.send_streaming_message(&caller, request).await?;
            Ok(sse::jsonrpc(call.id.clone(), events, state.keep_alive))
        }
        Method::GetTask => {
            let request: GetTaskRequest = params(call)?;
            let task = service.get_task(&identity.caller(None)?, request).await?;
            Ok(rpc_ok(call, &task))
        }
        Method::ListTasks => {
            let request: ListTasksRequest = params(call)?;
            let page = service.list_tasks(&identity.caller(None)?, request).await?;
            Ok(rpc_ok(call, &page))
        }
        Method::CancelTask => {
            let request: CancelTaskRequest = params(call)?;
            let task = service
                .cancel_task(&identity.caller(None)?, request)
                .await?;
            Ok(rpc_ok(call, &task))
        }
        Method::SubscribeToTask => {
            let request: SubscribeToTaskRequest = params(call)?;
            let events = service.subscribe(&identity.caller(None)?, request).await?;
            Ok(sse::jsonrpc(call.id.clone(), events, state.keep_alive))
        }
        Method::CreateTaskPushNotificationConfig => {
            let config = params(call)?;
            let created = push::create(service, &identity.caller(None)?, config).await?;
            Ok(rpc_ok(call, &created))
        }
        Method::GetTaskPushNotificationConfig => {
            let request = params(call)?;
            let config = push::get(service, &identity.caller(None)?, request).await?;
            Ok(rpc_ok(call, &config))
        }
        Method::ListTaskPushNotificationConfigs => {
            let request = params(call)?;
            let page = push::list(service, &identity.caller(None)?, request).await?;
            Ok(rpc_ok(call, &page))
        }
        Method::DeleteTaskPushNotificationConfig => {
            let request = params(call)?;
            let done = push::delete(service, &identity.caller(None)?, request).await?;
            Ok(rpc_ok(call, &done))
        }
        Method::GetExtendedAgentCard => Err(extended_card_unavailable()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unsupported() -> Result<(), A2aError> {
        Err(A2aError::VersionNotSupported {
            requested: "0.3".into(),
        })
    }

    #[test]
    fn the_version_wins_over_an_unknown_method_but_not_over_garbage() {
        let old = br#"{"jsonrpc": "2.0", "id": 1, "method": "message/send", "params": {}}"#;
        let refused = accept(old, unsupported()).expect_err("refused");
        assert!(
            format!("{refused:?}").contains("VERSION_NOT_SUPPORTED"),
            "{refused:?}"
        );
        let refused = accept(old, Ok(())).expect_err("refused");
        assert!(
            format!("{refused:?}").contains("METHOD_NOT_FOUND"),
            "{refused:?}"
        );
        let refused = accept(b"{", unsupported()).expect_err("refused");
        assert!(format!("{refused:?}").contains("JSON_PARSE"), "{refused:?}");
        let batch = br#"[{"jsonrpc": "2.0", "id": 1, "method": "GetTask"}]"#;
        let refused = accept(batch, unsupported()).expect_err("refused");
        assert!(
            format!("{refused:?}").contains("INVALID_REQUEST"),
            "{refused:?}"
        );
    }
}
