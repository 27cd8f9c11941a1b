//! The HTTP+JSON binding (spec 11).
//!
//! Routes are in the table of the [server module](super). Two of them carry a verb after a
//! colon, `/tasks/{id}:cancel` and `/tasks/{id}:subscribe`: the router sees one path
//! segment (`abc:cancel`), and [`split_verb`] takes the verb off its last `:`. An id may
//! itself contain colons; only a trailing `:cancel` or `:subscribe` is a verb, and the
//! router has already percent-decoded the segment.
//!
//! Parameters come from the path (the task id, which wins over a body or query `id`), the
//! query string (GET: spec 11.5) or the JSON body (POST), and decode exactly as JSON-RPC
//! `params` do. Every handler checks authentication and `A2A-Version` first
//! ([`RestContext`]). Errors use the `google.rpc.Status` shape with the status of spec 5.4;
//! an unknown route or method is 404 `NOT_FOUND` in that shape.

use axum::Router;
use axum::extract::rejection::PathRejection;
use axum::extract::{FromRequestParts, Path, State};
use axum::http::request::Parts;
use axum::http::{Method, Uri};
use axum::response::Response;
use axum::routing::{MethodRouter, get, post};
use serde_json::{Map, Value};

use super::AppState;
use super::auth::Identity;
use super::body::{QueryParams, RestBody, decode_params};
use super::card::extended_card_unavailable;
use super::push;
use super::respond::{RestError, rest_ok};
use super::sse;
use crate::a2a::error::A2aError;
use crate::a2a::types::{
    CancelTaskRequest, GetTaskRequest, ListTasksRequest, SendMessageRequest, SubscribeToTaskRequest,
};
use crate::a2a::version;

type Result<T = Response> = std::result::Result<T, RestError>;

/// The HTTP+JSON routes.
pub(crate) fn routes() -> Router<AppState> {
    Router::new()
        .route("/message:send", only(post(send_message)))
        .route("/message:stream", only(post(send_streaming_message)))
        .route("/tasks", only(get(list_tasks)))
        .route("/tasks/{id}", only(get(get_task).post(task_verb)))
        .route(
            "/tasks/{id}/pushNotificationConfigs",
            only(get(push::rest_list).post(push::rest_create)),
        )
        .route(
            "/tasks/{id}/pushNotificationConfigs/{config_id}",
            only(get(push::rest_get).delete(push::rest_delete)),
        )
        .route("/extendedAgentCard", only(get(extended_agent_card)))
}

/// A route's other HTTP methods are unknown routes too, in the REST error shape (axum's
/// own 405 would have an empty body).
pub(crate) fn only(router: MethodRouter<AppState>) -> MethodRouter<AppState> {
    router.fallback(not_found)
}

/// Any request no route matches.
pub(crate) async fn not_found(method: Method, uri: Uri) -> RestError {
    A2aError::MethodNotFound(format!("{method} {}", uri.path())).into()
}

/// An authenticated request at a supported protocol version.
pub(crate) struct RestContext {
    identity: Identity,
}

impl RestContext {
    /// The caller of a request that carries no message.
    pub(crate) fn caller(&self) -> std::result::Result<crate::task::Caller, A2aError> {
        self.identity.caller(None)
    }

    /// Who the request came from, as the rate limits see it.
    pub(crate) fn identity(&self) -> &Identity {
        &self.identity
    }
}

impl FromRequestParts<AppState> for RestContext {
    type Rejection = RestError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self> {
        let identity = Identity::from_request_parts(parts, state).await?;
        version::check_request(&parts.headers, parts.uri.query())?;
        Ok(RestContext { identity })
    }
}

/// A verb after the last `:` of a task path segment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TaskVerb {
    Cancel,
    Subscribe,
}

/// Splits `abc:cancel` into (`abc`, Cancel); a segment without a known verb is all id.
pub(crate) fn split_verb(segment: &str) -> (&str, Option<TaskVerb>) {
    match segment.rsplit_once(':') {
        Some((id, "cancel")) => (id, Some(TaskVerb::Cancel)),
        Some((id, "subscribe")) => (id, Some(TaskVerb::Subscribe)),
        _ => (segment, None),
    }
}

/// The task id segment of the path.
fn task_segment(path: std::result::Result<Path<String>, PathRejection>) -> Result<String> {
    path.map(|Path(segment)| segment).map_err(|rejection| {
        A2aError::InvalidRequest(format!("invalid task path: {}", rejection.body_text())).into()
    })
}

/// `object` with `id` set to the task id of the path.
fn with_id(mut object: Map<String, Value>, id: &str) -> Value {
    object.insert("id".to_owned(), Value::String(id.to_owned()));
    Value::Object(object)
}

/// `POST /message:send`.
async fn send_message(
    State(state): State<AppState>,
    context: RestContext,
    RestBody(body): RestBody,
) -> Result {
    let request: SendMessageRequest = decode_params(&Value::Object(body))?;
    let caller = state.admit_send(&context.identity, &request)?;
    let response = state.service.send_message(&caller, request).await?;
    Ok(rest_ok(&response))
}

/// `POST /message:stream`.
async fn send_streaming_message(
    State(state): State<AppState>,
    context: RestContext,
    RestBody(body): RestBody,
) -> Result {
    let request: SendMessageRequest = decode_params(&Value::Object(body))?;
    let caller = state.admit_send(&context.identity, &request)?;
    let events = state
        .service
        .send_streaming_message(&caller, request)
        .await?;
    Ok(sse::rest(events, state.keep_alive))
}

/// `GET /tasks`.
async fn list_tasks(
    State(state): State<AppState>,
    context: RestContext,
    QueryParams(query): QueryParams,
) -> Result {
    let request: ListTasksRequest = decode_params(&Value::Object(query))?;
    let caller = context.identity.caller(None)?;
    Ok(rest_ok(&state.service.list_tasks(&caller, request).await?))
}

/// `GET /tasks/{id}` and `GET /tasks/{id}:subscribe`.
async fn get_task(
    State(state): State<AppState>,
    path: std::result::Result<Path<String>, PathRejection>,
    context: RestContext,
    QueryParams(query): QueryParams,
) -> Result {
    let segment = task_segment(path)?;
    match split_verb(&segment) {
        (id, None) => {
            let request: GetTaskRequest = decode_params(&with_id(query, id))?;
            let caller = context.identity.caller(None)?;
            Ok(rest_ok(&state.service.get_task(&caller, request).await?))
        }
        (id, Some(TaskVerb::Subscribe)) => subscribe(&state, &context, with_id(query, id)).await,
        (_, Some(TaskVerb::Cancel)) => {
            Err(A2aError::MethodNotFound(format!("GET /tasks/{segment} (cancel is POST)")).into())
        }
    }
}

/// `POST /tasks/{id}:cancel` and `POST /tasks/{id}:subscribe`.
async fn task_verb(
    State(state): State<AppState>,
    path: std::result::Result<Path<String>, PathRejection>,
    context: RestContext,
    RestBody(body): RestBody,
) -> Result {
    let segment = task_segment(path)?;
    match split_verb(&segment) {
        (id, Some(TaskVerb::Cancel)) => {
            let request: CancelTaskRequest = decode_params(&with_id(body, id))?;
            let caller = context.identity.caller(None)?;
            Ok(rest_ok(&state.service.cancel_task(&caller, request).await?))
        }
        (id, Some(TaskVerb::Subscribe)) => subscribe(&state, &context, with_id(body, id)).await,
        (_, None) => Err(A2aError::MethodNotFound(format!("POST /tasks/{segment}")).into()),
    }
}

async fn subscribe(state: &AppState, context: &RestContext, params: Value) -> Result {
    let request: SubscribeToTaskRequest = decode_params(&params)?;
    let caller = context.identity.caller(None)?;
    let events = state.service.subscribe(&caller, request).await?;
    Ok(sse::rest(events, state.keep_alive))
}

/// `GET /extendedAgentCard`.
async fn extended_agent_card(_: RestContext) -> RestError {
    extended_card_unavailable().into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verbs_come_off_the_last_colon() {
        assert_eq!(split_verb("abc:cancel"), ("abc", Some(TaskVerb::Cancel)));
        assert_eq!(
            split_verb("abc:subscribe"),
            ("abc", Some(TaskVerb::Subscribe))
        );
        assert_eq!(
            split_verb("urn:task:1:cancel"),
            ("urn:task:1", Some(TaskVerb::Cancel))
        );
        assert_eq!(split_verb("abc"), ("abc", None));
        assert_eq!(split_verb("urn:task:1"), ("urn:task:1", None));
        assert_eq!(split_verb("abc:Cancel"), ("abc:Cancel", None));
        assert_eq!(split_verb(":cancel"), ("", Some(TaskVerb::Cancel)));
    }
}
