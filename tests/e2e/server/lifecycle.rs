//! Decision 007: a conversation parks in INPUT_REQUIRED after every turn,
//! with its sub-state in metadata, and continues with its whole history.

use serde_json::json;

use super::support::{Server, state, status_text, sub_state, text_message};

#[tokio::test(flavor = "multi_thread")]
async fn a_three_turn_conversation_stays_input_required_with_its_sub_state() {
    let server = Server::with_defaults();
    let alice = server.client("alice");

    let task = alice.say(None, "hello there").await;
    let id = task["id"].as_str().expect("a task id").to_owned();
    let context = task["contextId"].as_str().expect("a context id").to_owned();
    for (turn, text) in [(2, "tell me more"), (3, "ask me something")] {
        let task = alice.say(Some(&id), text).await;
        assert_eq!(
            task["id"],
            id.as_str(),
            "turn {turn} continues the same task"
        );
        assert_eq!(task["contextId"], context.as_str());
        assert_eq!(
            state(&task),
            "TASK_STATE_INPUT_REQUIRED",
            "turn {turn}: {task}"
        );
    }

    let task = alice.get_task(&id).await;
    assert_eq!(state(&task), "TASK_STATE_INPUT_REQUIRED");
    // The last reply asked a question: awaiting-answer, in Task.metadata and
    // in the status message's metadata for clients that read only the status.
    assert_eq!(sub_state(&task), Some("awaiting-answer"), "{task}");
    assert_eq!(
        sub_state(&task["status"]["message"]),
        Some("awaiting-answer")
    );
    // Seven messages: three from alice, two replies, and the question as
    // the model asked it (an `ask_participant` tool call) and as alice
    // reads it, in order.
    let history = task["history"].as_array().expect("history");
    let roles: Vec<_> = history
        .iter()
        .map(|m| m["role"].as_str().unwrap_or(""))
        .collect();
    let mut expected = ["ROLE_USER", "ROLE_AGENT"].repeat(3);
    expected.push("ROLE_AGENT");
    assert_eq!(roles, expected);
    assert_eq!(history[0]["parts"][0]["text"], "hello there");
    assert_eq!(history[5]["metadata"]["stream"], "tool-call");
    assert_eq!(history[5]["parts"][0]["data"]["name"], "ask_participant");

    // historyLength trims to the newest messages.
    let trimmed = alice
        .ok("GetTask", json!({"id": id, "historyLength": 3}))
        .await;
    assert_eq!(trimmed["history"].as_array().map(Vec::len), Some(3));
    assert_eq!(
        trimmed["history"][0]["parts"][0]["text"],
        "ask me something"
    );

    // A plain statement parks it as awaiting-next-message.
    let task = alice.say(Some(&id), "fine").await;
    assert_eq!(sub_state(&task), Some("awaiting-next-message"));
    assert!(status_text(&task).contains("fine"), "{task}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_stream_starts_with_the_task_and_ends_when_the_turn_parks() {
    let server = Server::with_defaults();
    let alice = server.client("alice");
    let events = alice
        .stream(
            "SendStreamingMessage",
            json!({"message": text_message(None, "work for 1 seconds")}),
        )
        .await;
    assert!(events.len() >= 3, "{events:?}");
    for event in &events {
        assert_eq!(event["jsonrpc"], "2.0");
        assert!(event.get("error").is_none(), "{event}");
    }
    let first = &events[0]["result"];
    assert!(
        first.get("task").is_some(),
        "the first event is the Task: {first}"
    );
    let id = first["task"]["id"].as_str().expect("id");
    // Progress while working, then the final status update parks the task
    // with the sub-state in the update's metadata.
    assert!(
        events
            .iter()
            .any(|e| e["result"]["statusUpdate"]["status"]["state"] == "TASK_STATE_WORKING")
    );
    let last = &events.last().expect("events")["result"]["statusUpdate"];
    assert_eq!(last["taskId"], id);
    assert_eq!(last["status"]["state"], "TASK_STATE_INPUT_REQUIRED");
    assert_eq!(sub_state(last), Some("awaiting-next-message"), "{last}");
    // Only the parked state carries a sub-state.
    for event in &events[..events.len() - 1] {
        if let Some(update) = event["result"].get("statusUpdate") {
            assert_eq!(sub_state(update), None, "{update}");
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn every_subscriber_sees_the_same_events_in_the_same_order() {
    let server = Server::with_defaults();
    let alice = server.client("alice");
    let task = alice.say(None, "hello").await;
    let id = task["id"].as_str().expect("id").to_owned();

    let subscribe = |client: super::support::Client, id: String| {
        tokio::spawn(async move { client.stream("SubscribeToTask", json!({"id": id})).await })
    };
    let first = subscribe(alice.clone(), id.clone());
    let second = subscribe(alice.clone(), id.clone());
    // Give both subscriptions time to be established before the next turn.
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    alice.say(Some(&id), "work for 1 seconds").await;
    let first = first.await.expect("joined");
    let second = second.await.expect("joined");
    assert!(
        first[0]["result"].get("task").is_some(),
        "subscriptions start with the Task"
    );
    let strip = |events: &[serde_json::Value]| -> Vec<serde_json::Value> {
        events.iter().skip(1).map(|e| e["result"].clone()).collect()
    };
    assert!(!strip(&first).is_empty(), "{first:?}");
    assert_eq!(strip(&first), strip(&second));
    let last = &first.last().expect("events")["result"]["statusUpdate"];
    assert_eq!(last["status"]["state"], "TASK_STATE_INPUT_REQUIRED");
}

#[tokio::test(flavor = "multi_thread")]
async fn list_tasks_filters_and_pages_the_callers_tasks() {
    let server = Server::with_defaults();
    let alice = server.client("alice");
    let bob = server.client("bob");
    let mut ids = Vec::new();
    for n in 0..3 {
        ids.push(
            alice.say(None, &format!("conversation {n}")).await["id"]
                .as_str()
                .expect("id")
                .to_owned(),
        );
    }
    bob.say(None, "bob's own").await;

    let page = alice.ok("ListTasks", json!({"pageSize": 2})).await;
    let tasks = page["tasks"].as_array().expect("tasks");
    assert_eq!(tasks.len(), 2);
    // Newest first, only alice's.
    assert_eq!(tasks[0]["id"], ids[2].as_str());
    assert_eq!(tasks[1]["id"], ids[1].as_str());
    let token = page["nextPageToken"].as_str().expect("a cursor").to_owned();
    assert!(!token.is_empty());
    let rest = alice
        .ok("ListTasks", json!({"pageSize": 2, "pageToken": token}))
        .await;
    let rest_ids: Vec<_> = rest["tasks"]
        .as_array()
        .expect("tasks")
        .iter()
        .map(|t| t["id"].clone())
        .collect();
    assert_eq!(rest_ids, [json!(ids[0])]);
    assert_eq!(rest["nextPageToken"], "");

    let context = alice.get_task(&ids[0]).await["contextId"].clone();
    let by_context = alice.ok("ListTasks", json!({"contextId": context})).await;
    assert_eq!(by_context["tasks"].as_array().map(Vec::len), Some(1));
    let parked = alice
        .ok("ListTasks", json!({"status": "TASK_STATE_INPUT_REQUIRED"}))
        .await;
    assert_eq!(parked["tasks"].as_array().map(Vec::len), Some(3));
    let done = alice
        .ok("ListTasks", json!({"status": "TASK_STATE_COMPLETED"}))
        .await;
    assert_eq!(done["tasks"].as_array().map(Vec::len), Some(0));
}
