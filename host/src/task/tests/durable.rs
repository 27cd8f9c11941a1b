//! The lifecycle on a store: deduplication, idle actors, what a restart
//! finds and does, sub-tasks across a restart, the log as the source of
//! truth, and a store that refuses writes.
//!
//! A "restart" here drops one service (its actors stop where they are, as
//! if the process died: nothing more is committed) and opens another on the
//! same store.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use super::*;
use crate::a2a::types::{TaskPushNotificationConfig, Timestamp};
use crate::push::PushSettings;
use crate::store::{
    ListPage, ListQuery, LogEntry, MemoryStore, MessageLookup, PushConfigRecord, StoreError,
    StoreFuture, StoredEvent, StoredPushConfig, StoredTask, TaskStore, TaskWrite,
};
use crate::task::journal::{Journal, replay};
use crate::task::state::{
    Change, Lifecycle, StatusChange, SubState, TaskRecord, Turn, TurnWork, new_id,
};
use crate::task::subtasks;
use crate::task::{Durability, Participant, Role};

fn durable_service(store: Arc<dyn TaskStore>, idle: Duration) -> TaskService {
    let loaded = PluginLoader::new(runtime()).load(None, CommandRegistry::builder());
    TaskService::with_durability(
        settings(),
        Registries::new(loaded.registry),
        super::offline_models(&settings()),
        Durability {
            store,
            idle_timeout: idle,
            accept_commit_delay: Durability::DEFAULT_ACCEPT_COMMIT_DELAY,
            retain_terminal: None,
            push: PushSettings {
                allow_private: true,
                ..PushSettings::default()
            },
        },
    )
}

fn alice() -> Participant {
    Participant {
        id: "alice".into(),
        role: Role::Reporter,
    }
}

fn conversation() -> TaskRecord {
    TaskRecord::new(
        new_id(),
        new_id(),
        Lifecycle::Conversation,
        vec![alice()],
        "offline-echo".into(),
        "medium".into(),
    )
}

/// Store `record` after `changes`, as a task that stopped right there.
async fn store_task(
    store: &dyn TaskStore,
    mut record: TaskRecord,
    changes: Vec<Change>,
    created_by: Option<&str>,
) -> TaskRecord {
    let mut journal = Journal::new_task(&record, created_by.map(str::to_owned)).expect("journal");
    for change in changes {
        journal
            .apply(&mut record, change, Timestamp::now())
            .expect("applies");
    }
    let write = journal.write(&record).expect("write");
    store.commit(vec![write]).await.expect("stored");
    record
}

fn user_text(record: &TaskRecord, text: &str) -> Message {
    Message {
        task_id: Some(record.id.clone()),
        context_id: Some(record.context_id.clone()),
        ..Message::new(MessageRole::User, new_id(), vec![Part::text(text)])
    }
}

fn texts(task: &Task) -> Vec<String> {
    messages(task)
        .iter()
        .map(|m| {
            m.parts
                .iter()
                .filter_map(Part::as_text)
                .collect::<Vec<_>>()
                .join("")
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_resent_message_is_answered_and_never_applied_twice() {
    let store: Arc<dyn TaskStore> = Arc::new(MemoryStore::new());
    let service = durable_service(Arc::clone(&store), Duration::from_secs(60));
    let first = say(None, "hello");
    let task = send(&service, "alice", first.clone())
        .await
        .expect("starts");
    // The same first message again (a client retrying after a timeout):
    // the same task, not a second one.
    let again = send(&service, "alice", first.clone())
        .await
        .expect("answered");
    assert_eq!(again.id, task.id);
    assert_eq!(again.history.len(), 2, "{again:#?}");
    // From someone else, the same id is a new conversation of theirs.
    let bobs = send(&service, "bob", first).await.expect("bob starts");
    assert_ne!(bobs.id, task.id);

    let next = say(Some(&task.id), "and then?");
    send(&service, "alice", next.clone())
        .await
        .expect("continues");
    let resent = send(&service, "alice", next.clone())
        .await
        .expect("answered");
    assert_eq!(texts(&resent).len(), 4, "{resent:#?}");
    // Streaming a resend of a finished turn: the task, and the stream ends.
    let events = collect(
        service
            .send_streaming_message(&who("alice"), next)
            .await
            .expect("streams"),
    )
    .await;
    assert_eq!(events.len(), 1, "{events:#?}");
    // An agent message's id cannot be reused by a participant.
    let agent_id = messages(&resent)[1].message_id.clone();
    let mut stolen = user_message(Some(&task.id), vec![Part::text("x")]);
    stolen.message_id = agent_id;
    let refused = send(&service, "alice", request(stolen)).await;
    assert!(
        matches!(refused, Err(A2aError::InvalidParams { .. })),
        "{refused:?}"
    );
    assert_eq!(
        get(&service, "alice", &task.id)
            .await
            .expect("task")
            .history
            .len(),
        4
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_actors_leave_memory_and_come_back_from_the_store() {
    let service = durable_service(Arc::new(MemoryStore::new()), Duration::from_millis(150));
    let task = start(&service, "alice", "hello").await;
    assert_eq!(service.running_tasks(), 1);
    no_actors_within(
        &service,
        Duration::from_secs(5),
        "a parked conversation holds no actor",
    )
    .await;
    // Reads do not need the actor.
    assert_eq!(
        get(&service, "alice", &task.id)
            .await
            .expect("task")
            .history
            .len(),
        2
    );
    // The next message brings it back exactly as it was.
    let task = send(&service, "alice", say(Some(&task.id), "ask me"))
        .await
        .expect("continues");
    assert_parked(&task, "awaiting-answer");
    assert_eq!(texts(&task)[0], "hello");
    // hello, its reply, "ask me", the ask_participant call, the question.
    assert_eq!(task.history.len(), 5);

    // A subscriber keeps it; when the subscriber goes, it leaves.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let events = subscribe(&service, "alice", &task.id)
        .await
        .expect("subscribes");
    assert_eq!(service.running_tasks(), 1);
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(
        service.running_tasks(),
        1,
        "a subscriber waits for the next turn"
    );
    drop(events);
    no_actors_within(&service, Duration::from_secs(5), "the subscriber left").await;
}

/// Actors stop on their own (after their idle period, or after answering a
/// refused write), so "none left" is checked as an eventual property: a
/// fixed sleep would race with a loaded machine.
async fn no_actors_within(service: &TaskService, limit: Duration, why: &str) {
    let deadline = tokio::time::Instant::now() + limit;
    while service.running_tasks() != 0 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "{} actor(s) still running after {limit:?}: {why}",
            service.running_tasks()
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_turn_cut_twice_and_a_command_cut_once_are_not_run_again() {
    let store: Arc<dyn TaskStore> = Arc::new(MemoryStore::new());
    let record = conversation();
    let message = user_text(&record, "/status");
    let command = Turn::first(TurnWork::Command {
        text: "/status".into(),
        sender: alice(),
    });
    let commanding = store_task(
        store.as_ref(),
        record,
        vec![
            Change::Received(message),
            Change::Status(StatusChange::working()),
            Change::TurnStarted(command),
        ],
        Some("alice"),
    )
    .await;
    let record = conversation();
    let message = user_text(&record, "work for 1 seconds");
    let retried = Turn {
        work: TurnWork::Model {
            sender: None,
            approval: None,
        },
        attempt: 2,
    };
    let twice = store_task(
        store.as_ref(),
        record,
        vec![
            Change::Received(message),
            Change::Status(StatusChange::working()),
            Change::TurnStarted(retried),
        ],
        Some("alice"),
    )
    .await;

    let service = durable_service(Arc::clone(&store), Duration::from_secs(60));
    assert_eq!(service.recover().await.expect("recovers"), 2);
    let task = wait_for(&service, &commanding.id, |t| {
        t.status.state != TaskState::Working
    })
    .await;
    assert_parked(&task, "awaiting-next-message");
    let text = status_text(&task);
    assert!(
        text.contains("`/status`") && text.contains("interrupted by a restart"),
        "{text}"
    );
    assert!(text.contains("not run again"), "{text}");
    let task = wait_for(&service, &twice.id, |t| {
        t.status.state != TaskState::Working
    })
    .await;
    assert_parked(&task, "awaiting-next-message");
    assert!(
        status_text(&task).contains("not retried again"),
        "{task:#?}"
    );
    // Both still take messages.
    let next = send(&service, "alice", say(Some(&task.id), "again"))
        .await
        .expect("sent");
    assert_parked(&next, "awaiting-next-message");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_call_cut_by_a_restart_is_reported_to_the_model_and_never_run_again() {
    let store: Arc<dyn TaskStore> = Arc::new(MemoryStore::new());
    let before = durable_service(Arc::clone(&store), Duration::from_secs(60));
    // The sub-task works far longer than the test, so the call is surely
    // still running when the service stops.
    let spawn = "use tool spawn_subtask with {\"goal\": \"work for 60 seconds\"}";
    let working = send(&before, "alice", immediately(say(None, spawn)))
        .await
        .expect("accepted");
    // The call is journaled and its sub-task started: the tool is running.
    // The parent's list of sub-tasks changes without a stream event.
    poll_for(&before, &working.id, |task| !subtasks(task).is_empty()).await;
    drop(before);

    let after = durable_service(Arc::clone(&store), Duration::from_secs(60));
    after.recover().await.expect("recovers");
    let parked = wait_for(&after, &working.id, |task| {
        task.status.state == TaskState::InputRequired
    })
    .await;
    let reply = status_text(&parked);
    assert!(
        reply.starts_with("Tool spawn_subtask failed: This call was interrupted by a restart"),
        "{reply}"
    );
    // Not run again: still the one sub-task, which carries on (it is
    // running again after the restart) and reports when it ends.
    assert_eq!(subtasks(&parked).len(), 1);
    let subtask_id = subtasks(&parked)[0]["id"]
        .as_str()
        .expect("an id")
        .to_owned();
    let child = get(&after, "alice", &subtask_id)
        .await
        .expect("the sub-task");
    assert_eq!(child.status.state, TaskState::Working);
    cancel(&after, "alice", &subtask_id)
        .await
        .expect("canceled");
    let reported = wait_for(&after, &working.id, |task| !task.artifacts.is_empty()).await;
    assert_eq!(subtasks(&reported).len(), 1);
    assert_eq!(subtasks(&reported)[0]["state"], "TASK_STATE_CANCELED");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_parent_catches_up_with_a_sub_task_that_ended_while_it_was_down() {
    let store: Arc<dyn TaskStore> = Arc::new(MemoryStore::new());
    let parent = conversation();
    let child = subtasks::child_of(&parent, "write the docs");
    let link = child.as_subtask().expect("a sub-task");
    let reply = parent.agent_message("Starting a sub-task: write the docs", None);
    let parent = store_task(
        store.as_ref(),
        parent,
        vec![
            Change::Subtask(link),
            Change::Status(StatusChange::parked(reply, SubState::AwaitingNextMessage)),
        ],
        Some("alice"),
    )
    .await;
    // The child finished after the parent's last write, whose report never
    // got recorded.
    let done = child.agent_message("The docs are written.", None);
    store_task(
        store.as_ref(),
        child.clone(),
        vec![Change::Status(StatusChange::finished(
            TaskState::Completed,
            done,
        ))],
        None,
    )
    .await;

    let service = durable_service(Arc::clone(&store), Duration::from_secs(60));
    assert_eq!(service.recover().await.expect("recovers"), 1);
    let task = wait_for(&service, &parent.id, |t| !t.artifacts.is_empty()).await;
    assert_eq!(subtasks(&task)[0]["state"], "TASK_STATE_COMPLETED");
    assert_eq!(task.artifacts.len(), 1);
    assert_eq!(
        task.artifacts[0].parts[0].as_text(),
        Some("The docs are written.")
    );
    assert_parked(&task, "awaiting-next-message");
    // Now it may complete: no open sub-task is left.
    let completed = send(&service, "alice", control(&parent.id, "complete"))
        .await
        .expect("completes");
    assert_eq!(completed.status.state, TaskState::Completed);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_log_alone_rebuilds_every_task_exactly() {
    let store: Arc<dyn TaskStore> = Arc::new(MemoryStore::new());
    let service = durable_service(Arc::clone(&store), Duration::from_secs(60));
    let task = start(&service, "alice", "hello").await;
    for text in [
        "/model fast-1",
        "/effort high",
        "ask me",
        "/sub-task check the logs",
    ] {
        send(&service, "alice", say(Some(&task.id), text))
            .await
            .expect("sent");
    }
    send(&service, "alice", grant(&task.id, "bob", "watcher"))
        .await
        .expect("granted");
    let parent = wait_for(&service, &task.id, |t| !t.artifacts.is_empty()).await;
    let child_id = subtasks(&parent)[0]["id"].as_str().expect("id").to_owned();
    for id in [&task.id, &child_id] {
        let stored = get(&service, "alice", id).await.expect("task");
        let log = store.log(id.clone()).await.expect("log");
        let rebuilt = replay(&log).expect("replays");
        assert_eq!(rebuilt.to_task(None), stored, "task {id}");
        // Positions count every change, from the creation at 0.
        let positions: Vec<u64> = log.iter().map(|e| e.position).collect();
        assert_eq!(positions, (0..log.len() as u64).collect::<Vec<_>>());
    }
}

/// A store whose writes fail while `failing` is set, as on a full disk, and
/// which counts the tasks it loads whole.
struct Flaky {
    inner: MemoryStore,
    failing: AtomicBool,
    loads: AtomicUsize,
}

impl Flaky {
    fn refused(&self) -> Option<StoreError> {
        self.failing
            .load(Ordering::SeqCst)
            .then(|| StoreError::Unavailable("the disk is full (test)".into()))
    }
}

impl TaskStore for Flaky {
    fn commit(&self, writes: Vec<TaskWrite>) -> StoreFuture<'_, ()> {
        match self.refused() {
            Some(error) => Box::pin(std::future::ready(Err(error))),
            None => self.inner.commit(writes),
        }
    }
    fn load(&self, id: String, history: Option<usize>) -> StoreFuture<'_, Option<StoredTask>> {
        self.loads.fetch_add(1, Ordering::SeqCst);
        self.inner.load(id, history)
    }
    fn head(&self, id: String) -> StoreFuture<'_, Option<String>> {
        self.inner.head(id)
    }
    fn events_after(&self, id: String, after: u64) -> StoreFuture<'_, Vec<StoredEvent>> {
        self.inner.events_after(id, after)
    }
    fn log(&self, id: String) -> StoreFuture<'_, Vec<LogEntry>> {
        self.inner.log(id)
    }
    fn list(&self, query: ListQuery) -> StoreFuture<'_, ListPage> {
        self.inner.list(query)
    }
    fn find_message(&self, lookup: MessageLookup) -> StoreFuture<'_, Option<String>> {
        self.inner.find_message(lookup)
    }
    fn message(&self, task_id: String, message_id: String) -> StoreFuture<'_, Option<String>> {
        self.inner.message(task_id, message_id)
    }
    fn recovery_candidates(&self) -> StoreFuture<'_, Vec<String>> {
        self.inner.recovery_candidates()
    }
    fn purge_terminal(&self, before_ms: i64) -> StoreFuture<'_, Vec<String>> {
        self.inner.purge_terminal(before_ms)
    }
    fn put_push_config(&self, config: StoredPushConfig) -> StoreFuture<'_, u64> {
        match self.refused() {
            Some(error) => Box::pin(std::future::ready(Err(error))),
            None => self.inner.put_push_config(config),
        }
    }
    fn push_delivered(&self, task_id: String, id: String, seq: u64) -> StoreFuture<'_, ()> {
        self.inner.push_delivered(task_id, id, seq)
    }
    fn delete_push_config(&self, task_id: String, id: String) -> StoreFuture<'_, bool> {
        self.inner.delete_push_config(task_id, id)
    }
    fn push_configs(&self) -> StoreFuture<'_, Vec<PushConfigRecord>> {
        self.inner.push_configs()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stranger_is_refused_from_the_head_before_any_history_is_read() {
    let store = Arc::new(Flaky {
        inner: MemoryStore::new(),
        failing: AtomicBool::new(false),
        loads: AtomicUsize::new(0),
    });
    let service = durable_service(store.clone(), Duration::from_secs(60));
    let task = start(&service, "alice", "a long conversation").await;
    let loads = store.loads.load(Ordering::SeqCst);
    let refused = get(&service, "mallory", &task.id).await;
    assert!(
        matches!(refused, Err(A2aError::TaskNotFound { .. })),
        "{refused:?}"
    );
    assert_eq!(
        store.loads.load(Ordering::SeqCst),
        loads,
        "the stranger's GetTask read the task's history"
    );
    // The participant's reads it, of course.
    get(&service, "alice", &task.id).await.expect("visible");
    assert_eq!(store.loads.load(Ordering::SeqCst), loads + 1);
}

fn is_unavailable<T: std::fmt::Debug>(result: &Result<T, A2aError>) -> bool {
    matches!(result, Err(A2aError::StoreUnavailable(reason)) if reason.contains("disk is full"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nothing_is_acknowledged_that_the_store_refused() {
    let flaky = Arc::new(Flaky {
        inner: MemoryStore::new(),
        failing: AtomicBool::new(true),
        loads: AtomicUsize::new(0),
    });
    let store: Arc<dyn TaskStore> = flaky.clone();
    let service = durable_service(Arc::clone(&store), Duration::from_secs(60));
    let fail = |on: bool| flaky.failing.store(on, Ordering::SeqCst);

    // A new conversation the store cannot take does not exist.
    let refused = send(&service, "alice", say(None, "hello")).await;
    assert!(is_unavailable(&refused), "{refused:?}");
    let listed = service
        .list_tasks(&who("alice"), ListTasksRequest::default())
        .await
        .expect("lists");
    assert!(listed.tasks.is_empty());
    no_actors_within(
        &service,
        Duration::from_secs(5),
        "the refused conversation's actor stops",
    )
    .await;

    fail(false);
    let task = start(&service, "alice", "hello").await;
    fail(true);
    let message = say(Some(&task.id), "are you there?");
    let refused = send(&service, "alice", message.clone()).await;
    assert!(is_unavailable(&refused), "{refused:?}");
    assert_eq!(
        get(&service, "alice", &task.id)
            .await
            .expect("task")
            .history
            .len(),
        2
    );
    // Streaming and cancelling are refused the same way.
    let streamed = service
        .send_streaming_message(&who("alice"), say(Some(&task.id), "x"))
        .await;
    assert!(matches!(streamed, Err(A2aError::StoreUnavailable(_))));
    assert!(is_unavailable(&cancel(&service, "alice", &task.id).await));

    // Once the store takes writes again, the same message goes through, once.
    fail(false);
    let task = send(&service, "alice", message)
        .await
        .expect("accepted now");
    assert_eq!(task.history.len(), 4);
    assert!(texts(&task)[2].contains("are you there?"));

    // A turn whose end cannot be stored: its senders, the one who sent it
    // and the one who resent it, are told that the message was accepted and
    // only its result is missing; the task stays WORKING in the store, and
    // the next start (or touch) finishes it.
    let work = say(Some(&task.id), "work for 1 seconds");
    let sender = tokio::spawn({
        let service = service.clone();
        let work = work.clone();
        async move { send(&service, "alice", work).await }
    });
    wait_for(&service, &task.id, |t| t.status.state == TaskState::Working).await;
    fail(true);
    let resent = within(10, send(&service, "alice", work)).await;
    let sent = within(10, sender).await.expect("the sender's task joins");
    for refused in [sent, resent] {
        assert!(
            matches!(
                &refused,
                Err(A2aError::TurnNotStored { task_id, reason })
                    if *task_id == task.id && reason.contains("disk is full")
            ),
            "{refused:?}"
        );
    }
    assert_eq!(
        get(&service, "alice", &task.id)
            .await
            .expect("task")
            .status
            .state,
        TaskState::Working
    );
    fail(false);
    service.recover().await.expect("recovers");
    let done = wait_for(&service, &task.id, |t| {
        t.status.state == TaskState::InputRequired
    })
    .await;
    assert!(
        status_text(&done).starts_with("Worked for 1 seconds"),
        "{done:#?}"
    );
    assert_eq!(done.history.len(), 6);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn push_configs_belong_to_their_creator() {
    let service = durable_service(Arc::new(MemoryStore::new()), Duration::from_secs(60));
    let task = start(&service, "alice", "hello").await;
    send(&service, "alice", grant(&task.id, "bob", "watcher"))
        .await
        .expect("granted");
    let config = TaskPushNotificationConfig {
        task_id: task.id.clone(),
        url: "http://127.0.0.1:9/hook".into(),
        token: Some("t".into()),
        ..Default::default()
    };
    let created = service
        .create_push_config(&who("alice"), config.clone())
        .await
        .expect("created");
    let id = created.id.clone().expect("an id");
    let list = |caller: &'static str| {
        let service = service.clone();
        let task_id = task.id.clone();
        async move {
            let request = crate::a2a::types::ListTaskPushNotificationConfigsRequest {
                task_id,
                ..Default::default()
            };
            service.list_push_configs(&who(caller), request).await
        }
    };
    assert_eq!(
        list("alice").await.expect("listed").configs,
        std::slice::from_ref(&created)
    );
    // Bob sees the task, not alice's webhook; root is an admin.
    assert!(list("bob").await.expect("listed").configs.is_empty());
    assert_eq!(list("root").await.expect("listed").configs.len(), 1);
    assert!(matches!(
        list("eve").await,
        Err(A2aError::TaskNotFound { .. })
    ));
    let get_request = crate::a2a::types::GetTaskPushNotificationConfigRequest {
        task_id: task.id.clone(),
        id: id.clone(),
        ..Default::default()
    };
    assert!(
        service
            .get_push_config(&who("bob"), get_request.clone())
            .await
            .is_err()
    );
    let delete = crate::a2a::types::DeleteTaskPushNotificationConfigRequest {
        task_id: task.id.clone(),
        id: id.clone(),
        ..Default::default()
    };
    service
        .delete_push_config(&who("bob"), delete.clone())
        .await
        .expect("no-op");
    assert_eq!(list("alice").await.expect("listed").configs.len(), 1);
    service
        .delete_push_config(&who("alice"), delete.clone())
        .await
        .expect("deleted");
    service
        .delete_push_config(&who("alice"), delete)
        .await
        .expect("idempotent");
    assert!(list("alice").await.expect("listed").configs.is_empty());
    assert!(matches!(
        service.get_push_config(&who("alice"), get_request).await,
        Err(A2aError::TaskNotFound { .. })
    ));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retention_deletes_finished_tasks_only() {
    let service = durable_service(Arc::new(MemoryStore::new()), Duration::from_secs(60));
    let done = start(&service, "alice", "hello").await;
    send(&service, "alice", control(&done.id, "complete"))
        .await
        .expect("completes");
    let open = start(&service, "alice", "still talking").await;
    tokio::time::sleep(Duration::from_millis(20)).await;
    // Kept for a day: nothing is old enough.
    let day = Duration::from_secs(86_400);
    assert_eq!(service.purge_terminal(day).await.expect("sweeps"), 0);
    assert_eq!(
        service
            .purge_terminal(Duration::ZERO)
            .await
            .expect("sweeps"),
        1
    );
    assert!(matches!(
        get(&service, "alice", &done.id).await,
        Err(A2aError::TaskNotFound { .. })
    ));
    assert_parked(
        &get(&service, "alice", &open.id).await.expect("kept"),
        "awaiting-next-message",
    );
    let listed = service
        .list_tasks(&who("alice"), ListTasksRequest::default())
        .await
        .expect("lists");
    assert_eq!(listed.total_size, 1);
}
