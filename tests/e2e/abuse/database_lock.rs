//! Issue 9 item 5, one server per database: a second server on a live store refuses to
//! start, naming the process that holds it, before it touches anything; the first keeps
//! serving, its running turn is not "interrupted by a restart", and its writes go on.

use serde_json::json;

use crate::durability::support::{Harness, message_with_id};
use crate::server::support::{DEFAULT_CONFIG, state, status_text};
use crate::support::{Started, start_server};

#[tokio::test(flavor = "multi_thread")]
async fn issue_9_5_a_second_server_is_refused_while_the_first_keeps_serving() {
    let harness = Harness::start(DEFAULT_CONFIG, None);
    let alice = harness.client("alice");
    let task = alice.say(None, "hello").await;
    let id = task["id"].as_str().expect("id").to_owned();
    // A turn the second server would take for one a restart interrupted.
    let running = {
        let alice = alice.clone();
        let message = message_with_id(Some(&id), "long-1", "work for 3 seconds");
        tokio::spawn(async move { alice.rpc("SendMessage", json!({"message": message})).await })
    };
    // The turn is running before the second server comes.
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(15);
    while state(&alice.get_task(&id).await) != "TASK_STATE_WORKING" {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the turn never started"
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }

    let config = harness.dir().join("tiny-harness.toml");
    let plugins = harness.dir().join("plugins");
    let Started::Exited { status, log } = start_server(&config, &plugins, "info", None) else {
        panic!("a second server started on the same database");
    };
    assert!(!status.success(), "{status}");
    let holder = format!("process {}", harness.pid());
    assert!(log.contains(&holder), "names the holder ({holder}): {log}");
    assert!(log.contains("tiny-harness.db"), "{log}");
    assert!(!log.contains("recover"), "it ran no recovery: {log}");

    // The first server's turn ends as it would have, and its writes keep working.
    let answer = running.await.expect("joined");
    let reply = status_text(&answer["result"]["task"]);
    assert!(reply.starts_with("Worked for 3 seconds"), "{answer}");
    let after = alice
        .rpc(
            "SendMessage",
            json!({"message": message_with_id(Some(&id), "after-1", "still here?")}),
        )
        .await;
    assert!(after.get("error").is_none(), "{after}");
    let history = alice.get_task(&id).await["history"].to_string();
    assert!(!history.contains("interrupted"), "{history}");
}
