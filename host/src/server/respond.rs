//! How results and errors become HTTP responses in each binding.
//!
//! * HTTP+JSON: results and errors are `application/json` (11.1 of the A2A 1.0 text the
//!   conformance kit and the issue follow; the project's reference copy says
//!   `application/a2a+json` SHOULD, and both are accepted on requests); an error has the
//!   HTTP status of spec 5.4 and the `google.rpc.Status` body of spec 11.6.
//! * JSON-RPC: results and errors are `application/json` (spec 9.1) with HTTP 200; only an
//!   authentication failure is 401, because it is decided before the JSON-RPC request is
//!   read.
//!
//! Either binding adds `Retry-After` to a rate-limit refusal (spec 3.3.2 allows retry
//! guidance) and `WWW-Authenticate` to a 401 (RFC 6750). Internal errors are logged here,
//! once, whatever the binding.

use axum::Json;
use axum::http::header::{CONTENT_TYPE, RETRY_AFTER, WWW_AUTHENTICATE};
use axum::http::{HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde::Serialize;

use super::auth::AuthError;
use super::body::JSON;
use crate::a2a::error::{A2aError, JsonRpcErrorObject};
use crate::a2a::jsonrpc::{
    self, JSONRPC_VERSION, JsonRpcFailure, JsonRpcRequest, RequestError, RequestId,
};

/// An HTTP+JSON success: `value` as `application/json`.
pub(crate) fn rest_ok<T: Serialize>(value: &T) -> Response {
    a2a_json(StatusCode::OK, value)
}

/// A JSON-RPC success response to `call`.
pub(crate) fn rpc_ok<T: Serialize>(call: &JsonRpcRequest, result: &T) -> Response {
    Json(call.respond(result)).into_response()
}

/// An error in the HTTP+JSON binding's shape.
#[derive(Debug)]
pub(crate) enum RestError {
    A2a(A2aError),
    Unauthenticated(AuthError),
}

impl From<A2aError> for RestError {
    fn from(error: A2aError) -> Self {
        RestError::A2a(error)
    }
}

impl From<AuthError> for RestError {
    fn from(error: AuthError) -> Self {
        RestError::Unauthenticated(error)
    }
}

impl IntoResponse for RestError {
    fn into_response(self) -> Response {
        match self {
            RestError::A2a(error) => {
                log_if_internal(&error);
                let response = a2a_json(error.http_status(), &error.to_rest());
                with_retry_after(response, error.retry_after_secs())
            }
            RestError::Unauthenticated(error) => {
                unauthenticated(a2a_json(StatusCode::UNAUTHORIZED, &error.to_rest()), error)
            }
        }
    }
}

/// Alone, a refused authentication answers in the HTTP+JSON shape; the JSON-RPC endpoint
/// takes it as a `Result` and answers in its own ([`RpcError::unauthenticated`]).
impl IntoResponse for AuthError {
    fn into_response(self) -> Response {
        RestError::from(self).into_response()
    }
}

/// An error in the JSON-RPC binding's shape: the error response, ready to send.
#[derive(Debug)]
pub(crate) enum RpcError {
    /// A JSON-RPC error response.
    Failure {
        body: JsonRpcFailure,
        retry_after: Option<u64>,
    },
    /// A refused authentication (HTTP 401).
    Unauthenticated(AuthError),
}

/// The body of a refused authentication; the framing module only renders [`A2aError`]s.
#[derive(Serialize)]
struct UnauthenticatedBody {
    jsonrpc: &'static str,
    id: RequestId,
    error: JsonRpcErrorObject,
}

impl RpcError {
    /// `error`, answering request `id`.
    pub(crate) fn new(id: RequestId, error: &A2aError) -> Self {
        Self::failure(jsonrpc::failure(id, error), error)
    }

    /// `error`, answering `call`.
    pub(crate) fn answering(call: &JsonRpcRequest, error: &A2aError) -> Self {
        Self::failure(call.fail(error), error)
    }

    /// A request the framing refused.
    pub(crate) fn rejected(rejected: &RequestError) -> Self {
        Self::failure(rejected.to_response(), &rejected.error)
    }

    /// An authentication refusal; the request was never read, so its id is unknown.
    pub(crate) fn unauthenticated(error: AuthError) -> Self {
        RpcError::Unauthenticated(error)
    }

    fn failure(body: JsonRpcFailure, error: &A2aError) -> Self {
        log_if_internal(error);
        RpcError::Failure {
            body,
            retry_after: error.retry_after_secs(),
        }
    }
}

impl IntoResponse for RpcError {
    fn into_response(self) -> Response {
        match self {
            RpcError::Failure { body, retry_after } => {
                let error = body.error();
                tracing::debug!(code = error.code, message = %error.message, "JSON-RPC error");
                with_retry_after(Json(body).into_response(), retry_after)
            }
            RpcError::Unauthenticated(error) => {
                let body = UnauthenticatedBody {
                    jsonrpc: JSONRPC_VERSION,
                    id: RequestId::Null,
                    error: error.to_jsonrpc(),
                };
                let response = (StatusCode::UNAUTHORIZED, Json(body)).into_response();
                unauthenticated(response, error)
            }
        }
    }
}

/// `value` serialized as `application/json` with `status`.
fn a2a_json<T: Serialize>(status: StatusCode, value: &T) -> Response {
    match serde_json::to_vec(value) {
        Ok(bytes) => (
            status,
            [(CONTENT_TYPE, HeaderValue::from_static(JSON))],
            bytes,
        )
            .into_response(),
        Err(error) => {
            // Our own types always serialize; if one ever does not, say so plainly.
            tracing::error!(%error, "a response could not be serialized");
            StatusCode::INTERNAL_SERVER_ERROR.into_response()
        }
    }
}

fn with_retry_after(mut response: Response, retry_after: Option<u64>) -> Response {
    if let Some(seconds) = retry_after {
        response
            .headers_mut()
            .insert(RETRY_AFTER, HeaderValue::from(seconds));
    }
    response
}

fn unauthenticated(mut response: Response, error: AuthError) -> Response {
    response
        .headers_mut()
        .insert(WWW_AUTHENTICATE, error.challenge());
    response
}

/// System errors are logged (spec 3.3.2 "SHOULD log system errors"); the client's own
/// mistakes are not, or anyone could fill the log.
fn log_if_internal(error: &A2aError) {
    if error.is_system() {
        tracing::error!(%error, "request failed");
    }
}
