//! Every error path of the bindings gets its specific A2A error, and none of
//! them loses or changes anything.

use std::time::Duration;

use serde_json::{Value, json};

use super::support::{DEFAULT_CONFIG, Server, text_message};

async fn raw_rpc(server: &Server, version: Option<&str>, body: Vec<u8>) -> (u16, Value) {
    let mut request = crate::support::http()
        .post(format!("{}/", server.base))
        .header("content-type", "application/json")
        .header("X-Participant-Id", "alice");
    if let Some(version) = version {
        request = request.header("A2A-Version", version);
    }
    let response = request.body(body).send().await.expect("sent");
    let status = response.status().as_u16();
    (status, response.json().await.expect("a JSON error body"))
}

fn reason(response: &Value) -> &str {
    response["error"]["data"][0]["reason"]
        .as_str()
        .unwrap_or("")
}

#[tokio::test(flavor = "multi_thread")]
async fn json_rpc_errors_are_specific() {
    let server = Server::with_defaults();
    let call = |method: &str, params: Value| json!({"jsonrpc": "2.0", "id": 7, "method": method, "params": params});
    let cases: Vec<(&str, Vec<u8>, i64)> = vec![
        (
            "malformed JSON",
            b"{\"jsonrpc\": \"2.0\", \"id\": 1, ".to_vec(),
            -32700,
        ),
        (
            "not JSON-RPC 2.0",
            br#"{"jsonrpc": "1.0", "id": 1, "method": "GetTask"}"#.to_vec(),
            -32600,
        ),
        (
            "unknown method",
            call("FlyToTheMoon", json!({})).to_string().into_bytes(),
            -32601,
        ),
        (
            "wrong params",
            call("GetTask", json!({"id": 42})).to_string().into_bytes(),
            -32602,
        ),
        (
            "a message without parts",
            call(
                "SendMessage",
                json!({"message": {"messageId": "x", "role": "ROLE_USER"}}),
            )
            .to_string()
            .into_bytes(),
            -32602,
        ),
        (
            "unknown task",
            call("GetTask", json!({"id": "no-such-task"}))
                .to_string()
                .into_bytes(),
            -32001,
        ),
        // The card says extendedAgentCard: false, so spec 3.3.4 requires UnsupportedOperation.
        (
            "no extended card",
            call("GetExtendedAgentCard", json!({}))
                .to_string()
                .into_bytes(),
            -32004,
        ),
    ];
    for (what, body, code) in cases {
        let (_, response) = raw_rpc(&server, Some("1.0"), body).await;
        assert_eq!(response["error"]["code"], code, "{what}: {response}");
        assert_eq!(
            response["error"]["data"][0]["domain"], "a2a-protocol.org",
            "{what}: {response}"
        );
        assert!(
            response["error"]["message"]
                .as_str()
                .is_some_and(|m| !m.is_empty()),
            "{what}"
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn unsupported_protocol_versions_are_refused() {
    let server = Server::with_defaults();
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "ListTasks", "params": {}}).to_string();
    for version in [None, Some("0.3"), Some("2.0")] {
        let (_, response) = raw_rpc(&server, version, body.clone().into_bytes()).await;
        assert_eq!(response["error"]["code"], -32009, "{version:?}: {response}");
    }
    for version in ["1.0", "1.0.1"] {
        let (_, response) = raw_rpc(&server, Some(version), body.clone().into_bytes()).await;
        assert!(response.get("result").is_some(), "{version}: {response}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn an_oversized_body_is_refused_before_it_is_read() {
    let server = Server::start("[limits]\nmax_body_bytes = 4096\n", None);
    let mut message = text_message(None, &"x".repeat(10_000));
    message["messageId"] = json!("big");
    let body =
        json!({"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": message}});
    let (status, response) = raw_rpc(&server, Some("1.0"), body.to_string().into_bytes()).await;
    assert_eq!(
        reason(&response),
        "PAYLOAD_TOO_LARGE",
        "{status} {response}"
    );
    // Nothing was accepted.
    let listed = server.client("alice").ok("ListTasks", json!({})).await;
    assert_eq!(listed["tasks"].as_array().map(Vec::len), Some(0));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_participant_over_their_rate_limit_is_told_so() {
    let server = Server::start(
        "[rate_limit]\nper_participant_burst = 2\nper_participant_per_second = 0.01\n",
        None,
    );
    let alice = server.client("alice");
    alice.say(None, "one").await;
    alice.say(None, "two").await;
    let response = alice
        .rpc(
            "SendMessage",
            json!({"message": text_message(None, "three")}),
        )
        .await;
    assert_eq!(reason(&response), "RATE_LIMITED", "{response}");
    // Another participant has their own bucket.
    server.client("bob").say(None, "hello").await;
    // Reading is not limited.
    assert_eq!(
        alice.ok("ListTasks", json!({})).await["tasks"]
            .as_array()
            .map(Vec::len),
        Some(2)
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn the_http_json_binding_speaks_the_same_protocol() {
    let server = Server::with_defaults();
    let http = crate::support::http();
    let post = |path: &str| {
        http.post(format!("{}{path}", server.base))
            .header("A2A-Version", "1.0")
            .header("X-Participant-Id", "alice")
    };
    let sent: Value = post("/message:send")
        .json(&json!({"message": text_message(None, "hello over rest")}))
        .send()
        .await
        .expect("sent")
        .json()
        .await
        .expect("json");
    let id = sent["task"]["id"].as_str().expect("a task").to_owned();
    assert_eq!(sent["task"]["status"]["state"], "TASK_STATE_INPUT_REQUIRED");

    let got = http
        .get(format!("{}/tasks/{id}?historyLength=1", server.base))
        .header("A2A-Version", "1.0")
        .header("X-Participant-Id", "alice")
        .send()
        .await
        .expect("sent");
    assert_eq!(got.status(), 200);
    let got: Value = got.json().await.expect("json");
    assert_eq!(got["history"].as_array().map(Vec::len), Some(1));

    let missing = http
        .get(format!("{}/tasks/nope", server.base))
        .header("A2A-Version", "1.0")
        .header("X-Participant-Id", "alice")
        .send()
        .await
        .expect("sent");
    assert_eq!(missing.status(), 404);

    let canceled = post(&format!("/tasks/{id}:cancel"))
        .send()
        .await
        .expect("sent");
    assert_eq!(canceled.status(), 200);
    let canceled: Value = canceled.json().await.expect("json");
    assert_eq!(canceled["status"]["state"], "TASK_STATE_CANCELED");

    let bad = post("/message:send")
        .header("content-type", "application/json")
        .body("{nope")
        .send()
        .await
        .expect("sent");
    assert_eq!(bad.status(), 400);
    let old = http
        .post(format!("{}/message:send", server.base))
        .header("A2A-Version", "0.3")
        .json(&json!({"message": text_message(None, "hi")}))
        .send()
        .await
        .expect("sent");
    assert_eq!(old.status(), 400, "unsupported version");
}

/// A client that starts a request and never finishes its headers is cut off
/// after `[limits] header_read_timeout_secs`; others are served meanwhile.
#[tokio::test(flavor = "multi_thread")]
async fn a_connection_that_trickles_its_headers_is_closed() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    let server = Server::start(
        &format!("{DEFAULT_CONFIG}\n[limits]\nheader_read_timeout_secs = 1\n"),
        None,
    );
    let authority = server.base.trim_start_matches("http://");
    let mut slow = tokio::net::TcpStream::connect(authority)
        .await
        .expect("connects");
    slow.write_all(b"GET /.well-known/agent-card.json HTTP/1.1\r\nHost: x\r\n")
        .await
        .expect("half a request");

    let card = crate::support::http()
        .get(format!("{}/.well-known/agent-card.json", server.base))
        .send()
        .await
        .expect("served while the slow client waits");
    assert_eq!(card.status(), 200);

    let started = std::time::Instant::now();
    let mut rest = Vec::new();
    let read = tokio::time::timeout(Duration::from_secs(10), slow.read_to_end(&mut rest))
        .await
        .expect("the server closes the connection");
    // Closed (possibly with a 408 first), never answered with the card.
    assert!(
        read.is_err() || !String::from_utf8_lossy(&rest).contains("200 OK"),
        "{}",
        String::from_utf8_lossy(&rest)
    );
    assert!(started.elapsed() < Duration::from_secs(5));
}

/// SIGTERM stops the server cleanly: it stops accepting, lets the open
/// request finish, and exits 0.
#[test]
fn sigterm_stops_the_server_cleanly() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = dir.path().join("tiny-harness.toml");
    std::fs::write(&config, DEFAULT_CONFIG).expect("write config");
    let plugins = dir.path().join("plugins");
    std::fs::create_dir(&plugins).expect("mkdir");
    let mut spawned = crate::support::spawn_server(&config, &plugins, "info");
    let status = std::process::Command::new("kill")
        .args(["-TERM", &spawned.child.id().to_string()])
        .status()
        .expect("kill runs");
    assert!(status.success());
    let deadline = std::time::Instant::now() + Duration::from_secs(15);
    let exit = loop {
        if let Some(exit) = spawned.child.try_wait().expect("waits") {
            break exit;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "still running after SIGTERM"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(exit.success(), "{exit}");
    // The log reader may still be draining the closed pipe.
    let said = |text: &str| {
        let log = spawned.log.lock().expect("log");
        log.iter().any(|line| line.contains(text))
    };
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while !said("shutting down") {
        assert!(std::time::Instant::now() < deadline, "no shutdown logged");
        std::thread::sleep(Duration::from_millis(20));
    }
}
