//! The official A2A SDKs' clients against the real binary: the Python SDK
//! (tests/interop/a2a_sdk_client.py; `pip install 'a2a-sdk[grpc]'`) over
//! JSON-RPC, HTTP+JSON and gRPC, and the JavaScript SDK
//! (tests/interop/js; `npm ci`) over JSON-RPC and HTTP+JSON. `tests/run.sh`
//! installs both.

use std::process::Command;

use super::support::{DEFAULT_CONFIG, Server};

const WITH_GRPC: &str = "[grpc]\nlisten = \"127.0.0.1:0\"\n";

fn interop(name: &str) -> String {
    format!("{}/../tests/interop/{name}", env!("CARGO_MANIFEST_DIR"))
}

/// Runs a client script; it must exit 0 and report `N passed, 0 failed`.
fn run(mut command: Command, hint: &str) {
    let output = command
        .output()
        .unwrap_or_else(|err| panic!("cannot run {command:?}: {err} ({hint})"));
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "the SDK client failed ({hint}):\n{stdout}\n{stderr}"
    );
    assert!(stdout.contains("passed, 0 failed"), "{stdout}");
}

fn python_sdk(binding: &str) {
    let server = Server::start(&format!("{DEFAULT_CONFIG}{WITH_GRPC}"), None);
    let python = std::env::var("PYTHON").unwrap_or_else(|_| "python3".into());
    let mut command = Command::new(python);
    command
        .arg(interop("a2a_sdk_client.py"))
        .arg(&server.base)
        .arg(binding);
    run(command, "install it with `pip install 'a2a-sdk[grpc]'`");
}

#[test]
fn the_official_python_sdk_over_json_rpc() {
    python_sdk("JSONRPC");
}

#[test]
fn the_official_python_sdk_over_http_json() {
    python_sdk("HTTP+JSON");
}

#[test]
fn the_official_python_sdk_over_grpc() {
    python_sdk("GRPC");
}

fn javascript_sdk(binding: &str) {
    let server = Server::with_defaults();
    let node = std::env::var("NODE").unwrap_or_else(|_| "node".into());
    let mut command = Command::new(node);
    command
        .arg(interop("js/client.mjs"))
        .arg(&server.base)
        .arg(binding);
    run(
        command,
        "install it with `npm ci --prefix tests/interop/js`",
    );
}

#[test]
fn the_official_javascript_sdk_over_json_rpc() {
    javascript_sdk("JSONRPC");
}

#[test]
fn the_official_javascript_sdk_over_http_json() {
    javascript_sdk("HTTP+JSON");
}
