//! Participants and roles: the reporter adds participants; watchers read but
//! cannot send, run commands, complete or cancel; outsiders see nothing.

use serde_json::json;

use super::support::{Server, complete_control, data_message, state, text_message};

fn add_participant(id: &str, role: &str) -> serde_json::Value {
    json!({"kind": "task", "payload": {"participants": [{"id": id, "role": role}]}})
}

fn error_code(response: &serde_json::Value) -> Option<i64> {
    response["error"]["code"].as_i64()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_watcher_is_refused_for_a_message_a_command_and_a_control_and_nothing_changes() {
    let server = Server::with_defaults();
    let alice = server.client("alice");
    let bob = server.client("bob");
    let id = alice.say(None, "hello").await["id"]
        .as_str()
        .expect("id")
        .to_owned();
    let added = alice
        .send_data(&id, add_participant("bob", "watcher"))
        .await;
    assert!(added.get("error").is_none(), "{added}");
    let before = alice.get_task(&id).await;

    for message in [
        text_message(Some(&id), "let me in"),
        text_message(Some(&id), "/status"),
        data_message(&id, complete_control()),
    ] {
        let response = bob.rpc("SendMessage", json!({"message": message})).await;
        assert_eq!(error_code(&response), Some(-32004), "{response}");
        let reason = response["error"]["data"][0]["reason"]
            .as_str()
            .unwrap_or("");
        assert_eq!(reason, "ROLE_REFUSED", "{response}");
        assert!(
            response["error"]["message"]
                .as_str()
                .is_some_and(|m| m.contains("watcher")),
            "{response}"
        );
    }
    let cancel = bob.rpc("CancelTask", json!({"id": id})).await;
    assert_eq!(error_code(&cancel), Some(-32004), "{cancel}");

    // A watcher can read and subscribe, and the task is exactly as it was.
    let seen = bob.get_task(&id).await;
    assert_eq!(seen["history"], before["history"]);
    assert_eq!(state(&seen), "TASK_STATE_INPUT_REQUIRED");
    let after = alice.get_task(&id).await;
    assert_eq!(after["history"], before["history"]);
    assert_eq!(after["status"], before["status"]);
}

#[tokio::test(flavor = "multi_thread")]
async fn only_the_reporter_or_an_admin_adds_participants() {
    // Admins need tokens: every participant here has one.
    let server = Server::with_admin();
    let alice = server.client("alice");
    let carol = server.client("carol");
    let root = server.client("root");
    let id = alice.say(None, "hello").await["id"]
        .as_str()
        .expect("id")
        .to_owned();
    alice
        .send_data(&id, add_participant("carol", "assignee"))
        .await;

    // An assignee may talk but not add people.
    assert_eq!(
        state(&carol.say(Some(&id), "on it").await),
        "TASK_STATE_INPUT_REQUIRED"
    );
    let response = carol
        .send_data(&id, add_participant("mallory", "assignee"))
        .await;
    assert_eq!(error_code(&response), Some(-32004), "{response}");
    // An admin (from the config) may.
    let response = root
        .send_data(&id, add_participant("dave", "watcher"))
        .await;
    assert!(response.get("error").is_none(), "{response}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_non_participant_gets_task_not_found_for_everything() {
    let server = Server::with_admin();
    let alice = server.client("alice");
    let eve = server.client("eve");
    let id = alice.say(None, "secret").await["id"]
        .as_str()
        .expect("id")
        .to_owned();
    for (method, params) in [
        ("GetTask", json!({"id": id})),
        ("CancelTask", json!({"id": id})),
        (
            "SendMessage",
            json!({"message": text_message(Some(&id), "hi")}),
        ),
    ] {
        let response = eve.rpc(method, params).await;
        assert_eq!(error_code(&response), Some(-32001), "{method}: {response}");
    }
    let listed = eve.ok("ListTasks", json!({})).await;
    assert_eq!(listed["tasks"].as_array().map(Vec::len), Some(0));
    // The admin sees it.
    assert_eq!(server.client("root").get_task(&id).await["id"], id.as_str());
}
