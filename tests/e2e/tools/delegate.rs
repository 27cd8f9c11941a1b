//! Issue 11 item 6: other A2A agents as delegates (`[agents.<name>]`),
//! through the real binary: a second tiny-harness over HTTP, and an echo
//! agent served by the official Python SDK (tests/interop/
//! a2a_sdk_echo_agent.py). The offline model calls `delegate_<name>`.

use serde_json::{Value, json};

use super::{Helper, free_port, tests_dir};
use crate::server::support::{Client, Server, state, status_text, text_message, wait_for};

const OFFLINE: &str = "[models]\ndefault = \"offline-echo\"\n";

/// A harness that may delegate to the agent at `url` as `name`.
fn delegating_to(name: &str, url: &str) -> Server {
    Server::start(
        &format!("{OFFLINE}\n[agents.{name}]\nurl = \"{url}\"\nallow_private = true\n"),
        None,
    )
}

fn delegate(tool: &str, task: &str) -> String {
    format!("use tool {tool} with {}", json!({ "task": task }))
}

/// The tasks `client` takes part in.
async fn tasks_of(client: &Client) -> Vec<Value> {
    let listed = client.ok("ListTasks", json!({})).await;
    listed["tasks"].as_array().cloned().unwrap_or_default()
}

/// The text of a streamed status update, if the event is one.
fn update_text(event: &Value) -> Option<String> {
    let update = event["result"].get("statusUpdate")?;
    Some(status_text(update))
}

#[tokio::test(flavor = "multi_thread")]
async fn another_harness_answers_its_progress_is_relayed_and_its_conversation_is_completed() {
    let remote = Server::start(OFFLINE, None);
    let parent = delegating_to("peer", &remote.base);
    let events = parent
        .client("alice")
        .stream(
            "SendStreamingMessage",
            json!({ "message": text_message(None, &delegate("delegate_peer", "work for 1 seconds")) }),
        )
        .await;
    let texts: Vec<String> = events.iter().filter_map(update_text).collect();
    assert!(
        texts.iter().any(|text| text.starts_with("peer: Working: ")),
        "the remote task's progress reaches the parent's stream: {texts:?}"
    );
    let reply = texts.last().expect("a final update");
    assert!(
        reply.starts_with("Tool delegate_peer answered:")
            && reply.contains("Worked for 1 seconds."),
        "{reply}"
    );
    // The remote conversation parked its turn (answered); the remote card
    // declares the status extension, so the harness completed it.
    let local = remote.client("local");
    let remote_tasks = tasks_of(&local).await;
    assert_eq!(remote_tasks.len(), 1, "{remote_tasks:?}");
    let id = remote_tasks[0]["id"].as_str().expect("an id").to_owned();
    assert!(
        reply.contains(&id),
        "the result names the remote task: {reply}"
    );
    wait_for(&local, &id, |task| state(task) == "TASK_STATE_COMPLETED").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn the_official_python_sdk_serving_an_echo_agent_answers_a_delegation() {
    let port = free_port();
    let script = tests_dir().join("interop/a2a_sdk_echo_agent.py");
    let python = std::env::var("PYTHON").unwrap_or_else(|_| "python3".into());
    let _agent = Helper::serving_on(
        &python,
        &[&script.display().to_string(), &port.to_string()],
        &[],
        port,
    );
    let parent = delegating_to("echo", &format!("http://127.0.0.1:{port}"));
    let task = parent
        .client("alice")
        .say(None, &delegate("delegate_echo", "hello python"))
        .await;
    let reply = status_text(&task);
    assert!(
        reply.starts_with("Tool delegate_echo answered:") && reply.contains("echo: hello python"),
        "{reply}"
    );
    assert!(reply.contains("TASK_STATE_COMPLETED"), "{reply}");
}

#[tokio::test(flavor = "multi_thread")]
async fn cancelling_the_parent_cancels_the_remote_task() {
    let remote = Server::start(OFFLINE, None);
    let parent = delegating_to("peer", &remote.base);
    let alice = parent.client("alice");
    let streaming = {
        let alice = alice.clone();
        tokio::spawn(async move {
            alice
                .stream(
                    "SendStreamingMessage",
                    json!({ "message": text_message(None, &delegate("delegate_peer", "work for 60 seconds")) }),
                )
                .await
        })
    };
    // Wait for the delegation to be under way: the remote task works.
    let local = remote.client("local");
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(30);
    let remote_id = loop {
        let working = tasks_of(&local)
            .await
            .into_iter()
            .find(|task| state(task) == "TASK_STATE_WORKING");
        if let Some(task) = working {
            break task["id"].as_str().expect("an id").to_owned();
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "no remote task works"
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    };
    let parent_id = tasks_of(&alice).await[0]["id"]
        .as_str()
        .expect("an id")
        .to_owned();
    alice.ok("CancelTask", json!({ "id": parent_id })).await;
    let cancelled = wait_for(&local, &remote_id, |task| {
        state(task) == "TASK_STATE_CANCELED"
    })
    .await;
    assert_eq!(state(&cancelled), "TASK_STATE_CANCELED");
    let events = streaming.await.expect("the stream ends");
    let last = events.last().expect("events");
    assert!(last.to_string().contains("TASK_STATE_CANCELED"), "{last}");
}
