//! The official A2A Python SDK against the real binary
//! (tests/interop/a2a_sdk_client.py; `pip install a2a-sdk`).

use std::process::Command;

use super::support::Server;

#[test]
fn the_official_python_sdk_sends_streams_gets_lists_commands_and_cancels() {
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../tests/interop/a2a_sdk_client.py"
    );
    let server = Server::with_defaults();
    let python = std::env::var("PYTHON").unwrap_or_else(|_| "python3".into());
    let output = Command::new(&python)
        .arg(script)
        .arg(&server.base)
        .output()
        .unwrap_or_else(|err| panic!("cannot run {python}: {err}"));
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "the SDK client failed (install it with `pip install a2a-sdk`):\n{stdout}\n{stderr}"
    );
    assert!(stdout.contains("passed, 0 failed"), "{stdout}");
}
