//! Command completion over HTTP (`POST /tasks/{id}/commands:complete`, `POST
//! /commands:complete`): declared on the card, checked against the caller's role like the
//! command itself, argument values from the plugin's completion export, rate-limited.

use serde_json::{Value, json};

use super::support::{CONFIG, Served, admin_config};
use crate::support::PluginsFolder;

/// POSTs `{"text": text}` to `path` as `participant`; the HTTP status and the JSON body.
async fn complete(served: &Served, participant: &str, path: &str, text: &str) -> (u16, Value) {
    let response = served
        .post(participant, path)
        .json(&json!({ "text": text }))
        .send()
        .await
        .expect("sent");
    let status = response.status().as_u16();
    (status, response.json().await.expect("a JSON body"))
}

fn in_task(task_id: &str) -> String {
    format!("/tasks/{task_id}/commands:complete")
}

fn values(body: &Value) -> Vec<&str> {
    body["suggestions"]
        .as_array()
        .expect("suggestions")
        .iter()
        .map(|s| s["value"].as_str().expect("value"))
        .collect()
}

async fn task_of(served: &Served, participant: &str) -> String {
    let task = served.client(participant).say(None, "hello").await;
    task["id"].as_str().expect("id").to_owned()
}

#[tokio::test(flavor = "multi_thread")]
async fn the_card_declares_the_routes() {
    let served = Served::start(CONFIG);
    let card: Value = crate::support::http()
        .get(format!("{}/.well-known/agent-card.json", served.base))
        .send()
        .await
        .expect("sent")
        .json()
        .await
        .expect("json");
    let extensions = card["capabilities"]["extensions"].as_array().expect("list");
    let commands = extensions
        .iter()
        .find(|e| e["uri"] == "https://tiny-harness.dev/extensions/commands/v1")
        .expect("the commands extension");
    let completion = &commands["params"]["completion"];
    assert_eq!(completion["method"], "POST");
    assert_eq!(completion["taskPath"], "/tasks/{id}/commands:complete");
    assert_eq!(completion["path"], "/commands:complete");
}

#[tokio::test(flavor = "multi_thread")]
async fn names_then_the_plugins_argument_values() {
    // Tokens for everyone: admin rights need one.
    let served = Served::with_greeter(&admin_config());
    let task = task_of(&served, "alice").await;
    let (status, body) = complete(&served, "alice", &in_task(&task), "/s").await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["role"], "reporter");
    assert_eq!(values(&body), ["/status", "/sub-task"]);
    assert!(body["suggestions"][0]["description"].is_string(), "{body}");
    let (_, body) = complete(&served, "alice", &in_task(&task), "/greet w").await;
    assert_eq!(
        values(&body),
        ["world"],
        "from the greeter's completion export"
    );
    let (_, body) = complete(&served, "alice", &in_task(&task), "hello /greet").await;
    assert!(values(&body).is_empty(), "not a command: {body}");
    // A conversation not started yet: its sender would be its reporter.
    let (status, body) = complete(&served, "dave", "/commands:complete", "/gr").await;
    assert_eq!((status, body["role"].as_str()), (200, Some("reporter")));
    assert_eq!(values(&body), ["/greet"]);
    let (_, body) = complete(&served, "root", "/commands:complete", "/gr").await;
    assert_eq!(body["role"], "admin");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_watcher_gets_nothing_and_a_stranger_gets_task_not_found() {
    let served = Served::with_greeter(CONFIG);
    let task = task_of(&served, "alice").await;
    let watcher =
        json!({"kind": "task", "payload": {"participants": [{"id": "bob", "role": "watcher"}]}});
    let added = served.client("alice").send_data(&task, watcher).await;
    assert!(added.get("error").is_none(), "{added}");
    for text in ["/", "/greet w"] {
        let (status, body) = complete(&served, "bob", &in_task(&task), text).await;
        assert_eq!(status, 200, "{body}");
        assert_eq!(body["role"], "watcher");
        assert!(
            values(&body).is_empty(),
            "a watcher runs no command: {body}"
        );
    }
    let (status, body) = complete(&served, "mallory", &in_task(&task), "/greet w").await;
    assert_eq!(status, 404, "{body}");
    assert_eq!(body["error"]["details"][0]["reason"], "TASK_NOT_FOUND");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_role_the_command_does_not_allow_gets_no_argument_values() {
    // The greeter's component, declared for admins only.
    let plugins = PluginsFolder::new().with_fixture("greeter");
    let commands = json!({"commands": [{"name": "greet", "description": "Greets, for admins",
        "usage": "/greet <name>", "arguments": [{"name": "name", "type": "string", "required": true}],
        "roles": ["admin"]}]});
    std::fs::write(
        plugins.path().join("greeter/commands.json"),
        commands.to_string(),
    )
    .expect("write");
    let served = Served::start_with(&admin_config(), Some(plugins));
    let task = task_of(&served, "alice").await;
    let (_, body) = complete(&served, "alice", &in_task(&task), "/gr").await;
    assert!(
        values(&body).is_empty(),
        "not offered to a reporter: {body}"
    );
    let (_, body) = complete(&served, "alice", &in_task(&task), "/greet w").await;
    assert!(
        values(&body).is_empty(),
        "no argument values for a reporter: {body}"
    );
    let (_, body) = complete(&served, "root", &in_task(&task), "/greet w").await;
    assert_eq!(values(&body), ["world"], "an admin may run it: {body}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_finished_task_takes_no_commands_so_it_gets_no_suggestions() {
    let served = Served::start(CONFIG);
    let task = task_of(&served, "alice").await;
    let done = served
        .client("alice")
        .send_data(&task, json!({"kind": "control", "action": "complete"}))
        .await;
    assert_eq!(
        done["result"]["task"]["status"]["state"],
        "TASK_STATE_COMPLETED"
    );
    let (status, body) = complete(&served, "alice", &in_task(&task), "/st").await;
    assert_eq!((status, body["role"].as_str()), (200, Some("reporter")));
    assert!(values(&body).is_empty(), "{body}");
}

#[tokio::test(flavor = "multi_thread")]
async fn bad_requests_are_explained_and_completion_has_its_own_rate_limit() {
    let config = format!(
        "{CONFIG}[completion]\nper_participant_burst = 2\nper_participant_per_second = 0.01\n"
    );
    let served = Served::start(&config);
    let response = crate::support::http()
        .post(format!("{}/commands:complete", served.base))
        .header("A2A-Version", "1.0")
        .json(&json!({"txt": "/s"}))
        .send()
        .await
        .expect("sent");
    assert_eq!(response.status().as_u16(), 400);
    let body: Value = response.json().await.expect("json");
    assert!(
        body["error"]["message"]
            .as_str()
            .expect("message")
            .contains("text"),
        "{body}"
    );
    let missing_version = crate::support::http()
        .post(format!("{}/commands:complete", served.base))
        .json(&json!({"text": "/s"}))
        .send()
        .await
        .expect("sent");
    assert_eq!(
        missing_version.status().as_u16(),
        400,
        "A2A-Version is checked"
    );

    for _ in 0..2 {
        let (status, body) = complete(&served, "alice", "/commands:complete", "/s").await;
        assert_eq!(status, 200, "{body}");
    }
    let (status, body) = complete(&served, "alice", "/commands:complete", "/s").await;
    assert_eq!(status, 429, "{body}");
    assert_eq!(body["error"]["details"][0]["reason"], "RATE_LIMITED");
    // Sends have a bucket of their own: typing did not use it up.
    let task = served.client("alice").say(None, "still here").await;
    assert_eq!(task["status"]["state"], "TASK_STATE_INPUT_REQUIRED");
    // Without tokens an id is only a claim: another one from the same address shares the
    // address's bucket, so inventing ids does not lift the limit.
    let (status, _) = complete(&served, "bob", "/commands:complete", "/s").await;
    assert_eq!(status, 429);
}
