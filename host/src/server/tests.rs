//! In-process tests of the whole router: every error path of both bindings, auth, rate
//! limits, version negotiation, body limits, REST routing, and the agent card.

use std::sync::OnceLock;
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::http::header::{CONTENT_TYPE, ETAG, IF_NONE_MATCH, RETRY_AFTER, WWW_AUTHENTICATE};
use axum::http::{HeaderMap, Request, StatusCode, request};
use serde_json::{Value, json};
use tower::ServiceExt;

use super::{ConnectionLimits, MessageLimits, Rate, RateLimits, ServerSettings, app};
use crate::commands::{CommandRegistry, Registries};
use crate::model::Models;
use crate::plugins::PluginLoader;
use crate::plugins::wasm::{RuntimeConfig, WasmRuntime};
use crate::task::{TaskService, TaskSettings};

const LIMIT: usize = 4096;

/// The `Host` of every in-process request: the server answers loopback names only.
const HOST: &str = "localhost:4000";

fn settings() -> ServerSettings {
    ServerSettings {
        bound: "127.0.0.1:4000".parse().expect("address"),
        tls: false,
        tokens: Default::default(),
        max_body_bytes: LIMIT,
        body_read_timeout: Duration::from_secs(30),
        admins: Vec::new(),
        public_names: Vec::new(),
        allowed_origins: Vec::new(),
        message_limits: MessageLimits {
            max_parts: 100,
            max_json_depth: 32,
            max_json_values: 10_000,
        },
        rate_limits: RateLimits {
            per_participant: Rate {
                burst: 100,
                per_second: 100.0,
            },
            per_address: Rate {
                burst: 1000,
                per_second: 1000.0,
            },
            max_buckets: 10_000,
        },
        completion: super::CompletionLimits {
            rate: RateLimits {
                per_participant: Rate {
                    burst: 100,
                    per_second: 100.0,
                },
                per_address: Rate {
                    burst: 1000,
                    per_second: 1000.0,
                },
                max_buckets: 10_000,
            },
            max_text_bytes: 4096,
        },
        connection_limits: ConnectionLimits {
            max_connections: 512,
            header_read_timeout: Duration::from_secs(30),
            tls_handshake_timeout: Duration::from_secs(10),
        },
        keep_alive: Duration::from_secs(15),
        grpc: None,
    }
}

fn service(registry: CommandRegistry) -> TaskService {
    TaskService::new(
        TaskSettings {
            default_model: "offline-echo".into(),
            selectable_models: vec!["offline-echo".into(), "offline-large".into()],
            default_effort: "medium".into(),
            admins: Vec::new(),
            ..TaskSettings::default()
        },
        Registries::new(registry),
        Models::offline(),
    )
}

fn server() -> Router {
    server_with(settings())
}

fn server_with(settings: ServerSettings) -> Router {
    app(service(CommandRegistry::default()), settings)
}

fn with_tokens() -> Router {
    let mut settings = settings();
    settings.tokens = [("tok-alice".to_owned(), "alice".to_owned())].into();
    server_with(settings)
}

/// The built-in plugin's registry, compiled once for the whole test binary.
fn builtin_registry() -> CommandRegistry {
    static REGISTRY: OnceLock<CommandRegistry> = OnceLock::new();
    REGISTRY
        .get_or_init(|| {
            let runtime = WasmRuntime::new(RuntimeConfig { cache_dir: None }).expect("runtime");
            let loaded = PluginLoader::new(runtime).load(None, CommandRegistry::builder());
            assert!(!loaded.report.has_problems(), "{}", loaded.report);
            loaded.registry
        })
        .clone()
}

struct Reply {
    status: StatusCode,
    headers: HeaderMap,
    body: Value,
}

impl Reply {
    fn header(&self, name: impl axum::http::header::AsHeaderName) -> &str {
        self.headers
            .get(name)
            .and_then(|value| value.to_str().ok())
            .unwrap_or("")
    }

    /// JSON-RPC: the error code and ErrorInfo reason.
    fn rpc_error(&self) -> (i64, &str) {
        let error = &self.body["error"];
        assert_eq!(
            error["data"][0]["@type"],
            json!("type.googleapis.com/google.rpc.ErrorInfo"),
            "{}",
            self.body
        );
        assert_eq!(
            error["data"][0]["domain"],
            json!("a2a-protocol.org"),
            "{}",
            self.body
        );
        (
            error["code"].as_i64().unwrap_or_default(),
            error["data"][0]["reason"].as_str().unwrap_or_default(),
        )
    }

    /// HTTP+JSON: the ErrorInfo reason, after checking the error shape.
    fn rest_reason(&self) -> &str {
        let error = &self.body["error"];
        assert_eq!(error["code"], json!(self.status.as_u16()), "{}", self.body);
        assert!(error["status"].is_string(), "{}", self.body);
        assert!(error["message"].is_string(), "{}", self.body);
        assert_eq!(
            error["details"][0]["domain"],
            json!("a2a-protocol.org"),
            "{}",
            self.body
        );
        error["details"][0]["reason"].as_str().unwrap_or_default()
    }
}

async fn send(app: &Router, request: Request<Body>) -> Reply {
    let response = app.clone().oneshot(request).await.expect("infallible");
    let status = response.status();
    let headers = response.headers().clone();
    let bytes = axum::body::to_bytes(response.into_body(), usize::MAX)
        .await
        .expect("body");
    let body = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
    Reply {
        status,
        headers,
        body,
    }
}

/// A request with `A2A-Version: 1.0` and a JSON content type.
fn a2a(method: &str, path: &str) -> request::Builder {
    Request::builder()
        .header("host", HOST)
        .method(method)
        .uri(path)
        .header("a2a-version", "1.0")
        .header(CONTENT_TYPE, "application/json")
}

fn rpc_body(method: &str, params: Value) -> Body {
    Body::from(json!({"jsonrpc": "2.0", "id": 7, "method": method, "params": params}).to_string())
}

fn rpc(method: &str, params: Value) -> Request<Body> {
    a2a("POST", "/")
        .body(rpc_body(method, params))
        .expect("request")
}

fn rest(method: &str, path: &str, body: Value) -> Request<Body> {
    let body = if body.is_null() {
        Body::empty()
    } else {
        Body::from(body.to_string())
    };
    a2a(method, path).body(body).expect("request")
}

fn message(text: &str) -> Value {
    json!({"messageId": format!("m-{text}"), "role": "ROLE_USER", "parts": [{"text": text}]})
}

// ---------------------------------------------------------------------------------------
// JSON-RPC
// ---------------------------------------------------------------------------------------

#[tokio::test]
async fn jsonrpc_framing_errors_have_their_codes() {
    let app = server();
    let cases: [(&str, String, i64, &str, Value); 7] = [
        (
            "{\"jsonrpc\": ",
            "malformed".into(),
            -32700,
            "JSON_PARSE",
            Value::Null,
        ),
        ("[]", "batch".into(), -32600, "INVALID_REQUEST", Value::Null),
        (
            r#"{"jsonrpc": "1.0", "id": 7, "method": "GetTask"}"#,
            "1.0".into(),
            -32600,
            "INVALID_REQUEST",
            json!(7),
        ),
        (
            r#"{"jsonrpc": "2.0", "method": "GetTask"}"#,
            "notification".into(),
            -32600,
            "INVALID_REQUEST",
            Value::Null,
        ),
        (
            r#"{"jsonrpc": "2.0", "id": "x", "method": "FlyToTheMoon"}"#,
            "unknown".into(),
            -32601,
            "METHOD_NOT_FOUND",
            json!("x"),
        ),
        (
            r#"{"jsonrpc": "2.0", "id": 7, "method": "GetTask", "params": ["t"]}"#,
            "positional".into(),
            -32602,
            "INVALID_PARAMS",
            json!(7),
        ),
        (
            r#"{"jsonrpc": "2.0", "id": 7, "method": "GetTask", "params": {"id": 42}}"#,
            "wrong type".into(),
            -32602,
            "INVALID_PARAMS",
            json!(7),
        ),
    ];
    for (body, what, code, reason, id) in cases {
        let reply = send(
            &app,
            a2a("POST", "/").body(Body::from(body)).expect("request"),
        )
        .await;
        assert_eq!(reply.status, StatusCode::OK, "{what}");
        assert_eq!(reply.header(CONTENT_TYPE), "application/json", "{what}");
        assert_eq!(reply.body["jsonrpc"], json!("2.0"), "{what}");
        assert_eq!(reply.body["id"], id, "{what}: {}", reply.body);
        assert_eq!(reply.rpc_error(), (code, reason), "{what}: {}", reply.body);
    }
}

#[tokio::test]
async fn invalid_params_name_the_field() {
    let reply = send(
        &server(),
        rpc(
            "SendMessage",
            json!({"message": {"messageId": "m", "role": "ROLE_USER"}}),
        ),
    )
    .await;
    assert_eq!(reply.rpc_error(), (-32602, "INVALID_PARAMS"));
    let error = &reply.body["error"];
    assert_eq!(
        error["data"][1]["@type"],
        json!("type.googleapis.com/google.rpc.BadRequest")
    );
    assert_eq!(
        error["data"][1]["fieldViolations"][0]["field"],
        json!("message.parts")
    );

    let reply = send(
        &server(),
        rpc(
            "SendMessage",
            json!({"message": {"messageId": "m", "role": "ROLE_USER", "parts": [{"txt": "hi"}]}}),
        ),
    )
    .await;
    assert_eq!(
        reply.body["error"]["data"][1]["fieldViolations"][0]["field"],
        json!("message.parts[0]"),
        "{}",
        reply.body
    );
}

#[tokio::test]
async fn unsupported_versions_are_refused_with_the_request_id() {
    let app = server();
    let body = || rpc_body("ListTasks", json!({}));
    for version in [None, Some("0.3"), Some("2.0"), Some("1.1"), Some("")] {
        let mut request = Request::post("/")
            .header("host", HOST)
            .header(CONTENT_TYPE, "application/json");
        if let Some(version) = version {
            request = request.header("A2A-Version", version);
        }
        let reply = send(&app, request.body(body()).expect("request")).await;
        assert_eq!(reply.status, StatusCode::OK);
        assert_eq!(
            reply.rpc_error(),
            (-32009, "VERSION_NOT_SUPPORTED"),
            "{version:?}"
        );
        assert_eq!(reply.body["id"], json!(7));
    }
    let missing = send(
        &app,
        Request::post("/")
            .header("host", HOST)
            .header(CONTENT_TYPE, "application/json")
            .body(body())
            .expect("request"),
    )
    .await;
    assert_eq!(
        missing.body["error"]["data"][0]["metadata"]["requestedVersion"],
        json!("0.3")
    );
}

#[tokio::test]
async fn supported_versions_pass_by_header_or_query() {
    let app = server();
    // An unknown task is TaskNotFound only once the version is accepted.
    let method = "ListTaskPushNotificationConfigs";
    for version in ["1.0", "1.0.0", "1.0.7"] {
        let request = Request::post("/")
            .header("host", HOST)
            .header(CONTENT_TYPE, "application/json")
            .header("A2A-Version", version)
            .body(rpc_body(method, json!({"taskId": "t"})))
            .expect("request");
        assert_eq!(send(&app, request).await.rpc_error().0, -32001, "{version}");
    }
    let request = Request::post("/?A2A-Version=1.0")
        .header("host", HOST)
        .header(CONTENT_TYPE, "application/json")
        .body(rpc_body(method, json!({"taskId": "t"})))
        .expect("request");
    assert_eq!(send(&app, request).await.rpc_error().0, -32001);
}

#[tokio::test]
async fn an_old_client_calling_an_old_method_hears_about_the_version() {
    let request = Request::post("/")
        .header("host", HOST)
        .header(CONTENT_TYPE, "application/json")
        .body(rpc_body("message/send", json!({})))
        .expect("request");
    assert_eq!(send(&server(), request).await.rpc_error().0, -32009);
}

#[tokio::test]
async fn push_configuration_is_supported_and_extended_cards_are_not() {
    let app = server();
    for (method, params) in [
        (
            "CreateTaskPushNotificationConfig",
            json!({"taskId": "t", "url": "http://example.com/hook"}),
        ),
        (
            "GetTaskPushNotificationConfig",
            json!({"taskId": "t", "id": "c"}),
        ),
        ("ListTaskPushNotificationConfigs", json!({"taskId": "t"})),
        (
            "DeleteTaskPushNotificationConfig",
            json!({"taskId": "t", "id": "c"}),
        ),
    ] {
        let reply = send(&app, rpc(method, params)).await;
        assert_eq!(reply.rpc_error(), (-32001, "TASK_NOT_FOUND"), "{method}");
    }
    let reply = send(
        &app,
        rpc("CreateTaskPushNotificationConfig", json!({"taskId": "t"})),
    )
    .await;
    assert_eq!(
        reply.rpc_error(),
        (-32602, "INVALID_PARAMS"),
        "url is required"
    );
    // The card declares extendedAgentCard: false, so spec 3.3.4 wants UnsupportedOperation.
    let request = a2a("POST", "/")
        .body(Body::from(
            r#"{"jsonrpc": "2.0", "id": 6, "method": "GetExtendedAgentCard"}"#,
        ))
        .expect("request");
    let reply = send(&app, request).await;
    assert_eq!(reply.rpc_error(), (-32004, "UNSUPPORTED_OPERATION"));
    assert_eq!(reply.body["id"], json!(6));
}

#[tokio::test]
async fn jsonrpc_bodies_must_be_declared_json() {
    let app = server();
    for content_type in ["text/plain", "application/x-www-form-urlencoded"] {
        let request = Request::post("/")
            .header("host", HOST)
            .header("A2A-Version", "1.0")
            .header(CONTENT_TYPE, content_type)
            .body(rpc_body("ListTasks", json!({})))
            .expect("request");
        let reply = send(&app, request).await;
        assert_eq!(
            reply.rpc_error(),
            (-32005, "CONTENT_TYPE_NOT_SUPPORTED"),
            "{content_type}"
        );
        assert_eq!(
            reply.status,
            StatusCode::OK,
            "JSON-RPC errors travel with 200"
        );
        assert_eq!(
            reply.body["error"]["data"][0]["metadata"]["mediaType"],
            json!(content_type)
        );
    }
    let unlabelled = Request::post("/")
        .header("host", HOST)
        .header("A2A-Version", "1.0")
        .body(rpc_body("ListTasks", json!({})))
        .expect("request");
    assert_eq!(send(&app, unlabelled).await.rpc_error().0, -32005);
}

#[tokio::test]
async fn oversized_bodies_are_refused_before_parsing() {
    let app = server();
    let big = "x".repeat(LIMIT + 1);
    // Declared by Content-Length.
    let reply = send(
        &app,
        a2a("POST", "/")
            .body(Body::from(big.clone()))
            .expect("request"),
    )
    .await;
    assert_eq!(reply.status, StatusCode::OK);
    assert_eq!(reply.rpc_error(), (-32600, "PAYLOAD_TOO_LARGE"));
    assert_eq!(reply.body["id"], Value::Null);
    assert_eq!(
        reply.body["error"]["data"][0]["metadata"]["limitBytes"],
        json!("4096")
    );
    // Streamed without a length: caught while reading.
    let chunks = [big.clone(), big.clone()].map(Ok::<_, std::io::Error>);
    let streamed = a2a("POST", "/")
        .body(Body::from_stream(tokio_stream::iter(chunks)))
        .expect("request");
    assert_eq!(
        send(&app, streamed).await.rpc_error().1,
        "PAYLOAD_TOO_LARGE"
    );
    // REST: 413.
    let reply = send(
        &app,
        a2a("POST", "/message:send")
            .body(Body::from(big))
            .expect("request"),
    )
    .await;
    assert_eq!(reply.status, StatusCode::PAYLOAD_TOO_LARGE);
    assert_eq!(reply.rest_reason(), "PAYLOAD_TOO_LARGE");
    // Exactly at the limit is fine (it fails later, as JSON).
    let at_limit = "x".repeat(LIMIT);
    let reply = send(
        &app,
        a2a("POST", "/")
            .body(Body::from(at_limit))
            .expect("request"),
    )
    .await;
    assert_eq!(reply.rpc_error().0, -32700);
}

#[tokio::test]
async fn stream_establishment_errors_are_plain_responses() {
    let app = server();
    let reply = send(
        &app,
        rpc(
            "SendStreamingMessage",
            json!({"message": {"role": "ROLE_USER"}}),
        ),
    )
    .await;
    assert_eq!(reply.header(CONTENT_TYPE), "application/json");
    assert_eq!(reply.rpc_error().0, -32602);
    let reply = send(&app, rpc("SubscribeToTask", json!({"id": "no-such-task"}))).await;
    assert_eq!(reply.header(CONTENT_TYPE), "application/json");
    assert!(reply.body["error"].is_object(), "{}", reply.body);
    let reply = send(
        &app,
        rest("POST", "/tasks/no-such-task:subscribe", Value::Null),
    )
    .await;
    assert_eq!(reply.header(CONTENT_TYPE), "application/json");
    assert!(reply.status.is_client_error(), "{}", reply.status);
}

// ---------------------------------------------------------------------------------------
// Authentication and participants
// ---------------------------------------------------------------------------------------

#[tokio::test]
async fn with_tokens_jsonrpc_needs_a_valid_bearer() {
    let app = with_tokens();
    let push = || rpc_body("ListTaskPushNotificationConfigs", json!({"taskId": "t"}));
    for (authorization, challenge) in [
        (None, "Bearer realm=\"tiny-harness\""),
        (Some("Bearer nope"), "invalid_token"),
        (Some("Basic YTpi"), "invalid_request"),
    ] {
        let mut request = a2a("POST", "/");
        if let Some(authorization) = authorization {
            request = request.header("authorization", authorization);
        }
        let reply = send(&app, request.body(push()).expect("request")).await;
        assert_eq!(reply.status, StatusCode::UNAUTHORIZED, "{authorization:?}");
        assert!(
            reply.header(WWW_AUTHENTICATE).contains(challenge),
            "{authorization:?}"
        );
        assert_eq!(reply.rpc_error(), (-31401, "UNAUTHENTICATED"));
        assert_eq!(reply.body["id"], Value::Null);
    }
    let request = a2a("POST", "/")
        .header("authorization", "Bearer tok-alice")
        .body(push())
        .expect("request");
    assert_eq!(send(&app, request).await.rpc_error().0, -32001);
}

#[tokio::test]
async fn with_tokens_rest_needs_a_valid_bearer() {
    let app = with_tokens();
    let reply = send(
        &app,
        rest("GET", "/tasks/t/pushNotificationConfigs", Value::Null),
    )
    .await;
    assert_eq!(reply.status, StatusCode::UNAUTHORIZED);
    assert_eq!(reply.rest_reason(), "UNAUTHENTICATED");
    assert_eq!(reply.body["error"]["status"], json!("UNAUTHENTICATED"));
    assert_eq!(reply.header(CONTENT_TYPE), "application/json");
    assert!(reply.header(WWW_AUTHENTICATE).starts_with("Bearer"));

    let request = a2a("GET", "/tasks/t/pushNotificationConfigs")
        .header("authorization", "Bearer tok-alice")
        .body(Body::empty())
        .expect("request");
    assert_eq!(send(&app, request).await.rest_reason(), "TASK_NOT_FOUND");
}

#[tokio::test]
async fn authentication_comes_first() {
    // No token, no version, an oversized body: the answer is about the token (the origin
    // checks come before it, and pass: a JSON body is no cross-site "simple" request).
    let request = Request::post("/")
        .header("host", HOST)
        .header(CONTENT_TYPE, "application/json")
        .body(Body::from("x".repeat(LIMIT * 2)))
        .expect("request");
    assert_eq!(
        send(&with_tokens(), request).await.status,
        StatusCode::UNAUTHORIZED
    );
}

#[tokio::test]
async fn the_card_is_public_and_declares_the_bearer_scheme() {
    let reply = send(
        &with_tokens(),
        Request::get("/.well-known/agent-card.json")
            .header("host", HOST)
            .body(Body::empty())
            .expect("request"),
    )
    .await;
    assert_eq!(reply.status, StatusCode::OK);
    assert_eq!(
        reply.body["securitySchemes"]["bearer"]["httpAuthSecurityScheme"]["scheme"],
        json!("Bearer")
    );
    assert_eq!(
        reply.body["securityRequirements"][0]["schemes"]["bearer"],
        json!({"list": []})
    );
}

/// Sends `request`; true when the rate limiter refused it (with a `Retry-After`).
async fn limited(app: &Router, request: Request<Body>) -> bool {
    let reply = send(app, request).await;
    let refused = reply.reason() == Some("RATE_LIMITED");
    if refused {
        assert!(
            reply
                .header(RETRY_AFTER)
                .parse::<u64>()
                .is_ok_and(|s| s >= 1),
            "Retry-After"
        );
    }
    refused
}

#[tokio::test]
async fn each_participant_has_a_bucket_named_by_header_metadata_or_default() {
    let mut settings = settings();
    settings.rate_limits.per_participant = Rate {
        burst: 1,
        per_second: 0.001,
    };
    let app = server_with(settings);
    let by_header = |who: &str| {
        a2a("POST", "/")
            .header("x-participant-id", who)
            .body(rpc_body("SendMessage", json!({"message": message("hi")})))
            .expect("request")
    };
    let by_metadata = |who: &str| {
        let mut message = message("hi");
        message["metadata"] = json!({"participantId": who});
        rpc("SendMessage", json!({ "message": message }))
    };
    assert!(!limited(&app, by_header("alice")).await);
    assert!(limited(&app, by_header("alice")).await);
    // The header wins over metadata.
    let mut mixed = message("hi");
    mixed["metadata"] = json!({"participantId": "bob"});
    let request = a2a("POST", "/")
        .header("x-participant-id", "alice")
        .body(rpc_body("SendMessage", json!({ "message": mixed })))
        .expect("request");
    assert!(limited(&app, request).await);
    assert!(!limited(&app, by_metadata("bob")).await);
    assert!(limited(&app, by_metadata("bob")).await);
    // Nobody named: "local".
    assert!(!limited(&app, rpc("SendMessage", json!({"message": message("hi")}))).await);
    assert!(limited(&app, rpc("SendMessage", json!({"message": message("hi")}))).await);
    // Streaming sends and REST sends share the bucket; reads are never limited.
    assert!(limited(&app, by_header("alice")).await);
    let stream = a2a("POST", "/message:stream")
        .header("x-participant-id", "alice")
        .body(Body::from(json!({"message": message("hi")}).to_string()))
        .expect("request");
    assert!(limited(&app, stream).await);
    let list = a2a("POST", "/")
        .header("x-participant-id", "alice")
        .body(rpc_body("ListTasks", json!({})))
        .expect("request");
    assert_ne!(send(&app, list).await.reason(), Some("RATE_LIMITED"));
}

#[tokio::test]
async fn rest_rate_limit_is_429_with_retry_after() {
    let mut settings = settings();
    settings.rate_limits.per_participant = Rate {
        burst: 1,
        per_second: 0.5,
    };
    let app = server_with(settings);
    let request = || rest("POST", "/message:send", json!({"message": message("hi")}));
    assert!(!limited(&app, request()).await);
    let reply = send(&app, request()).await;
    assert_eq!(reply.status, StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(reply.rest_reason(), "RATE_LIMITED");
    assert_eq!(reply.body["error"]["status"], json!("RESOURCE_EXHAUSTED"));
    assert_eq!(reply.header(RETRY_AFTER), "2");
}

#[tokio::test]
async fn a_malformed_send_costs_no_token() {
    let mut settings = settings();
    settings.rate_limits.per_participant.burst = 1;
    let app = server_with(settings);
    let reply = send(&app, rpc("SendMessage", json!({"message": {}}))).await;
    assert_eq!(reply.rpc_error().0, -32602);
    assert!(!limited(&app, rpc("SendMessage", json!({"message": message("hi")}))).await);
}

#[tokio::test]
async fn an_invalid_participant_header_is_an_invalid_request() {
    let request = a2a("POST", "/")
        .header("x-participant-id", "x".repeat(500))
        .body(rpc_body("GetTask", json!({"id": "t"})))
        .expect("request");
    let reply = send(&server(), request).await;
    assert_eq!(reply.rpc_error(), (-32600, "INVALID_REQUEST"));
    assert_eq!(reply.body["id"], json!(7));
}

impl Reply {
    /// The ErrorInfo reason of an error in either binding's shape; `None` for a success.
    fn reason(&self) -> Option<&str> {
        let error = &self.body["error"];
        error["data"][0]["reason"]
            .as_str()
            .or_else(|| error["details"][0]["reason"].as_str())
    }
}

// ---------------------------------------------------------------------------------------
// HTTP+JSON
// ---------------------------------------------------------------------------------------

#[tokio::test]
async fn rest_task_paths_route_by_verb() {
    let app = server();
    // Routed to the operation: whatever the service says, it is not "no such route", and a
    // TaskNotFound names the id without its verb.
    for (method, path) in [
        ("GET", "/tasks/abc"),
        ("GET", "/tasks/abc?historyLength=2"),
        ("POST", "/tasks/abc:cancel"),
        ("POST", "/tasks/abc:subscribe"),
        ("GET", "/tasks/abc:subscribe"),
    ] {
        let reply = send(&app, rest(method, path, Value::Null)).await;
        let reason = reply.rest_reason().to_owned();
        assert_ne!(reason, "METHOD_NOT_FOUND", "{method} {path}");
        if reason == "TASK_NOT_FOUND" {
            assert_eq!(
                reply.body["error"]["details"][0]["metadata"]["taskId"],
                json!("abc")
            );
        }
    }
    // Not routes.
    for (method, path) in [
        ("POST", "/tasks/abc"),
        ("GET", "/tasks/abc:cancel"),
        ("POST", "/tasks/abc:frobnicate"),
        ("DELETE", "/tasks/abc"),
        ("GET", "/message:send"),
        ("PUT", "/tasks"),
        ("GET", "/tasks/abc/unknown"),
        ("GET", "/nowhere"),
        ("GET", "/"),
    ] {
        let reply = send(&app, rest(method, path, Value::Null)).await;
        assert_eq!(reply.status, StatusCode::NOT_FOUND, "{method} {path}");
        assert_eq!(reply.rest_reason(), "METHOD_NOT_FOUND", "{method} {path}");
        assert_eq!(reply.header(CONTENT_TYPE), "application/json");
    }
    // A verb without an id is a request without its required id.
    let reply = send(&app, rest("POST", "/tasks/:cancel", Value::Null)).await;
    assert_eq!(reply.status, StatusCode::BAD_REQUEST);
    assert_eq!(reply.rest_reason(), "INVALID_PARAMS");
}

#[tokio::test]
async fn rest_request_errors_have_the_status_shape() {
    let app = server();
    let cases: Vec<(Request<Body>, StatusCode, &str)> = vec![
        (
            a2a("POST", "/message:send")
                .body(Body::from("{nope"))
                .expect("request"),
            StatusCode::BAD_REQUEST,
            "JSON_PARSE",
        ),
        (
            rest("POST", "/message:send", json!([1])),
            StatusCode::BAD_REQUEST,
            "INVALID_REQUEST",
        ),
        (
            rest("POST", "/message:send", json!({})),
            StatusCode::BAD_REQUEST,
            "INVALID_PARAMS",
        ),
        (
            Request::post("/message:send")
                .header("host", HOST)
                .header(CONTENT_TYPE, "text/plain")
                .header("a2a-version", "1.0")
                .body(Body::from(json!({"message": message("hi")}).to_string()))
                .expect("request"),
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "CONTENT_TYPE_NOT_SUPPORTED",
        ),
        (
            Request::post("/message:send")
                .header("host", HOST)
                .header(CONTENT_TYPE, "application/json")
                .body(Body::from(json!({"message": message("hi")}).to_string()))
                .expect("request"),
            StatusCode::BAD_REQUEST,
            "VERSION_NOT_SUPPORTED",
        ),
        (
            rest("GET", "/tasks?pageSize=500", Value::Null),
            StatusCode::BAD_REQUEST,
            "INVALID_PARAMS",
        ),
        (
            rest("GET", "/tasks?includeArtifacts=maybe", Value::Null),
            StatusCode::BAD_REQUEST,
            "INVALID_PARAMS",
        ),
        (
            rest("GET", "/tasks?status=TASK_STATE_RUNNING", Value::Null),
            StatusCode::BAD_REQUEST,
            "INVALID_PARAMS",
        ),
        (
            rest("GET", "/tasks?pageSize=1&pageSize=2", Value::Null),
            StatusCode::BAD_REQUEST,
            "INVALID_PARAMS",
        ),
        (
            rest("GET", "/tasks/abc?historyLength=-1", Value::Null),
            StatusCode::BAD_REQUEST,
            "INVALID_PARAMS",
        ),
        (
            rest(
                "POST",
                "/tasks/t/pushNotificationConfigs",
                json!({"url": "http://x"}),
            ),
            StatusCode::NOT_FOUND,
            "TASK_NOT_FOUND",
        ),
        (
            rest("GET", "/tasks/t/pushNotificationConfigs", Value::Null),
            StatusCode::NOT_FOUND,
            "TASK_NOT_FOUND",
        ),
        (
            rest("GET", "/tasks/t/pushNotificationConfigs/c", Value::Null),
            StatusCode::NOT_FOUND,
            "TASK_NOT_FOUND",
        ),
        (
            rest("DELETE", "/tasks/t/pushNotificationConfigs/c", Value::Null),
            StatusCode::NOT_FOUND,
            "TASK_NOT_FOUND",
        ),
        (
            rest("GET", "/extendedAgentCard", Value::Null),
            StatusCode::BAD_REQUEST,
            "UNSUPPORTED_OPERATION",
        ),
    ];
    for (request, status, reason) in cases {
        let what = format!("{} {}", request.method(), request.uri());
        let reply = send(&app, request).await;
        assert_eq!(reply.status, status, "{what}: {}", reply.body);
        assert_eq!(reply.rest_reason(), reason, "{what}: {}", reply.body);
        assert_eq!(reply.header(CONTENT_TYPE), "application/json", "{what}");
    }
}

#[tokio::test]
async fn rest_versions_come_from_header_or_query() {
    let app = server();
    let path = "/tasks/t/pushNotificationConfigs";
    let bare = |uri: &str| {
        Request::get(uri)
            .header("host", HOST)
            .body(Body::empty())
            .expect("request")
    };
    assert_eq!(
        send(&app, bare(path)).await.rest_reason(),
        "VERSION_NOT_SUPPORTED"
    );
    let reply = send(&app, bare(&format!("{path}?A2A-Version=1.0"))).await;
    assert_eq!(reply.rest_reason(), "TASK_NOT_FOUND");
    let old = Request::get(path)
        .header("host", HOST)
        .header("a2a-version", "0.3")
        .body(Body::empty())
        .expect("request");
    let reply = send(&app, old).await;
    assert_eq!(reply.status, StatusCode::BAD_REQUEST);
    assert_eq!(reply.rest_reason(), "VERSION_NOT_SUPPORTED");
}

#[tokio::test]
async fn activated_extensions_are_echoed() {
    let request = a2a("POST", "/")
        .header(
            "A2A-Extensions",
            "https://tiny-harness.dev/extensions/status/v1, https://example.com/other/v1",
        )
        .body(rpc_body("ListTaskPushNotificationConfigs", json!({})))
        .expect("request");
    let reply = send(&server(), request).await;
    assert_eq!(
        reply.header("a2a-extensions"),
        "https://tiny-harness.dev/extensions/status/v1"
    );
    let plain = send(&server(), rpc("ListTaskPushNotificationConfigs", json!({}))).await;
    assert!(plain.headers.get("a2a-extensions").is_none());
}

// ---------------------------------------------------------------------------------------
// The agent card
// ---------------------------------------------------------------------------------------

fn card_request() -> Request<Body> {
    Request::get("/.well-known/agent-card.json")
        .header("host", HOST)
        .body(Body::empty())
        .expect("request")
}

#[tokio::test]
async fn the_card_describes_this_server() {
    let reply = send(
        &app(service(builtin_registry()), settings()),
        card_request(),
    )
    .await;
    assert_eq!(reply.status, StatusCode::OK);
    let card = &reply.body;
    assert_eq!(card["name"], json!("tiny-harness"));
    assert_eq!(card["version"], json!(env!("CARGO_PKG_VERSION")));
    assert_eq!(
        card["supportedInterfaces"],
        json!([
            {"url": "http://127.0.0.1:4000", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"},
            {"url": "http://127.0.0.1:4000", "protocolBinding": "HTTP+JSON", "protocolVersion": "1.0"},
        ])
    );
    let capabilities = &card["capabilities"];
    assert_eq!(capabilities["streaming"], json!(true));
    assert_eq!(capabilities["pushNotifications"], json!(true));
    assert_eq!(capabilities["extendedAgentCard"], json!(false));
    assert_eq!(
        card["defaultInputModes"],
        json!(["text/plain", "application/json"])
    );
    assert_eq!(
        card["defaultOutputModes"],
        json!(["text/plain", "application/json"])
    );
    assert_eq!(card["skills"][0]["id"], json!("conversation"));
    assert!(card.get("securitySchemes").is_none());

    let extensions = capabilities["extensions"].as_array().expect("extensions");
    let uris: Vec<&str> = extensions
        .iter()
        .filter_map(|e| e["uri"].as_str())
        .collect();
    assert_eq!(
        uris,
        [super::STATUS_EXTENSION_URI, super::COMMANDS_EXTENSION_URI]
    );
    assert_eq!(
        extensions[0]["params"],
        json!({
            "metadataKey": "sub_state",
            "values": ["awaiting-next-message", "awaiting-answer", "awaiting-approval"],
            "lifecycleMetadataKey": "lifecycle",
            "lifecycles": ["conversation", "task"],
            "defaultLifecycle": "conversation",
        })
    );
    let commands = extensions[1]["params"]["commands"]
        .as_array()
        .expect("commands");
    let names: Vec<&str> = commands.iter().filter_map(|c| c["name"].as_str()).collect();
    let expected: Vec<String> = builtin_registry()
        .commands()
        .map(|c| c.spec.name.clone())
        .collect();
    assert_eq!(names, expected);
    assert!(
        names.contains(&"status") && names.contains(&"model"),
        "{names:?}"
    );
    for command in commands {
        for key in ["description", "usage"] {
            assert!(
                command[key].as_str().is_some_and(|s| !s.is_empty()),
                "{command}"
            );
        }
        assert!(
            command["roles"].as_array().is_some_and(|r| !r.is_empty()),
            "{command}"
        );
        for argument in command["arguments"].as_array().expect("arguments") {
            assert!(
                argument["name"].is_string() && argument["type"].is_string(),
                "{argument}"
            );
            assert!(argument["required"].is_boolean(), "{argument}");
            if argument["type"] == json!("enum") {
                assert!(argument["values"].is_array(), "{argument}");
            }
        }
    }
}

#[tokio::test]
async fn the_card_follows_registry_reloads() {
    let service = service(builtin_registry());
    let app = app(service.clone(), settings());
    let count = |reply: &Reply| {
        reply.body["capabilities"]["extensions"][1]["params"]["commands"]
            .as_array()
            .map(Vec::len)
    };
    assert!(count(&send(&app, card_request()).await).is_some_and(|n| n > 0));
    service.registries().replace(CommandRegistry::default());
    assert_eq!(count(&send(&app, card_request()).await), Some(0));
}

#[tokio::test]
async fn the_card_needs_no_version_and_supports_conditional_requests() {
    let app = server();
    let first = send(&app, card_request()).await;
    assert_eq!(first.status, StatusCode::OK);
    assert!(first.header("cache-control").contains("max-age"));
    let etag = first.header(ETAG).to_owned();
    assert!(etag.starts_with('"') && etag.len() > 10, "{etag}");
    let again = Request::get("/.well-known/agent-card.json")
        .header("host", HOST)
        .header(IF_NONE_MATCH, &etag)
        .body(Body::empty())
        .expect("request");
    let reply = send(&app, again).await;
    assert_eq!(reply.status, StatusCode::NOT_MODIFIED);
    assert_eq!(reply.header(ETAG), etag);
    // Last-Modified, and If-Modified-Since with it.
    let modified = first.header("last-modified").to_owned();
    let parsed = httpdate::parse_http_date(&modified).expect("an HTTP date");
    let by_date = |date: String| {
        Request::get("/.well-known/agent-card.json")
            .header("host", HOST)
            .header("if-modified-since", date)
            .body(Body::empty())
            .expect("request")
    };
    let reply = send(&app, by_date(modified.clone())).await;
    assert_eq!(reply.status, StatusCode::NOT_MODIFIED);
    assert_eq!(reply.header("last-modified"), modified);
    let earlier = httpdate::fmt_http_date(parsed - std::time::Duration::from_secs(1));
    assert_eq!(send(&app, by_date(earlier)).await.status, StatusCode::OK);
}

#[tokio::test]
async fn the_card_on_an_unspecified_address_uses_the_host() {
    let mut settings = settings();
    settings.bound = "0.0.0.0:8080".parse().expect("address");
    settings.tokens = [("t".to_owned(), "alice".to_owned())].into();
    settings.public_names = vec!["agent.example".to_owned()];
    let request = Request::get("/.well-known/agent-card.json")
        .header("host", "agent.example:8080")
        .body(Body::empty())
        .expect("request");
    let reply = send(&server_with(settings), request).await;
    assert_eq!(
        reply.body["supportedInterfaces"][0]["url"],
        json!("http://agent.example:8080")
    );
}

// ---------------------------------------------------------------------------------------
// Happy paths, through the real task service and offline model
// ---------------------------------------------------------------------------------------

/// The `data:` payloads of an SSE response, after checking it is one.
async fn sse_events(app: &Router, request: Request<Body>) -> Vec<Value> {
    let response = app.clone().oneshot(request).await.expect("infallible");
    assert_eq!(response.status(), StatusCode::OK);
    let content_type = response.headers().get(CONTENT_TYPE).cloned();
    let bytes = axum::body::to_bytes(response.into_body(), usize::MAX)
        .await
        .expect("body");
    let text = String::from_utf8_lossy(&bytes).into_owned();
    assert_eq!(
        content_type.as_ref().and_then(|v| v.to_str().ok()),
        Some("text/event-stream"),
        "{text}"
    );
    text.lines()
        .filter_map(|line| line.strip_prefix("data: "))
        .map(|data| serde_json::from_str(data).expect("JSON data"))
        .collect()
}

fn as_alice(request: request::Builder) -> request::Builder {
    request.header("x-participant-id", "alice")
}

#[tokio::test]
async fn jsonrpc_conversation_round_trip() {
    let app = server();
    let call = |method: &str, params: Value| {
        as_alice(a2a("POST", "/"))
            .body(rpc_body(method, params))
            .expect("request")
    };
    let sent = send(
        &app,
        call("SendMessage", json!({"message": message("hello")})),
    )
    .await;
    assert_eq!(sent.body["id"], json!(7), "{}", sent.body);
    let task = &sent.body["result"]["task"];
    assert_eq!(
        task["status"]["state"],
        json!("TASK_STATE_INPUT_REQUIRED"),
        "{}",
        sent.body
    );
    let id = task["id"].as_str().expect("task id").to_owned();

    let got = send(&app, call("GetTask", json!({"id": id, "historyLength": 1}))).await;
    assert_eq!(got.body["result"]["id"], json!(id));
    assert_eq!(
        got.body["result"]["history"].as_array().map(Vec::len),
        Some(1)
    );

    let listed = send(&app, call("ListTasks", json!({}))).await;
    let tasks = listed.body["result"]["tasks"].as_array().expect("tasks");
    assert!(
        tasks.iter().any(|t| t["id"] == json!(id)),
        "{}",
        listed.body
    );

    let mut next = message("and again");
    next["taskId"] = json!(id);
    let events = sse_events(
        &app,
        call("SendStreamingMessage", json!({ "message": next })),
    )
    .await;
    assert!(events.len() >= 2, "{events:?}");
    assert!(
        events
            .iter()
            .all(|e| e["jsonrpc"] == json!("2.0") && e["id"] == json!(7))
    );
    assert_eq!(
        events[0]["result"]["task"]["id"],
        json!(id),
        "the Task comes first"
    );
    let last = &events[events.len() - 1]["result"];
    assert_eq!(
        last["statusUpdate"]["status"]["state"],
        json!("TASK_STATE_INPUT_REQUIRED")
    );

    let canceled = send(&app, call("CancelTask", json!({"id": id}))).await;
    assert_eq!(
        canceled.body["result"]["status"]["state"],
        json!("TASK_STATE_CANCELED")
    );
    let again = send(&app, call("CancelTask", json!({"id": id}))).await;
    assert_eq!(again.rpc_error(), (-32002, "TASK_NOT_CANCELABLE"));
    let missing = send(&app, call("GetTask", json!({"id": "no-such-task"}))).await;
    assert_eq!(missing.rpc_error(), (-32001, "TASK_NOT_FOUND"));
}

#[tokio::test]
async fn rest_conversation_round_trip() {
    let app = server();
    let request = |method: &str, path: &str, body: Value| {
        let body = if body.is_null() {
            Body::empty()
        } else {
            Body::from(body.to_string())
        };
        as_alice(a2a(method, path)).body(body).expect("request")
    };
    let sent = send(
        &app,
        request("POST", "/message:send", json!({"message": message("hi")})),
    )
    .await;
    assert_eq!(sent.status, StatusCode::OK, "{}", sent.body);
    assert_eq!(sent.headers[CONTENT_TYPE], "application/json");
    let id = sent.body["task"]["id"]
        .as_str()
        .expect("task id")
        .to_owned();

    let got = send(
        &app,
        request("GET", &format!("/tasks/{id}?historyLength=1"), Value::Null),
    )
    .await;
    assert_eq!(got.status, StatusCode::OK, "{}", got.body);
    assert_eq!(got.body["id"], json!(id));
    assert_eq!(got.body["history"].as_array().map(Vec::len), Some(1));

    let listed = send(
        &app,
        request(
            "GET",
            "/tasks?pageSize=10&includeArtifacts=true",
            Value::Null,
        ),
    )
    .await;
    assert_eq!(listed.status, StatusCode::OK, "{}", listed.body);
    assert!(
        listed.body["tasks"]
            .as_array()
            .is_some_and(|t| t.iter().any(|t| t["id"] == json!(id)))
    );
    assert!(listed.body["nextPageToken"].is_string());

    let mut next = message("more");
    next["taskId"] = json!(id);
    let events = sse_events(
        &app,
        request("POST", "/message:stream", json!({ "message": next })),
    )
    .await;
    assert_eq!(events[0]["task"]["id"], json!(id), "{events:?}");
    assert!(events.iter().all(|e| e.get("jsonrpc").is_none()));

    let missing = send(&app, request("GET", "/tasks/no-such-task", Value::Null)).await;
    assert_eq!(missing.status, StatusCode::NOT_FOUND);
    assert_eq!(missing.rest_reason(), "TASK_NOT_FOUND");
    assert_eq!(
        missing.body["error"]["details"][0]["metadata"]["taskId"],
        json!("no-such-task")
    );

    let canceled = send(
        &app,
        request("POST", &format!("/tasks/{id}:cancel"), Value::Null),
    )
    .await;
    assert_eq!(canceled.status, StatusCode::OK, "{}", canceled.body);
    assert_eq!(
        canceled.body["status"]["state"],
        json!("TASK_STATE_CANCELED")
    );
    let subscribe = send(
        &app,
        request("GET", &format!("/tasks/{id}:subscribe"), Value::Null),
    )
    .await;
    assert_eq!(
        subscribe.status,
        StatusCode::BAD_REQUEST,
        "a terminal task cannot be subscribed to"
    );
    assert_eq!(subscribe.rest_reason(), "UNSUPPORTED_OPERATION");
}

#[tokio::test]
async fn a_token_names_the_caller() {
    let mut settings = settings();
    settings.tokens = [
        ("tok-alice".to_owned(), "alice".to_owned()),
        ("tok-bob".to_owned(), "bob".to_owned()),
    ]
    .into();
    let app = server_with(settings);
    let as_token = |token: &str, body: Body| {
        a2a("POST", "/")
            .header("authorization", format!("Bearer {token}"))
            // Ignored when tokens are configured.
            .header("x-participant-id", "mallory")
            .body(body)
            .expect("request")
    };
    let sent = send(
        &app,
        as_token(
            "tok-alice",
            rpc_body("SendMessage", json!({"message": message("hi")})),
        ),
    )
    .await;
    let id = sent.body["result"]["task"]["id"]
        .as_str()
        .expect("task id")
        .to_owned();
    let listed = send(
        &app,
        as_token("tok-alice", rpc_body("ListTasks", json!({}))),
    )
    .await;
    assert!(
        listed.body["result"]["tasks"]
            .as_array()
            .is_some_and(|t| t.iter().any(|t| t["id"] == json!(id)))
    );
    // Bob is not a participant of Alice's task, so for him it does not exist.
    let listed = send(&app, as_token("tok-bob", rpc_body("ListTasks", json!({})))).await;
    assert!(
        listed.body["result"]["tasks"]
            .as_array()
            .is_some_and(|t| t.iter().all(|t| t["id"] != json!(id))),
        "{}",
        listed.body
    );
}
