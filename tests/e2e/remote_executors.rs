//! Remote JSON-RPC executors served by a local HTTP server: the happy path,
//! and every way one can fail, none of which passes silently.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use serde_json::{Value, json};
use tiny_harness::commands::CommandFailure;

use crate::support::{PluginsFolder, send};

/// The requests the server saw, for assertions on the wire format.
type Seen = Arc<Mutex<Vec<Value>>>;

async fn rpc(
    State(seen): State<Seen>,
    Path(behaviour): Path<String>,
    Json(request): Json<Value>,
) -> Response {
    seen.lock().expect("lock").push(request.clone());
    let id = request["id"].clone();
    let answer = |result: Value| Json(json!({"jsonrpc": "2.0", "id": id, "result": result}));
    match behaviour.as_str() {
        "deploy" => {
            let mut context = request["params"]["context"].clone();
            let text = format!(
                "deployed {} for {}",
                context["command"]["raw_arguments"].as_str().unwrap_or("?"),
                context["sender"]["id"].as_str().unwrap_or("?")
            );
            context["result"] = json!({"outcome": {"reply": {"text": text, "data": {"env": "prod"}}, "effects": []}});
            answer(json!({"decision": "replace", "context": context})).into_response()
        }
        "veto" => answer(json!({"decision": "abort", "reason": "policy", "message": "change freeze until Monday"})).into_response(),
        "out-of-shape" => answer(json!({"decision": "maybe"})).into_response(),
        "not-json" => (StatusCode::OK, "pass").into_response(),
        "rpc-error" => Json(json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32000, "message": "db down"}})).into_response(),
        "http-500" => StatusCode::INTERNAL_SERVER_ERROR.into_response(),
        "slow" => {
            tokio::time::sleep(Duration::from_secs(3)).await;
            answer(json!({"decision": "pass"})).into_response()
        }
        _ => StatusCode::NOT_FOUND.into_response(),
    }
}

async fn serve() -> (SocketAddr, Seen) {
    let seen = Seen::default();
    let app = axum::Router::new()
        .route("/rpc/{behaviour}", post(rpc))
        .with_state(seen.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    tokio::spawn(async move { axum::serve(listener, app).await });
    (addr, seen)
}

/// A port nothing listens on.
fn closed_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    listener.local_addr().expect("addr").port()
}

fn remote_plugin(addr: SocketAddr) -> PluginsFolder {
    let url = |behaviour: &str| format!("http://{addr}/rpc/{behaviour}");
    let commands = [
        "deploy",
        "vetoed",
        "out-of-shape",
        "not-json",
        "rpc-error",
        "http-500",
        "slow",
        "gone",
    ]
    .map(|name| {
        json!({"name": name, "description": "remote", "usage": format!("/{name} [what]"),
                           "arguments": [{"name": "what", "type": "text"}], "timeout_ms": 300})
    });
    let mut hooks: Vec<Value> = ["deploy", "out-of-shape", "not-json", "rpc-error", "http-500", "slow"]
        .iter()
        .map(|name| json!({"name": format!("{name}-body"), "point": "command.invoked.in", "command": name, "url": url(name)}))
        .collect();
    hooks.push(
        json!({"name": "gone-body", "point": "command.invoked.in", "command": "gone",
                      "url": format!("http://127.0.0.1:{}/rpc/deploy", closed_port())}),
    );
    hooks.push(json!({"name": "vetoed-body", "point": "command.invoked.in", "command": "vetoed", "url": url("deploy")}));
    hooks.push(json!({"name": "freeze", "point": "command.invoked.pre", "command": "vetoed", "url": url("veto")}));
    PluginsFolder::new().with_plugin(
        "remote",
        &[
            ("plugin.json", r#"{"name": "remote", "version": "1.0.0"}"#),
            ("commands.json", &json!({"commands": commands}).to_string()),
            ("hooks.json", &json!({"hooks": hooks}).to_string()),
        ],
    )
}

#[tokio::test(flavor = "multi_thread")]
async fn a_remote_body_serves_a_command_over_json_rpc() {
    let (addr, seen) = serve().await;
    let folder = remote_plugin(addr);
    let loaded = folder.load();
    assert!(!loaded.report.has_problems(), "{}", loaded.report);
    let outcome = send(&loaded.registry, "/deploy the api")
        .await
        .expect("deploys");
    assert_eq!(outcome.reply.text, "deployed the api for alice");
    assert_eq!(outcome.reply.data, Some(json!({"env": "prod"})));
    let request = seen
        .lock()
        .expect("lock")
        .last()
        .cloned()
        .expect("a request");
    assert_eq!(request["jsonrpc"], "2.0");
    assert_eq!(request["method"], "command.invoked.in");
    assert_eq!(request["params"]["context"]["command"]["name"], "deploy");
    assert_eq!(
        request["params"]["context"]["task"]["state"],
        "TASK_STATE_INPUT_REQUIRED"
    );
    assert!(request["params"]["context"]["result"].is_null());
}

#[tokio::test(flavor = "multi_thread")]
async fn a_remote_pre_hook_can_veto() {
    let (addr, _) = serve().await;
    let loaded = remote_plugin(addr).load();
    let Err(CommandFailure::Refused(message)) = send(&loaded.registry, "/vetoed now").await else {
        panic!("the remote policy refuses");
    };
    assert_eq!(message, "change freeze until Monday");
}

#[tokio::test(flavor = "multi_thread")]
async fn every_remote_failure_fails_the_command_and_the_next_one_works() {
    let (addr, _) = serve().await;
    let loaded = remote_plugin(addr).load();
    let cases = [
        ("/out-of-shape", "answered out of shape"),
        ("/not-json", "not JSON"),
        ("/rpc-error", "remote error"),
        ("/http-500", "HTTP 500"),
        ("/slow", "timed out after 300 ms"),
        ("/gone", "unreachable"),
    ];
    for (message, expected) in cases {
        let result = send(&loaded.registry, message).await;
        let Err(CommandFailure::Failed(text)) = &result else {
            panic!("{message} must fail, got {result:?}");
        };
        assert!(text.starts_with(&format!("command {message} ")), "{text}");
        assert!(
            text.contains(expected),
            "{message}: `{text}` lacks `{expected}`"
        );
        send(&loaded.registry, "/deploy again")
            .await
            .expect("the next command works");
    }
}

/// A remote body behind https with a private CA: refused (and the reason
/// named) by a loader that does not trust the CA, served by one that does.
#[tokio::test(flavor = "multi_thread")]
async fn a_remote_body_over_https_needs_its_ca_trusted() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ca = crate::support::PrivateCa::issue(dir.path());
    let tcp = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let port = tcp.local_addr().expect("addr").port();
    let listener = tiny_harness::server::tls::TlsListener::new(tcp, ca.acceptor()).expect("TLS");
    let app = axum::Router::new()
        .route("/rpc/{behaviour}", post(rpc))
        .with_state(Seen::default());
    tokio::spawn(async move { axum::serve(listener, app).await });
    let hooks = json!({"hooks": [{"name": "deploy-body", "point": "command.invoked.in",
        "command": "deploy", "url": format!("https://localhost:{port}/rpc/deploy")}]});
    let commands = json!({"commands": [{"name": "deploy", "description": "remote",
        "usage": "/deploy [what]", "arguments": [{"name": "what", "type": "text"}]}]});
    let folder = PluginsFolder::new().with_plugin(
        "remote",
        &[
            ("plugin.json", r#"{"name": "remote", "version": "1.0.0"}"#),
            ("commands.json", &commands.to_string()),
            ("hooks.json", &hooks.to_string()),
        ],
    );

    let untrusting = folder.load();
    let Err(CommandFailure::Failed(message)) = send(&untrusting.registry, "/deploy it").await
    else {
        panic!("an unknown CA is refused");
    };
    assert!(message.contains("certificate"), "{message}");

    let roots =
        tiny_harness::outbound::ExtraRoots::from_pem_files(std::slice::from_ref(&ca.ca_file))
            .expect("the CA");
    let trusting = tiny_harness::plugins::PluginLoader::new(crate::support::runtime())
        .with_extra_roots(&roots)
        .load(
            Some(folder.path()),
            tiny_harness::commands::CommandRegistry::builder(),
        );
    let outcome = send(&trusting.registry, "/deploy it")
        .await
        .expect("served over https");
    assert_eq!(outcome.reply.text, "deployed it for alice");
}
