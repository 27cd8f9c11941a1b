//! Issue 8 item 2, Host and Origin: a rebinding `Host` and a cross-site request are
//! refused, a state change cannot be a cross-site "simple" request, no permissive CORS; the
//! server's own pages, listed origins and public names keep working.

use serde_json::{Value, json};

use crate::server::support::{DEFAULT_CONFIG, Server, state};
use crate::support::raw_http;

/// `host:port` of the server.
fn authority(server: &Server) -> String {
    server.base.trim_start_matches("http://").to_owned()
}

fn port(server: &Server) -> String {
    authority(server)
        .rsplit_once(':')
        .map(|(_, port)| port.to_owned())
        .expect("a port")
}

/// A task of the participant who names nobody (`local`), as the issue's victim.
async fn local_task(server: &Server) -> String {
    let task = server.client("local").say(None, "mine").await;
    task["id"].as_str().expect("id").to_owned()
}

#[tokio::test(flavor = "multi_thread")]
async fn issue_8_2_a_rebinding_host_is_refused_naming_the_allowed_names() {
    let server = Server::with_defaults();
    let port = port(&server);
    local_task(&server).await;
    // The issue's curl: a page whose name rebinds to 127.0.0.1.
    let rebound = raw_http(
        &server.base,
        &format!(
            "GET /tasks?A2A-Version=1.0 HTTP/1.1\nHost: rebind.attacker.example:{port}\n\
             X-Participant-Id: local"
        ),
        "",
    )
    .await;
    assert_eq!(rebound.status, 403, "{rebound:?}");
    let error = &rebound.json()["error"];
    assert_eq!(error["details"][0]["reason"], "HOST_NOT_ALLOWED", "{error}");
    let message = error["message"].as_str().unwrap_or("");
    for name in [
        "rebind.attacker.example",
        "localhost",
        "127.0.0.1",
        "[::1]",
        "public_names",
    ] {
        assert!(message.contains(name), "{name}: {message}");
    }
    assert!(
        !rebound.body.contains("mine"),
        "no task leaked: {}",
        rebound.body
    );
    // The JSON-RPC endpoint answers in its own shape; the card is behind the check too.
    let rpc = raw_http(
        &server.base,
        &format!(
            "POST / HTTP/1.1\nHost: rebind.attacker.example:{port}\nContent-Type: application/json\n\
             A2A-Version: 1.0"
        ),
        r#"{"jsonrpc": "2.0", "id": 1, "method": "ListTasks", "params": {}}"#,
    )
    .await;
    assert_eq!(rpc.status, 403);
    assert_eq!(rpc.json()["error"]["data"][0]["reason"], "HOST_NOT_ALLOWED");
    let card = raw_http(
        &server.base,
        "GET /.well-known/agent-card.json HTTP/1.1\nHost: rebind.attacker.example",
        "",
    )
    .await;
    assert_eq!(card.status, 403);
    // The same request by a loopback name is served, and so is each loopback name.
    for host in ["localhost", "127.0.0.1", "[::1]"] {
        let served = raw_http(
            &server.base,
            &format!("GET /tasks?A2A-Version=1.0 HTTP/1.1\nHost: {host}:{port}"),
            "",
        )
        .await;
        assert_eq!(served.status, 200, "{host}: {served:?}");
        assert!(served.body.contains("mine"), "{host}: {}", served.body);
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn issue_8_2_a_cross_site_request_is_refused_and_changes_nothing() {
    let server = Server::with_defaults();
    let host = authority(&server);
    let id = local_task(&server).await;
    let cancel = raw_http(
        &server.base,
        &format!(
            "POST /tasks/{id}:cancel?A2A-Version=1.0 HTTP/1.1\nHost: {host}\n\
             Origin: https://evil.example\nContent-Type: application/json"
        ),
        "{}",
    )
    .await;
    assert_eq!(cancel.status, 403, "{cancel:?}");
    assert_eq!(
        cancel.json()["error"]["details"][0]["reason"],
        "ORIGIN_NOT_ALLOWED"
    );
    assert!(
        cancel.body.contains("allowed_origins"),
        "says how to allow it: {}",
        cancel.body
    );
    // No permissive CORS: neither the refusal nor a preflight allows the page anything.
    assert_eq!(cancel.header("access-control-allow-origin"), "");
    let preflight = raw_http(
        &server.base,
        &format!(
            "OPTIONS /message:send HTTP/1.1\nHost: {host}\nOrigin: https://evil.example\n\
             Access-Control-Request-Method: POST\nAccess-Control-Request-Headers: content-type"
        ),
        "",
    )
    .await;
    assert_eq!(preflight.status, 403);
    assert_eq!(preflight.header("access-control-allow-origin"), "");
    let task = server.client("local").get_task(&id).await;
    assert_eq!(state(&task), "TASK_STATE_INPUT_REQUIRED", "{task}");
}

#[tokio::test(flavor = "multi_thread")]
async fn issue_8_2_a_state_change_cannot_be_a_simple_cross_site_request() {
    let server = Server::with_defaults();
    let host = authority(&server);
    let id = local_task(&server).await;
    // The issue's request: no body, no custom header; as an older browser sends it, without
    // Origin. And the form-post variant, a text/plain body.
    for (extra, body) in [
        ("", ""),
        ("\nContent-Type: text/plain", "{}"),
        ("\nContent-Type: application/x-www-form-urlencoded", "a=b"),
    ] {
        let cancel = raw_http(
            &server.base,
            &format!("POST /tasks/{id}:cancel?A2A-Version=1.0 HTTP/1.1\nHost: {host}{extra}"),
            body,
        )
        .await;
        assert_eq!(cancel.status, 403, "{extra}: {cancel:?}");
        assert_eq!(
            cancel.json()["error"]["details"][0]["reason"],
            "SIMPLE_REQUEST_REFUSED",
            "{extra}"
        );
    }
    let task = server.client("local").get_task(&id).await;
    assert_eq!(state(&task), "TASK_STATE_INPUT_REQUIRED", "{task}");
    // With the A2A-Version header (which no page can add without a preflight), it cancels.
    let cancel = raw_http(
        &server.base,
        &format!("POST /tasks/{id}:cancel HTTP/1.1\nHost: {host}\nA2A-Version: 1.0"),
        "",
    )
    .await;
    assert_eq!(cancel.status, 200, "{cancel:?}");
    assert_eq!(state(&cancel.json()), "TASK_STATE_CANCELED");
}

#[tokio::test(flavor = "multi_thread")]
async fn issue_8_2_own_pages_listed_origins_and_public_names_keep_working() {
    let config = format!(
        "{DEFAULT_CONFIG}\n[http]\npublic_names = [\"harness.example\"]\n\
         allowed_origins = [\"https://app.example\"]\n"
    );
    let server = Server::start(&config, None);
    let host = authority(&server);
    let port = port(&server);
    let send = |origin: &str, host: &str| {
        format!(
            "POST /message:send HTTP/1.1\nHost: {host}\nOrigin: {origin}\n\
             Content-Type: application/json\nA2A-Version: 1.0\nX-Participant-Id: alice"
        )
    };
    let message = json!({"message": {"messageId": "m1", "role": "ROLE_USER",
        "parts": [{"text": "from the page"}]}})
    .to_string();
    // A page served by the harness itself (the web UI at /ui): same origin, fetch with JSON.
    let own = raw_http(
        &server.base,
        &send(
            &format!("http://localhost:{port}"),
            &format!("localhost:{port}"),
        ),
        &message,
    )
    .await;
    assert_eq!(own.status, 200, "{own:?}");
    assert_eq!(own.header("access-control-allow-origin"), "");
    // A listed origin: its preflight is answered, and its responses name it (never `*`).
    let preflight = raw_http(
        &server.base,
        &format!(
            "OPTIONS /message:send HTTP/1.1\nHost: {host}\nOrigin: https://app.example\n\
             Access-Control-Request-Method: POST\n\
             Access-Control-Request-Headers: content-type, a2a-version"
        ),
        "",
    )
    .await;
    assert_eq!(preflight.status, 204, "{preflight:?}");
    assert_eq!(
        preflight.header("access-control-allow-origin"),
        "https://app.example"
    );
    assert!(
        preflight
            .header("access-control-allow-headers")
            .contains("a2a-version")
    );
    let listed = raw_http(&server.base, &send("https://app.example", &host), &message).await;
    assert_eq!(listed.status, 200, "{listed:?}");
    assert_eq!(
        listed.header("access-control-allow-origin"),
        "https://app.example"
    );
    assert!(listed.header("vary").contains("Origin"), "{listed:?}");
    // A public name is a name of the server; the card then advertises what it was asked by.
    let card = raw_http(
        &server.base,
        &format!("GET /.well-known/agent-card.json HTTP/1.1\nHost: harness.example:{port}"),
        "",
    )
    .await;
    assert_eq!(card.status, 200, "{card:?}");
    let card: Value = card.json();
    assert_eq!(card["name"], "tiny-harness");
}
