//! Command completion over HTTP, for renderers: what may follow the text a participant
//! has typed so far. Not an A2A method; the commands extension declares these routes
//! ([`COMPLETION_TASK_PATH`], [`COMPLETION_PATH`]) in its params.
//!
//! * `POST /tasks/{id}/commands:complete` with `{"text": "/model f"}`: checked against the
//!   caller's role on that task, like the command itself would be (a stranger gets
//!   TaskNotFound, a watcher no suggestions).
//! * `POST /commands:complete`: for a conversation the caller would start (as its
//!   reporter, or as an admin).
//!
//! Both answer `{"role": "reporter", "suggestions": [{"value": "/model", "description":
//! "..."}]}` in the HTTP+JSON binding's shape (errors included), after the same
//! authentication and `A2A-Version` check as every A2A route. Renderers ask as the
//! participant types, and an argument suggestion runs a plugin's completion export, so
//! each participant has a token bucket of their own (`[completion]`), apart from the one
//! on message sends: typing never costs a send.

use axum::Router;
use axum::extract::rejection::PathRejection;
use axum::extract::{Path, State};
use axum::response::Response;
use axum::routing::post;
use serde::Deserialize;
use serde_json::Value;

use super::AppState;
use super::body::RestBody;
use super::rate_limit::RateLimits;
use super::respond::{RestError, rest_ok};
use super::rest::{RestContext, only};
use crate::a2a::error::A2aError;

/// The task-scoped completion route (axum path syntax).
pub const COMPLETION_TASK_PATH: &str = "/tasks/{id}/commands:complete";

/// The completion route for a conversation not yet started.
pub const COMPLETION_PATH: &str = "/commands:complete";

/// What a participant may ask of the completion routes (`[completion]`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CompletionLimits {
    /// Requests per participant and, for self-asserted callers, per address; the buckets
    /// are apart from those of sends.
    pub rate: RateLimits,
    /// The longest text completed, in bytes: a command line, not a document.
    pub max_text_bytes: usize,
}

/// The completion routes.
pub(crate) fn routes() -> Router<AppState> {
    Router::new()
        .route(COMPLETION_TASK_PATH, only(post(complete_in_task)))
        .route(COMPLETION_PATH, only(post(complete_new)))
}

/// The request body.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CompleteRequest {
    /// The message typed so far.
    text: String,
}

impl CompleteRequest {
    fn decode(
        body: serde_json::Map<String, Value>,
        max_text_bytes: usize,
    ) -> Result<Self, A2aError> {
        let request: CompleteRequest = serde_json::from_value(Value::Object(body))
            .map_err(|error| A2aError::invalid_field("text", format!("{error}")))?;
        if request.text.len() > max_text_bytes {
            return Err(A2aError::invalid_field(
                "text",
                format!(
                    "text is {} bytes; completion takes at most {max_text_bytes} \
                     ([completion] max_text_bytes)",
                    request.text.len()
                ),
            ));
        }
        Ok(request)
    }
}

/// `POST /tasks/{id}/commands:complete`.
async fn complete_in_task(
    State(state): State<AppState>,
    path: Result<Path<String>, PathRejection>,
    context: RestContext,
    RestBody(body): RestBody,
) -> Result<Response, RestError> {
    let Path(task_id) = path.map_err(|rejection| {
        A2aError::InvalidRequest(format!("invalid task path: {}", rejection.body_text()))
    })?;
    complete(&state, &context, Some(&task_id), body).await
}

/// `POST /commands:complete`.
async fn complete_new(
    State(state): State<AppState>,
    context: RestContext,
    RestBody(body): RestBody,
) -> Result<Response, RestError> {
    complete(&state, &context, None, body).await
}

async fn complete(
    state: &AppState,
    context: &RestContext,
    task_id: Option<&str>,
    body: serde_json::Map<String, Value>,
) -> Result<Response, RestError> {
    let request = CompleteRequest::decode(body, state.completion.max_text_bytes)?;
    let caller = context.caller()?;
    state
        .completion_limiter
        .check(context.identity().sender(&caller))?;
    let completion = state
        .service
        .complete_command(&caller, task_id, &request.text)
        .await?;
    Ok(rest_ok(&completion))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn decode(value: Value) -> Result<CompleteRequest, A2aError> {
        match value {
            Value::Object(map) => CompleteRequest::decode(map, 4096),
            _ => unreachable!("tests pass objects"),
        }
    }

    #[test]
    fn the_body_is_one_bounded_text_field() {
        assert_eq!(decode(json!({"text": "/st"})).expect("valid").text, "/st");
        let missing = decode(json!({})).err().expect("missing");
        assert!(missing.to_string().contains("text"), "{missing}");
        let unknown = decode(json!({"text": "/st", "cursor": 3}))
            .err()
            .expect("unknown");
        assert!(unknown.to_string().contains("cursor"), "{unknown}");
        let long = "x".repeat(4097);
        let too_long = decode(json!({ "text": long })).err().expect("too long");
        assert!(too_long.to_string().contains("at most 4096"), "{too_long}");
    }
}
