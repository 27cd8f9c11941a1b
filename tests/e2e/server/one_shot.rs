//! The `task` lifecycle (one-shot tasks) next to decision 007's
//! `conversation`, over JSON-RPC and HTTP+JSON: chosen per task by the first
//! message's `metadata.lifecycle` or by the operator's default, fixed for the
//! task's life, and completing only when the completion rule allows.

use serde_json::{Value, json};

use super::support::{
    Client, DEFAULT_CONFIG, Server, complete_control, state, status_text, sub_state, text_message,
    wait_for,
};

/// A first message that asks for a one-shot task.
fn one_shot(text: &str) -> Value {
    let mut message = text_message(None, text);
    message["metadata"] = json!({"lifecycle": "task"});
    message
}

fn reply_artifact(task: &Value) -> &Value {
    let artifacts = task["artifacts"].as_array().expect("artifacts");
    artifacts
        .iter()
        .find(|artifact| artifact["artifactId"] == json!("reply-1"))
        .unwrap_or_else(|| panic!("no reply artifact in {task}"))
}

fn artifact_text(artifact: &Value) -> &str {
    artifact["parts"][0]["text"].as_str().unwrap_or_default()
}

async fn rest_send(client: &Client, message: Value) -> (u16, Value) {
    let response = client
        .http
        .post(format!("{}/message:send", client.base))
        .header("A2A-Version", "1.0")
        .header("X-Participant-Id", &client.participant)
        .json(&json!({"message": message}))
        .send()
        .await
        .expect("sent");
    let status = response.status().as_u16();
    (status, response.json().await.expect("json"))
}

#[tokio::test]
async fn a_one_shot_task_completes_with_its_reply_in_the_status_and_an_artifact() {
    let server = Server::with_defaults();
    let alice = server.client("alice");

    // JSON-RPC.
    let result = alice
        .ok("SendMessage", json!({"message": one_shot("hello there")}))
        .await;
    let task = &result["task"];
    assert_eq!(state(task), "TASK_STATE_COMPLETED", "{task}");
    assert!(
        status_text(task).contains("You said: hello there"),
        "{task}"
    );
    assert_eq!(task["status"]["message"]["role"], json!("ROLE_AGENT"));
    assert_eq!(artifact_text(reply_artifact(task)), status_text(task));
    assert_eq!(sub_state(task), None, "a completed task has no sub-state");
    let history = task["history"].as_array().expect("history");
    assert_eq!(history.len(), 2, "the message and the reply: {task}");

    // HTTP+JSON.
    let (status, body) = rest_send(&alice, one_shot("over rest")).await;
    assert_eq!(status, 200, "{body}");
    let task = &body["task"];
    assert_eq!(state(task), "TASK_STATE_COMPLETED", "{task}");
    assert_eq!(artifact_text(reply_artifact(task)), status_text(task));

    // A command is a reply too; the finished task takes nothing more.
    let result = alice
        .ok("SendMessage", json!({"message": one_shot("/status")}))
        .await;
    let task = &result["task"];
    assert_eq!(state(task), "TASK_STATE_COMPLETED", "{task}");
    assert!(
        artifact_text(reply_artifact(task)).contains("State:"),
        "{task}"
    );
    let id = task["id"].as_str().expect("id");
    let again = alice
        .rpc(
            "SendMessage",
            json!({"message": text_message(Some(id), "more?")}),
        )
        .await;
    assert_eq!(again["error"]["code"], json!(-32004), "{again}");

    // Streaming: the Task, then the updates, ending COMPLETED.
    let events = alice
        .stream(
            "SendStreamingMessage",
            json!({"message": one_shot("work for 1 seconds")}),
        )
        .await;
    assert!(events[0]["result"]["task"].is_object(), "{events:?}");
    let last = &events.last().expect("events")["result"];
    assert_eq!(
        last["statusUpdate"]["status"]["state"],
        json!("TASK_STATE_COMPLETED"),
        "{last}"
    );
    assert!(
        events.iter().any(
            |event| event["result"]["artifactUpdate"]["artifact"]["artifactId"] == json!("reply-1")
        ),
        "the reply artifact is streamed: {events:?}"
    );
}

#[tokio::test]
async fn the_operator_picks_the_default_and_a_first_message_overrides_it() {
    let config = format!("default_lifecycle = \"task\"\n{DEFAULT_CONFIG}");
    let server = Server::start(&config, None);
    let alice = server.client("alice");
    // No metadata: the operator's default, over either binding.
    let task = alice.say(None, "plain").await;
    assert_eq!(state(&task), "TASK_STATE_COMPLETED", "{task}");
    let (_, body) = rest_send(&alice, text_message(None, "plain rest")).await;
    assert_eq!(state(&body["task"]), "TASK_STATE_COMPLETED", "{body}");
    // A first message asking for a conversation gets one.
    let mut message = text_message(None, "let's talk");
    message["metadata"] = json!({"lifecycle": "conversation"});
    let (_, body) = rest_send(&alice, message).await;
    assert_eq!(state(&body["task"]), "TASK_STATE_INPUT_REQUIRED", "{body}");
    // The card says which is the default.
    let card: Value = alice
        .http
        .get(format!("{}/.well-known/agent-card.json", server.base))
        .send()
        .await
        .expect("card")
        .json()
        .await
        .expect("json");
    let params = &card["capabilities"]["extensions"][0]["params"];
    assert_eq!(params["defaultLifecycle"], json!("task"), "{card}");
    assert_eq!(params["lifecycleMetadataKey"], json!("lifecycle"));
}

#[tokio::test]
async fn a_later_message_cannot_change_the_lifecycle() {
    let server = Server::with_defaults();
    let alice = server.client("alice");
    let task = alice.say(None, "a conversation").await;
    let id = task["id"].as_str().expect("id");
    let mut change = text_message(Some(id), "now finish on your own");
    change["metadata"] = json!({"lifecycle": "task"});
    let refused = alice
        .rpc("SendMessage", json!({"message": change.clone()}))
        .await;
    assert_eq!(refused["error"]["code"], json!(-32602), "{refused}");
    let message = refused["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("cannot change it"), "{message}");
    assert_eq!(
        refused["error"]["data"][0]["metadata"]["field"],
        json!("message.metadata.lifecycle")
    );
    let (status, body) = rest_send(&alice, change).await;
    assert_eq!(status, 400, "{body}");
    assert_eq!(
        body["error"]["details"][0]["reason"],
        json!("INVALID_PARAMS")
    );
    // Nothing changed; naming the same lifecycle is fine.
    let mut same = text_message(Some(id), "still talking");
    same["metadata"] = json!({"lifecycle": "conversation"});
    let task = alice.ok("SendMessage", json!({"message": same})).await;
    assert_eq!(state(&task["task"]), "TASK_STATE_INPUT_REQUIRED");
    // An unknown lifecycle is refused, and no task is created.
    let mut unknown = text_message(None, "hi");
    unknown["metadata"] = json!({"lifecycle": "forever"});
    let refused = alice.rpc("SendMessage", json!({"message": unknown})).await;
    assert_eq!(refused["error"]["code"], json!(-32602), "{refused}");
    let listed = alice.ok("ListTasks", json!({})).await;
    assert_eq!(
        listed["tasks"].as_array().map(Vec::len),
        Some(1),
        "{listed}"
    );
}

#[tokio::test]
async fn a_one_shot_task_waits_for_its_sub_tasks_then_completes() {
    let server = Server::with_defaults();
    let alice = server.client("alice");
    let events = alice
        .stream(
            "SendStreamingMessage",
            json!({"message": one_shot("/sub-task work for 1 seconds")}),
        )
        .await;
    let states: Vec<&str> = events
        .iter()
        .filter_map(|event| event["result"]["statusUpdate"]["status"]["state"].as_str())
        .collect();
    assert_eq!(states.last(), Some(&"TASK_STATE_COMPLETED"), "{events:?}");
    let waiting = events.iter().any(|event| {
        event["result"]["statusUpdate"]["status"]["message"]["parts"][0]["text"]
            .as_str()
            .is_some_and(|text| text.contains("open sub-task"))
    });
    assert!(waiting, "it said it waits for the sub-task: {events:?}");
    let id = events[0]["result"]["task"]["id"].as_str().expect("id");
    let task = alice.get_task(id).await;
    assert_eq!(state(&task), "TASK_STATE_COMPLETED", "{task}");
    assert_eq!(
        task["metadata"]["subtasks"][0]["state"],
        json!("TASK_STATE_COMPLETED"),
        "completed only after its sub-task: {task}"
    );
    let artifacts: Vec<&str> = task["artifacts"]
        .as_array()
        .expect("artifacts")
        .iter()
        .filter_map(|artifact| artifact["artifactId"].as_str())
        .collect();
    assert!(artifacts.contains(&"reply-1"), "{artifacts:?}");
    assert!(
        artifacts.iter().any(|id| id.starts_with("subtask-")),
        "the sub-task's result: {artifacts:?}"
    );
    assert_eq!(status_text(&task), artifact_text(reply_artifact(&task)));
}

#[tokio::test]
async fn a_waiting_one_shot_task_can_be_canceled_or_completed_by_a_participant() {
    let server = Server::with_defaults();
    let alice = server.client("alice");
    let waiting = |task: &Value| status_text(task).contains("open sub-task");
    for finish in ["cancel", "complete"] {
        let result = alice
            .ok(
                "SendMessage",
                json!({"message": one_shot("/sub-task work for 30 seconds"),
                       "configuration": {"returnImmediately": true}}),
            )
            .await;
        let id = result["task"]["id"].as_str().expect("id").to_owned();
        let task = wait_for(&alice, &id, waiting).await;
        assert_eq!(state(&task), "TASK_STATE_WORKING", "{task}");
        let task = if finish == "cancel" {
            alice.ok("CancelTask", json!({"id": id})).await
        } else {
            // The default rule refuses while the sub-task is open: the task parks
            // like a conversation, and the refusal names the sub-task.
            let refused = alice.send_data(&id, complete_control()).await;
            let task = refused["result"]["task"].clone();
            assert_eq!(state(&task), "TASK_STATE_INPUT_REQUIRED", "{task}");
            assert!(status_text(&task).contains("not completed"), "{task}");
            alice.ok("CancelTask", json!({"id": id})).await
        };
        assert_eq!(state(&task), "TASK_STATE_CANCELED", "{finish}: {task}");
        let subtask = task["metadata"]["subtasks"][0]["id"]
            .as_str()
            .expect("sub-task");
        let subtask = alice.get_task(subtask).await;
        assert_eq!(state(&subtask), "TASK_STATE_CANCELED", "{subtask}");
    }
}

#[tokio::test]
async fn a_message_to_a_waiting_one_shot_task_waits_and_is_refused_once_it_completes() {
    let server = Server::with_defaults();
    let alice = server.client("alice");
    let result = alice
        .ok(
            "SendMessage",
            json!({"message": one_shot("/sub-task work for 1 seconds"),
                   "configuration": {"returnImmediately": true}}),
        )
        .await;
    let id = result["task"]["id"].as_str().expect("id").to_owned();
    wait_for(&alice, &id, |task| {
        status_text(task).contains("open sub-task")
    })
    .await;
    // Sent while it waits: answered only once the task has concluded, and then refused.
    let late = alice
        .rpc(
            "SendMessage",
            json!({"message": text_message(Some(&id), "and also?")}),
        )
        .await;
    assert_eq!(late["error"]["code"], json!(-32004), "{late}");
    let task = alice.get_task(&id).await;
    assert_eq!(state(&task), "TASK_STATE_COMPLETED", "{task}");
    let history = task["history"].as_array().expect("history");
    assert!(
        !history
            .iter()
            .any(|m| m["parts"][0]["text"] == json!("and also?")),
        "the refused message is not in the history: {task}"
    );
}
