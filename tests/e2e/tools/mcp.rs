//! Issue 11 item 4: MCP servers as tool sources, against real MCP servers
//! from npm: the reference `server-everything`, and `tests/mcp/crashy.mjs`
//! (the official TypeScript SDK), over stdio and over streamable HTTP. The
//! offline model calls their tools (`use tool <server>__<tool> with ...`).

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};

use super::{Helper, free_port, tests_dir, trace_steps};
use crate::server::support::{Server, status_text};
use crate::support::PluginsFolder;

fn node_modules() -> PathBuf {
    let dir = tests_dir().join("mcp/node_modules");
    assert!(
        dir.is_dir(),
        "run `npm ci --prefix tests/mcp` first (tests/run.sh does)"
    );
    dir
}

fn everything() -> String {
    node_modules()
        .join("@modelcontextprotocol/server-everything/dist/index.js")
        .display()
        .to_string()
}

fn crashy() -> String {
    // Resolves the SDK from tests/mcp/node_modules.
    node_modules();
    tests_dir().join("mcp/crashy.mjs").display().to_string()
}

/// A configuration with the offline model and `mcp` (TOML tables).
fn config(mcp: &str) -> String {
    format!("[models]\ndefault = \"offline-echo\"\n\n{mcp}")
}

/// Tell the offline model to call `tool` with `arguments`; the reply.
async fn call(server: &Server, tool: &str, arguments: &str) -> (String, serde_json::Value) {
    let task = server
        .client("alice")
        .say(None, &format!("use tool {tool} with {arguments}"))
        .await;
    (status_text(&task), task)
}

#[tokio::test(flavor = "multi_thread")]
async fn a_reference_server_over_stdio_serves_its_allowlisted_tools_through_tool_invoked() {
    let server = Server::start(
        &config(&format!(
            "[mcp.everything]\ncommand = \"node\"\nargs = [\"{}\", \"stdio\"]\ntools = [\"echo\", \"get-sum\"]\n",
            everything()
        )),
        None,
    );
    let (reply, task) = call(&server, "everything__echo", r#"{"message": "hi"}"#).await;
    assert!(
        reply.starts_with("Tool everything__echo answered: Echo: hi"),
        "{reply}"
    );
    // The call ran as the tool's `tool.invoked.in` executor, where policy
    // hooks and plugins see it like any tool's.
    let steps = trace_steps(&task);
    assert!(
        steps.iter().any(|step| step["point"] == "tool.invoked.in"
            && step["executor"] == "mcp:everything/everything__echo"
            && step["kind"] == "native"),
        "{steps:?}"
    );
    let (reply, _) = call(&server, "everything__get-sum", r#"{"a": 2, "b": 3}"#).await;
    assert!(
        reply.starts_with("Tool everything__get-sum answered: The sum of 2 and 3 is 5."),
        "{reply}"
    );
    // A tool of the server outside the allowlist is not offered at all.
    let (reply, _) = call(&server, "everything__get-env", "{}").await;
    assert!(
        reply.starts_with("There is no tool `everything__get-env` here.")
            && reply.contains("everything__echo, everything__get-sum."),
        "{reply}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_reference_server_over_streamable_http() {
    let port = free_port();
    let _everything = Helper::serving_on(
        "node",
        &[&everything(), "streamableHttp"],
        &[("PORT", &port.to_string())],
        port,
    );
    let server = Server::start(
        &config(&format!(
            "[mcp.web]\nurl = \"http://127.0.0.1:{port}/mcp\"\ntools = [\"echo\"]\n"
        )),
        None,
    );
    let (reply, _) = call(&server, "web__echo", r#"{"message": "over http"}"#).await;
    assert!(
        reply.starts_with("Tool web__echo answered: Echo: over http"),
        "{reply}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_stdio_server_that_crashes_mid_call_is_a_tool_error_and_the_next_call_restarts_it() {
    let server = Server::start(
        &config(&format!(
            "[mcp.crashy]\ncommand = \"node\"\nargs = [\"{}\", \"stdio\"]\ntools = [\"echo\", \"crash\"]\nrestart_backoff_ms = 10\n",
            crashy()
        )),
        None,
    );
    let (before, _) = call(&server, "crashy__echo", r#"{"message": "one"}"#).await;
    assert!(
        before.starts_with("Tool crashy__echo answered: crashy "),
        "{before}"
    );
    let (crashed, _) = call(&server, "crashy__crash", "{}").await;
    assert!(
        crashed.starts_with(
            "Tool crashy__crash failed: the MCP server `crashy` stopped during the call to `crash`"
        ),
        "{crashed}"
    );
    assert!(crashed.contains("exit status: 3"), "{crashed}");
    let (after, _) = call(&server, "crashy__echo", r#"{"message": "two"}"#).await;
    assert!(
        after.starts_with("Tool crashy__echo answered: crashy "),
        "{after}"
    );
    assert_ne!(pid_of(&before), pid_of(&after), "a new process answers");
}

#[tokio::test(flavor = "multi_thread")]
async fn an_http_server_that_crashes_mid_call_is_a_tool_error_and_the_harness_reconnects() {
    let port = free_port();
    let crashy_args = [crashy(), "http".to_owned(), port.to_string()];
    let crashy_args: Vec<&str> = crashy_args.iter().map(String::as_str).collect();
    let first = Helper::serving_on("node", &crashy_args, &[], port);
    let server = Server::start(
        &config(&format!(
            "[mcp.remote]\nurl = \"http://127.0.0.1:{port}/mcp\"\ntools = [\"echo\", \"crash\"]\nrestart_backoff_ms = 10\n"
        )),
        None,
    );
    let (before, _) = call(&server, "remote__echo", r#"{"message": "one"}"#).await;
    assert!(
        before.starts_with("Tool remote__echo answered: crashy "),
        "{before}"
    );
    let (crashed, _) = call(&server, "remote__crash", "{}").await;
    assert!(
        crashed.starts_with(
            "Tool remote__crash failed: the MCP server `remote` stopped during the call to `crash`"
        ),
        "{crashed}"
    );
    drop(first);
    let _second = Helper::serving_on("node", &crashy_args, &[], port);
    let (after, _) = call(&server, "remote__echo", r#"{"message": "two"}"#).await;
    assert!(
        after.starts_with("Tool remote__echo answered: crashy "),
        "{after}"
    );
    assert_ne!(
        pid_of(&before),
        pid_of(&after),
        "the restarted server answers"
    );
}

/// The pid in `... answered: crashy <pid>: <message>`.
fn pid_of(reply: &str) -> String {
    reply
        .split("crashy ")
        .nth(1)
        .and_then(|rest| rest.split(':').next())
        .expect("a crashy reply")
        .to_owned()
}

/// A policy endpoint: every `tool.invoked.pre` call it is asked about is
/// refused, and the tools it was asked about are kept.
async fn refusing_policy() -> (std::net::SocketAddr, Arc<Mutex<Vec<String>>>) {
    let asked = Arc::new(Mutex::new(Vec::new()));
    let seen = asked.clone();
    let app = axum::Router::new().route(
        "/policy",
        axum::routing::post(move |axum::Json(request): axum::Json<Value>| {
            let seen = seen.clone();
            async move {
                let tool = request["params"]["context"]["call"]["name"]
                    .as_str()
                    .unwrap_or("?")
                    .to_owned();
                seen.lock().expect("lock").push(tool);
                axum::Json(json!({"jsonrpc": "2.0", "id": request["id"], "result":
                    {"decision": "abort", "reason": "policy", "message": "no MCP calls today"}}))
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    tokio::spawn(async move { axum::serve(listener, app).await });
    (addr, asked)
}

#[tokio::test(flavor = "multi_thread")]
async fn a_policy_hook_sees_and_refuses_mcp_calls_like_any_tools() {
    let (addr, asked) = refusing_policy().await;
    let hooks = json!({"hooks": [{"name": "no-mcp", "point": "tool.invoked.pre",
                                  "url": format!("http://{addr}/policy")}]});
    let plugins = PluginsFolder::new().with_plugin(
        "policy",
        &[
            ("plugin.json", r#"{"name": "policy", "version": "1.0.0"}"#),
            ("hooks.json", &hooks.to_string()),
        ],
    );
    let server = Server::start(
        &config(&format!(
            "[mcp.crashy]\ncommand = \"node\"\nargs = [\"{}\", \"stdio\"]\ntools = [\"echo\"]\n",
            crashy()
        )),
        Some(plugins.path()),
    );
    let (reply, _) = call(&server, "crashy__echo", r#"{"message": "hi"}"#).await;
    assert!(
        reply.starts_with("Tool crashy__echo failed: the call was refused by policy/no-mcp (policy): no MCP calls today"),
        "{reply}"
    );
    assert_eq!(*asked.lock().expect("lock"), ["crashy__echo"]);
}

#[tokio::test(flavor = "multi_thread")]
async fn an_mcp_servers_progress_notifications_reach_the_turns_stream() {
    let server = Server::start(
        &config(&format!(
            "[mcp.everything]\ncommand = \"node\"\nargs = [\"{}\", \"stdio\"]\ntools = [\"trigger-long-running-operation\"]\n",
            everything()
        )),
        None,
    );
    let text =
        r#"use tool everything__trigger-long-running-operation with {"duration": 0.9, "steps": 3}"#;
    let events = server
        .client("alice")
        .stream(
            "SendStreamingMessage",
            json!({ "message": crate::server::support::text_message(None, text) }),
        )
        .await;
    let texts: Vec<String> = events
        .iter()
        .filter_map(|event| Some(status_text(event["result"].get("statusUpdate")?)))
        .collect();
    assert!(
        texts
            .iter()
            .any(|text| text == "trigger-long-running-operation: 1 of 3"),
        "{texts:?}"
    );
    let reply = texts.last().expect("a final update");
    assert!(
        reply.contains("Long running operation completed. Duration: 0.9 seconds, Steps: 3."),
        "{reply}"
    );
}
