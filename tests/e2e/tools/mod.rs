//! Issue 11 items 1-3 and issue 10 item 10, end to end on the real binary:
//! tools declared by a plugin (tools.json) whose bodies are Wasm components
//! built against contract 0.2.0, called by the offline model's
//! deterministic `use tool <name> with <json>` lines; network by grant; a
//! 0.1.0 component beside them; `/status` with tokens.
//!
//! Items 4 and 6: tool sources outside the plugins folder, MCP servers
//! installed from npm (`tests/mcp`, `npm ci` in `tests/run.sh`) and other
//! A2A agents as delegates; the helpers below are theirs.

mod calls;
mod delegate;
mod mcp;
mod network;
mod plugins;
mod support;

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde_json::Value;

/// The repository's `tests/` folder.
pub fn tests_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the workspace")
        .join("tests")
}

/// A loopback port nothing listens on right now.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .expect("a free port")
        .port()
}

/// A helper process (an MCP server, an A2A agent) killed when dropped.
pub struct Helper(pub Child);

impl Helper {
    /// Start `program` with `args` and wait (at most 30 s) until something
    /// accepts connections on `port`.
    pub fn serving_on(program: &str, args: &[&str], env: &[(&str, &str)], port: u16) -> Helper {
        let child = Command::new(program)
            .args(args)
            .envs(env.iter().copied())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|error| panic!("cannot start {program}: {error}"));
        let helper = Helper(child);
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                std::time::Instant::now() < deadline,
                "{program} {args:?} did not listen on {port} within 30 s"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        helper
    }
}

impl Drop for Helper {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The `metadata.trace.steps` of a task's status message.
pub fn trace_steps(task: &Value) -> Vec<Value> {
    task["status"]["message"]["metadata"]["trace"]["steps"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}
