//! The conformance agent (`examples/conformance`): the real binary with the
//! example's configuration and its plugin (built from source by
//! `examples/conformance/build.sh`, which `tests/run.sh` runs), driven as the
//! A2A conformance kit drives it: anonymous callers (no credentials, no
//! participant header), an unknown extension in `A2A-Extensions`, every
//! scenario of `conformance-scenarios.md` over JSON-RPC and HTTP+JSON
//! (streaming ones over SSE), push with inline Bearer credentials to a
//! loopback webhook, version 99.0, `historyLength`, and the gRPC interface on
//! the card.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::routing::post;
use serde_json::{Value, json};

use crate::server::support::{Server, read_sse};

const UNKNOWN_EXTENSION: &str = "https://example.com/extensions/unknown/v1";

fn example_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/conformance")
}

/// The example's own configuration, its fixed gRPC port made a free one so
/// tests can run side by side (the HTTP port is chosen by `--listen`).
fn config() -> String {
    let text = std::fs::read_to_string(example_dir().join("tiny-harness.toml"))
        .expect("examples/conformance/tiny-harness.toml");
    let fixed = "listen = \"127.0.0.1:9998\"";
    assert!(text.contains(fixed), "the example's gRPC listen moved");
    text.replace(fixed, "listen = \"127.0.0.1:0\"")
}

fn start() -> Server {
    let plugins = example_dir().join("plugins");
    let component = plugins.join("conformance/conformance.wasm");
    assert!(
        component.is_file(),
        "the conformance plugin is not built: run tests/run.sh or examples/conformance/build.sh \
         (no {})",
        component.display()
    );
    Server::start(&config(), Some(&plugins))
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Binding {
    JsonRpc,
    Rest,
}

const BINDINGS: [Binding; 2] = [Binding::JsonRpc, Binding::Rest];

/// The kit's client: anonymous, A2A 1.0, an unknown extension activated.
struct Kit {
    http: reqwest::Client,
    base: String,
    version: &'static str,
}

impl Kit {
    fn new(server: &Server) -> Kit {
        Kit {
            http: crate::support::http(),
            base: server.base.clone(),
            version: "1.0",
        }
    }

    fn post(&self, path: &str) -> reqwest::RequestBuilder {
        self.http
            .post(format!("{}{path}", self.base))
            .header("A2A-Version", self.version)
            .header("A2A-Extensions", UNKNOWN_EXTENSION)
    }

    /// A JSON-RPC call or the HTTP+JSON route for `method`: the result, or
    /// the error's ErrorInfo reason and message.
    async fn call(&self, binding: Binding, method: &str, params: Value) -> Result<Value, Error> {
        match binding {
            Binding::JsonRpc => {
                let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
                let response: Value = self
                    .post("/")
                    .json(&body)
                    .send()
                    .await
                    .expect("sent")
                    .json()
                    .await
                    .expect("json");
                match response.get("error") {
                    Some(error) => Err(Error {
                        reason: error["data"][0]["reason"].as_str().unwrap_or("").to_owned(),
                        message: error["message"].as_str().unwrap_or("").to_owned(),
                    }),
                    None => Ok(response["result"].clone()),
                }
            }
            Binding::Rest => {
                let request = match method {
                    "SendMessage" => self.post("/message:send").json(&params),
                    "GetTask" => {
                        let id = params["id"].as_str().expect("id");
                        let mut url = format!("{}/tasks/{id}", self.base);
                        if let Some(length) = params["historyLength"].as_u64() {
                            url.push_str(&format!("?historyLength={length}"));
                        }
                        self.http.get(url).header("A2A-Version", self.version)
                    }
                    "CancelTask" => {
                        let id = params["id"].as_str().expect("id");
                        self.post(&format!("/tasks/{id}:cancel")).json(&json!({}))
                    }
                    other => panic!("no HTTP+JSON route for {other} in this test"),
                };
                let response = request.send().await.expect("sent");
                let ok = response.status().is_success();
                let body: Value = response.json().await.expect("json");
                if ok {
                    Ok(body)
                } else {
                    Err(Error {
                        reason: body["error"]["details"][0]["reason"]
                            .as_str()
                            .unwrap_or("")
                            .to_owned(),
                        message: body["error"]["message"].as_str().unwrap_or("").to_owned(),
                    })
                }
            }
        }
    }

    async fn send(&self, binding: Binding, message: Value) -> Result<Value, Error> {
        self.call(binding, "SendMessage", json!({"message": message}))
            .await
    }

    /// A Task the kit expects from SendMessage.
    async fn task(&self, binding: Binding, message: Value) -> Value {
        let result = self
            .send(binding, message.clone())
            .await
            .unwrap_or_else(|error| panic!("{binding:?}: {message} failed: {error:?}"));
        assert!(
            result.get("task").is_some(),
            "{binding:?}: not a Task: {result}"
        );
        result["task"].clone()
    }

    /// SendStreamingMessage: the StreamResponse items, until the stream closes.
    async fn stream(&self, binding: Binding, message: Value) -> Vec<Value> {
        let body = json!({"message": message});
        let response = match binding {
            Binding::JsonRpc => self
                .post("/")
                .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "SendStreamingMessage", "params": body})),
            Binding::Rest => self.post("/message:stream").json(&body),
        }
        .header("Accept", "text/event-stream")
        .send()
        .await
        .expect("sent");
        unwrap_events(binding, read_sse(response).await)
    }

    async fn subscribe(&self, binding: Binding, task_id: &str) -> reqwest::Response {
        match binding {
            Binding::JsonRpc => self.post("/").json(
                &json!({"jsonrpc": "2.0", "id": 1, "method": "SubscribeToTask", "params": {"id": task_id}}),
            ),
            Binding::Rest => self.post(&format!("/tasks/{task_id}:subscribe")).json(&json!({})),
        }
        .header("Accept", "text/event-stream")
        .send()
        .await
        .expect("sent")
    }
}

fn unwrap_events(binding: Binding, events: Vec<Value>) -> Vec<Value> {
    match binding {
        Binding::JsonRpc => events
            .into_iter()
            .map(|event| {
                assert!(event.get("error").is_none(), "a stream error: {event}");
                event["result"].clone()
            })
            .collect(),
        Binding::Rest => events,
    }
}

#[derive(Debug)]
struct Error {
    reason: String,
    message: String,
}

/// A kit message: `<prefix>-<8 hex>`, as the kit names them.
fn message(prefix: &str, session: &str, task_id: Option<&str>) -> Value {
    let mut message = json!({
        "messageId": format!("{prefix}-{session}"),
        "role": "ROLE_USER",
        "parts": [{"text": "Hello from the conformance kit"}],
    });
    if let Some(id) = task_id {
        message["taskId"] = json!(id);
    }
    message
}

/// Eight hex digits, different for every message of a test run.
fn session() -> String {
    use std::sync::atomic::{AtomicU32, Ordering};
    static NEXT: AtomicU32 = AtomicU32::new(0x5eed_0000);
    format!("{:08x}", NEXT.fetch_add(1, Ordering::Relaxed))
}

fn state(task: &Value) -> &str {
    task["status"]["state"].as_str().unwrap_or("")
}

fn text_of(message: &Value) -> String {
    message["parts"]
        .as_array()
        .map(|parts| parts.iter().filter_map(|p| p["text"].as_str()).collect())
        .unwrap_or_default()
}

/// Every part of every artifact of `task`.
fn artifact_parts(task: &Value) -> Vec<Value> {
    task["artifacts"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|artifact| artifact["parts"].as_array().cloned().unwrap_or_default())
        .collect()
}

fn is_output_txt(part: &Value) -> bool {
    part["filename"] == "output.txt"
        && part["mediaType"] == "text/plain"
        && (part.get("raw").is_some() || part.get("url").is_some())
}

#[tokio::test(flavor = "multi_thread")]
async fn every_blocking_scenario_over_json_rpc_and_http_json() {
    let server = start();
    let kit = Kit::new(&server);
    for binding in BINDINGS {
        let id = session();
        let task = kit
            .task(binding, message("tck-complete-task", &id, None))
            .await;
        assert_eq!(state(&task), "TASK_STATE_COMPLETED", "{binding:?}: {task}");
        assert_eq!(task["status"]["message"]["role"], "ROLE_AGENT");
        // The kit reuses ids: the same first message starts another task.
        let again = kit
            .task(binding, message("tck-complete-task", &id, None))
            .await;
        assert_ne!(again["id"], task["id"], "{binding:?}: {again}");
        assert_eq!(
            text_of(&task["status"]["message"]),
            "Hello from TCK",
            "{task}"
        );

        let task = kit
            .task(binding, message("tck-artifact-text", &id, None))
            .await;
        assert_eq!(state(&task), "TASK_STATE_COMPLETED", "{binding:?}: {task}");
        let first = &task["artifacts"][0];
        assert!(
            first["artifactId"]
                .as_str()
                .is_some_and(|id| !id.is_empty()),
            "{task}"
        );
        assert_eq!(
            first["parts"][0],
            json!({"text": "Generated text content"}),
            "{task}"
        );

        let task = kit
            .task(binding, message("tck-artifact-file", &id, None))
            .await;
        assert_eq!(state(&task), "TASK_STATE_COMPLETED", "{binding:?}: {task}");
        let parts = artifact_parts(&task);
        assert!(parts.iter().any(is_output_txt), "{binding:?}: {task}");

        let task = kit
            .task(binding, message("tck-artifact-file-url", &id, None))
            .await;
        assert_eq!(state(&task), "TASK_STATE_COMPLETED", "{binding:?}: {task}");
        let url = json!({"url": "https://example.com/output.txt", "filename": "output.txt", "mediaType": "text/plain"});
        assert!(artifact_parts(&task).contains(&url), "{binding:?}: {task}");

        let task = kit
            .task(binding, message("tck-artifact-data", &id, None))
            .await;
        assert_eq!(state(&task), "TASK_STATE_COMPLETED", "{binding:?}: {task}");
        let data = json!({"data": {"key": "value", "count": 42}});
        assert!(artifact_parts(&task).contains(&data), "{binding:?}: {task}");

        // A Message only, no Task.
        let result = kit
            .send(binding, message("tck-message-response", &id, None))
            .await
            .expect("a message");
        assert!(result.get("task").is_none(), "{binding:?}: {result}");
        let reply = &result["message"];
        assert_eq!(reply["role"], "ROLE_AGENT", "{binding:?}: {result}");
        assert_eq!(
            reply["parts"],
            json!([{"text": "Direct message response"}]),
            "{result}"
        );

        // Rejected, with the message `rejected`.
        let task = kit
            .task(binding, message("tck-reject-task", &id, None))
            .await;
        assert_eq!(state(&task), "TASK_STATE_REJECTED", "{binding:?}: {task}");
        assert_eq!(text_of(&task["status"]["message"]), "rejected", "{task}");

        // Any other tck- prefix completes.
        let task = kit
            .task(binding, message("tck-something-new", &id, None))
            .await;
        assert_eq!(state(&task), "TASK_STATE_COMPLETED", "{binding:?}: {task}");
        assert!(
            text_of(&task["status"]["message"])
                .starts_with("Unhandled messageId prefix: tck-something-new"),
            "{task}"
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn input_required_stays_until_a_complete_follow_up_and_subscribers_see_it_end() {
    let server = start();
    let kit = Kit::new(&server);
    for binding in BINDINGS {
        let id = session();
        let task = kit
            .task(binding, message("tck-input-required", &id, None))
            .await;
        assert_eq!(
            state(&task),
            "TASK_STATE_INPUT_REQUIRED",
            "{binding:?}: {task}"
        );
        let task_id = task["id"].as_str().expect("id").to_owned();
        let context_id = task["contextId"].as_str().expect("contextId").to_owned();

        // The kit reuses one id for several messages of a session.
        let again = kit
            .task(
                binding,
                message("tck-input-required", &format!("{id}b"), Some(&task_id)),
            )
            .await;
        assert_eq!(
            state(&again),
            "TASK_STATE_INPUT_REQUIRED",
            "{binding:?}: {again}"
        );
        assert_eq!(
            again["contextId"],
            context_id.as_str(),
            "a taskId alone takes the task's context"
        );

        // A contextId that is not the task's is refused.
        let mut wrong = message("tck-input-required", &format!("{id}c"), Some(&task_id));
        wrong["contextId"] = json!("another-context");
        let foreign = kit
            .send(binding, wrong)
            .await
            .expect_err("a foreign contextId");
        assert!(
            foreign.message.contains("contextId"),
            "{binding:?}: {foreign:?}"
        );

        // SubscribeToTask: the Task, then live events until the follow-up ends it.
        let subscription = kit.subscribe(binding, &task_id).await;
        let done = kit
            .task(
                binding,
                message("tck-complete-task", &format!("{id}d"), Some(&task_id)),
            )
            .await;
        assert_eq!(state(&done), "TASK_STATE_COMPLETED", "{binding:?}: {done}");
        assert_eq!(text_of(&done["status"]["message"]), "Hello from TCK");
        let events = unwrap_events(binding, read_sse(subscription).await);
        assert!(events[0].get("task").is_some(), "{binding:?}: {events:?}");
        let last = events.last().expect("events");
        assert_eq!(
            last["statusUpdate"]["status"]["state"], "TASK_STATE_COMPLETED",
            "{events:?}"
        );

        // A terminal task takes no follow-up; an unknown one is not found.
        let late = kit
            .send(
                binding,
                message("tck-complete-task", &format!("{id}e"), Some(&task_id)),
            )
            .await;
        assert_eq!(late.expect_err("terminal").reason, "UNSUPPORTED_OPERATION");
        let unknown = kit
            .send(
                binding,
                message("tck-complete-task", &format!("{id}f"), Some("no-such-task")),
            )
            .await;
        assert_eq!(unknown.expect_err("unknown").reason, "TASK_NOT_FOUND");

        // An input-required task stays cancelable.
        let parked = kit
            .task(
                binding,
                message("tck-input-required", &format!("{id}g"), None),
            )
            .await;
        let parked_id = parked["id"].as_str().expect("id");
        let canceled = kit
            .call(binding, "CancelTask", json!({"id": parked_id}))
            .await
            .expect("canceled");
        assert_eq!(
            state(&canceled),
            "TASK_STATE_CANCELED",
            "{binding:?}: {canceled}"
        );

        // GetTask honours historyLength.
        let history = kit
            .call(
                binding,
                "GetTask",
                json!({"id": task_id, "historyLength": 1}),
            )
            .await
            .expect("task");
        assert_eq!(
            history["history"].as_array().map(Vec::len),
            Some(1),
            "{binding:?}: {history}"
        );
        let whole = kit
            .call(binding, "GetTask", json!({"id": task_id}))
            .await
            .expect("task");
        assert!(
            whole["history"].as_array().map_or(0, Vec::len) > 1,
            "{whole}"
        );
    }
}

/// The states of a stream's status updates, in order.
fn states(events: &[Value]) -> Vec<String> {
    events
        .iter()
        .filter_map(|event| event["statusUpdate"]["status"]["state"].as_str())
        .map(str::to_owned)
        .collect()
}

fn artifact_updates(events: &[Value]) -> Vec<&Value> {
    events
        .iter()
        .filter_map(|event| event.get("artifactUpdate"))
        .collect()
}

/// The Task first (SUBMITTED), WORKING before the artifacts, COMPLETED
/// last, states never going back; returns the artifact updates.
fn check_stream<'a>(binding: Binding, scenario: &str, events: &'a [Value]) -> Vec<&'a Value> {
    assert_eq!(
        events[0]["task"]["status"]["state"], "TASK_STATE_SUBMITTED",
        "{binding:?} {scenario}: {events:?}"
    );
    assert_eq!(
        events[1]["statusUpdate"]["status"]["state"], "TASK_STATE_WORKING",
        "{binding:?} {scenario}: the WORKING update second: {events:?}"
    );
    let states = states(events);
    assert_eq!(
        states.first().map(String::as_str),
        Some("TASK_STATE_WORKING"),
        "{scenario}: {events:?}"
    );
    assert_eq!(
        states.last().map(String::as_str),
        Some("TASK_STATE_COMPLETED"),
        "{scenario}: {events:?}"
    );
    let completed = states
        .iter()
        .position(|s| s == "TASK_STATE_COMPLETED")
        .expect("completed");
    assert_eq!(
        completed,
        states.len() - 1,
        "{scenario}: a state after COMPLETED: {events:?}"
    );
    let first_working = events
        .iter()
        .position(|e| e.get("statusUpdate").is_some())
        .expect("a status");
    let first_artifact = events
        .iter()
        .position(|e| e.get("artifactUpdate").is_some());
    if let Some(artifact) = first_artifact {
        assert!(
            first_working < artifact,
            "{scenario}: an artifact before WORKING: {events:?}"
        );
        assert!(
            events[artifact..]
                .iter()
                .any(|e| e["statusUpdate"]["status"]["state"] == "TASK_STATE_COMPLETED"),
            "{scenario}: COMPLETED before the artifact: {events:?}"
        );
    }
    artifact_updates(events)
}

#[tokio::test(flavor = "multi_thread")]
async fn every_streaming_scenario_over_sse_on_both_bindings() {
    let server = start();
    let kit = Kit::new(&server);
    let texts = [
        ("tck-stream-001", "Stream hello from TCK"),
        ("tck-stream-003", "Stream task lifecycle"),
        ("tck-stream-ordering-001", "Ordered output"),
        ("tck-stream-artifact-text", "Streamed text content"),
    ];
    for binding in BINDINGS {
        let id = session();
        for (scenario, text) in texts {
            let events = kit.stream(binding, message(scenario, &id, None)).await;
            let artifacts = check_stream(binding, scenario, &events);
            assert!(
                artifacts
                    .iter()
                    .any(|update| update["artifact"]["parts"][0]["text"] == text),
                "{binding:?} {scenario}: no artifact `{text}`: {events:?}"
            );
        }

        let events = kit
            .stream(binding, message("tck-stream-002", &id, None))
            .await;
        check_stream(binding, "tck-stream-002", &events);

        // Streamed, the message-only answer is the Message alone too.
        let events = kit
            .stream(binding, message("tck-message-response", &id, None))
            .await;
        assert_eq!(events.len(), 1, "{binding:?}: {events:?}");
        assert_eq!(
            events[0]["message"]["parts"],
            json!([{"text": "Direct message response"}]),
            "{binding:?}: {events:?}"
        );

        let events = kit
            .stream(binding, message("tck-stream-artifact-file", &id, None))
            .await;
        let artifacts = check_stream(binding, "tck-stream-artifact-file", &events);
        assert!(
            artifacts.iter().any(|update| update["artifact"]["parts"]
                .as_array()
                .is_some_and(|parts| parts.iter().any(is_output_txt))),
            "{binding:?}: no output.txt: {events:?}"
        );

        let events = kit
            .stream(binding, message("tck-stream-artifact-chunked", &id, None))
            .await;
        let artifacts = check_stream(binding, "tck-stream-artifact-chunked", &events);
        assert_eq!(artifacts.len(), 2, "{binding:?}: two chunks: {events:?}");
        let (first, second) = (artifacts[0], artifacts[1]);
        assert_eq!(
            first["artifact"]["parts"],
            json!([{"text": "chunk-1 "}]),
            "{events:?}"
        );
        assert_eq!(
            second["artifact"]["parts"],
            json!([{"text": "chunk-2"}]),
            "{events:?}"
        );
        assert_eq!(
            first["artifact"]["artifactId"],
            second["artifact"]["artifactId"]
        );
        assert!(
            first.get("append").is_none() && first.get("lastChunk").is_none(),
            "{first}"
        );
        assert_eq!(
            (&second["append"], &second["lastChunk"]),
            (&json!(true), &json!(true))
        );
        // The task keeps the whole artifact.
        let task_id = events[0]["task"]["id"].as_str().expect("id");
        let task = kit
            .call(binding, "GetTask", json!({"id": task_id}))
            .await
            .expect("task");
        assert_eq!(
            task["artifacts"][0]["parts"],
            json!([{"text": "chunk-1 "}, {"text": "chunk-2"}]),
            "{task}"
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn the_resubscribe_scenario_works_for_four_seconds_then_completes() {
    let server = start();
    let kit = Kit::new(&server);
    let started = Instant::now();
    // Streamed over JSON-RPC ...
    let streamed = kit.stream(
        Binding::JsonRpc,
        message("test-resubscribe-message-id", &session(), None),
    );
    // ... and, as the kit resubscribes, sent at once and subscribed to over HTTP+JSON.
    let resubscribed = async {
        let params = json!({
            "message": message("test-resubscribe-message-id", &session(), None),
            "configuration": {"returnImmediately": true},
        });
        let sent = kit
            .call(Binding::Rest, "SendMessage", params)
            .await
            .expect("sent");
        let id = sent["task"]["id"].as_str().expect("id").to_owned();
        let events = read_sse(kit.subscribe(Binding::Rest, &id).await).await;
        unwrap_events(Binding::Rest, events)
    };
    let (streamed, resubscribed) = tokio::join!(streamed, resubscribed);
    for events in [&streamed, &resubscribed] {
        assert!(events[0].get("task").is_some(), "{events:?}");
        let states = states(events);
        assert!(
            states.iter().filter(|s| *s == "TASK_STATE_WORKING").count() > 10,
            "{events:?}"
        );
        assert_eq!(
            states.last().map(String::as_str),
            Some("TASK_STATE_COMPLETED"),
            "{events:?}"
        );
    }
    // The offline model's own clock paces the progress; this is its lower bound.
    assert!(
        started.elapsed() >= Duration::from_secs(4),
        "{:?}",
        started.elapsed()
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn return_immediately_answers_at_once_and_the_task_completes() {
    let server = start();
    let kit = Kit::new(&server);
    let params = json!({
        "message": message("tck-complete-task", &session(), None),
        "configuration": {"returnImmediately": true},
    });
    let result = kit
        .call(Binding::JsonRpc, "SendMessage", params)
        .await
        .expect("sent");
    let task = &result["task"];
    assert!(
        !["TASK_STATE_COMPLETED", ""].contains(&state(task)),
        "{task}"
    );
    let id = task["id"].as_str().expect("id");
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let task = kit
            .call(Binding::JsonRpc, "GetTask", json!({"id": id}))
            .await
            .expect("task");
        if state(&task) == "TASK_STATE_COMPLETED" {
            assert_eq!(text_of(&task["status"]["message"]), "Hello from TCK");
            break;
        }
        assert!(Instant::now() < deadline, "never completed: {task}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// What the webhook received: each body with its Authorization header.
type Received = Arc<Mutex<Vec<(String, Value)>>>;

async fn webhook() -> (SocketAddr, Received) {
    async fn take(State(received): State<Received>, headers: HeaderMap, body: Bytes) -> StatusCode {
        let authorization = headers
            .get("authorization")
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_owned();
        let body = serde_json::from_slice(&body).unwrap_or(Value::Null);
        received.lock().expect("lock").push((authorization, body));
        StatusCode::OK
    }
    let received = Received::default();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    let app = axum::Router::new()
        .route("/webhook", post(take))
        .with_state(Arc::clone(&received));
    tokio::spawn(async move { axum::serve(listener, app).await });
    (addr, received)
}

#[tokio::test(flavor = "multi_thread")]
async fn push_with_inline_bearer_credentials_reaches_a_loopback_webhook() {
    let server = start();
    let kit = Kit::new(&server);
    let (addr, received) = webhook().await;
    let params = json!({
        "message": message("tck-complete-task", &session(), None),
        "configuration": {"taskPushNotificationConfig": {
            "url": format!("http://{addr}/webhook"),
            "authentication": {"scheme": "Bearer", "credentials": "kit-secret"},
        }},
    });
    let result = kit
        .call(Binding::JsonRpc, "SendMessage", params)
        .await
        .expect("sent");
    let task_id = result["task"]["id"].as_str().expect("id").to_owned();
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        let bodies = received.lock().expect("lock").clone();
        let completed = bodies
            .iter()
            .any(|(_, body)| body["statusUpdate"]["status"]["state"] == "TASK_STATE_COMPLETED");
        if completed {
            assert!(
                bodies.iter().all(|(auth, _)| auth == "Bearer kit-secret"),
                "{bodies:?}"
            );
            assert!(
                bodies
                    .iter()
                    .all(|(_, body)| body.as_object().is_some_and(|o| o.len() == 1)),
                "StreamResponse bodies: {bodies:?}"
            );
            break;
        }
        assert!(
            Instant::now() < deadline,
            "no COMPLETED within 15 s: {bodies:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    let configs = kit
        .call(
            Binding::JsonRpc,
            "ListTaskPushNotificationConfigs",
            json!({"taskId": task_id}),
        )
        .await
        .expect("listed");
    let config_id = configs["configs"][0]["id"]
        .as_str()
        .expect("a config id")
        .to_owned();
    let which = json!({"taskId": task_id, "id": config_id});
    for _ in 0..2 {
        kit.call(
            Binding::JsonRpc,
            "DeleteTaskPushNotificationConfig",
            which.clone(),
        )
        .await
        .expect("deleting twice succeeds");
    }
    assert!(
        kit.call(Binding::JsonRpc, "GetTaskPushNotificationConfig", which)
            .await
            .is_err()
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn version_99_is_refused_and_the_card_lists_grpc_as_host_port() {
    let server = start();
    let kit = Kit {
        version: "99.0",
        ..Kit::new(&server)
    };
    for binding in BINDINGS {
        let refused = kit
            .send(binding, message("tck-complete-task", &session(), None))
            .await;
        let error = refused.expect_err("99.0");
        assert_eq!(
            error.reason, "VERSION_NOT_SUPPORTED",
            "{binding:?}: {error:?}"
        );
    }
    let card: Value = crate::support::http()
        .get(format!("{}/.well-known/agent-card.json", server.base))
        .send()
        .await
        .expect("sent")
        .json()
        .await
        .expect("card");
    let interfaces = card["supportedInterfaces"].as_array().expect("interfaces");
    let grpc = interfaces
        .iter()
        .find(|interface| interface["protocolBinding"] == "GRPC")
        .unwrap_or_else(|| panic!("no GRPC interface: {card}"));
    let url = grpc["url"].as_str().expect("url");
    assert!(
        url.parse::<SocketAddr>().is_ok(),
        "not a bare host:port: {url}"
    );
}

/// The card's gRPC interface, called as the kit does: anonymous, with an
/// unknown extension; the answers' new shapes (a Message only, REJECTED,
/// data parts, chunks) cross this binding too.
#[tokio::test(flavor = "multi_thread")]
async fn the_scenarios_answer_over_grpc_too() {
    use tiny_harness::server::grpc::proto::a2a_service_client::A2aServiceClient;
    use tokio_stream::StreamExt as _;

    let server = start();
    let card: Value = crate::support::http()
        .get(format!("{}/.well-known/agent-card.json", server.base))
        .send()
        .await
        .expect("sent")
        .json()
        .await
        .expect("card");
    let url = card["supportedInterfaces"]
        .as_array()
        .and_then(|interfaces| interfaces.iter().find(|i| i["protocolBinding"] == "GRPC"))
        .and_then(|grpc| grpc["url"].as_str())
        .unwrap_or_else(|| panic!("no GRPC interface: {card}"))
        .to_owned();
    let channel = tonic::transport::Channel::from_shared(format!("http://{url}"))
        .expect("uri")
        .connect()
        .await
        .expect("connected");
    let mut client = A2aServiceClient::new(channel);
    let request = |scenario: &str| {
        let body = json!({"message": message(scenario, &session(), None)});
        let mut request = tonic::Request::new(serde_json::from_value(body).expect("a request"));
        let metadata = request.metadata_mut();
        metadata.insert("a2a-version", "1.0".parse().expect("value"));
        metadata.insert("a2a-extensions", UNKNOWN_EXTENSION.parse().expect("value"));
        request
    };
    let as_json = |message: &dyn erased::Json| message.json();

    let reply = client
        .send_message(request("tck-message-response"))
        .await
        .expect("answered")
        .into_inner();
    let reply = as_json(&reply);
    assert_eq!(
        reply["message"]["parts"],
        json!([{"text": "Direct message response"}]),
        "{reply}"
    );
    assert!(reply.get("task").is_none(), "{reply}");

    let rejected = as_json(
        &client
            .send_message(request("tck-reject-task"))
            .await
            .expect("answered")
            .into_inner(),
    );
    assert_eq!(
        state(&rejected["task"]),
        "TASK_STATE_REJECTED",
        "{rejected}"
    );

    let data = as_json(
        &client
            .send_message(request("tck-artifact-data"))
            .await
            .expect("answered")
            .into_inner(),
    );
    // A protobuf Struct's numbers are doubles: 42 arrives as 42.0.
    let parts = artifact_parts(&data["task"]);
    let found = parts
        .iter()
        .any(|part| part["data"]["key"] == "value" && part["data"]["count"].as_f64() == Some(42.0));
    assert!(found, "{data}");

    // Every event of a streamed scenario, as ProtoJSON.
    async fn streamed(
        client: &mut A2aServiceClient<tonic::transport::Channel>,
        request: tonic::Request<tiny_harness::server::grpc::proto::SendMessageRequest>,
    ) -> Vec<Value> {
        let mut stream = client
            .send_streaming_message(request)
            .await
            .expect("streaming")
            .into_inner();
        let mut events = Vec::new();
        while let Some(event) = stream.next().await {
            events.push(erased::Json::json(&event.expect("an event")));
        }
        events
    }

    let events = streamed(&mut client, request("tck-stream-artifact-chunked")).await;
    let chunks = check_stream(Binding::Rest, "gRPC tck-stream-artifact-chunked", &events);

    let events = streamed(&mut client, request("tck-message-response")).await;
    assert_eq!(events.len(), 1, "gRPC: the Message alone: {events:?}");
    assert_eq!(
        events[0]["message"]["parts"],
        json!([{"text": "Direct message response"}]),
        "{events:?}"
    );
    // A2A-Version 99.0 is UNIMPLEMENTED here.
    let mut unsupported = request("tck-complete-task");
    unsupported
        .metadata_mut()
        .insert("a2a-version", "99.0".parse().expect("value"));
    let status = client
        .send_message(unsupported)
        .await
        .expect_err("99.0 is refused");
    assert_eq!(status.code(), tonic::Code::Unimplemented, "{status:?}");
    assert_eq!(chunks.len(), 2, "{events:?}");
    assert_eq!(
        (&chunks[1]["append"], &chunks[1]["lastChunk"]),
        (&json!(true), &json!(true))
    );
}

/// ProtoJSON of any generated message, without naming each type.
mod erased {
    pub trait Json {
        fn json(&self) -> serde_json::Value;
    }

    impl<T: serde::Serialize> Json for T {
        fn json(&self) -> serde_json::Value {
            serde_json::to_value(self).expect("ProtoJSON")
        }
    }
}
