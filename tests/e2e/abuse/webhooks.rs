//! Issue 9 item 9, a cap on push configurations per task and per participant: each event
//! fans out to every webhook of its task, so neither may grow without end.

use serde_json::{Value, json};

use crate::server::support::{DEFAULT_CONFIG, Server, text_message};

const CAPPED: &str = "\n[push]\nallow_private = true\nmax_configs_per_task = 3\n\
    max_configs_per_participant = 5\n";

async fn create(client: &crate::server::support::Client, task: &str, id: &str) -> Value {
    client
        .rpc(
            "CreateTaskPushNotificationConfig",
            json!({"taskId": task, "id": id, "url": "http://127.0.0.1:9/hook"}),
        )
        .await
}

fn refused_naming(response: &Value, key: &str) {
    assert_eq!(response["error"]["code"], -32602, "{response}");
    let message = response["error"]["message"].as_str().unwrap_or("");
    assert!(message.contains(key), "{key}: {message}");
}

#[tokio::test(flavor = "multi_thread")]
async fn issue_9_9_push_configurations_are_capped_per_task_and_per_participant() {
    let server = Server::start(&format!("{DEFAULT_CONFIG}{CAPPED}"), None);
    let alice = server.client("alice");
    let bob = server.client("bob");
    let first = alice.say(None, "one").await["id"]
        .as_str()
        .expect("id")
        .to_owned();
    for n in 0..3 {
        let created = create(&alice, &first, &format!("c{n}")).await;
        assert!(created.get("error").is_none(), "{created}");
    }
    // The issue's 3,000 stop at the task's cap; replacing one needs no room.
    refused_naming(&create(&alice, &first, "c3").await, "max_configs_per_task");
    let replaced = create(&alice, &first, "c0").await;
    assert!(replaced.get("error").is_none(), "{replaced}");
    // Nor can another participant add to a full task.
    alice
        .send_data(
            &first,
            json!({"kind": "task", "payload": {"participants": [{"id": "bob", "role": "assignee"}]}}),
        )
        .await;
    refused_naming(&create(&bob, &first, "b0").await, "max_configs_per_task");

    // alice's own cap, over her tasks: 3 + 2 more, then no more anywhere.
    let second = alice.say(None, "two").await["id"]
        .as_str()
        .expect("id")
        .to_owned();
    for n in 0..2 {
        let created = create(&alice, &second, &format!("d{n}")).await;
        assert!(created.get("error").is_none(), "{created}");
    }
    let third = alice.say(None, "three").await["id"]
        .as_str()
        .expect("id")
        .to_owned();
    refused_naming(
        &create(&alice, &third, "e0").await,
        "max_configs_per_participant",
    );
    // A send's configuration is held to it too, and the message is refused with it.
    let refused = alice
        .rpc(
            "SendMessage",
            json!({
                "message": text_message(Some(&third), "with a webhook"),
                "configuration": {"taskPushNotificationConfig": {"url": "http://127.0.0.1:9/x"}},
            }),
        )
        .await;
    refused_naming(&refused, "max_configs_per_participant");
    // Deleting one makes room.
    let deleted = alice
        .rpc(
            "DeleteTaskPushNotificationConfig",
            json!({"taskId": second, "id": "d0"}),
        )
        .await;
    assert!(deleted.get("error").is_none(), "{deleted}");
    let created = create(&alice, &third, "e0").await;
    assert!(created.get("error").is_none(), "{created}");
    // bob has a cap of his own.
    let his = bob.say(None, "bob's").await["id"]
        .as_str()
        .expect("id")
        .to_owned();
    let created = create(&bob, &his, "b0").await;
    assert!(created.get("error").is_none(), "{created}");
}
