//! Issue 11 item 5: approvals over A2A, end to end on the real binary. The
//! operator asks for every `spawn_subtask` call to be approved; the offline
//! model makes one (`use tool ...`), the task parks `awaiting-approval`
//! with the call in its metadata, and a participant approves or denies it
//! with a control envelope, checked for role like `complete`.

use serde_json::{Value, json};

use super::support::{Server, data_message, state, status_text, sub_state};

const CONFIG: &str = r#"
[models]
default = "offline-echo"

[agent]
tools_needing_approval = ["spawn_subtask"]
"#;

const SPAWN: &str = "use tool spawn_subtask with {\"goal\": \"hello\"}";

fn decide(action: &str) -> Value {
    json!({ "kind": "control", "action": action })
}

#[tokio::test(flavor = "multi_thread")]
async fn ask_then_approve_runs_the_call_and_the_loop_goes_on() {
    let server = Server::start(CONFIG, None);
    let alice = server.client("alice");
    let asked = alice.say(None, SPAWN).await;
    let id = asked["id"].as_str().expect("an id").to_owned();
    assert_eq!(state(&asked), "TASK_STATE_INPUT_REQUIRED");
    assert_eq!(sub_state(&asked), Some("awaiting-approval"), "{asked}");
    assert_eq!(
        asked["metadata"]["pending_approval"][0]["name"],
        "spawn_subtask"
    );
    assert!(
        asked["metadata"].get("subtasks").is_none(),
        "nothing ran yet"
    );

    let approved = alice.send_data(&id, decide("approve")).await;
    let task = &approved["result"]["task"];
    assert_eq!(sub_state(task), Some("awaiting-next-message"), "{approved}");
    assert!(task["metadata"].get("pending_approval").is_none());
    assert_eq!(
        task["metadata"]["subtasks"].as_array().map(Vec::len),
        Some(1)
    );
    let reply = status_text(task);
    assert!(reply.starts_with("Tool spawn_subtask answered:"), "{reply}");
}

#[tokio::test(flavor = "multi_thread")]
async fn ask_then_deny_runs_nothing_and_a_watcher_cannot_decide() {
    let server = Server::start(CONFIG, None);
    let (alice, bob) = (server.client("alice"), server.client("bob"));
    let asked = alice.say(None, SPAWN).await;
    let id = asked["id"].as_str().expect("an id").to_owned();
    let grant =
        json!({"kind": "task", "payload": {"participants": [{"id": "bob", "role": "watcher"}]}});
    alice.send_data(&id, grant).await;

    let refused = bob.send_data(&id, decide("approve")).await;
    assert_eq!(
        refused["error"]["data"][0]["reason"], "ROLE_REFUSED",
        "{refused}"
    );
    assert_eq!(
        sub_state(&alice.get_task(&id).await),
        Some("awaiting-approval")
    );

    let denied = alice.send_data(&id, decide("deny")).await;
    let task = &denied["result"]["task"];
    assert_eq!(sub_state(task), Some("awaiting-next-message"), "{denied}");
    let reply = status_text(task);
    assert!(
        reply.starts_with("Tool spawn_subtask failed: alice (reporter) denied this call"),
        "{reply}"
    );
    assert!(task["metadata"].get("subtasks").is_none());

    // Nothing waits for a decision any more: a late one is refused.
    let late = alice
        .rpc(
            "SendMessage",
            json!({ "message": data_message(&id, decide("approve")) }),
        )
        .await;
    assert_eq!(late["error"]["code"], -32602, "{late}");
}
