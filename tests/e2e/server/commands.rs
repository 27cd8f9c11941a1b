//! Commands over A2A: the harness runs them, never the model; the reply is
//! the agent's message for the turn and the task parks again.

use serde_json::json;

use super::support::{Server, state, status_text, sub_state, wait_for};

#[tokio::test(flavor = "multi_thread")]
async fn each_builtin_command_runs_on_the_harness() {
    let server = Server::with_defaults();
    let alice = server.client("alice");
    let task = alice.say(None, "hello").await;
    let id = task["id"].as_str().expect("id").to_owned();

    let task = alice.say(Some(&id), "/status").await;
    assert_eq!(state(&task), "TASK_STATE_INPUT_REQUIRED");
    assert_eq!(sub_state(&task), Some("awaiting-next-message"));
    let text = status_text(&task);
    assert!(text.contains("State: TASK_STATE"), "{text}");
    assert!(text.contains("offline-echo"), "{text}");
    assert!(
        !text.contains("You said"),
        "a command never reaches the model: {text}"
    );

    let task = alice.say(Some(&id), "/model").await;
    assert!(
        status_text(&task).contains("offline-large"),
        "selectable models are listed"
    );

    alice.say(Some(&id), "/model offline-large").await;
    let task = alice.say(Some(&id), "/status").await;
    assert!(
        status_text(&task).contains("Model: offline-large"),
        "{}",
        status_text(&task)
    );

    let task = alice.say(Some(&id), "/effort high").await;
    assert_eq!(state(&task), "TASK_STATE_INPUT_REQUIRED");
    let task = alice.say(Some(&id), "/status").await;
    assert!(
        status_text(&task).contains("effort high"),
        "{}",
        status_text(&task)
    );

    let task = alice.say(Some(&id), "/effort extreme").await;
    assert!(
        status_text(&task).contains("usage: /effort"),
        "{}",
        status_text(&task)
    );

    let task = alice.say(Some(&id), "/sub-task summarise the thread").await;
    assert_eq!(state(&task), "TASK_STATE_INPUT_REQUIRED");
    let task = wait_for(&alice, &id, |task| {
        task["metadata"]["subtasks"]
            .as_array()
            .is_some_and(|subtasks| {
                subtasks
                    .iter()
                    .any(|s| s["state"] == "TASK_STATE_COMPLETED")
            })
    })
    .await;
    let child = task["metadata"]["subtasks"][0]["id"]
        .as_str()
        .expect("child id");
    let child = alice.get_task(child).await;
    assert_eq!(
        state(&child),
        "TASK_STATE_COMPLETED",
        "a delegated task completes on its own"
    );
    assert_eq!(child["contextId"], task["contextId"]);
}

#[tokio::test(flavor = "multi_thread")]
async fn model_is_refused_off_the_allowlist_and_nothing_changes() {
    let server = Server::with_defaults();
    let alice = server.client("alice");
    let id = alice.say(None, "hello").await["id"]
        .as_str()
        .expect("id")
        .to_owned();
    let task = alice.say(Some(&id), "/model gpt-unlisted").await;
    let text = status_text(&task);
    assert!(text.contains("gpt-unlisted"), "{text}");
    assert!(
        text.contains("offline-echo") && text.contains("offline-large"),
        "the refusal lists the allowlist: {text}"
    );
    let task = alice.say(Some(&id), "/status").await;
    assert!(status_text(&task).contains("Model: offline-echo"));
}

#[tokio::test(flavor = "multi_thread")]
async fn an_unregistered_slash_word_is_an_ordinary_message() {
    let server = Server::with_defaults();
    let alice = server.client("alice");
    let task = alice.say(None, "/frobnicate now").await;
    assert!(
        status_text(&task).contains("You said: /frobnicate now"),
        "{}",
        status_text(&task)
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn the_card_lists_the_status_and_commands_extensions() {
    let server = Server::with_defaults();
    let card: serde_json::Value = crate::support::http()
        .get(format!("{}/.well-known/agent-card.json", server.base))
        .send()
        .await
        .expect("fetched")
        .json()
        .await
        .expect("json");
    assert_eq!(card["capabilities"]["streaming"], true);
    let extensions = card["capabilities"]["extensions"]
        .as_array()
        .expect("extensions");
    let uri_with = |word: &str| {
        extensions
            .iter()
            .find(|e| e["uri"].as_str().is_some_and(|u| u.contains(word)))
    };
    let status = uri_with("status").expect("status extension");
    let declared = status["params"].to_string();
    assert!(
        declared.contains("awaiting-next-message") && declared.contains("awaiting-answer"),
        "{status}"
    );
    let commands = uri_with("commands").expect("commands extension");
    let names: Vec<_> = commands["params"]["commands"]
        .as_array()
        .expect("commands")
        .iter()
        .map(|c| c["name"].as_str().unwrap_or("").to_owned())
        .collect();
    for name in ["model", "effort", "sub-task", "status"] {
        assert!(
            names.iter().any(|n| n == name),
            "{name} missing from {names:?}"
        );
    }
    let model = &commands["params"]["commands"]
        .as_array()
        .expect("commands")
        .iter()
        .find(|c| c["name"] == "model")
        .expect("model")
        .clone();
    assert_eq!(model["usage"], json!("/model [name]"));
    assert!(model["description"].as_str().is_some_and(|d| !d.is_empty()));
}
