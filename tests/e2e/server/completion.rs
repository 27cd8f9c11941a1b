//! Completion by control envelope, the sub-task rule and its hook override,
//! cutting a running turn; cancellation; terminal tasks stay terminal.

use std::time::{Duration, Instant};

use axum::Json;
use axum::routing::post;
use serde_json::{Value, json};

use super::support::{
    DEFAULT_CONFIG, Server, complete_control, state, status_text, text_message, wait_for,
};

#[tokio::test(flavor = "multi_thread")]
async fn completion_is_refused_while_a_sub_task_is_open_and_allowed_after() {
    let server = Server::with_defaults();
    let alice = server.client("alice");
    let id = alice.say(None, "plan the release").await["id"]
        .as_str()
        .expect("id")
        .to_owned();
    alice.say(Some(&id), "/sub-task work for 2 seconds").await;

    let refused = alice.send_data(&id, complete_control()).await;
    let task = &refused["result"]["task"];
    assert_eq!(state(task), "TASK_STATE_INPUT_REQUIRED", "{refused}");
    let child = alice.get_task(&id).await["metadata"]["subtasks"][0]["id"]
        .as_str()
        .expect("a sub-task")
        .to_owned();
    assert!(
        status_text(task).contains(&child),
        "the refusal names the open sub-task: {}",
        status_text(task)
    );

    wait_for(&alice, &child, |task| state(task) == "TASK_STATE_COMPLETED").await;
    let done = alice.send_data(&id, complete_control()).await;
    assert_eq!(
        state(&done["result"]["task"]),
        "TASK_STATE_COMPLETED",
        "{done}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_task_complete_hook_can_override_the_open_sub_task_rule() {
    async fn allow(Json(request): Json<Value>) -> Json<Value> {
        let mut context = request["params"]["context"].clone();
        context["decision"] = json!({"allow": true});
        Json(
            json!({"jsonrpc": "2.0", "id": request["id"], "result": {"decision": "replace", "context": context}}),
        )
    }
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    tokio::spawn(async move {
        axum::serve(listener, axum::Router::new().route("/", post(allow))).await
    });

    let plugins = tempfile::tempdir().expect("tempdir");
    let plugin = plugins.path().join("force-complete");
    std::fs::create_dir_all(&plugin).expect("mkdir");
    std::fs::write(
        plugin.join("plugin.json"),
        r#"{"name": "force-complete", "version": "1.0.0"}"#,
    )
    .expect("write");
    let hooks = json!({"hooks": [{"name": "allow", "point": "task.complete.in", "priority": 10, "url": format!("http://{addr}/")}]});
    std::fs::write(plugin.join("hooks.json"), hooks.to_string()).expect("write");

    let server = Server::start(DEFAULT_CONFIG, Some(plugins.path()));
    let alice = server.client("alice");
    let id = alice.say(None, "hello").await["id"]
        .as_str()
        .expect("id")
        .to_owned();
    alice.say(Some(&id), "/sub-task work for 20 seconds").await;
    let done = alice.send_data(&id, complete_control()).await;
    assert_eq!(
        state(&done["result"]["task"]),
        "TASK_STATE_COMPLETED",
        "{done}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn completion_cuts_a_long_running_turn() {
    let server = Server::with_defaults();
    let alice = server.client("alice");
    let id = alice.say(None, "hello").await["id"]
        .as_str()
        .expect("id")
        .to_owned();
    let long = {
        let alice = alice.clone();
        let id = id.clone();
        tokio::spawn(async move {
            alice
                .rpc(
                    "SendMessage",
                    json!({"message": text_message(Some(&id), "work for 30 seconds")}),
                )
                .await
        })
    };
    wait_for(&alice, &id, |task| state(task) == "TASK_STATE_WORKING").await;
    let started = Instant::now();
    let done = alice.send_data(&id, complete_control()).await;
    assert_eq!(
        state(&done["result"]["task"]),
        "TASK_STATE_COMPLETED",
        "{done}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "the turn was cut, not awaited"
    );
    let cut = tokio::time::timeout(Duration::from_secs(5), long)
        .await
        .expect("the long send returns")
        .expect("joined");
    assert!(
        cut.get("result").is_some() || cut.get("error").is_some(),
        "{cut}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn cancel_task_cancels_the_task_and_its_open_sub_tasks() {
    let server = Server::with_defaults();
    let alice = server.client("alice");
    let id = alice.say(None, "hello").await["id"]
        .as_str()
        .expect("id")
        .to_owned();
    alice.say(Some(&id), "/sub-task work for 20 seconds").await;
    let child = alice.get_task(&id).await["metadata"]["subtasks"][0]["id"]
        .as_str()
        .expect("child")
        .to_owned();
    let canceled = alice.ok("CancelTask", json!({"id": id})).await;
    assert_eq!(state(&canceled), "TASK_STATE_CANCELED");
    wait_for(&alice, &child, |task| state(task) == "TASK_STATE_CANCELED").await;
    let again = alice.rpc("CancelTask", json!({"id": id})).await;
    assert_eq!(
        again["error"]["code"], -32002,
        "a terminal task is not cancelable: {again}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_terminal_task_refuses_further_messages() {
    let server = Server::with_defaults();
    let alice = server.client("alice");
    let id = alice.say(None, "hello").await["id"]
        .as_str()
        .expect("id")
        .to_owned();
    let done = alice.send_data(&id, complete_control()).await;
    assert_eq!(state(&done["result"]["task"]), "TASK_STATE_COMPLETED");
    for text in ["one more thing", "/status"] {
        let response = alice
            .rpc(
                "SendMessage",
                json!({"message": text_message(Some(&id), text)}),
            )
            .await;
        assert_eq!(response["error"]["code"], -32004, "{response}");
    }
    let response = alice.send_data(&id, complete_control()).await;
    assert_eq!(response["error"]["code"], -32004, "{response}");
    assert_eq!(state(&alice.get_task(&id).await), "TASK_STATE_COMPLETED");
}
