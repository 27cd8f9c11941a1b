//! The lifecycle driven through [`TaskService`] with the real built-in
//! plugin and the offline model.

use std::future::Future;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio::sync::mpsc;
use tokio_stream::StreamExt as _;

use super::{Caller, EventStream, TaskService, TaskSettings};
use crate::a2a::error::A2aError;
use crate::a2a::types::{
    CancelTaskRequest, GetTaskRequest, ListTasksRequest, Message, Part, Role as MessageRole,
    SendMessageConfiguration, SendMessageRequest, SendMessageResponse, StreamResponse,
    SubscribeToTaskRequest, Task, TaskState,
};
use crate::commands::{CommandRegistry, Registries, RegistryBuilder};
use crate::hooks::{
    Abort, AbortReason, Decision, ExecutorKind, HookEntry, HookPoint, NativeExecutor, Operation,
    Phase,
};
use crate::model::Models;
use crate::plugins::PluginLoader;
use crate::plugins::wasm::{RuntimeConfig, WasmRuntime};
use crate::task::state::message_text;

mod agent;
mod answers;
mod cost;
mod durable;
mod suite;
#[cfg(feature = "temporal")]
mod temporal;

// --- Fixtures --------------------------------------------------------------------------------

/// One engine for the whole test binary, so the built-in component compiles
/// once. Its cache is the one the integration tests share under the target
/// dir (unit tests get no `CARGO_TARGET_TMPDIR`; the build script already
/// requires the target dir to be the workspace's `target`).
fn runtime() -> WasmRuntime {
    static RUNTIME: OnceLock<WasmRuntime> = OnceLock::new();
    RUNTIME
        .get_or_init(|| {
            let cache_dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../target/tmp/component-cache");
            WasmRuntime::new(RuntimeConfig {
                cache_dir: Some(cache_dir),
            })
            .expect("the Wasm runtime starts")
        })
        .clone()
}

fn settings() -> TaskSettings {
    TaskSettings {
        default_model: "offline-echo".into(),
        selectable_models: vec!["offline-echo".into(), "fast-1".into()],
        default_effort: "medium".into(),
        admins: vec!["root".into()],
        ..TaskSettings::default()
    }
}

/// The offline model under every selectable name of `settings`.
fn offline_models(settings: &TaskSettings) -> Models {
    Models::offline_named(&settings.selectable_models, &settings.default_model)
        .expect("the default is selectable")
}

fn service() -> TaskService {
    service_with(CommandRegistry::builder())
}

/// A service on the built-in plugin plus whatever `builder` holds.
fn service_with(builder: RegistryBuilder) -> TaskService {
    service_on(builder, Arc::new(crate::store::MemoryStore::new()))
}

/// [`service_with`], on `store`.
fn service_on(builder: RegistryBuilder, store: Arc<dyn crate::store::TaskStore>) -> TaskService {
    let loaded = PluginLoader::new(runtime()).load(None, builder);
    assert!(!loaded.report.has_problems(), "{}", loaded.report);
    TaskService::with_durability(
        settings(),
        Registries::new(loaded.registry),
        offline_models(&settings()),
        super::Durability {
            store,
            push: webhooks_on_loopback(),
            ..super::Durability::in_memory()
        },
    )
}

/// Push settings that let a test's webhook on loopback be called.
fn webhooks_on_loopback() -> crate::push::PushSettings {
    crate::push::PushSettings {
        allow_private: true,
        ..crate::push::PushSettings::default()
    }
}

/// A webhook on loopback: the body of every notification it was sent, in
/// the order they came.
struct Webhook {
    url: String,
    bodies: mpsc::UnboundedReceiver<Value>,
}

impl Webhook {
    async fn start() -> Webhook {
        let (heard, bodies) = mpsc::unbounded_channel();
        let hook = move |body: axum::body::Bytes| {
            let heard = heard.clone();
            async move {
                let _ = heard.send(serde_json::from_slice(&body).unwrap_or(Value::Null));
                axum::http::StatusCode::OK
            }
        };
        let app = axum::Router::new().route("/hook", axum::routing::post(hook));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("a loopback port");
        let url = format!("http://{}/hook", listener.local_addr().expect("bound"));
        tokio::spawn(async move { axum::serve(listener, app).await });
        Webhook { url, bodies }
    }

    /// The states of the status updates heard, through the first in `last`.
    async fn states_until(&mut self, last: TaskState) -> Vec<TaskState> {
        let mut states = Vec::new();
        while states.last() != Some(&last) {
            let body = within(30, self.bodies.recv())
                .await
                .expect("a notification");
            if let Some(state) = body["statusUpdate"]["status"]["state"].as_str() {
                states.push(state.parse().expect("a known state"));
            }
        }
        states
    }
}

/// A registry builder with one native executor at `point`.
fn native_hook(
    point: HookPoint,
    priority: i32,
    handler: impl Fn(&Value) -> Decision + Send + Sync + 'static,
) -> RegistryBuilder {
    with_hook(CommandRegistry::builder(), point, priority, handler)
}

/// `builder` with a native executor at `point`.
fn with_hook(
    mut builder: RegistryBuilder,
    point: HookPoint,
    priority: i32,
    handler: impl Fn(&Value) -> Decision + Send + Sync + 'static,
) -> RegistryBuilder {
    builder
        .add_hook(HookEntry {
            name: format!("test-{point}"),
            origin: "native".into(),
            point,
            command: None,
            priority,
            kind: ExecutorKind::Native,
            source: "native".into(),
            executor: Arc::new(NativeExecutor::new(move |_, context: &Value| {
                Ok(handler(context))
            })),
        })
        .expect("hook registers");
    builder
}

fn who(id: &str) -> Caller {
    Caller { id: id.into() }
}

fn user_message(task_id: Option<&str>, parts: Vec<Part>) -> Message {
    Message {
        task_id: task_id.map(Into::into),
        ..Message::new(MessageRole::User, uuid::Uuid::new_v4().to_string(), parts)
    }
}

fn request(message: Message) -> SendMessageRequest {
    SendMessageRequest {
        tenant: None,
        message,
        configuration: None,
        metadata: Default::default(),
    }
}

fn say(task_id: Option<&str>, text: &str) -> SendMessageRequest {
    request(user_message(task_id, vec![Part::text(text)]))
}

fn control(task_id: &str, action: &str) -> SendMessageRequest {
    let envelope = json!({ "kind": "control", "action": action });
    request(user_message(Some(task_id), vec![Part::data(envelope)]))
}

fn grant(task_id: &str, id: &str, role: &str) -> SendMessageRequest {
    let envelope = json!({
        "kind": "task",
        "payload": { "participants": [{ "id": id, "role": role }] }
    });
    request(user_message(Some(task_id), vec![Part::data(envelope)]))
}

fn configured(
    mut request: SendMessageRequest,
    configuration: SendMessageConfiguration,
) -> SendMessageRequest {
    request.configuration = Some(configuration);
    request
}

fn immediately(request: SendMessageRequest) -> SendMessageRequest {
    configured(
        request,
        SendMessageConfiguration {
            return_immediately: true,
            ..Default::default()
        },
    )
}

async fn send(
    service: &TaskService,
    caller: &str,
    request: SendMessageRequest,
) -> Result<Task, A2aError> {
    match service.send_message(&who(caller), request).await? {
        SendMessageResponse::Task(task) => Ok(task),
        SendMessageResponse::Message(message) => panic!("expected a task, got {message:?}"),
    }
}

async fn start(service: &TaskService, caller: &str, text: &str) -> Task {
    send(service, caller, say(None, text))
        .await
        .expect("the conversation starts")
}

async fn get(service: &TaskService, caller: &str, id: &str) -> Result<Task, A2aError> {
    let request = GetTaskRequest {
        id: id.into(),
        ..Default::default()
    };
    service.get_task(&who(caller), request).await
}

async fn subscribe(service: &TaskService, caller: &str, id: &str) -> Result<EventStream, A2aError> {
    let request = SubscribeToTaskRequest {
        id: id.into(),
        ..Default::default()
    };
    service.subscribe(&who(caller), request).await
}

async fn cancel(service: &TaskService, caller: &str, id: &str) -> Result<Task, A2aError> {
    let request = CancelTaskRequest {
        id: id.into(),
        ..Default::default()
    };
    service.cancel_task(&who(caller), request).await
}

/// Fails the test instead of hanging it.
async fn within<T>(seconds: u64, future: impl Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(seconds), future)
        .await
        .expect("timed out")
}

/// Wait until task `id` satisfies `done`, reading it every few
/// milliseconds: for what changes without a stream event (a parent's list
/// of sub-tasks).
async fn poll_for(service: &TaskService, id: &str, done: impl Fn(&Task) -> bool) -> Task {
    within(20, async {
        loop {
            let task = get(service, "alice", id).await.expect("visible");
            if done(&task) {
                return task;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await
}

/// Wait until task `id` satisfies `done`, woken by its events (each
/// subscription lasts until a turn ends, so it subscribes again).
async fn wait_for(service: &TaskService, id: &str, done: impl Fn(&Task) -> bool) -> Task {
    within(20, async {
        loop {
            let task = get(service, "alice", id).await.expect("visible");
            if done(&task) {
                return task;
            }
            assert!(
                !task.status.state.is_terminal(),
                "finished without: {task:#?}"
            );
            // A task that finished meanwhile cannot be subscribed to; look again.
            if let Ok(mut events) = subscribe(service, "alice", id).await {
                while events.next().await.is_some() {
                    if done(&get(service, "alice", id).await.expect("visible")) {
                        break;
                    }
                }
            }
        }
    })
    .await
}

async fn collect(stream: EventStream) -> Vec<StreamResponse> {
    within(20, stream.collect::<Vec<_>>()).await
}

// --- Reading results -------------------------------------------------------------------------

fn sub_state(task: &Task) -> Option<&str> {
    task.metadata.get("sub_state").and_then(Value::as_str)
}

/// The text of the task's status message.
fn status_text(task: &Task) -> String {
    let message = task.status.message.as_ref().expect("a status message");
    message.parts[0].as_text().expect("text").to_owned()
}

/// `task`'s history, parsed (an answer may hold it as the store's text).
fn messages(task: &Task) -> Vec<Message> {
    task.history.to_messages().expect("a readable history")
}

/// The text of each message of `task`'s history.
fn history_texts(task: &Task) -> Vec<String> {
    messages(task).iter().map(message_text).collect()
}

fn subtasks(task: &Task) -> Vec<Value> {
    task.metadata
        .get("subtasks")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default()
}

fn assert_parked(task: &Task, expected: &str) {
    assert_eq!(task.status.state, TaskState::InputRequired, "{task:#?}");
    assert_eq!(sub_state(task), Some(expected));
    let message = task.status.message.as_ref().expect("status message");
    assert_eq!(message.metadata["sub_state"], expected);
    assert_eq!(message.role, MessageRole::Agent);
}

fn is_role_refused(result: Result<impl std::fmt::Debug, A2aError>) -> bool {
    matches!(result, Err(A2aError::RoleRefused { ref role, .. }) if role == "watcher")
}

// --- Conversations ---------------------------------------------------------------------------

// --- Commands --------------------------------------------------------------------------------

// --- Participants and roles ------------------------------------------------------------------

// --- Completion and cancellation -------------------------------------------------------------

// --- Streams ---------------------------------------------------------------------------------

/// The events of `stream` without the live-only text deltas.
fn stored(events: &[StreamResponse]) -> Vec<StreamResponse> {
    events
        .iter()
        .filter(|event| delta_text(event).is_none())
        .cloned()
        .collect()
}

/// The text the live-only deltas of `events` add up to.
fn deltas(events: &[StreamResponse]) -> String {
    events.iter().filter_map(delta_text).collect()
}

fn delta_text(event: &StreamResponse) -> Option<String> {
    match event {
        StreamResponse::StatusUpdate(update)
            if update.metadata.get("stream").and_then(Value::as_str) == Some("text-delta") =>
        {
            update.status.message.as_ref().map(message_text)
        }
        _ => None,
    }
}

// --- Reading ---------------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_tasks_filters_and_pages() {
    let service = service();
    let first = start(&service, "alice", "one").await;
    let mut in_context = say(None, "two");
    in_context.message.context_id = Some(first.context_id.clone());
    let second = send(&service, "alice", in_context).await.expect("started");
    let third = start(&service, "alice", "three").await;
    start(&service, "bob", "not alice's").await;

    let list = |caller: &'static str, request: ListTasksRequest| {
        let service = service.clone();
        async move { service.list_tasks(&who(caller), request).await }
    };
    let all = list("alice", ListTasksRequest::default())
        .await
        .expect("lists");
    assert_eq!(all.total_size, 3);
    let ids: Vec<&str> = all.tasks.iter().map(|t| t.id.as_str()).collect();
    assert_eq!(
        ids,
        [third.id.as_str(), second.id.as_str(), first.id.as_str()],
        "newest first"
    );
    assert_eq!(all.next_page_token, "");

    let page = ListTasksRequest {
        page_size: Some(2),
        ..Default::default()
    };
    let one = list("alice", page.clone()).await.expect("lists");
    assert_eq!(one.tasks.len(), 2);
    assert_ne!(one.next_page_token, "");
    let two = list(
        "alice",
        ListTasksRequest {
            page_token: Some(one.next_page_token),
            ..page
        },
    )
    .await
    .expect("lists");
    assert_eq!(
        two.tasks.iter().map(|t| t.id.as_str()).collect::<Vec<_>>(),
        [first.id.as_str()]
    );
    assert_eq!(two.next_page_token, "");

    let context = ListTasksRequest {
        context_id: Some(first.context_id.clone()),
        ..Default::default()
    };
    assert_eq!(list("alice", context).await.expect("lists").total_size, 2);
    send(&service, "alice", control(&second.id, "complete"))
        .await
        .expect("completed");
    let completed = ListTasksRequest {
        status: Some(TaskState::Completed),
        ..Default::default()
    };
    let done = list("alice", completed).await.expect("lists");
    assert_eq!(
        done.tasks.iter().map(|t| t.id.as_str()).collect::<Vec<_>>(),
        [second.id.as_str()]
    );
    let no_history = ListTasksRequest {
        history_length: Some(0),
        ..Default::default()
    };
    assert!(
        list("alice", no_history)
            .await
            .expect("lists")
            .tasks
            .iter()
            .all(|t| t.history.is_empty())
    );
    assert_eq!(
        list("root", ListTasksRequest::default())
            .await
            .expect("lists")
            .total_size,
        4
    );

    let too_small = ListTasksRequest {
        page_size: Some(0),
        ..Default::default()
    };
    assert!(matches!(
        list("alice", too_small).await,
        Err(A2aError::InvalidParams { .. })
    ));
    let forged = ListTasksRequest {
        page_token: Some("forged".into()),
        ..Default::default()
    };
    assert!(matches!(
        list("alice", forged).await,
        Err(A2aError::InvalidParams { .. })
    ));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn history_length_limits_the_history_returned() {
    let service = service();
    let task = start(&service, "alice", "one").await;
    send(&service, "alice", say(Some(&task.id), "two"))
        .await
        .expect("sent");
    let with_length = |length| {
        configured(
            say(Some(&task.id), "three"),
            SendMessageConfiguration {
                history_length: Some(length),
                ..Default::default()
            },
        )
    };
    let last_one = send(&service, "alice", with_length(1)).await.expect("sent");
    assert_eq!(last_one.history.len(), 1);
    assert_eq!(messages(&last_one)[0].role, MessageRole::Agent);

    let read = |length| GetTaskRequest {
        id: task.id.clone(),
        history_length: length,
        ..Default::default()
    };
    let alice = who("alice");
    assert_eq!(
        service
            .get_task(&alice, read(None))
            .await
            .expect("reads")
            .history
            .len(),
        6
    );
    assert!(
        service
            .get_task(&alice, read(Some(0)))
            .await
            .expect("reads")
            .history
            .is_empty()
    );
    let two = service
        .get_task(&alice, read(Some(2)))
        .await
        .expect("reads");
    assert_eq!(messages(&two)[0].parts[0].as_text(), Some("three"));
}

// --- Hooks -----------------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn request_received_refuses_ordinary_messages_only() {
    let policy = native_hook(
        HookPoint::new(Operation::RequestReceived, Phase::Pre),
        100,
        |context| {
            let text = context["text"].as_str().unwrap_or("");
            if text.contains("forbidden") {
                Decision::Abort(Abort {
                    reason: AbortReason::Policy,
                    message: "that word is not allowed here".into(),
                })
            } else {
                Decision::Pass
            }
        },
    );
    let service = service_with(policy);
    let refused = send(&service, "alice", say(None, "a forbidden start")).await;
    assert!(
        matches!(refused, Err(A2aError::UnsupportedOperation(ref m)) if m == "that word is not allowed here")
    );
    let listed = service
        .list_tasks(&who("alice"), ListTasksRequest::default())
        .await
        .expect("lists");
    assert_eq!(
        listed.total_size, 0,
        "a refused first message creates no task"
    );

    let task = start(&service, "alice", "hello").await;
    let refused = send(&service, "alice", say(Some(&task.id), "forbidden")).await;
    assert!(matches!(refused, Err(A2aError::UnsupportedOperation(_))));
    assert_eq!(get(&service, "alice", &task.id).await.expect("reads"), task);
    // Commands are not ordinary messages: request.received never sees them.
    let command = send(&service, "alice", say(Some(&task.id), "/model forbidden"))
        .await
        .expect("sent");
    assert!(status_text(&command).contains("`forbidden`"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn llm_invoked_hooks_shape_and_refuse_model_turns() {
    let last_text = |context: &Value| {
        let messages = context["request"]["messages"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        messages
            .last()
            .map(|m| m["content"].as_str().unwrap_or("").to_owned())
            .unwrap_or_default()
    };
    let pre = native_hook(
        HookPoint::new(Operation::LlmInvoked, Phase::Pre),
        100,
        move |context| {
            if last_text(context) == "blocked" {
                Decision::Abort(Abort {
                    reason: AbortReason::Policy,
                    message: "no model for that".into(),
                })
            } else {
                Decision::Pass
            }
        },
    );
    let hooks = with_hook(
        pre,
        HookPoint::new(Operation::LlmInvoked, Phase::Post),
        100,
        |context| {
            let mut next = context.clone();
            let text = next["response"]["text"]
                .as_str()
                .unwrap_or("")
                .to_uppercase();
            next["response"]["text"] = json!(text);
            Decision::Replace(next)
        },
    );
    let service = service_with(hooks);
    let task = start(&service, "alice", "hello").await;
    assert!(
        status_text(&task).starts_with("YOU SAID: HELLO"),
        "{}",
        status_text(&task)
    );

    let refused = send(&service, "alice", say(Some(&task.id), "blocked"))
        .await
        .expect("answered");
    assert_parked(&refused, "awaiting-next-message");
    let text = status_text(&refused);
    assert!(
        text.starts_with("This turn failed: llm.invoked.pre refused"),
        "{text}"
    );
    assert!(text.contains("no model for that"), "{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn notification_hooks_hear_of_creation_and_state_changes() {
    let (heard, mut hearing) = mpsc::unbounded_channel::<String>();
    let mut builder = CommandRegistry::builder();
    for operation in [Operation::TaskCreated, Operation::TaskStateChanged] {
        let heard = heard.clone();
        builder
            .add_hook(HookEntry {
                name: format!("listen-{}", operation.as_str()),
                origin: "native".into(),
                point: HookPoint::new(operation, Phase::Post),
                command: None,
                priority: 100,
                kind: ExecutorKind::Native,
                source: "native".into(),
                executor: Arc::new(NativeExecutor::new(move |point, context: &Value| {
                    let change = match (context.get("from"), context.get("to")) {
                        (Some(from), Some(to)) => format!(" {from}->{to}"),
                        _ => String::new(),
                    };
                    let _ = heard.send(format!("{point}{change}"));
                    // A failing notification is logged, never fatal.
                    Err(crate::hooks::ExecutorFault::Failed(
                        "listener failed".into(),
                    ))
                })),
            })
            .expect("hook registers");
    }
    let service = service_with(builder);
    let task = start(&service, "alice", "hi").await;
    assert_parked(&task, "awaiting-next-message");
    let mut seen = Vec::new();
    for _ in 0..3 {
        seen.push(within(5, hearing.recv()).await.expect("heard"));
    }
    assert_eq!(
        seen,
        [
            "task.created.post",
            "task.state_changed.post \"TASK_STATE_SUBMITTED\"->\"TASK_STATE_WORKING\"",
            "task.state_changed.post \"TASK_STATE_WORKING\"->\"TASK_STATE_INPUT_REQUIRED\"",
        ]
    );
}
