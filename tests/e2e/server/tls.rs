//! Serving A2A over https (`[tls] cert_file` and `key_file`): the card
//! advertises https, a conversation works through a client that trusts the
//! certificate's CA, a silent connection holds up nobody, and neither a
//! plain-http request nor a client that does not trust the CA gets in.

use std::time::Duration;

use serde_json::{Value, json};

use super::support::{DEFAULT_CONFIG, Server, text_message};
use crate::support::PrivateCa;

#[tokio::test(flavor = "multi_thread")]
async fn the_server_speaks_https_with_its_certificate() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ca = PrivateCa::issue(dir.path());
    let config = format!(
        "{DEFAULT_CONFIG}\n[tls]\ncert_file = \"{}\"\nkey_file = \"{}\"\n",
        ca.cert_file.display(),
        ca.key_file.display()
    );
    let server = Server::start(&config, None);
    let authority = server
        .base
        .strip_prefix("https://")
        .unwrap_or_else(|| panic!("served over https: {}", server.base))
        .to_owned();

    // Connected, never a ClientHello: the handshakes of others go on.
    let _silent = tokio::net::TcpStream::connect(&authority)
        .await
        .expect("connects");

    let client = ca.client();
    let card: Value = tokio::time::timeout(
        Duration::from_secs(5),
        client
            .get(format!("{}/.well-known/agent-card.json", server.base))
            .send(),
    )
    .await
    .expect("not held up by the silent connection")
    .expect("the card over https")
    .json()
    .await
    .expect("json");
    for interface in card["supportedInterfaces"].as_array().expect("interfaces") {
        let url = interface["url"].as_str().expect("url");
        assert!(url.starts_with("https://"), "{url}");
    }

    let reply: Value = client
        .post(&server.base)
        .header("A2A-Version", "1.0")
        .header("X-Participant-Id", "alice")
        .json(&json!({
            "jsonrpc": "2.0",
            "id": 1,
            "method": "SendMessage",
            "params": {"message": text_message(None, "hello over TLS")},
        }))
        .send()
        .await
        .expect("sent")
        .json()
        .await
        .expect("json");
    assert_eq!(
        reply["result"]["task"]["status"]["state"], "TASK_STATE_INPUT_REQUIRED",
        "{reply}"
    );

    let plain = crate::support::http()
        .get(format!("http://{authority}/.well-known/agent-card.json"))
        .send()
        .await;
    assert!(plain.is_err(), "plain http answered: {plain:?}");
    let untrusting = crate::support::http()
        .get(format!("{}/.well-known/agent-card.json", server.base))
        .send()
        .await
        .expect_err("a certificate from an unknown CA is refused");
    let why = tiny_harness::outbound::describe(untrusting);
    assert!(why.contains("certificate"), "{why}");
}

#[test]
fn a_broken_certificate_stops_the_start_naming_the_file() {
    let dir = tempfile::tempdir().expect("tempdir");
    let cert = dir.path().join("server.pem");
    std::fs::write(&cert, "not a certificate").expect("write");
    let config = dir.path().join("tiny-harness.toml");
    std::fs::write(
        &config,
        "[tls]\ncert_file = \"server.pem\"\nkey_file = \"server-key.pem\"\n\
         [store]\npath = \":memory:\"\n",
    )
    .expect("write");
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_tiny-harness"))
        .args(["serve", "--listen", "127.0.0.1:0", "--config"])
        .arg(&config)
        .env(
            "TINY_HARNESS_CACHE_DIR",
            crate::support::component_cache_dir(),
        )
        .env("TMPDIR", dir.path())
        .output()
        .expect("runs");
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("server.pem"), "{stderr}");
    assert!(stderr.contains("[tls]"), "{stderr}");
}
