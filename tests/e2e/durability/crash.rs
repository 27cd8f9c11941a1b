//! SIGKILL at chosen points, then a restart on the same database: nothing a
//! client was told is lost, nothing is applied twice, parked conversations
//! are exactly as they were, nothing stays WORKING, and streams can be
//! opened again.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use axum::Json;
use axum::extract::State;
use axum::routing::post;
use serde_json::{Value, json};

use super::support::{
    Harness, history_texts, is_parked, is_working, message_with_id, stream_in_background,
    user_message_ids, wait_until,
};
use crate::server::support::{DEFAULT_CONFIG, complete_control, state, status_text, sub_state};
use crate::support::PluginsFolder;

#[tokio::test(flavor = "multi_thread")]
async fn a_kill_mid_turn_with_open_streams_loses_nothing_and_the_turn_is_retried() {
    let mut harness = Harness::start(DEFAULT_CONFIG, None);
    let alice = harness.client("alice");

    // Parked conversations, one of each sub-state, with some history.
    let answer = alice.say(None, "hello").await;
    let answer_id = answer["id"].as_str().expect("id").to_owned();
    alice.say(Some(&answer_id), "ask me something").await;
    let next = alice.say(None, "just a note").await;
    let next_id = next["id"].as_str().expect("id").to_owned();
    let parked_before = [
        alice.get_task(&answer_id).await,
        alice.get_task(&next_id).await,
    ];
    assert_eq!(sub_state(&parked_before[0]), Some("awaiting-answer"));
    assert_eq!(sub_state(&parked_before[1]), Some("awaiting-next-message"));

    // A turn under way, watched by an open stream; another stream waits on
    // a parked conversation.
    let work = alice.say(None, "warm up").await;
    let work_id = work["id"].as_str().expect("id").to_owned();
    let request = json!({
        "message": message_with_id(Some(&work_id), "work-1", "work for 10 seconds"),
        "configuration": {"returnImmediately": true},
    });
    let accepted = alice.ok("SendMessage", request).await;
    assert!(is_working(&accepted["task"]), "{accepted}");
    let watching = stream_in_background(&alice, "SubscribeToTask", json!({"id": work_id}));
    let waiting = stream_in_background(&alice, "SubscribeToTask", json!({"id": answer_id}));
    tokio::time::sleep(Duration::from_millis(1500)).await;

    harness.restart();
    let alice = harness.client("alice");
    // Both streams broke with the process; each had started with the Task.
    for stream in [watching, waiting] {
        let events = stream.await.expect("joined");
        assert!(events[0]["result"].get("task").is_some(), "{events:?}");
    }

    // Parked conversations are exactly as they were.
    for before in &parked_before {
        let id = before["id"].as_str().expect("id");
        assert_eq!(&alice.get_task(id).await, before);
    }
    // The interrupted turn runs again and answers; its message is there once.
    assert!(harness.logged("resumed tasks interrupted by the last stop"));
    let done = wait_until(&alice, &work_id, 30, is_parked).await;
    assert!(
        status_text(&done).starts_with("Worked for 10 seconds"),
        "{done}"
    );
    let ids = user_message_ids(&done);
    assert_eq!(
        ids.iter().filter(|id| *id == "work-1").count(),
        1,
        "{ids:?}"
    );
    assert_eq!(
        history_texts(&done)
            .iter()
            .filter(|t| t.starts_with("Worked for"))
            .count(),
        1
    );

    // Streams can be opened again on every task, and see the next turn.
    let resubscribed = stream_in_background(&alice, "SubscribeToTask", json!({"id": answer_id}));
    tokio::time::sleep(Duration::from_millis(300)).await;
    alice.say(Some(&answer_id), "do this").await;
    let events = tokio::time::timeout(Duration::from_secs(20), resubscribed)
        .await
        .expect("the stream ends with the turn")
        .expect("joined");
    assert!(events[0]["result"].get("task").is_some(), "{events:?}");
    let last = &events.last().expect("events")["result"]["statusUpdate"];
    assert_eq!(
        last["status"]["state"], "TASK_STATE_INPUT_REQUIRED",
        "{events:?}"
    );

    // Nothing is left working, and every task is listed.
    let listed = alice.ok("ListTasks", json!({})).await;
    assert_eq!(listed["totalSize"], 3, "{listed}");
    for task in listed["tasks"].as_array().expect("tasks") {
        assert!(!is_working(task), "{task}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_kill_between_accept_and_reply_is_answered_once_on_the_resend() {
    let mut harness = Harness::start(DEFAULT_CONFIG, None);
    let alice = harness.client("alice");
    // A first message: the client waits for the reply and never gets it.
    let first = json!({"message": message_with_id(None, "first-1", "work for 3 seconds")});
    let sending = {
        let alice = alice.clone();
        let first = first.clone();
        tokio::spawn(async move { alice.rpc("SendMessage", first).await })
    };
    // Accepted (listed), not answered.
    let listed = loop {
        let listed = alice.ok("ListTasks", json!({})).await;
        if listed["totalSize"] == 1 {
            break listed;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let task_id = listed["tasks"][0]["id"].as_str().expect("id").to_owned();
    harness.kill();
    // Killed with the request open: the client sees the connection break.
    let broken = tokio::time::timeout(Duration::from_secs(5), sending).await;
    assert!(
        matches!(broken, Ok(Err(_))),
        "the client never got an answer: {broken:?}"
    );

    harness.restart();
    let alice = harness.client("alice");
    // The client retries with the same messageId: the same task answers,
    // once its retried turn is over; no second task, no second message.
    let answer = alice.ok("SendMessage", first).await;
    assert_eq!(answer["task"]["id"], task_id.as_str());
    assert!(is_parked(&answer["task"]), "{answer}");
    assert!(status_text(&answer["task"]).starts_with("Worked for 3 seconds"));
    let task = alice.get_task(&task_id).await;
    assert_eq!(user_message_ids(&task), ["first-1"]);
    assert_eq!(history_texts(&task).len(), 2, "{task}");
    assert_eq!(alice.ok("ListTasks", json!({})).await["totalSize"], 1);

    // The same for a message continuing the task, killed mid-reply.
    let next = json!({"message": message_with_id(Some(&task_id), "next-1", "work for 2 seconds")});
    let sending = {
        let alice = alice.clone();
        let next = next.clone();
        tokio::spawn(async move { alice.rpc("SendMessage", next).await })
    };
    wait_until(&alice, &task_id, 10, is_working).await;
    harness.restart();
    drop(sending);
    let alice = harness.client("alice");
    let answer = alice.ok("SendMessage", next).await;
    assert!(
        status_text(&answer["task"]).starts_with("Worked for 2 seconds"),
        "{answer}"
    );
    let task = alice.get_task(&task_id).await;
    assert_eq!(user_message_ids(&task), ["first-1", "next-1"]);
    assert_eq!(history_texts(&task).len(), 4, "{task}");
}

/// A remote command body that records each call and then hangs, like a
/// deployment that takes a while.
async fn slow_executor() -> (SocketAddr, Arc<AtomicUsize>) {
    let calls = Arc::new(AtomicUsize::new(0));
    async fn hang(State(calls): State<Arc<AtomicUsize>>, Json(_): Json<Value>) -> Json<Value> {
        calls.fetch_add(1, Ordering::SeqCst);
        tokio::time::sleep(Duration::from_secs(120)).await;
        Json(json!({}))
    }
    let app = axum::Router::new()
        .route("/rpc", post(hang))
        .with_state(Arc::clone(&calls));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    tokio::spawn(async move { axum::serve(listener, app).await });
    (addr, calls)
}

fn deploy_plugin(addr: SocketAddr) -> PluginsFolder {
    let commands = json!({"commands": [{
        "name": "deploy", "description": "Deploy", "usage": "/deploy <env>",
        "arguments": [{"name": "env", "type": "text"}], "timeout_ms": 60000,
    }]});
    let hooks = json!({"hooks": [{
        "name": "deploy-body", "point": "command.invoked.in", "command": "deploy",
        "url": format!("http://{addr}/rpc"),
    }]});
    PluginsFolder::new().with_plugin(
        "deployer",
        &[
            ("plugin.json", r#"{"name": "deployer", "version": "1.0.0"}"#),
            ("commands.json", &commands.to_string()),
            ("hooks.json", &hooks.to_string()),
        ],
    )
}

#[tokio::test(flavor = "multi_thread")]
async fn a_command_killed_mid_run_is_reported_and_never_run_again() {
    let (addr, calls) = slow_executor().await;
    let plugins = deploy_plugin(addr);
    let mut harness = Harness::start(DEFAULT_CONFIG, Some(plugins.path()));
    let alice = harness.client("alice");
    let task = alice.say(None, "hi").await;
    let task_id = task["id"].as_str().expect("id").to_owned();
    let request = json!({
        "message": message_with_id(Some(&task_id), "deploy-1", "/deploy prod"),
        "configuration": {"returnImmediately": true},
    });
    assert!(is_working(&alice.ok("SendMessage", request).await["task"]));
    // The body is running.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while calls.load(Ordering::SeqCst) == 0 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the command never ran"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    harness.restart();
    let alice = harness.client("alice");
    let task = wait_until(&alice, &task_id, 20, is_parked).await;
    let text = status_text(&task);
    assert!(text.contains("`/deploy prod`"), "{text}");
    assert!(text.contains("interrupted by a restart"), "{text}");
    assert!(text.contains("not run again"), "{text}");
    assert_eq!(sub_state(&task), Some("awaiting-next-message"));
    assert_eq!(
        user_message_ids(&task)
            .iter()
            .filter(|id| *id == "deploy-1")
            .count(),
        1
    );
    // Not repeated: the body was called once, and still only once later.
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(calls.load(Ordering::SeqCst), 1);
    // The conversation goes on.
    let next = alice.say(Some(&task_id), "what now?").await;
    assert!(is_parked(&next), "{next}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_sub_task_killed_mid_goal_finishes_after_the_restart_and_reports() {
    let mut harness = Harness::start(DEFAULT_CONFIG, None);
    let alice = harness.client("alice");
    let parent = alice.say(None, "/sub-task work for 3 seconds").await;
    let parent_id = parent["id"].as_str().expect("id").to_owned();
    let child_id = parent["metadata"]["subtasks"][0]["id"]
        .as_str()
        .expect("a sub-task")
        .to_owned();
    wait_until(&alice, &child_id, 10, is_working).await;
    tokio::time::sleep(Duration::from_millis(500)).await;

    harness.restart();
    let alice = harness.client("alice");
    let child = wait_until(&alice, &child_id, 30, |t| {
        state(t) == "TASK_STATE_COMPLETED"
    })
    .await;
    assert_eq!(child["metadata"]["parent_task_id"], parent_id.as_str());
    // The link survived and the parent heard the result.
    let parent = wait_until(&alice, &parent_id, 10, |t| {
        t["artifacts"].as_array().is_some_and(|a| !a.is_empty())
    })
    .await;
    assert_eq!(
        parent["metadata"]["subtasks"][0]["state"],
        "TASK_STATE_COMPLETED"
    );
    assert!(is_parked(&parent), "{parent}");
    let result = parent["artifacts"][0]["parts"][0]["text"]
        .as_str()
        .unwrap_or("");
    assert!(result.starts_with("Worked for 3 seconds"), "{parent}");
    // Completion is allowed now that nothing is open.
    let done = alice.send_data(&parent_id, complete_control()).await;
    assert_eq!(
        state(&done["result"]["task"]),
        "TASK_STATE_COMPLETED",
        "{done}"
    );
}

/// Issue 10: a SIGKILL during a tool round. The call was journaled before
/// its tool ran; after the restart the model is told the call was
/// interrupted, and the tool (here `spawn_subtask`, whose effect is a new
/// sub-task) is never run a second time.
#[tokio::test(flavor = "multi_thread")]
async fn a_kill_during_a_tool_round_runs_no_tool_twice() {
    let mut harness = Harness::start(DEFAULT_CONFIG, None);
    let alice = harness.client("alice");
    let request = json!({
        "message": message_with_id(
            None,
            "spawn-1",
            "use tool spawn_subtask with {\"goal\": \"work for 4 seconds\"}",
        ),
        "configuration": {"returnImmediately": true},
    });
    let accepted = alice.ok("SendMessage", request).await;
    let id = accepted["task"]["id"].as_str().expect("id").to_owned();
    // The call is journaled and its sub-task exists: the tool is running.
    let working = wait_until(&alice, &id, 20, |task| {
        task["metadata"]["subtasks"]
            .as_array()
            .is_some_and(|s| !s.is_empty())
    })
    .await;
    assert!(is_working(&working), "{working}");
    let calls = |task: &Value| {
        task["history"].as_array().map_or(0, |history| {
            history
                .iter()
                .filter(|message| message["metadata"]["stream"] == "tool-call")
                .count()
        })
    };
    assert_eq!(calls(&working), 1, "{working}");

    harness.restart();
    let alice = harness.client("alice");
    let parked = wait_until(&alice, &id, 30, is_parked).await;
    let reply = status_text(&parked);
    assert!(
        reply.starts_with("Tool spawn_subtask failed: This call was interrupted by a restart"),
        "{reply}"
    );
    // One call, one sub-task: nothing ran twice. The sub-task itself was
    // brought back and reports to its parent.
    assert_eq!(calls(&parked), 1, "{parked}");
    let reported = wait_until(&alice, &id, 30, |task| {
        task["artifacts"].as_array().is_some_and(|a| !a.is_empty())
    })
    .await;
    let subtasks = reported["metadata"]["subtasks"]
        .as_array()
        .expect("subtasks");
    assert_eq!(subtasks.len(), 1, "{reported}");
    assert_eq!(subtasks[0]["state"], "TASK_STATE_COMPLETED");
}
