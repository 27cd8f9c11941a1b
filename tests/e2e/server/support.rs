//! Starting the real `tiny-harness serve` binary and speaking A2A to it over
//! real HTTP (JSON-RPC, HTTP+JSON, SSE).

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Child;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use serde_json::{Value, json};

/// A running harness, killed when dropped.
pub struct Server {
    child: Child,
    pub base: String,
    /// Participant -> bearer token, from the configuration's `[auth] tokens`.
    tokens: BTreeMap<String, String>,
    _dir: tempfile::TempDir,
}

impl Server {
    /// Start on a free loopback port with `config` (TOML) and, if given, a
    /// plugins folder.
    pub fn start(config: &str, plugins: Option<&Path>) -> Server {
        let dir = tempfile::tempdir().expect("tempdir");
        let config_path = dir.path().join("tiny-harness.toml");
        std::fs::write(&config_path, config).expect("write config");
        let empty_plugins = dir.path().join("plugins");
        std::fs::create_dir_all(&empty_plugins).expect("mkdir");
        let plugins = plugins.unwrap_or(&empty_plugins);
        let spawned = crate::support::spawn_server(&config_path, plugins, "warn");
        Server {
            child: spawned.child,
            base: spawned.base,
            tokens: tokens_of(config),
            _dir: dir,
        }
    }

    /// The server process's id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    pub fn with_defaults() -> Server {
        Server::start(DEFAULT_CONFIG, None)
    }

    /// [`admin_config`]: every caller has a token, `root` is an admin.
    pub fn with_admin() -> Server {
        Server::start(&admin_config(), None)
    }

    /// A client for `participant`: with its bearer token when the configuration gives it
    /// one, self-asserted otherwise.
    pub fn client(&self, participant: &str) -> Client {
        Client {
            http: crate::support::http(),
            base: self.base.clone(),
            participant: participant.to_owned(),
            token: self.tokens.get(participant).cloned(),
        }
    }
}

/// Participant -> token of a configuration's `[auth] tokens` (none if it has none, or is
/// not one the harness accepts).
fn tokens_of(config: &str) -> BTreeMap<String, String> {
    tiny_harness::config::Config::from_toml(config)
        .map(|config| {
            config
                .auth
                .tokens
                .into_iter()
                .map(|(token, participant)| (participant, token))
                .collect()
        })
        .unwrap_or_default()
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A configuration whose allowlist is the two embedded offline models: loopback, callers self-asserted, no admins
/// (admins need tokens: [`admin_config`]).
pub const DEFAULT_CONFIG: &str = r#"
[models]
default = "offline-echo"
"#;

/// The participants the tests speak as under [`admin_config`].
pub const CAST: [&str; 8] = [
    "root",
    "alice",
    "bob",
    "carol",
    "dave",
    "eve",
    "mallory",
    "python-sdk",
];

/// The bearer token of `participant` under [`admin_config`].
pub fn token_of(participant: &str) -> String {
    format!("tok-{participant}")
}

/// [`DEFAULT_CONFIG`] with a bearer token for each of [`CAST`] and `root` an admin: admin
/// rights need a credential, a self-asserted id is never one.
pub fn admin_config() -> String {
    let tokens: Vec<String> = CAST
        .iter()
        .map(|id| format!("\"{}\" = \"{id}\"", token_of(id)))
        .collect();
    format!(
        "admins = [\"root\"]\n{DEFAULT_CONFIG}\n[auth]\ntokens = {{ {} }}\n",
        tokens.join(", ")
    )
}

static NEXT_ID: AtomicU64 = AtomicU64::new(1);

fn next_id() -> u64 {
    NEXT_ID.fetch_add(1, Ordering::Relaxed)
}

/// An A2A client speaking as one participant: with a bearer token, or self-asserted on
/// loopback.
#[derive(Clone)]
pub struct Client {
    pub http: reqwest::Client,
    pub base: String,
    pub participant: String,
    pub token: Option<String>,
}

/// A user message with one text part, continuing `task_id` if given.
pub fn text_message(task_id: Option<&str>, text: &str) -> Value {
    let mut message = json!({
        "messageId": format!("m-{}", next_id()),
        "role": "ROLE_USER",
        "parts": [{"text": text}],
    });
    if let Some(task_id) = task_id {
        message["taskId"] = json!(task_id);
    }
    message
}

/// A user message whose one part is a data part.
pub fn data_message(task_id: &str, data: Value) -> Value {
    json!({
        "messageId": format!("m-{}", next_id()),
        "role": "ROLE_USER",
        "taskId": task_id,
        "parts": [{"data": data}],
    })
}

pub fn complete_control() -> Value {
    json!({"kind": "control", "action": "complete"})
}

impl Client {
    /// A POST to `url` as this participant (their id, and token if any).
    pub fn post(&self, url: String) -> reqwest::RequestBuilder {
        let request = self
            .http
            .post(url)
            .header("A2A-Version", "1.0")
            .header("X-Participant-Id", &self.participant);
        match &self.token {
            Some(token) => request.bearer_auth(token),
            None => request,
        }
    }

    /// A JSON-RPC call; returns the whole response object.
    pub async fn rpc(&self, method: &str, params: Value) -> Value {
        let request =
            json!({"jsonrpc": "2.0", "id": next_id(), "method": method, "params": params});
        let response = self
            .post(format!("{}/", self.base))
            .json(&request)
            .send()
            .await
            .expect("sent");
        response.json().await.expect("a JSON body")
    }

    /// A JSON-RPC call that must succeed; returns its `result`.
    pub async fn ok(&self, method: &str, params: Value) -> Value {
        let response = self.rpc(method, params.clone()).await;
        assert!(
            response.get("error").is_none(),
            "{method} {params} failed: {response}"
        );
        response["result"].clone()
    }

    /// SendMessage with a text message; returns the Task.
    pub async fn say(&self, task_id: Option<&str>, text: &str) -> Value {
        let result = self
            .ok(
                "SendMessage",
                json!({"message": text_message(task_id, text)}),
            )
            .await;
        result["task"].clone()
    }

    /// SendMessage with a data part; returns the whole JSON-RPC response.
    pub async fn send_data(&self, task_id: &str, data: Value) -> Value {
        self.rpc(
            "SendMessage",
            json!({"message": data_message(task_id, data)}),
        )
        .await
    }

    pub async fn get_task(&self, task_id: &str) -> Value {
        self.ok("GetTask", json!({"id": task_id})).await
    }

    /// A JSON-RPC streaming call: every SSE event's JSON-RPC response, in
    /// order, until the server closes the stream.
    pub async fn stream(&self, method: &str, params: Value) -> Vec<Value> {
        let request =
            json!({"jsonrpc": "2.0", "id": next_id(), "method": method, "params": params});
        let response = self
            .post(format!("{}/", self.base))
            .header("Accept", "text/event-stream")
            .json(&request)
            .send()
            .await
            .expect("sent");
        read_sse(response).await
    }
}

/// Collect the `data:` payloads of an SSE response until it ends (comments,
/// i.e. keep-alives, are skipped). Bounded in time so a stream that never
/// closes fails the test instead of hanging it.
pub async fn read_sse(mut response: reqwest::Response) -> Vec<Value> {
    let content_type = response
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_owned();
    assert!(
        content_type.starts_with("text/event-stream"),
        "not SSE: {content_type}"
    );
    let mut buffer = String::new();
    let mut events = Vec::new();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    loop {
        let chunk = tokio::time::timeout_at(deadline, response.chunk())
            .await
            .expect("the stream closes within 60 s")
            .expect("the stream reads");
        let Some(chunk) = chunk else { break };
        buffer.push_str(&String::from_utf8_lossy(&chunk));
        events.extend(take_sse_events(&mut buffer));
    }
    events
}

/// The `data:` payloads of the complete SSE events at the front of
/// `buffer`, taken out of it (comments, i.e. keep-alives, are skipped).
pub fn take_sse_events(buffer: &mut String) -> Vec<Value> {
    let mut events = Vec::new();
    while let Some(end) = buffer.find("\n\n") {
        let event: String = buffer.drain(..end + 2).collect();
        let data: Vec<&str> = event
            .lines()
            .filter_map(|line| line.strip_prefix("data:"))
            .map(str::trim_start)
            .collect();
        if !data.is_empty() {
            events.push(serde_json::from_str(&data.join("\n")).expect("SSE data is JSON"));
        }
    }
    events
}

/// The `sub_state` a task or event carries in its metadata, if any.
pub fn sub_state(object: &Value) -> Option<&str> {
    object["metadata"]["sub_state"].as_str()
}

/// The text of a task's status message.
pub fn status_text(task: &Value) -> String {
    task["status"]["message"]["parts"]
        .as_array()
        .map(|parts| {
            parts
                .iter()
                .filter_map(|part| part["text"].as_str())
                .collect::<Vec<_>>()
                .join("")
        })
        .unwrap_or_default()
}

/// The state name of a task.
pub fn state(task: &Value) -> &str {
    task["status"]["state"].as_str().unwrap_or("")
}

/// Poll GetTask until `done` holds (sub-tasks finish in the background).
pub async fn wait_for(client: &Client, task_id: &str, done: impl Fn(&Value) -> bool) -> Value {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        let task = client.get_task(task_id).await;
        if done(&task) {
            return task;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "gave up waiting on {task}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}
