//! A2A errors and their wire forms in the JSON-RPC and HTTP+JSON bindings.
//!
//! One [`A2aError`] value renders into either binding, so both report the same thing
//! (spec 5.1, "Same Error Handling"):
//!
//! * JSON-RPC ([`A2aError::to_jsonrpc`]): `{"code": -32001, "message": "...", "data": [ ... ]}`
//!   where `data` is an array whose first element is always a `google.rpc.ErrorInfo`
//!   (`@type`, `reason`, `domain: "a2a-protocol.org"`, optional string `metadata`), as spec 9.5
//!   and the project README require. `InvalidParams` with a known field adds a
//!   `google.rpc.BadRequest` after it, the form of the spec's own -32602 example.
//! * HTTP+JSON ([`A2aError::to_rest`], [`A2aError::http_status`]): a `google.rpc.Status`-like
//!   body, `{"error": {"code": 404, "status": "NOT_FOUND", "message": "...", "details": [...]}}`
//!   (spec 11.6), with the HTTP status of spec 5.4.
//!
//! The `reason` of an A2A error is its spec name in UPPER_SNAKE_CASE without the `Error`
//! suffix (`TaskNotFoundError` -> `TASK_NOT_FOUND`, spec 10.6 / 11.6). The standard JSON-RPC
//! errors follow the same rule with their names from the table in spec 9.5
//! (`JSONParseError` -> `JSON_PARSE`, `InternalError` -> `INTERNAL`).
//!
//! Four errors are this server's own. The specification has no codes for them, and clients
//! only understand the codes it defines, so each travels under the closest defined JSON-RPC
//! code with a specific `reason` (and, over REST, the precise HTTP status):
//!
//! | Variant          | JSON-RPC code               | HTTP                      | reason            |
//! | :--------------- | :-------------------------- | :------------------------ | :---------------- |
//! | `RateLimited`    | -32603 Internal error       | 429 `RESOURCE_EXHAUSTED`  | `RATE_LIMITED`    |
//! | `PayloadTooLarge`| -32600 Invalid request      | 413 `INVALID_ARGUMENT`    | `PAYLOAD_TOO_LARGE` |
//! | `RoleRefused`    | -32004 Unsupported operation| 403 `PERMISSION_DENIED`   | `ROLE_REFUSED`    |
//! | `StoreUnavailable`| -32603 Internal error      | 503 `UNAVAILABLE`         | `STORE_UNAVAILABLE` |
//!
//! See each variant for why. Their ErrorInfo keeps `domain: "a2a-protocol.org"`: the project
//! README requires that domain on every error, and clients find the detail by it.

use std::collections::BTreeMap;

use axum::http::StatusCode;
use serde::{Deserialize, Serialize};

use super::types::{PROTOCOL_VERSION, TaskState};

/// The `domain` of every `ErrorInfo` this server sends.
pub const ERROR_DOMAIN: &str = "a2a-protocol.org";

/// The `@type` of a `google.rpc.ErrorInfo` detail.
pub const ERROR_INFO_TYPE: &str = "type.googleapis.com/google.rpc.ErrorInfo";

/// The `@type` of a `google.rpc.BadRequest` detail.
pub const BAD_REQUEST_TYPE: &str = "type.googleapis.com/google.rpc.BadRequest";

/// The `Retry-After` a client gets when the task store is unavailable.
pub const STORE_RETRY_AFTER_SECS: u64 = 5;

/// JSON-RPC error codes: the JSON-RPC 2.0 standard ones (spec 9.5) and the A2A ones
/// (spec 5.4).
pub mod code {
    /// Invalid JSON.
    pub const JSON_PARSE: i32 = -32700;
    /// Not a valid JSON-RPC request object.
    pub const INVALID_REQUEST: i32 = -32600;
    /// No such method.
    pub const METHOD_NOT_FOUND: i32 = -32601;
    /// Invalid method parameters.
    pub const INVALID_PARAMS: i32 = -32602;
    /// Internal error.
    pub const INTERNAL: i32 = -32603;
    /// `TaskNotFoundError`.
    pub const TASK_NOT_FOUND: i32 = -32001;
    /// `TaskNotCancelableError`.
    pub const TASK_NOT_CANCELABLE: i32 = -32002;
    /// `PushNotificationNotSupportedError`.
    pub const PUSH_NOTIFICATION_NOT_SUPPORTED: i32 = -32003;
    /// `UnsupportedOperationError`.
    pub const UNSUPPORTED_OPERATION: i32 = -32004;
    /// `ContentTypeNotSupportedError`.
    pub const CONTENT_TYPE_NOT_SUPPORTED: i32 = -32005;
    /// `InvalidAgentResponseError`.
    pub const INVALID_AGENT_RESPONSE: i32 = -32006;
    /// `ExtendedAgentCardNotConfiguredError`.
    pub const EXTENDED_AGENT_CARD_NOT_CONFIGURED: i32 = -32007;
    /// `ExtensionSupportRequiredError`.
    pub const EXTENSION_SUPPORT_REQUIRED: i32 = -32008;
    /// `VersionNotSupportedError`.
    pub const VERSION_NOT_SUPPORTED: i32 = -32009;
}

/// Every error an A2A operation can return.
///
/// The `Display` text is the human message: it becomes JSON-RPC `error.message` and REST
/// `error.message`. It is sent to the client, so never put secrets or internal detail the
/// client should not see in it (notably in `Internal`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum A2aError {
    /// -32700: the body is not valid JSON. Carries the parser's message.
    #[error("Invalid JSON payload: {0}")]
    JsonParse(String),

    /// -32600: valid JSON, but not a valid JSON-RPC request object.
    #[error("Invalid request: {0}")]
    InvalidRequest(String),

    /// -32601: no method by this name. Carries the name the client sent.
    #[error("Method not found: {0}")]
    MethodNotFound(String),

    /// -32602: the parameters are invalid. `field` is the JSON path of the offending field
    /// (`message.parts`) when known; it is reported as a `google.rpc.BadRequest` field
    /// violation.
    #[error("Invalid parameters: {message}")]
    InvalidParams {
        /// What is wrong, readable on its own.
        message: String,
        /// The field at fault, as a JSON path.
        field: Option<String>,
    },

    /// -32603: the server failed. The text reaches the client.
    #[error("Internal error: {0}")]
    Internal(String),

    /// -32001: no such task, or not visible to the caller (the two are indistinguishable on
    /// purpose, spec 3.3.2).
    #[error("Task not found: {task_id}")]
    TaskNotFound {
        /// The id the client asked for.
        task_id: String,
    },

    /// -32002: the task cannot be canceled in its current state.
    #[error("Task {task_id} cannot be canceled in state {state}")]
    TaskNotCancelable {
        /// The task.
        task_id: String,
        /// Its current state.
        state: TaskState,
    },

    /// -32003: this agent does not support push notifications.
    #[error("Push notifications are not supported by this agent")]
    PushNotificationNotSupported,

    /// -32004: the operation, or this use of it, is not supported, e.g. a message to a
    /// terminal task or streaming when the card says it is off. Carries the explanation.
    #[error("Unsupported operation: {0}")]
    UnsupportedOperation(String),

    /// -32005: a media type in the request is not supported (the request body's, or a
    /// message part's). Carries the media type.
    #[error("Content type not supported: {0}")]
    ContentTypeNotSupported(String),

    /// -32006: an agent's response did not conform to the specification. Carries what was
    /// wrong.
    #[error("Invalid agent response: {0}")]
    InvalidAgentResponse(String),

    /// -32007: the card declares an extended card but none is configured.
    #[error("This agent has no extended agent card configured")]
    ExtendedAgentCardNotConfigured,

    /// -32008: the client did not activate extensions the card marks as required.
    #[error("Extension support required: activate {} with the A2A-Extensions header", .uris.join(", "))]
    ExtensionSupportRequired {
        /// The required extensions the client did not activate.
        uris: Vec<String>,
    },

    /// -32009: the request's `A2A-Version` is not one this server speaks. `requested` is
    /// `0.3` when the header was missing (spec 3.6.2).
    #[error(
        "A2A protocol version {requested} is not supported; this agent supports version {PROTOCOL_VERSION} (send the header A2A-Version: {PROTOCOL_VERSION})"
    )]
    VersionNotSupported {
        /// The version the request asked for.
        requested: String,
    },

    /// The caller sent too many requests.
    ///
    /// JSON-RPC -32603: spec 3.3.2 lists "rate limit exceeded" among the system errors, whose
    /// JSON-RPC code is -32603, and allows retry guidance. Over REST it is 429 Too Many
    /// Requests with `RESOURCE_EXHAUSTED`, the status HTTP and google.rpc define for rate
    /// limits (the spec's 500/503 examples would tell a client the server is broken). The
    /// server should also send `Retry-After` ([`A2aError::retry_after_secs`]); the ErrorInfo
    /// carries it as `retryAfterSeconds`.
    #[error("Rate limit exceeded; retry after {retry_after_secs} s")]
    RateLimited {
        /// Seconds until a retry may succeed.
        retry_after_secs: u64,
    },

    /// The request body exceeds the server's size limit.
    ///
    /// JSON-RPC -32600: the body is refused before it is parsed, so it never becomes an
    /// acceptable request object (and its `id` is unknown). Over REST it is 413 Content Too
    /// Large with `INVALID_ARGUMENT`, the google.rpc code Google APIs use for oversized
    /// payloads.
    #[error("Request payload exceeds the limit of {limit_bytes} bytes")]
    PayloadTooLarge {
        /// The limit, in bytes.
        limit_bytes: u64,
    },

    /// The caller's participant role may not do this, e.g. a watcher sending a message.
    ///
    /// JSON-RPC -32004 UnsupportedOperation: the request is well-formed (so not -32602) and
    /// the spec has no authorization code; -32004 is its code for "this operation, or this
    /// aspect of it, is not available here", the same code it uses to refuse a message to a
    /// terminal task. Over REST it is 403 Forbidden with `PERMISSION_DENIED`, the
    /// authorization error of spec 3.3.2.
    #[error("{message}")]
    RoleRefused {
        /// The caller's role, e.g. `watcher`.
        role: String,
        /// What was refused and why, e.g. "a watcher cannot send messages".
        message: String,
    },

    /// The task store cannot record the request (disk full, database read-only or locked by
    /// another process), so the request was refused rather than acknowledged unrecorded.
    /// Nothing of it was applied; the client may retry later.
    ///
    /// JSON-RPC -32603: a system error (spec 3.3.2); the reason `STORE_UNAVAILABLE` says
    /// which. Over REST it is 503 Service Unavailable with `UNAVAILABLE`, google.rpc's code
    /// for a condition that retrying later may fix, with `Retry-After`.
    #[error("The task store is unavailable, so the request was not accepted: {0}")]
    StoreUnavailable(String),

    /// The message was accepted (its acceptance is stored), but the store refused its turn's
    /// result, so the sender waiting for that result cannot have it. The task stays WORKING
    /// in the store and its turn runs again once the store takes writes (recovery); sending
    /// the same `messageId` again is deduplicated and waits for that turn.
    ///
    /// Mapped as `StoreUnavailable` (the same condition, and the same advice: retry later),
    /// but its message and its `accepted` metadata say the message is not lost.
    #[error(
        "The message was accepted into task {task_id}, but the task store is unavailable, so \
         its turn's result was not recorded: {reason}. The task stays working and its turn \
         runs again once the store takes writes; sending the same messageId again waits for it"
    )]
    TurnNotStored {
        /// The task that holds the accepted message.
        task_id: String,
        /// Why the store refused, e.g. "the disk is full".
        reason: String,
    },
}

impl A2aError {
    /// Invalid parameters with no particular field.
    pub fn invalid_params(message: impl Into<String>) -> Self {
        A2aError::InvalidParams {
            message: message.into(),
            field: None,
        }
    }

    /// Invalid parameters blamed on `field` (a JSON path such as `message.parts`).
    pub fn invalid_field(field: impl Into<String>, message: impl Into<String>) -> Self {
        A2aError::InvalidParams {
            message: message.into(),
            field: Some(field.into()),
        }
    }

    /// A failure of the server or its store rather than the caller's mistake: these are
    /// logged (spec 3.3.2 "SHOULD log system errors"), the others not, or anyone could
    /// fill the log.
    pub fn is_system(&self) -> bool {
        matches!(
            self,
            A2aError::Internal(_)
                | A2aError::InvalidAgentResponse(_)
                | A2aError::StoreUnavailable(_)
                | A2aError::TurnNotStored { .. }
        )
    }

    /// The JSON-RPC error code.
    pub fn code(&self) -> i32 {
        match self {
            A2aError::JsonParse(_) => code::JSON_PARSE,
            A2aError::InvalidRequest(_) | A2aError::PayloadTooLarge { .. } => code::INVALID_REQUEST,
            A2aError::MethodNotFound(_) => code::METHOD_NOT_FOUND,
            A2aError::InvalidParams { .. } => code::INVALID_PARAMS,
            A2aError::Internal(_)
            | A2aError::RateLimited { .. }
            | A2aError::StoreUnavailable(_)
            | A2aError::TurnNotStored { .. } => code::INTERNAL,
            A2aError::TaskNotFound { .. } => code::TASK_NOT_FOUND,
            A2aError::TaskNotCancelable { .. } => code::TASK_NOT_CANCELABLE,
            A2aError::PushNotificationNotSupported => code::PUSH_NOTIFICATION_NOT_SUPPORTED,
            A2aError::UnsupportedOperation(_) | A2aError::RoleRefused { .. } => {
                code::UNSUPPORTED_OPERATION
            }
            A2aError::ContentTypeNotSupported(_) => code::CONTENT_TYPE_NOT_SUPPORTED,
            A2aError::InvalidAgentResponse(_) => code::INVALID_AGENT_RESPONSE,
            A2aError::ExtendedAgentCardNotConfigured => code::EXTENDED_AGENT_CARD_NOT_CONFIGURED,
            A2aError::ExtensionSupportRequired { .. } => code::EXTENSION_SUPPORT_REQUIRED,
            A2aError::VersionNotSupported { .. } => code::VERSION_NOT_SUPPORTED,
        }
    }

    /// The ErrorInfo `reason`.
    pub fn reason(&self) -> &'static str {
        match self {
            A2aError::JsonParse(_) => "JSON_PARSE",
            A2aError::InvalidRequest(_) => "INVALID_REQUEST",
            A2aError::MethodNotFound(_) => "METHOD_NOT_FOUND",
            A2aError::InvalidParams { .. } => "INVALID_PARAMS",
            A2aError::Internal(_) => "INTERNAL",
            A2aError::TaskNotFound { .. } => "TASK_NOT_FOUND",
            A2aError::TaskNotCancelable { .. } => "TASK_NOT_CANCELABLE",
            A2aError::PushNotificationNotSupported => "PUSH_NOTIFICATION_NOT_SUPPORTED",
            A2aError::UnsupportedOperation(_) => "UNSUPPORTED_OPERATION",
            A2aError::ContentTypeNotSupported(_) => "CONTENT_TYPE_NOT_SUPPORTED",
            A2aError::InvalidAgentResponse(_) => "INVALID_AGENT_RESPONSE",
            A2aError::ExtendedAgentCardNotConfigured => "EXTENDED_AGENT_CARD_NOT_CONFIGURED",
            A2aError::ExtensionSupportRequired { .. } => "EXTENSION_SUPPORT_REQUIRED",
            A2aError::VersionNotSupported { .. } => "VERSION_NOT_SUPPORTED",
            A2aError::RateLimited { .. } => "RATE_LIMITED",
            A2aError::PayloadTooLarge { .. } => "PAYLOAD_TOO_LARGE",
            A2aError::RoleRefused { .. } => "ROLE_REFUSED",
            A2aError::StoreUnavailable(_) | A2aError::TurnNotStored { .. } => "STORE_UNAVAILABLE",
        }
    }

    /// The HTTP status in the HTTP+JSON binding (spec 5.4 for the A2A errors).
    pub fn http_status(&self) -> StatusCode {
        match self {
            A2aError::JsonParse(_)
            | A2aError::InvalidRequest(_)
            | A2aError::InvalidParams { .. }
            | A2aError::TaskNotCancelable { .. }
            | A2aError::PushNotificationNotSupported
            | A2aError::UnsupportedOperation(_)
            | A2aError::ExtendedAgentCardNotConfigured
            | A2aError::ExtensionSupportRequired { .. }
            | A2aError::VersionNotSupported { .. } => StatusCode::BAD_REQUEST,
            // A REST route that does not exist is a plain 404.
            A2aError::MethodNotFound(_) | A2aError::TaskNotFound { .. } => StatusCode::NOT_FOUND,
            A2aError::Internal(_) | A2aError::InvalidAgentResponse(_) => {
                StatusCode::INTERNAL_SERVER_ERROR
            }
            // 415, as RFC 9110 has it for a body of a type the server does not take
            // (the 5.4 table of the A2A 1.0 text the conformance kit follows).
            A2aError::ContentTypeNotSupported(_) => StatusCode::UNSUPPORTED_MEDIA_TYPE,
            A2aError::RateLimited { .. } => StatusCode::TOO_MANY_REQUESTS,
            A2aError::PayloadTooLarge { .. } => StatusCode::PAYLOAD_TOO_LARGE,
            A2aError::RoleRefused { .. } => StatusCode::FORBIDDEN,
            A2aError::StoreUnavailable(_) | A2aError::TurnNotStored { .. } => {
                StatusCode::SERVICE_UNAVAILABLE
            }
        }
    }

    /// The `google.rpc.Code` name for the REST body's `status` field (the gRPC status of spec
    /// 5.4 for the A2A errors).
    pub fn rpc_status(&self) -> &'static str {
        match self {
            A2aError::JsonParse(_)
            | A2aError::InvalidRequest(_)
            | A2aError::InvalidParams { .. }
            | A2aError::ContentTypeNotSupported(_)
            | A2aError::PayloadTooLarge { .. } => "INVALID_ARGUMENT",
            A2aError::MethodNotFound(_) | A2aError::TaskNotFound { .. } => "NOT_FOUND",
            A2aError::Internal(_) | A2aError::InvalidAgentResponse(_) => "INTERNAL",
            A2aError::TaskNotCancelable { .. }
            | A2aError::PushNotificationNotSupported
            | A2aError::UnsupportedOperation(_)
            | A2aError::ExtendedAgentCardNotConfigured
            | A2aError::ExtensionSupportRequired { .. }
            | A2aError::VersionNotSupported { .. } => "FAILED_PRECONDITION",
            A2aError::RateLimited { .. } => "RESOURCE_EXHAUSTED",
            A2aError::RoleRefused { .. } => "PERMISSION_DENIED",
            A2aError::StoreUnavailable(_) | A2aError::TurnNotStored { .. } => "UNAVAILABLE",
        }
    }

    /// Seconds for a `Retry-After` header, for errors that have one.
    pub fn retry_after_secs(&self) -> Option<u64> {
        match self {
            A2aError::RateLimited { retry_after_secs } => Some(*retry_after_secs),
            A2aError::StoreUnavailable(_) | A2aError::TurnNotStored { .. } => {
                Some(STORE_RETRY_AFTER_SECS)
            }
            _ => None,
        }
    }

    /// Context for the ErrorInfo `metadata` (string values, camelCase keys as in the spec's
    /// examples).
    pub fn metadata(&self) -> BTreeMap<String, String> {
        let pairs: Vec<(&str, String)> = match self {
            A2aError::MethodNotFound(method) => vec![("method", method.clone())],
            A2aError::TaskNotFound { task_id } => vec![("taskId", task_id.clone())],
            A2aError::TaskNotCancelable { task_id, state } => {
                vec![("taskId", task_id.clone()), ("state", state.to_string())]
            }
            A2aError::ContentTypeNotSupported(media_type) => {
                vec![("mediaType", media_type.clone())]
            }
            A2aError::ExtensionSupportRequired { uris } => vec![("extensions", uris.join(","))],
            A2aError::VersionNotSupported { requested } => vec![
                ("requestedVersion", requested.clone()),
                ("supportedVersions", PROTOCOL_VERSION.to_owned()),
            ],
            A2aError::RateLimited { retry_after_secs } => {
                vec![("retryAfterSeconds", retry_after_secs.to_string())]
            }
            A2aError::PayloadTooLarge { limit_bytes } => {
                vec![("limitBytes", limit_bytes.to_string())]
            }
            A2aError::RoleRefused { role, .. } => vec![("role", role.clone())],
            // Whether the request is in the store: a client deciding to resend reads this.
            A2aError::StoreUnavailable(_) => vec![("accepted", "false".to_owned())],
            A2aError::TurnNotStored { task_id, .. } => {
                vec![("accepted", "true".to_owned()), ("taskId", task_id.clone())]
            }
            A2aError::InvalidParams {
                field: Some(field), ..
            } => vec![("field", field.clone())],
            _ => Vec::new(),
        };
        pairs
            .into_iter()
            .map(|(key, value)| (key.to_owned(), value))
            .collect()
    }

    /// The `google.rpc.ErrorInfo` for this error.
    pub fn error_info(&self) -> ErrorInfo {
        ErrorInfo {
            reason: self.reason().to_owned(),
            domain: ERROR_DOMAIN.to_owned(),
            metadata: self.metadata(),
        }
    }

    /// The error details: the ErrorInfo, then a BadRequest for `InvalidParams` with a field.
    pub fn details(&self) -> Vec<ErrorDetail> {
        let mut details = vec![ErrorDetail::ErrorInfo(self.error_info())];
        if let A2aError::InvalidParams {
            message,
            field: Some(field),
        } = self
        {
            details.push(ErrorDetail::BadRequest(BadRequest {
                field_violations: vec![FieldViolation {
                    field: field.clone(),
                    description: message.clone(),
                }],
            }));
        }
        details
    }

    /// The JSON-RPC `error` object.
    pub fn to_jsonrpc(&self) -> JsonRpcErrorObject {
        JsonRpcErrorObject {
            code: self.code(),
            message: self.to_string(),
            data: self.details(),
        }
    }

    /// The HTTP+JSON error body; send it with [`A2aError::http_status`].
    pub fn to_rest(&self) -> RestErrorBody {
        RestErrorBody {
            error: RestError {
                code: self.http_status().as_u16(),
                status: self.rpc_status().to_owned(),
                message: self.to_string(),
                details: self.details(),
            },
        }
    }
}

/// `google.rpc.ErrorInfo`: why an error happened, machine-readably.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ErrorInfo {
    /// UPPER_SNAKE_CASE reason, unique within `domain`.
    pub reason: String,
    /// Always [`ERROR_DOMAIN`] for errors this server sends.
    pub domain: String,
    /// Extra context; string values only, as in the proto.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub metadata: BTreeMap<String, String>,
}

/// `google.rpc.BadRequest`: the fields of a request that failed validation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BadRequest {
    /// The violations.
    #[serde(default)]
    pub field_violations: Vec<FieldViolation>,
}

/// One field of a [`BadRequest`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FieldViolation {
    /// The field, as a JSON path.
    pub field: String,
    /// What is wrong with it.
    pub description: String,
}

/// An element of JSON-RPC `error.data` or REST `error.details`: a ProtoJSON `Any`, so the
/// type is named by `@type`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "@type")]
pub enum ErrorDetail {
    /// `google.rpc.ErrorInfo`.
    #[serde(rename = "type.googleapis.com/google.rpc.ErrorInfo")]
    ErrorInfo(ErrorInfo),
    /// `google.rpc.BadRequest`.
    #[serde(rename = "type.googleapis.com/google.rpc.BadRequest")]
    BadRequest(BadRequest),
}

/// The JSON-RPC 2.0 error object. `data` is an array of typed details (spec 9.5).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct JsonRpcErrorObject {
    /// The error code.
    pub code: i32,
    /// The human message.
    pub message: String,
    /// The details; the first is the ErrorInfo.
    #[serde(default)]
    pub data: Vec<ErrorDetail>,
}

/// The body of an HTTP+JSON error response (spec 11.6).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RestErrorBody {
    /// The error.
    pub error: RestError,
}

/// A `google.rpc.Status` in its HTTP JSON form.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RestError {
    /// The HTTP status code, repeated.
    pub code: u16,
    /// The `google.rpc.Code` name, e.g. `NOT_FOUND`.
    pub status: String,
    /// The human message.
    pub message: String,
    /// The details; the first is the ErrorInfo.
    #[serde(default)]
    pub details: Vec<ErrorDetail>,
}

/// How a store failure reaches a client: a store that cannot take the change now is
/// `STORE_UNAVAILABLE` (the client may retry), anything else an internal error.
impl From<crate::store::StoreError> for A2aError {
    fn from(error: crate::store::StoreError) -> Self {
        use crate::store::StoreError;
        match error {
            StoreError::Unavailable(reason) => A2aError::StoreUnavailable(reason),
            StoreError::Conflict(reason) | StoreError::Corrupt(reason) => {
                A2aError::Internal(format!("the task store refused the change: {reason}"))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    /// One of every variant, with its expected code, reason, HTTP status and google.rpc code.
    fn every_error() -> Vec<(A2aError, i32, &'static str, u16, &'static str)> {
        vec![
            (
                A2aError::JsonParse("eof".into()),
                -32700,
                "JSON_PARSE",
                400,
                "INVALID_ARGUMENT",
            ),
            (
                A2aError::InvalidRequest("x".into()),
                -32600,
                "INVALID_REQUEST",
                400,
                "INVALID_ARGUMENT",
            ),
            (
                A2aError::MethodNotFound("Nope".into()),
                -32601,
                "METHOD_NOT_FOUND",
                404,
                "NOT_FOUND",
            ),
            (
                A2aError::invalid_params("bad"),
                -32602,
                "INVALID_PARAMS",
                400,
                "INVALID_ARGUMENT",
            ),
            (
                A2aError::Internal("boom".into()),
                -32603,
                "INTERNAL",
                500,
                "INTERNAL",
            ),
            (
                A2aError::TaskNotFound {
                    task_id: "t".into(),
                },
                -32001,
                "TASK_NOT_FOUND",
                404,
                "NOT_FOUND",
            ),
            (
                A2aError::TaskNotCancelable {
                    task_id: "t".into(),
                    state: TaskState::Completed,
                },
                -32002,
                "TASK_NOT_CANCELABLE",
                400,
                "FAILED_PRECONDITION",
            ),
            (
                A2aError::PushNotificationNotSupported,
                -32003,
                "PUSH_NOTIFICATION_NOT_SUPPORTED",
                400,
                "FAILED_PRECONDITION",
            ),
            (
                A2aError::UnsupportedOperation("no".into()),
                -32004,
                "UNSUPPORTED_OPERATION",
                400,
                "FAILED_PRECONDITION",
            ),
            (
                A2aError::ContentTypeNotSupported("image/png".into()),
                -32005,
                "CONTENT_TYPE_NOT_SUPPORTED",
                415,
                "INVALID_ARGUMENT",
            ),
            (
                A2aError::InvalidAgentResponse("bad".into()),
                -32006,
                "INVALID_AGENT_RESPONSE",
                500,
                "INTERNAL",
            ),
            (
                A2aError::ExtendedAgentCardNotConfigured,
                -32007,
                "EXTENDED_AGENT_CARD_NOT_CONFIGURED",
                400,
                "FAILED_PRECONDITION",
            ),
            (
                A2aError::ExtensionSupportRequired {
                    uris: vec!["https://x/v1".into()],
                },
                -32008,
                "EXTENSION_SUPPORT_REQUIRED",
                400,
                "FAILED_PRECONDITION",
            ),
            (
                A2aError::VersionNotSupported {
                    requested: "0.3".into(),
                },
                -32009,
                "VERSION_NOT_SUPPORTED",
                400,
                "FAILED_PRECONDITION",
            ),
            (
                A2aError::RateLimited {
                    retry_after_secs: 7,
                },
                -32603,
                "RATE_LIMITED",
                429,
                "RESOURCE_EXHAUSTED",
            ),
            (
                A2aError::PayloadTooLarge { limit_bytes: 1024 },
                -32600,
                "PAYLOAD_TOO_LARGE",
                413,
                "INVALID_ARGUMENT",
            ),
            (
                A2aError::RoleRefused {
                    role: "watcher".into(),
                    message: "a watcher cannot send messages".into(),
                },
                -32004,
                "ROLE_REFUSED",
                403,
                "PERMISSION_DENIED",
            ),
            (
                A2aError::StoreUnavailable("the disk is full".into()),
                -32603,
                "STORE_UNAVAILABLE",
                503,
                "UNAVAILABLE",
            ),
            (
                A2aError::TurnNotStored {
                    task_id: "t-1".into(),
                    reason: "the disk is full".into(),
                },
                -32603,
                "STORE_UNAVAILABLE",
                503,
                "UNAVAILABLE",
            ),
        ]
    }

    #[test]
    fn every_error_has_its_code_reason_and_http_mapping() {
        for (error, code, reason, http, status) in every_error() {
            assert_eq!(error.code(), code, "{error:?}");
            assert_eq!(error.reason(), reason, "{error:?}");
            assert_eq!(error.http_status().as_u16(), http, "{error:?}");
            assert_eq!(error.rpc_status(), status, "{error:?}");
        }
    }

    #[test]
    fn every_jsonrpc_error_carries_an_error_info_array() {
        for (error, code, reason, _, _) in every_error() {
            let json = serde_json::to_value(error.to_jsonrpc()).expect("serializes");
            assert_eq!(json["code"], json!(code));
            assert_eq!(json["message"], json!(error.to_string()));
            let data = json["data"].as_array().expect("data is an array");
            assert_eq!(data[0]["@type"], json!(ERROR_INFO_TYPE));
            assert_eq!(data[0]["reason"], json!(reason));
            assert_eq!(data[0]["domain"], json!("a2a-protocol.org"));
        }
    }

    #[test]
    fn task_not_found_matches_the_spec_examples() {
        let error = A2aError::TaskNotFound {
            task_id: "nonexistent-task-id".into(),
        };
        // Spec 9.5, without the example's timestamp metadata.
        assert_eq!(
            serde_json::to_value(error.to_jsonrpc()).expect("serializes"),
            json!({
              "code": -32001,
              "message": "Task not found: nonexistent-task-id",
              "data": [
                {
                  "@type": "type.googleapis.com/google.rpc.ErrorInfo",
                  "reason": "TASK_NOT_FOUND",
                  "domain": "a2a-protocol.org",
                  "metadata": {
                    "taskId": "nonexistent-task-id"
                  }
                }
              ]
            })
        );
        // Spec 11.6.
        let error = A2aError::TaskNotFound {
            task_id: "task-123".into(),
        };
        assert_eq!(
            serde_json::to_value(error.to_rest()).expect("serializes"),
            json!({
              "error": {
                "code": 404,
                "status": "NOT_FOUND",
                "message": "Task not found: task-123",
                "details": [
                  {
                    "@type": "type.googleapis.com/google.rpc.ErrorInfo",
                    "reason": "TASK_NOT_FOUND",
                    "domain": "a2a-protocol.org",
                    "metadata": {
                      "taskId": "task-123"
                    }
                  }
                ]
              }
            })
        );
    }

    #[test]
    fn spec_examples_parse_into_the_wire_types() {
        // Spec 9.5: the -32602 example with a BadRequest detail.
        let object: JsonRpcErrorObject = serde_json::from_value(json!({
            "code": -32602,
            "message": "Invalid parameters",
            "data": [
              {
                "@type": "type.googleapis.com/google.rpc.BadRequest",
                "fieldViolations": [
                  {
                    "field": "message.parts",
                    "description": "At least one part is required"
                  }
                ]
              }
            ]
        }))
        .expect("parses");
        assert!(
            matches!(&object.data[0], ErrorDetail::BadRequest(b) if b.field_violations[0].field == "message.parts")
        );

        // Spec 11.6, with its timestamp metadata.
        let body: RestErrorBody = serde_json::from_value(json!({
          "error": {
            "code": 404,
            "status": "NOT_FOUND",
            "message": "The specified task ID does not exist or is not accessible",
            "details": [
              {
                "@type": "type.googleapis.com/google.rpc.ErrorInfo",
                "reason": "TASK_NOT_FOUND",
                "domain": "a2a-protocol.org",
                "metadata": {
                  "taskId": "task-123",
                  "timestamp": "2025-11-09T10:30:00.000Z"
                }
              }
            ]
          }
        }))
        .expect("parses");
        let ErrorDetail::ErrorInfo(info) = &body.error.details[0] else {
            panic!("expected ErrorInfo");
        };
        assert_eq!(info.metadata["timestamp"], "2025-11-09T10:30:00.000Z");
    }

    #[test]
    fn invalid_params_with_a_field_adds_a_bad_request() {
        let error = A2aError::invalid_field(
            "message.parts",
            "message.parts must contain at least one part",
        );
        let json = serde_json::to_value(error.to_jsonrpc()).expect("serializes");
        assert_eq!(
            json["message"],
            json!("Invalid parameters: message.parts must contain at least one part")
        );
        assert_eq!(
            json["data"][0]["metadata"],
            json!({"field": "message.parts"})
        );
        assert_eq!(
            json["data"][1],
            json!({
                "@type": BAD_REQUEST_TYPE,
                "fieldViolations": [{
                    "field": "message.parts",
                    "description": "message.parts must contain at least one part"
                }]
            })
        );
        // Without a field there is only the ErrorInfo, without metadata.
        let json = serde_json::to_value(A2aError::invalid_params("bad").to_jsonrpc()).expect("ok");
        assert_eq!(json["data"].as_array().map(Vec::len), Some(1));
        assert_eq!(json["data"][0].get("metadata"), None);
    }

    #[test]
    fn app_specific_errors_carry_their_context() {
        let limited = A2aError::RateLimited {
            retry_after_secs: 7,
        };
        assert_eq!(limited.retry_after_secs(), Some(7));
        assert_eq!(limited.metadata()["retryAfterSeconds"], "7");
        let rest = serde_json::to_value(limited.to_rest()).expect("serializes");
        assert_eq!(rest["error"]["code"], json!(429));
        assert_eq!(rest["error"]["details"][0]["reason"], json!("RATE_LIMITED"));

        let too_large = A2aError::PayloadTooLarge { limit_bytes: 1024 };
        assert_eq!(too_large.metadata()["limitBytes"], "1024");
        assert_eq!(too_large.retry_after_secs(), None);

        let refused = A2aError::RoleRefused {
            role: "watcher".into(),
            message: "a watcher cannot send messages".into(),
        };
        assert_eq!(refused.to_string(), "a watcher cannot send messages");
        assert_eq!(refused.metadata()["role"], "watcher");

        let unavailable = A2aError::StoreUnavailable("the disk is full".into());
        assert_eq!(unavailable.retry_after_secs(), Some(STORE_RETRY_AFTER_SECS));
        assert!(
            unavailable
                .to_string()
                .contains("was not accepted: the disk is full")
        );
        assert_eq!(unavailable.metadata()["accepted"], "false");

        let unrecorded = A2aError::TurnNotStored {
            task_id: "t-1".into(),
            reason: "the disk is full".into(),
        };
        assert_eq!(unrecorded.retry_after_secs(), Some(STORE_RETRY_AFTER_SECS));
        assert_eq!(unrecorded.metadata()["accepted"], "true");
        assert_eq!(unrecorded.metadata()["taskId"], "t-1");
        let text = unrecorded.to_string();
        assert!(text.contains("accepted into task t-1"), "{text}");
        assert!(!text.contains("not accepted"), "{text}");
    }

    #[test]
    fn version_error_names_the_supported_version() {
        let error = A2aError::VersionNotSupported {
            requested: "0.5".into(),
        };
        assert_eq!(
            error.to_string(),
            "A2A protocol version 0.5 is not supported; this agent supports version 1.0 (send the header A2A-Version: 1.0)"
        );
        let info = error.error_info();
        assert_eq!(info.metadata["requestedVersion"], "0.5");
        assert_eq!(info.metadata["supportedVersions"], "1.0");
    }

    #[test]
    fn messages_are_human_readable() {
        let cases = [
            (
                A2aError::TaskNotCancelable {
                    task_id: "t1".into(),
                    state: TaskState::Completed,
                },
                "Task t1 cannot be canceled in state TASK_STATE_COMPLETED",
            ),
            (
                A2aError::ExtensionSupportRequired {
                    uris: vec!["a".into(), "b".into()],
                },
                "Extension support required: activate a, b with the A2A-Extensions header",
            ),
            (
                A2aError::MethodNotFound("tasks/get".into()),
                "Method not found: tasks/get",
            ),
        ];
        for (error, text) in cases {
            assert_eq!(error.to_string(), text);
        }
    }

    #[test]
    fn error_detail_round_trips() {
        for (error, ..) in every_error() {
            let json = serde_json::to_value(error.to_rest()).expect("serializes");
            let back: RestErrorBody = serde_json::from_value(json.clone()).expect("parses");
            assert_eq!(serde_json::to_value(back).expect("serializes"), json);
            let _: Value = json;
        }
    }
}
