//! Request input shared by both bindings: bounded JSON bodies, query strings, and the
//! decoding and validation of operation parameters.
//!
//! Rules, the same for both bindings:
//! * A body larger than the limit is refused before it is parsed: at once when
//!   `Content-Length` says so, otherwise as soon as the limit is crossed while reading.
//! * A body must arrive within `[limits] body_read_timeout_secs`: a client trickling it
//!   would otherwise keep its connection busy, out of reach of the connection cap's
//!   eviction of idle connections, for as long as it likes.
//! * A non-empty body must be declared JSON: `application/json` or `application/a2a+json`
//!   (spec 9.1 and 11.1; both are accepted on either binding). Anything else, or no
//!   `Content-Type` at all, is ContentTypeNotSupported: HTTP 415 Unsupported Media Type in
//!   HTTP+JSON (RFC 9110 15.5.16, and the 5.4 table of the A2A 1.0 text the conformance kit
//!   follows), -32005 in JSON-RPC.
//! * Parameters decode through [`types::decode`] and the request type's `validate`, so a
//!   wrong field is InvalidParams naming it by its JSON path in either binding.

use std::time::Duration;

use axum::body::Bytes;
use axum::extract::{FromRequest, FromRequestParts, Query, Request};
use axum::http::header::{CONTENT_LENGTH, CONTENT_TYPE};
use axum::http::request::Parts;
use axum::http::{HeaderMap, StatusCode};
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use super::AppState;
use super::respond::RestError;
use crate::a2a::error::A2aError;
use crate::a2a::types::{
    self, CancelTaskRequest, DeleteTaskPushNotificationConfigRequest,
    GetTaskPushNotificationConfigRequest, GetTaskRequest, ListTaskPushNotificationConfigsRequest,
    ListTasksRequest, SendMessageRequest, SubscribeToTaskRequest, TaskPushNotificationConfig,
};

/// The A2A media type (spec 14.1), accepted on requests.
pub(crate) const A2A_JSON: &str = "application/a2a+json";

/// The media type of every JSON answer, in both bindings.
pub(crate) const JSON: &str = "application/json";

/// Query parameters that are booleans in their request type; every other parameter is
/// passed on as a string, which the integer and enum decoders accept.
const BOOLEAN_PARAMETERS: [&str; 1] = ["includeArtifacts"];

/// How much of a body is read, and for how long.
#[derive(Clone, Copy, Debug)]
pub(crate) struct BodyLimits {
    pub(crate) max_bytes: usize,
    pub(crate) read_timeout: Duration,
}

/// Reads a request body within `limits` that, if not empty, is declared JSON.
pub(crate) async fn read_json_body(
    request: Request,
    limits: BodyLimits,
) -> Result<Bytes, A2aError> {
    let limit = limits.max_bytes;
    let declared_json = check_content_type(request.headers())?;
    if declared_length(request.headers()).is_some_and(|length| length > limit as u64) {
        return Err(too_large(limit));
    }
    // The limit itself is enforced by the `DefaultBodyLimit` layer on the router.
    let read = tokio::time::timeout(limits.read_timeout, Bytes::from_request(request, &()))
        .await
        .map_err(|_| {
            A2aError::InvalidRequest(format!(
                "the request body did not arrive within {} s (`[limits] body_read_timeout_secs`)",
                limits.read_timeout.as_secs()
            ))
        })?;
    let bytes = read.map_err(|rejection| match rejection.status() {
        StatusCode::PAYLOAD_TOO_LARGE => too_large(limit),
        _ => A2aError::InvalidRequest(format!(
            "the request body could not be read: {}",
            rejection.body_text()
        )),
    })?;
    if !bytes.is_empty() && !declared_json {
        return Err(unsupported_media_type("none"));
    }
    Ok(bytes)
}

/// Whether the request declares a JSON body; an error if it declares something else.
fn check_content_type(headers: &HeaderMap) -> Result<bool, A2aError> {
    let Some(value) = headers.get(CONTENT_TYPE) else {
        return Ok(false);
    };
    let essence = value
        .to_str()
        .unwrap_or_default()
        .split(';')
        .next()
        .unwrap_or_default()
        .trim()
        .to_ascii_lowercase();
    if essence == JSON || essence == A2A_JSON {
        Ok(true)
    } else {
        Err(unsupported_media_type(&String::from_utf8_lossy(
            value.as_bytes(),
        )))
    }
}

/// A request body of a media type other than JSON. The type is echoed back (it names
/// what the client sent), cut short so a client cannot make the answer arbitrarily long.
fn unsupported_media_type(declared: &str) -> A2aError {
    let declared: String = declared
        .chars()
        .filter(|c| !c.is_control())
        .take(64)
        .collect();
    A2aError::ContentTypeNotSupported(declared)
}

fn declared_length(headers: &HeaderMap) -> Option<u64> {
    headers.get(CONTENT_LENGTH)?.to_str().ok()?.parse().ok()
}

fn too_large(limit: usize) -> A2aError {
    A2aError::PayloadTooLarge {
        limit_bytes: limit as u64,
    }
}

/// A request type's own checks of required fields and ranges.
pub(crate) trait Validate {
    fn validate(&self) -> Result<(), A2aError>;
}

macro_rules! validated_by_inherent_method {
    ($($request:ty),* $(,)?) => {$(
        impl Validate for $request {
            fn validate(&self) -> Result<(), A2aError> {
                <$request>::validate(self)
            }
        }
    )*};
}

validated_by_inherent_method!(
    SendMessageRequest,
    GetTaskRequest,
    ListTasksRequest,
    CancelTaskRequest,
    SubscribeToTaskRequest,
    TaskPushNotificationConfig,
    GetTaskPushNotificationConfigRequest,
    ListTaskPushNotificationConfigsRequest,
    DeleteTaskPushNotificationConfigRequest,
);

/// Decodes and validates an operation's parameters.
pub(crate) fn decode_params<T: DeserializeOwned + Validate>(params: &Value) -> Result<T, A2aError> {
    let request: T = types::decode(params)?;
    request.validate()?;
    Ok(request)
}

/// An HTTP+JSON request body as a JSON object; an empty body is an empty object, so
/// requests without required body fields (cancel, subscribe) may omit it.
pub(crate) struct RestBody(pub(crate) Map<String, Value>);

impl FromRequest<AppState> for RestBody {
    type Rejection = RestError;

    async fn from_request(request: Request, state: &AppState) -> Result<Self, Self::Rejection> {
        let bytes = read_json_body(request, state.body).await?;
        if bytes.is_empty() {
            return Ok(RestBody(Map::new()));
        }
        // Before the body becomes values: their number, not its bytes, is what costs.
        state
            .message_limits
            .scan(&bytes)
            .map_err(|(_, refused)| RestError::from(refused))?;
        match serde_json::from_slice(&bytes) {
            Ok(Value::Object(object)) => Ok(RestBody(object)),
            Ok(_) => Err(A2aError::InvalidRequest(
                "the request body must be a JSON object".to_owned(),
            )
            .into()),
            Err(error) => Err(A2aError::JsonParse(error.to_string()).into()),
        }
    }
}

/// An HTTP+JSON query string as a JSON object of request fields (spec 11.5: camelCase
/// names; booleans as `true`/`false`). A parameter given twice is an error rather than a
/// silent choice between the two values.
pub(crate) struct QueryParams(pub(crate) Map<String, Value>);

impl<S: Send + Sync> FromRequestParts<S> for QueryParams {
    type Rejection = RestError;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Self::Rejection> {
        let Query(pairs) = Query::<Vec<(String, String)>>::try_from_uri(&parts.uri)
            .map_err(|rejection| A2aError::InvalidRequest(rejection.body_text()))?;
        query_object(pairs)
            .map(QueryParams)
            .map_err(RestError::from)
    }
}

fn query_object(pairs: Vec<(String, String)>) -> Result<Map<String, Value>, A2aError> {
    let mut object = Map::new();
    for (name, value) in pairs {
        let value = match value.as_str() {
            "true" if BOOLEAN_PARAMETERS.contains(&name.as_str()) => Value::Bool(true),
            "false" if BOOLEAN_PARAMETERS.contains(&name.as_str()) => Value::Bool(false),
            _ => Value::String(value),
        };
        if object.contains_key(&name) {
            return Err(A2aError::invalid_field(
                &name,
                format!("query parameter {name} is given more than once"),
            ));
        }
        object.insert(name, value);
    }
    Ok(object)
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::body::Body;
    use serde_json::json;

    fn limits(max_bytes: usize) -> BodyLimits {
        BodyLimits {
            max_bytes,
            read_timeout: Duration::from_secs(5),
        }
    }

    fn request(content_type: Option<&str>, body: &'static str) -> Request {
        let mut builder = Request::builder().method("POST").uri("/");
        if let Some(content_type) = content_type {
            builder = builder.header(CONTENT_TYPE, content_type);
        }
        builder.body(Body::from(body)).expect("request")
    }

    #[tokio::test]
    async fn json_content_types_are_accepted() {
        for content_type in [
            "application/json",
            "application/json; charset=utf-8",
            "Application/A2A+JSON",
        ] {
            let bytes = read_json_body(request(Some(content_type), "{}"), limits(100))
                .await
                .expect(content_type);
            assert_eq!(&bytes[..], b"{}");
        }
        // Nothing to declare without a body.
        assert!(read_json_body(request(None, ""), limits(100)).await.is_ok());
    }

    #[tokio::test]
    async fn other_content_types_are_unsupported_media_types() {
        for content_type in [
            Some("text/plain"),
            Some("application/x-www-form-urlencoded"),
            None,
        ] {
            let error = read_json_body(request(content_type, "{}"), limits(100))
                .await
                .expect_err("refused");
            assert_eq!(error.code(), -32005, "{content_type:?}");
            assert_eq!(error.http_status(), StatusCode::UNSUPPORTED_MEDIA_TYPE);
            assert!(error.to_string().contains("Content type"), "{error}");
        }
    }

    #[tokio::test]
    async fn a_declared_length_over_the_limit_is_refused_unread() {
        let request = Request::builder()
            .method("POST")
            .uri("/")
            .header(CONTENT_TYPE, "application/json")
            .header(CONTENT_LENGTH, "101")
            .body(Body::empty())
            .expect("request");
        let error = read_json_body(request, limits(100))
            .await
            .expect_err("too large");
        assert_eq!(error, A2aError::PayloadTooLarge { limit_bytes: 100 });
    }

    #[tokio::test(start_paused = true)]
    async fn a_body_that_never_arrives_is_refused_at_its_deadline() {
        let never = tokio_stream::pending::<Result<Bytes, std::io::Error>>();
        let request = Request::builder()
            .method("POST")
            .uri("/")
            .header(CONTENT_TYPE, "application/json")
            .body(Body::from_stream(never))
            .expect("request");
        let error = read_json_body(request, limits(100))
            .await
            .expect_err("timed out");
        assert_eq!(error.code(), -32600);
        assert!(
            error.to_string().contains("body_read_timeout_secs"),
            "{error}"
        );
    }

    #[test]
    fn query_strings_become_request_objects() {
        let object = query_object(vec![
            ("pageSize".into(), "10".into()),
            ("includeArtifacts".into(), "true".into()),
            ("contextId".into(), "true".into()),
        ])
        .expect("valid");
        assert_eq!(
            Value::Object(object),
            json!({"pageSize": "10", "includeArtifacts": true, "contextId": "true"})
        );
        let error = query_object(vec![
            ("status".into(), "a".into()),
            ("status".into(), "b".into()),
        ])
        .expect_err("twice");
        assert_eq!(error.code(), -32602);
    }

    #[test]
    fn parameters_are_decoded_then_validated() {
        let request: ListTasksRequest =
            decode_params(&json!({"pageSize": "10", "includeArtifacts": true})).expect("valid");
        assert_eq!(request.page_size, Some(10));
        let error =
            decode_params::<ListTasksRequest>(&json!({"pageSize": "500"})).expect_err("too large");
        assert!(error.to_string().contains("pageSize"), "{error}");
        let error = decode_params::<GetTaskRequest>(&json!({})).expect_err("no id");
        assert_eq!(error.to_string(), "Invalid parameters: id is required");
    }
}
