//! The Temporal engine across processes: a server in this process that runs
//! no worker, `tiny-harness worker` processes that run the turns, one dev
//! server, one store file the processes share.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use tiny_harness::a2a::types::{
    Message, Part, Role, SendMessageRequest, SendMessageResponse, StreamResponse, Task, TaskState,
};
use tiny_harness::commands::{CommandRegistry, Registries};
use tiny_harness::config::Config;
use tiny_harness::model::Models;
use tiny_harness::task::{Caller, TaskService};
use tiny_harness::temporal::dev_server::DevServer;
use tiny_harness::temporal::{RunDescription, TemporalEngine};
use tokio_stream::StreamExt as _;

use crate::support::component_cache_dir;

/// A `tiny-harness worker` process, killed when dropped.
struct WorkerProcess(Child);

impl WorkerProcess {
    /// Started and polling the task queue.
    fn start(config: &Path, address: &str) -> WorkerProcess {
        let mut child = Command::new(env!("CARGO_BIN_EXE_tiny-harness"))
            .arg("worker")
            .arg("--config")
            .arg(config)
            .args(["--temporal-address", address])
            .env("TINY_HARNESS_CACHE_DIR", component_cache_dir())
            .env("RUST_LOG", "warn")
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("the worker starts");
        let stderr = child.stderr.take().expect("stderr");
        let (ready, started) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if line.contains("worker running on task queue") {
                    let _ = ready.send(());
                }
            }
        });
        started
            .recv_timeout(Duration::from_secs(60))
            .expect("the worker says it runs");
        WorkerProcess(child)
    }

    fn pid(&self) -> u32 {
        self.0.id()
    }

    /// SIGKILL: no shutdown, the activity it runs simply stops.
    fn kill(mut self) {
        self.0.kill().expect("killed");
        self.0.wait().expect("reaped");
    }
}

impl Drop for WorkerProcess {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn say(task_id: Option<&str>, text: &str) -> SendMessageRequest {
    SendMessageRequest {
        tenant: None,
        message: Message {
            task_id: task_id.map(Into::into),
            ..Message::new(
                Role::User,
                uuid::Uuid::new_v4().to_string(),
                vec![Part::text(text)],
            )
        },
        configuration: None,
        metadata: Default::default(),
    }
}

async fn send(service: &TaskService, request: SendMessageRequest) -> Task {
    let caller = Caller { id: "alice".into() };
    match service.send_message(&caller, request).await {
        Ok(SendMessageResponse::Task(task)) => task,
        other => panic!("expected a task: {other:?}"),
    }
}

/// The run's description once `ready` holds of it.
async fn describe_until(
    engine: &TemporalEngine,
    task_id: &str,
    ready: impl Fn(&RunDescription) -> bool,
) -> RunDescription {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let run = engine.describe_run(task_id).await.expect("described");
        if ready(&run) {
            return run;
        }
        assert!(Instant::now() < deadline, "never: {run:?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_turn_whose_worker_is_killed_is_retried_on_another_worker_and_completes() {
    let dir = tempfile::tempdir().expect("a scratch dir");
    let config_path = dir.path().join("tiny-harness.toml");
    std::fs::write(&config_path, "[store]\npath = \"tasks.db\"\n").expect("written");
    let mut server = DevServer::start(dir.path()).expect("the dev server starts");
    let engine = server.connect(|_| {}).await.expect("connected");

    // The front: this process, no worker of its own, the store shared.
    let config = Config::load(Some(&config_path)).expect("the config loads");
    let models = Models::build(
        &config.model_settings().expect("models"),
        config.models.default_name(),
    )
    .expect("the offline models");
    let service = TaskService::on_temporal(
        config.task_settings(),
        Registries::new(CommandRegistry::default()),
        models,
        config.shared_durability().expect("the store opens shared"),
        engine.clone(),
        false,
    )
    .expect("the front starts");

    let first = WorkerProcess::start(&config_path, server.address());
    let task = send(&service, say(None, "hello")).await;
    assert_eq!(task.status.state, TaskState::InputRequired, "{task:#?}");

    let turn = {
        let service = service.clone();
        let id = task.id.clone();
        tokio::spawn(async move { send(&service, say(Some(&id), "work for 3 seconds")).await })
    };
    let running = describe_until(&engine, &task.id, |run| {
        run.running
            .iter()
            .any(|activity| activity.kind.ends_with("model_turn"))
    })
    .await;
    let on_first = &running.running[0];
    assert_eq!(on_first.attempt, 1);
    assert!(
        on_first.worker.ends_with(&first.pid().to_string()),
        "{on_first:?}"
    );
    first.kill();

    // The cluster notices the silence (no heartbeat) and retries the turn
    // on the worker that is left.
    let second = WorkerProcess::start(&config_path, server.address());
    let answered = tokio::time::timeout(Duration::from_secs(60), turn)
        .await
        .expect("answered in time")
        .expect("joined");
    assert_eq!(
        answered.status.state,
        TaskState::InputRequired,
        "{answered:#?}"
    );
    let history = answered.history.to_messages().expect("readable");
    let reply = history.last().expect("a reply");
    assert!(
        reply.parts[0]
            .as_text()
            .is_some_and(|text| text.starts_with("Worked for 3 seconds.")),
        "{reply:#?}"
    );
    assert_eq!(
        answered.history.len(),
        4,
        "the turn answered once: {answered:#?}"
    );

    // A streamed turn on the worker process: its stored events reach this
    // process's stream through the store; what it says live stays there.
    let caller = Caller { id: "alice".into() };
    let stream = service
        .send_streaming_message(&caller, say(Some(&task.id), "work for 1 seconds"))
        .await
        .expect("accepted");
    let events: Vec<StreamResponse> =
        tokio::time::timeout(Duration::from_secs(30), stream.collect())
            .await
            .expect("the stream ends with the turn");
    assert!(
        matches!(&events[0], StreamResponse::Task(task) if task.status.state == TaskState::Working),
        "{events:#?}"
    );
    let Some(StreamResponse::StatusUpdate(last)) = events.last() else {
        panic!("ends with the turn's last update: {events:#?}");
    };
    assert_eq!(last.status.state, TaskState::InputRequired);
    let said = last.status.message.as_ref().expect("the reply");
    assert!(
        said.parts[0]
            .as_text()
            .is_some_and(|text| text.starts_with("Worked for 1 seconds.")),
        "{said:#?}"
    );
    assert!(
        events.iter().all(|event| !matches!(event,
            StreamResponse::StatusUpdate(update) if update.metadata.contains_key("stream")
                && update.metadata["stream"] == "text-delta")),
        "{events:#?}"
    );
    drop(second);
}
