//! A server with the `tool-kit` (0.2.0) and `legacy` (0.1.0) fixtures, the
//! tool-kit granted GET requests to a local HTTP server the test runs.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::json;

use crate::server::support::{Client, status_text};
use crate::support::{PluginsFolder, Spawned, spawn_server};

/// What the local server answers every GET with.
pub const LOCAL_BODY: &str = "hello from the local server";

/// A local HTTP server that counts the requests it gets.
pub struct LocalServer {
    pub port: u16,
    requests: Arc<AtomicUsize>,
}

impl LocalServer {
    pub async fn start() -> LocalServer {
        let requests = Arc::new(AtomicUsize::new(0));
        let counter = Arc::clone(&requests);
        let app = axum::Router::new().fallback(move || {
            let counter = Arc::clone(&counter);
            async move {
                counter.fetch_add(1, Ordering::SeqCst);
                LOCAL_BODY
            }
        });
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let port = listener.local_addr().expect("addr").port();
        tokio::spawn(async move { axum::serve(listener, app).await });
        LocalServer { port, requests }
    }

    pub fn requests(&self) -> usize {
        self.requests.load(Ordering::SeqCst)
    }
}

/// The real binary with the two fixtures; the tool-kit asks for and is
/// granted `GET http://127.0.0.1:<port>`.
pub struct ToolServer {
    spawned: Spawned,
    _plugins: PluginsFolder,
    _dir: tempfile::TempDir,
}

impl ToolServer {
    pub fn start(port: u16) -> ToolServer {
        let rule = format!("GET http://127.0.0.1:{port}");
        let plugins = PluginsFolder::new()
            .with_fixture("tool-kit")
            .with_fixture("legacy");
        let plugin_json = json!({
            "name": "tool-kit", "version": "0.1.0",
            "description": "the tool-kit fixture, asking for the test's local server",
            "capabilities": { "network": [rule] }
        });
        std::fs::write(
            plugins.path().join("tool-kit/plugin.json"),
            plugin_json.to_string(),
        )
        .expect("write plugin.json");
        let dir = tempfile::tempdir().expect("tempdir");
        let config = dir.path().join("tiny-harness.toml");
        std::fs::write(
            &config,
            format!(
                "[models]\ndefault = \"offline-echo\"\n\n[plugins.grants.tool-kit]\nnetwork = [\"{rule}\"]\n"
            ),
        )
        .expect("write config");
        // `info`: the load report and the refused requests' warnings.
        let spawned = spawn_server(&config, plugins.path(), "info");
        ToolServer {
            spawned,
            _plugins: plugins,
            _dir: dir,
        }
    }

    pub fn client(&self, participant: &str) -> Client {
        Client {
            http: crate::support::http(),
            base: self.spawned.base.clone(),
            participant: participant.to_owned(),
            token: None,
        }
    }

    pub fn log(&self) -> String {
        self.spawned.log.lock().expect("log").join("\n")
    }
}

impl Drop for ToolServer {
    fn drop(&mut self) {
        let _ = self.spawned.child.kill();
        let _ = self.spawned.child.wait();
    }
}

/// Say `text` in `task` (a new one when `None`); the task's id and the
/// reply's text.
pub async fn turn(client: &Client, task: Option<&str>, text: &str) -> (String, String) {
    let task = client.say(task, text).await;
    let id = task["id"].as_str().expect("an id").to_owned();
    (id, status_text(&task))
}

/// `use tool <name> with <arguments>`.
pub fn use_tool(name: &str, arguments: serde_json::Value) -> String {
    format!("use tool {name} with {arguments}")
}
