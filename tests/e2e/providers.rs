//! Real model providers, through the real binary: a configuration pointing
//! `[models.<name>]` at fake servers that speak OpenAI's and Anthropic's
//! wire protocols (`tiny_harness::model::fake`), keys in the server's
//! environment. What a participant sees (replies, states) and what the
//! provider sees (requests, connections) are checked; never the key.

use std::process::{Command, Stdio};

use serde_json::{Value, json};
use tiny_harness::model::fake::{Answer, FakeProvider, Piece, Recorded, Reply};

use crate::server::support::{
    Client, complete_control, state, status_text, sub_state, text_message, wait_for,
};
use crate::support::{Spawned, spawn_server_with_env};

const OPENAI_KEY: &str = "sk-e2e-openai-7f3a9c1d-do-not-print";
const ANTHROPIC_KEY: &str = "sk-ant-e2e-52be0d11-do-not-print";

/// A fake answering `<who> heard: <the last user text>`, or, for a message
/// asking to go slowly, its first word and then nothing until it is cut.
fn echoing(who: &'static str, anthropic: bool) -> impl Fn(&Recorded) -> Reply {
    move |request| {
        let heard = request.last_user_text();
        let answer = Answer::text([format!("{who} heard: "), heard.clone()]);
        let events = if anthropic {
            answer.anthropic_events()
        } else {
            answer.openai_events()
        };
        if heard.contains("slowly") {
            // The first text delta, then a held-open stream.
            let upto = if anthropic { 4 } else { 2 };
            Reply::sse(events.into_iter().take(upto)).then_hold()
        } else {
            Reply::sse(events)
        }
    }
}

/// The server under test, its folder and its log; killed when dropped.
struct Harness {
    spawned: Spawned,
    _dir: tempfile::TempDir,
}

impl Harness {
    fn start(config: &str) -> Harness {
        Self::start_with_spy(config, None)
    }

    /// With `spy`, a plugin whose remote `llm.invoked.pre` executor is that
    /// fake: it sees every context the model hooks see.
    fn start_with_spy(config: &str, spy: Option<&FakeProvider>) -> Harness {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("tiny-harness.toml");
        std::fs::write(&path, config).expect("write the configuration");
        let plugins = dir.path().join("plugins");
        std::fs::create_dir_all(&plugins).expect("mkdir");
        if let Some(spy) = spy {
            let plugin = plugins.join("spy");
            std::fs::create_dir_all(&plugin).expect("mkdir");
            std::fs::write(
                plugin.join("plugin.json"),
                r#"{"name": "spy", "version": "1.0.0"}"#,
            )
            .expect("write");
            let hooks = json!({"hooks": [
                {"name": "spy", "point": "llm.invoked.pre", "url": format!("{}/rpc", spy.url())},
            ]});
            std::fs::write(plugin.join("hooks.json"), hooks.to_string()).expect("write");
        }
        // Debug logs, so a key printed anywhere would show.
        let spawned = spawn_server_with_env(
            &path,
            &plugins,
            "debug",
            &[
                ("TH_E2E_OPENAI_KEY", OPENAI_KEY),
                ("TH_E2E_ANTHROPIC_KEY", ANTHROPIC_KEY),
            ],
        );
        Harness { spawned, _dir: dir }
    }

    fn client(&self, participant: &str) -> Client {
        Client {
            http: crate::support::http(),
            base: self.spawned.base.clone(),
            participant: participant.to_owned(),
            token: None,
        }
    }

    fn log(&self) -> String {
        self.spawned.log.lock().expect("log").join("\n")
    }
}

impl Drop for Harness {
    fn drop(&mut self) {
        let _ = self.spawned.child.kill();
        let _ = self.spawned.child.wait();
    }
}

fn config(openai: &FakeProvider, anthropic: &FakeProvider) -> String {
    format!(
        r#"
[models]
default = "gpt"

[models.gpt]
provider = "openai"
base_url = "{openai}/v1"
model = "gpt-fake"
api_key_env = "TH_E2E_OPENAI_KEY"
reasoning_effort = {{ high = "high" }}
max_attempts = 2
initial_backoff_ms = 1

[models.claude]
provider = "anthropic"
base_url = "{anthropic}"
model = "claude-fake"
api_key_env = "TH_E2E_ANTHROPIC_KEY"
thinking_budget = {{ high = 2048 }}
max_output_tokens = 4096
"#,
        openai = openai.url(),
        anthropic = anthropic.url(),
    )
}

fn assert_no_key(what: &str, text: &str) {
    for key in [OPENAI_KEY, ANTHROPIC_KEY] {
        assert!(!text.contains(key), "{what} shows a key:\n{text}");
    }
}

fn id_of(task: &Value) -> String {
    task["id"].as_str().expect("a task id").to_owned()
}

#[tokio::test(flavor = "multi_thread")]
async fn model_switches_between_an_openai_and_an_anthropic_provider_between_turns() {
    let openai = FakeProvider::start(echoing("OpenAI", false)).await;
    let anthropic = FakeProvider::start(echoing("Anthropic", true)).await;
    // A hook executor that lets everything pass and remembers the contexts.
    let spy = FakeProvider::start(|request| {
        Reply::json(
            200,
            &json!({"jsonrpc": "2.0", "id": request.body["id"], "result": {"decision": "pass"}}),
        )
    })
    .await;
    let harness = Harness::start_with_spy(&config(&openai, &anthropic), Some(&spy));
    let alice = harness.client("alice");

    let first = alice.say(None, "hello there").await;
    let id = id_of(&first);
    assert_eq!(state(&first), "TASK_STATE_INPUT_REQUIRED", "{first}");
    assert_eq!(sub_state(&first), Some("awaiting-next-message"));
    assert_eq!(status_text(&first), "OpenAI heard: hello there");

    let switched = alice.say(Some(&id), "/model claude").await;
    assert!(status_text(&switched).contains("claude"), "{switched}");
    alice.say(Some(&id), "/effort high").await;
    let second = alice.say(Some(&id), "and what now?").await;
    assert_eq!(state(&second), "TASK_STATE_INPUT_REQUIRED", "{second}");
    assert_eq!(status_text(&second), "Anthropic heard: and what now?");

    // Each provider was asked once, in its own protocol, with its own key.
    let [asked_openai] = openai.requests().try_into().expect("one OpenAI request");
    assert_eq!(asked_openai.path, "/v1/chat/completions");
    let bearer = format!("Bearer {OPENAI_KEY}");
    assert_eq!(asked_openai.header("authorization"), Some(bearer.as_str()));
    assert_eq!(asked_openai.body["model"], "gpt-fake");
    assert_eq!(asked_openai.body["stream_options"]["include_usage"], true);
    assert!(asked_openai.body.get("reasoning_effort").is_none());
    let [asked_anthropic] = anthropic
        .requests()
        .try_into()
        .expect("one Anthropic request");
    assert_eq!(asked_anthropic.path, "/v1/messages");
    assert_eq!(asked_anthropic.header("x-api-key"), Some(ANTHROPIC_KEY));
    assert_eq!(asked_anthropic.header("authorization"), None);
    assert_eq!(asked_anthropic.body["model"], "claude-fake");
    assert_eq!(
        asked_anthropic.body["thinking"],
        json!({"type": "enabled", "budget_tokens": 2048}),
        "/effort high maps to the thinking budget"
    );
    // One conversation: the second provider sees how it began.
    let messages = asked_anthropic.body["messages"].to_string();
    assert!(messages.contains("hello there"), "{messages}");
    assert!(messages.contains("OpenAI heard: hello there"), "{messages}");

    // Nowhere a participant or a plugin can look shows a key.
    let status = alice.say(Some(&id), "/status").await;
    assert!(status_text(&status).contains("claude"), "{status}");
    let task = alice.get_task(&id).await;
    assert_no_key("the task (with /status)", &task.to_string());
    let card = alice
        .http
        .get(format!(
            "{}/.well-known/agent-card.json",
            harness.spawned.base
        ))
        .send()
        .await
        .expect("the card")
        .text()
        .await
        .expect("its body");
    assert!(card.contains("\"name\""), "{card}");
    assert_no_key("the agent card", &card);
    let contexts = spy.requests();
    assert!(
        contexts
            .iter()
            .filter(|hook| hook.body["method"] == "llm.invoked.pre")
            .count()
            >= 2,
        "{contexts:?}"
    );
    for context in &contexts {
        assert_no_key("a hook context", &context.body.to_string());
    }
    assert_no_key("the server's log", &harness.log());
}

#[tokio::test(flavor = "multi_thread")]
async fn a_failing_provider_says_what_it_answered_and_the_next_message_works() {
    let openai = FakeProvider::start(echoing("OpenAI", false)).await;
    let anthropic = FakeProvider::start(echoing("Anthropic", true)).await;
    openai.script([
        // A provider that quotes the key it refuses.
        Reply::json(
            401,
            &json!({"error": {"message": format!("Incorrect API key provided: {OPENAI_KEY}."),
                "type": "invalid_request_error", "code": "invalid_api_key"}}),
        ),
        // Then one that keeps failing: two attempts, both 500.
        Reply::json(
            500,
            &json!({"error": {"message": "The upstream exploded", "type": "server_error"}}),
        ),
        Reply::json(
            500,
            &json!({"error": {"message": "The upstream exploded", "type": "server_error"}}),
        ),
    ]);
    let harness = Harness::start(&config(&openai, &anthropic));
    let alice = harness.client("alice");

    let refused = alice.say(None, "first").await;
    let id = id_of(&refused);
    assert_eq!(state(&refused), "TASK_STATE_INPUT_REQUIRED", "{refused}");
    let text = status_text(&refused);
    assert!(text.contains("model `gpt` (openai at 127.0.0.1:"), "{text}");
    assert!(text.contains("refused the credentials"), "{text}");
    assert!(
        text.contains("HTTP 401 Unauthorized: Incorrect API key provided: <redacted>."),
        "{text}"
    );

    let failed = alice.say(Some(&id), "second").await;
    let text = status_text(&failed);
    assert!(
        text.contains("HTTP 500 Internal Server Error: The upstream exploded (server_error) (gave up after 2 attempts)"),
        "{text}"
    );
    assert_eq!(sub_state(&failed), Some("awaiting-next-message"));

    let answered = alice.say(Some(&id), "third").await;
    assert_eq!(status_text(&answered), "OpenAI heard: third");
    assert_eq!(openai.requests().len(), 4);

    assert_no_key("the task", &alice.get_task(&id).await.to_string());
    assert_no_key("the server's log", &harness.log());
}

/// The time a turn spent waiting for its model, as its reply's trace says.
fn model_time(task: &Value) -> std::time::Duration {
    let reply = task["history"]
        .as_array()
        .and_then(|history| history.last())
        .unwrap_or_else(|| panic!("a reply in the history: {task}"));
    let micros = reply["metadata"]["trace"]["model_us"]
        .as_u64()
        .unwrap_or_else(|| panic!("the reply's trace has model_us: {reply}"));
    std::time::Duration::from_micros(micros)
}

#[tokio::test(flavor = "multi_thread")]
async fn a_replys_trace_says_how_long_the_model_took_apart_from_the_harness() {
    // The second answer pauses mid-stream: the trace must count the pause
    // as the model's time, and no more than the whole turn took.
    const PAUSE: std::time::Duration = std::time::Duration::from_millis(300);
    let openai = FakeProvider::start(move |request| {
        let mut reply = Answer::text(["first ", "second"]).openai();
        if request.last_user_text().contains("pause") {
            reply.body.insert(1, Piece::Pause(PAUSE));
        }
        reply
    })
    .await;
    let anthropic = FakeProvider::start(echoing("Anthropic", true)).await;
    let harness = Harness::start(&config(&openai, &anthropic));
    let alice = harness.client("alice");

    let quick = alice.say(None, "answer now").await;
    assert_eq!(status_text(&quick), "first second", "{quick}");
    let id = id_of(&quick);
    assert!(model_time(&quick) < PAUSE, "{quick}");

    let sent = std::time::Instant::now();
    let paused = alice.say(Some(&id), "pause in the middle").await;
    let turn = sent.elapsed();
    assert_eq!(status_text(&paused), "first second", "{paused}");
    let waited = model_time(&paused);
    assert!(
        waited >= PAUSE && waited <= turn,
        "the model's {waited:?} is the pause ({PAUSE:?}) or more, within the turn's {turn:?}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn cancel_and_complete_cut_a_slow_answer_and_close_its_connection() {
    let openai = FakeProvider::start(echoing("OpenAI", false)).await;
    let anthropic = FakeProvider::start(echoing("Anthropic", true)).await;
    let harness = Harness::start(&config(&openai, &anthropic));
    let alice = harness.client("alice");
    let slow = |task_id: Option<&str>| {
        json!({
            "message": text_message(task_id, "answer slowly please"),
            "configuration": {"returnImmediately": true},
        })
    };

    // CancelTask while the provider is mid-answer.
    let working = alice.ok("SendMessage", slow(None)).await;
    let canceled_id = id_of(&working["task"]);
    openai.wait_for_requests(1).await;
    let canceled = alice.ok("CancelTask", json!({"id": canceled_id})).await;
    assert_eq!(state(&canceled), "TASK_STATE_CANCELED", "{canceled}");
    openai.wait_for_dropped(1).await;

    // A complete control while another conversation's answer streams, on
    // the Anthropic provider this time.
    let parked = alice.say(None, "hi").await;
    let id = id_of(&parked);
    alice.say(Some(&id), "/model claude").await;
    alice.ok("SendMessage", slow(Some(&id))).await;
    anthropic.wait_for_requests(1).await;
    let done = alice.send_data(&id, complete_control()).await;
    assert_eq!(
        state(&done["result"]["task"]),
        "TASK_STATE_COMPLETED",
        "{done}"
    );
    anthropic.wait_for_dropped(1).await;
    let completed = wait_for(&alice, &id, |task| state(task) == "TASK_STATE_COMPLETED").await;
    assert!(
        !status_text(&completed).contains("heard"),
        "the cut answer is not the reply: {completed}"
    );
}

#[test]
fn a_key_variable_that_is_not_set_stops_the_start_naming_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("tiny-harness.toml");
    std::fs::write(
        &path,
        r#"
[models]
default = "gpt"

[models.gpt]
provider = "openai"
model = "gpt-5-mini"
api_key_env = "TH_E2E_NEVER_SET_KEY"
"#,
    )
    .expect("write");
    let output = Command::new(env!("CARGO_BIN_EXE_tiny-harness"))
        .arg("serve")
        .arg("--config")
        .arg(&path)
        .arg("--listen")
        .arg("127.0.0.1:0")
        .env_remove("TH_E2E_NEVER_SET_KEY")
        .env("TMPDIR", dir.path())
        .stdin(Stdio::null())
        .output()
        .expect("the binary runs");
    assert!(!output.status.success(), "it must not start");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("models.gpt.api_key_env"), "{stderr}");
    assert!(
        stderr.contains("`TH_E2E_NEVER_SET_KEY` is not set"),
        "{stderr}"
    );
    assert!(!stderr.contains("listening on"), "{stderr}");
}

/// The old allowlist key fails with how to migrate, before serving.
#[test]
fn the_old_selectable_key_fails_the_start_with_how_to_migrate() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("tiny-harness.toml");
    std::fs::write(
        &path,
        "[models]\ndefault = \"offline-echo\"\nselectable = [\"offline-echo\", \"offline-large\"]\n",
    )
    .expect("write");
    let output = Command::new(env!("CARGO_BIN_EXE_tiny-harness"))
        .args(["serve", "--listen", "127.0.0.1:0", "--config"])
        .arg(&path)
        .env("TMPDIR", dir.path())
        .stdin(Stdio::null())
        .output()
        .expect("the binary runs");
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("`models.selectable` is gone"), "{stderr}");
    assert!(stderr.contains("[models.<name>]"), "{stderr}");
}
