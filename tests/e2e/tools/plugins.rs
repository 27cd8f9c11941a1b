//! Issue 11 item 1, the parts that make plugin tools work as commands do: a
//! Wasm tool called by a real provider adapter (the OpenAI protocol, its
//! arguments split across deltas), tools that come and go with their plugin
//! folder (hot reload), and a plugin replacing another plugin's tool body by
//! priority.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use tiny_harness::model::fake::{Answer, FakeProvider, Recorded, Reply};

use super::support::{turn, use_tool};
use super::trace_steps;
use crate::server::support::{Server, status_text};
use crate::support::PluginsFolder;

/// The tool-kit's `fetch` imports `wasi:http`, so its component loads only
/// with the network it asks for granted.
const GRANT: &str = "[plugins.grants.tool-kit]\nnetwork = [\"GET http://127.0.0.1\"]\n";

/// The offline model, with [`GRANT`].
fn offline() -> String {
    format!("[models]\ndefault = \"offline-echo\"\n\n{GRANT}")
}

/// Whether a reply says `shout` is not a tool here (the offline model says
/// so itself; a provider's model reads it as the tool's error).
fn no_shout(reply: &str) -> bool {
    reply.contains("no tool `shout`") || reply.contains("no tool named `shout`")
}

/// The answer of a model that calls `shout` (its arguments in two pieces)
/// and, once the tool has answered, says what it said.
fn calls_shout(request: &Recorded) -> Reply {
    let messages = request.body["messages"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    match messages.last() {
        Some(last) if last["role"] == "tool" => {
            let said = last["content"].as_str().unwrap_or("").to_owned();
            Answer::text(["The tool said: ", &said]).openai()
        }
        _ => Answer::text(["Shouting."])
            .call("call-1", "shout", [r#"{"te"#, r#"xt": "hi"}"#])
            .openai(),
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_provider_model_calls_a_wasm_tool_with_arguments_streamed_in_pieces() {
    let provider = FakeProvider::start(calls_shout).await;
    let config = format!(
        "[models]\ndefault = \"gpt\"\n\n[models.gpt]\nprovider = \"openai\"\nbase_url = \"{}/v1\"\nmodel = \"gpt-fake\"\napi_key = \"fake-key\"\n\n{GRANT}",
        provider.url()
    );
    let plugins = PluginsFolder::new().with_fixture("tool-kit");
    let server = Server::start(&config, Some(plugins.path()));
    let alice = server.client("alice");

    let task = alice.say(None, "shout hi for me").await;
    assert_eq!(status_text(&task), "The tool said: HI!", "{task}");

    let requests = provider.requests();
    assert_eq!(requests.len(), 2, "one call, one answer");
    // The tool was offered with the schema from tools.json.
    let offered = requests[0].body["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|tool| tool["function"]["name"] == "shout")
        .unwrap_or_else(|| panic!("shout offered: {}", requests[0].body["tools"]));
    assert_eq!(
        offered["function"]["parameters"]["required"],
        json!(["text"]),
        "{offered}"
    );
    // The body ran in the sandbox, through tool.invoked.
    let task = alice.get_task(task["id"].as_str().expect("an id")).await;
    let ran = task["history"]
        .as_array()
        .into_iter()
        .flatten()
        .any(|message| message["metadata"]["stream"] == "tool-result");
    assert!(ran, "a tool result in the history: {task}");
}

/// Answer whatever `turn` answers for `text` until `done` holds (a reload
/// lands within a second or so), for at most 30 s.
async fn until_reply(
    client: &crate::server::support::Client,
    task: &str,
    text: &str,
    done: impl Fn(&str) -> bool,
) -> String {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        let (_, reply) = turn(client, Some(task), text).await;
        if done(&reply) {
            return reply;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "still {reply:?} after 30 s"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_plugins_tools_arrive_and_leave_with_its_folder() {
    let plugins = PluginsFolder::new();
    let server = Server::start(&offline(), Some(plugins.path()));
    let alice = server.client("alice");
    let shout = use_tool("shout", json!({ "text": "hi" }));

    let (id, reply) = turn(&alice, None, &shout).await;
    assert!(no_shout(&reply), "{reply}");

    // Deployed as an operator does: built elsewhere, renamed in.
    let staging = PluginsFolder::new();
    staging.add_fixture("tool-kit");
    std::fs::rename(
        staging.path().join("tool-kit"),
        plugins.path().join("tool-kit"),
    )
    .expect("move the plugin in");
    let reply = until_reply(&alice, &id, &shout, |reply| !no_shout(reply)).await;
    assert!(reply.starts_with("Tool shout answered: HI!"), "{reply}");

    std::fs::rename(plugins.path().join("tool-kit"), staging.path().join("gone"))
        .expect("move it out");
    let reply = until_reply(&alice, &id, &shout, no_shout).await;
    assert!(!reply.contains("HI!"), "{reply}");
}

/// A remote `tool.invoked.in` body: answers every call it gets with a
/// whisper of the text, and keeps the tools it was asked about.
async fn whispering_body() -> (std::net::SocketAddr, Arc<Mutex<Vec<String>>>) {
    let asked = Arc::new(Mutex::new(Vec::new()));
    let seen = Arc::clone(&asked);
    let app = axum::Router::new().route(
        "/body",
        axum::routing::post(move |axum::Json(request): axum::Json<Value>| {
            let seen = Arc::clone(&seen);
            async move {
                let mut context = request["params"]["context"].clone();
                let text = context["call"]["arguments"]["text"]
                    .as_str()
                    .unwrap_or("")
                    .to_lowercase();
                seen.lock()
                    .expect("lock")
                    .push(context["call"]["name"].as_str().unwrap_or("?").to_owned());
                context["result"] = json!({ "output": format!("psst, {text}") });
                axum::Json(json!({"jsonrpc": "2.0", "id": request["id"],
                    "result": {"decision": "replace", "context": context}}))
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
async fn a_plugin_replaces_another_plugins_tool_body_by_priority() {
    let (addr, asked) = whispering_body().await;
    let hooks = json!({"hooks": [{"name": "quiet-shout", "point": "tool.invoked.in",
        "tool": "shout", "url": format!("http://{addr}/body"), "priority": 10}]});
    let plugins = PluginsFolder::new().with_fixture("tool-kit").with_plugin(
        "quieter",
        &[
            ("plugin.json", r#"{"name": "quieter", "version": "1.0.0"}"#),
            ("hooks.json", &hooks.to_string()),
        ],
    );
    let server = Server::start(&offline(), Some(plugins.path()));
    let alice = server.client("alice");

    let task = alice
        .say(None, &use_tool("shout", json!({ "text": "HELLO" })))
        .await;
    let reply = status_text(&task);
    assert!(
        reply.starts_with("Tool shout answered: psst, hello"),
        "{reply}"
    );
    assert_eq!(*asked.lock().expect("lock"), ["shout"]);
    // The tool-kit's own body saw the result set and yielded: the trace
    // shows both, the replacement first.
    let bodies: Vec<(String, String)> = trace_steps(&task)
        .iter()
        .filter(|step| step["point"] == "tool.invoked.in")
        .map(|step| {
            (
                step["executor"].as_str().unwrap_or("").to_owned(),
                step["outcome"].as_str().unwrap_or("").to_owned(),
            )
        })
        .collect();
    assert_eq!(
        bodies.first(),
        Some(&("quieter/quiet-shout".to_owned(), "replace".to_owned())),
        "{bodies:?}"
    );
    assert!(
        bodies.iter().skip(1).all(|(_, outcome)| outcome == "pass"),
        "{bodies:?}"
    );
}
