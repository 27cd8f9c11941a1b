//! A one-shot task (`lifecycle: task`) outlives the process: killed twice
//! while it waits for its sub-task, it still concludes after the restarts
//! (waiting counts no attempts), once the sub-task has ended (the sub-task,
//! whose model turn two restarts interrupt, fails by its own rule, unless a
//! slow machine let it finish in between: either way it has ended first).

use serde_json::json;

use super::support::{Harness, wait_until};
use crate::server::support::{DEFAULT_CONFIG, state, status_text, text_message};

#[tokio::test(flavor = "multi_thread")]
async fn a_one_shot_task_killed_while_it_waits_completes_after_restarts() {
    let mut harness = Harness::start(DEFAULT_CONFIG, None);
    let alice = harness.client("alice");
    let mut message = text_message(None, "/sub-task work for 20 seconds");
    message["metadata"] = json!({"lifecycle": "task"});
    let result = alice
        .ok(
            "SendMessage",
            json!({"message": message, "configuration": {"returnImmediately": true}}),
        )
        .await;
    let id = result["task"]["id"].as_str().expect("id").to_owned();
    let waiting = |task: &serde_json::Value| status_text(task).contains("open sub-task");
    wait_until(&alice, &id, 10, waiting).await;

    harness.restart();
    let alice = harness.client("alice");
    let task = wait_until(&alice, &id, 10, waiting).await;
    assert_eq!(state(&task), "TASK_STATE_WORKING", "{task}");
    harness.restart();
    let alice = harness.client("alice");

    let task = wait_until(&alice, &id, 30, |task| {
        state(task) == "TASK_STATE_COMPLETED"
    })
    .await;
    let subtask = task["metadata"]["subtasks"][0]["state"]
        .as_str()
        .unwrap_or("");
    assert!(
        ["TASK_STATE_FAILED", "TASK_STATE_COMPLETED"].contains(&subtask),
        "completed only once its sub-task had ended: {task}"
    );
    assert!(status_text(&task).contains("sub-task"), "the reply: {task}");
    let artifacts = task["artifacts"].as_array().expect("artifacts");
    assert!(
        artifacts
            .iter()
            .any(|a| a["artifactId"] == json!("reply-1")),
        "{task}"
    );
    assert!(
        artifacts.iter().any(|a| a["parts"][0]["text"]
            .as_str()
            .is_some_and(|t| t.contains("interrupted") || t.starts_with("Worked for"))),
        "the sub-task's result: {task}"
    );
}
