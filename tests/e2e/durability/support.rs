//! A harness process that can be killed (SIGKILL: no shutdown, no flush)
//! and started again on the same folder, so on the same database.

use std::path::{Path, PathBuf};
use std::process::Child;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};

use crate::server::support::{Client, state};

/// One server folder (configuration, database, plugins) and the process
/// serving it, if one runs.
pub struct Harness {
    dir: tempfile::TempDir,
    plugins: PathBuf,
    child: Option<Child>,
    pub base: String,
    /// Every line the current process wrote to stderr.
    pub log: Arc<Mutex<Vec<String>>>,
}

impl Harness {
    /// Write `config` and start serving it with `plugins` (an empty folder if
    /// none).
    pub fn start(config: &str, plugins: Option<&Path>) -> Harness {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(dir.path().join("tiny-harness.toml"), config).expect("write config");
        let empty = dir.path().join("plugins");
        std::fs::create_dir_all(&empty).expect("mkdir");
        let mut harness = Harness {
            plugins: plugins.map_or(empty, Path::to_owned),
            dir,
            child: None,
            base: String::new(),
            log: Arc::default(),
        };
        harness.spawn();
        harness
    }

    /// The server's folder.
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// The process id of the server running now.
    pub fn pid(&self) -> u32 {
        self.child.as_ref().expect("a server runs").id()
    }

    /// The default database, beside the configuration file.
    pub fn db_path(&self) -> PathBuf {
        self.dir().join("tiny-harness.db")
    }

    fn spawn(&mut self) {
        let config = self.dir().join("tiny-harness.toml");
        let spawned = crate::support::spawn_server(&config, &self.plugins, "info");
        self.log = spawned.log;
        self.base = spawned.base;
        self.child = Some(spawned.child);
    }

    /// SIGKILL the server, as the OOM killer would: it gets no chance to do
    /// anything more.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            // Child::kill is SIGKILL on Unix.
            child.kill().expect("killed");
            child.wait().expect("reaped");
        }
    }

    /// Kill the server and start another on the same folder.
    pub fn restart(&mut self) {
        self.kill();
        self.spawn();
    }

    pub fn client(&self, participant: &str) -> Client {
        Client {
            http: crate::support::http(),
            base: self.base.clone(),
            participant: participant.to_owned(),
            token: None,
        }
    }

    /// Whether the current process logged a line containing `text`.
    pub fn logged(&self, text: &str) -> bool {
        self.log
            .lock()
            .expect("log")
            .iter()
            .any(|line| line.contains(text))
    }
}

impl Drop for Harness {
    fn drop(&mut self) {
        self.kill();
    }
}

/// A user message with a chosen id, continuing `task_id` if given.
pub fn message_with_id(task_id: Option<&str>, id: &str, text: &str) -> Value {
    let mut message = json!({
        "messageId": id,
        "role": "ROLE_USER",
        "parts": [{"text": text}],
    });
    if let Some(task_id) = task_id {
        message["taskId"] = json!(task_id);
    }
    message
}

/// The SSE events of a stream until it ends or breaks (a killed server
/// breaks it): never panics on the connection.
pub async fn read_until_broken(mut response: reqwest::Response) -> Vec<Value> {
    let mut buffer = String::new();
    let mut events = Vec::new();
    loop {
        let chunk = tokio::time::timeout(Duration::from_secs(60), response.chunk()).await;
        let Ok(Ok(Some(chunk))) = chunk else {
            return events;
        };
        buffer.push_str(&String::from_utf8_lossy(&chunk));
        while let Some(end) = buffer.find("\n\n") {
            let event: String = buffer.drain(..end + 2).collect();
            let data: Vec<&str> = event
                .lines()
                .filter_map(|line| line.strip_prefix("data:"))
                .map(str::trim_start)
                .collect();
            if let Ok(value) = serde_json::from_str(&data.join("\n")) {
                events.push(value);
            }
        }
    }
}

/// Open a JSON-RPC stream and read it in the background.
pub fn stream_in_background(
    client: &Client,
    method: &str,
    params: Value,
) -> tokio::task::JoinHandle<Vec<Value>> {
    let request = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
    let http = client.http.clone();
    let url = format!("{}/", client.base);
    let participant = client.participant.clone();
    tokio::spawn(async move {
        let response = http
            .post(url)
            .header("A2A-Version", "1.0")
            .header("X-Participant-Id", participant)
            .header("Accept", "text/event-stream")
            .json(&request)
            .send()
            .await;
        match response {
            Ok(response) => read_until_broken(response).await,
            Err(_) => Vec::new(),
        }
    })
}

/// Poll GetTask until `done` holds, for up to `seconds`.
pub async fn wait_until(
    client: &Client,
    task_id: &str,
    seconds: u64,
    done: impl Fn(&Value) -> bool,
) -> Value {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(seconds);
    loop {
        let task = client.get_task(task_id).await;
        if done(&task) {
            return task;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "gave up waiting on {task}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// The ids of the user messages of a task's history, in order.
pub fn user_message_ids(task: &Value) -> Vec<String> {
    task["history"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|message| message["role"] == "ROLE_USER")
        .filter_map(|message| message["messageId"].as_str().map(str::to_owned))
        .collect()
}

/// The texts of a task's history, in order.
pub fn history_texts(task: &Value) -> Vec<String> {
    task["history"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|message| {
            message["parts"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|part| part["text"].as_str())
                .collect::<Vec<_>>()
                .join("")
        })
        .collect()
}

pub fn is_working(task: &Value) -> bool {
    state(task) == "TASK_STATE_WORKING"
}

pub fn is_parked(task: &Value) -> bool {
    state(task) == "TASK_STATE_INPUT_REQUIRED"
}
