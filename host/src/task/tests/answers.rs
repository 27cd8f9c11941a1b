//! What an `llm.invoked` executor's answer may ask beyond its text
//! (`domain::answer`): artifacts whole or in chunks, `reject`, and a
//! message-only reply; and the turn's `message_id` it is told.

use std::sync::{Arc, Mutex};

use serde_json::{Value, json};

use super::*;
use crate::a2a::types::PartContent;
use crate::store::{MemoryStore, TaskStore};
use crate::task::journal::replay;

/// A service whose `llm.invoked.in` answers every request with `response`
/// (merged into a plain end-of-turn answer), recording the `message_id`s it
/// was told.
fn answering(response: Value) -> (TaskService, Arc<Mutex<Vec<Value>>>) {
    answering_on(response, None)
}

/// [`answering`], on `store` when given.
fn answering_on(
    response: Value,
    store: Option<Arc<dyn TaskStore>>,
) -> (TaskService, Arc<Mutex<Vec<Value>>>) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let told = Arc::clone(&seen);
    let hooks = native_hook(
        HookPoint::new(Operation::LlmInvoked, Phase::In),
        100,
        move |context| {
            told.lock()
                .expect("lock")
                .push(context["message_id"].clone());
            let mut answer = json!({"text": "answered", "stop": "end_turn"});
            for (key, value) in response.as_object().into_iter().flatten() {
                answer[key] = value.clone();
            }
            let mut next = context.clone();
            next["response"] = answer;
            Decision::Replace(next)
        },
    );
    let service = match store {
        None => service_with(hooks),
        Some(store) => service_on(hooks, store),
    };
    (service, seen)
}

/// A first message asking for `lifecycle`.
fn first(text: &str, lifecycle: &str) -> SendMessageRequest {
    let mut message = user_message(None, vec![Part::text(text)]);
    message
        .metadata
        .insert(super::super::LIFECYCLE_KEY.into(), json!(lifecycle));
    request(message)
}

fn chunked() -> Value {
    json!({"artifacts": [
        {"artifact": {"artifactId": "out", "parts": [
            {"raw": "aGk=", "filename": "output.txt", "mediaType": "text/plain"}]}},
        {"artifact": {"artifactId": "out", "parts": [{"data": {"count": 42}}]},
         "append": true, "last_chunk": true},
    ]})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_one_shot_task_keeps_an_answers_artifacts_instead_of_its_reply_artifact() {
    let (service, seen) = answering(chunked());
    let request = first("make a file", "task");
    let message_id = request.message.message_id.clone();
    let stream = service
        .send_streaming_message(&who("alice"), request)
        .await
        .expect("accepted");
    let events = collect(stream).await;
    assert_eq!(*seen.lock().expect("lock"), [json!(message_id)]);

    let updates: Vec<_> = events
        .iter()
        .filter_map(|event| match event {
            StreamResponse::ArtifactUpdate(update) => Some(update),
            _ => None,
        })
        .collect();
    assert_eq!(updates.len(), 2, "{events:#?}");
    assert!(!updates[0].append && !updates[0].last_chunk);
    assert!(updates[1].append && updates[1].last_chunk);
    assert_eq!(
        updates[1].artifact.parts.len(),
        1,
        "a chunk carries its own parts"
    );

    let StreamResponse::Task(started) = &events[0] else {
        panic!("the Task first: {events:#?}");
    };
    let task = get(&service, "alice", &started.id).await.expect("visible");
    assert_eq!(task.status.state, TaskState::Completed, "{task:#?}");
    assert_eq!(status_text(&task), "answered");
    assert_eq!(
        task.artifacts.len(),
        1,
        "no reply artifact beside it: {task:#?}"
    );
    let kept = &task.artifacts[0];
    assert_eq!(kept.artifact_id, "out");
    assert_eq!(kept.parts.len(), 2, "the chunks' parts together");
    assert_eq!(kept.parts[0].content, PartContent::Raw(b"hi".to_vec()));
    assert_eq!(kept.parts[0].filename.as_deref(), Some("output.txt"));
    assert_eq!(
        kept.parts[1].content,
        PartContent::Data(json!({"count": 42}))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_conversation_keeps_an_answers_artifacts_and_parks() {
    let (service, _) = answering(chunked());
    let task = send(&service, "alice", first("make a file", "conversation"))
        .await
        .expect("answered");
    assert_parked(&task, "awaiting-next-message");
    assert_eq!(task.artifacts.len(), 1, "{task:#?}");
    assert_eq!(task.artifacts[0].parts.len(), 2);

    // The same id again is refused: artifact ids are unique in a task.
    let again = send(&service, "alice", say(Some(&task.id), "once more"))
        .await
        .expect("answered");
    let text = status_text(&again);
    assert!(text.contains("already has an artifact `out`"), "{text}");
    assert_eq!(again.artifacts.len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_artifacts_fail_the_turn_with_the_reason() {
    let orphan = json!({"artifacts": [
        {"artifact": {"artifactId": "a", "parts": [{"text": "x"}]}, "append": true}]});
    let (service, _) = answering(orphan);
    let task = send(&service, "alice", first("go", "task"))
        .await
        .expect("answered");
    assert_eq!(task.status.state, TaskState::Failed, "{task:#?}");
    assert!(status_text(&task).contains("no earlier piece"), "{task:#?}");
    assert!(task.artifacts.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reject_ends_the_task_rejected_in_either_lifecycle() {
    let (service, _) = answering(json!({"text": "rejected", "disposition": "reject"}));
    for lifecycle in ["task", "conversation"] {
        let task = send(&service, "alice", first("do it", lifecycle))
            .await
            .expect("answered");
        assert_eq!(
            task.status.state,
            TaskState::Rejected,
            "{lifecycle}: {task:#?}"
        );
        assert_eq!(status_text(&task), "rejected");
        assert!(task.artifacts.is_empty(), "{task:#?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_message_disposition_answers_with_the_message_alone() {
    let (service, _) = answering(json!({"text": "just this", "disposition": "message"}));
    for (lifecycle, state) in [
        ("task", TaskState::Completed),
        ("conversation", TaskState::InputRequired),
    ] {
        let response = service
            .send_message(&who("alice"), first("hello", lifecycle))
            .await
            .expect("answered");
        let SendMessageResponse::Message(message) = response else {
            panic!("{lifecycle}: a message, not {response:?}");
        };
        assert_eq!(message.role, MessageRole::Agent);
        assert_eq!(message_text(&message), "just this");
        // The task behind it went on by its lifecycle.
        let id = message.task_id.as_deref().expect("the task it came from");
        let task = get(&service, "alice", id).await.expect("visible");
        assert_eq!(task.status.state, state, "{lifecycle}: {task:#?}");
    }
    // returnImmediately still answers with the task.
    let response = service
        .send_message(&who("alice"), immediately(first("hello", "task")))
        .await
        .expect("answered");
    assert!(
        matches!(response, SendMessageResponse::Task(_)),
        "{response:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_streamed_one_shot_task_that_answers_as_usual_streams_everything_in_order() {
    let (service, _) = answering(json!({"text": "as usual"}));
    let stream = service
        .send_streaming_message(&who("alice"), first("hello", "task"))
        .await
        .expect("accepted");
    let events = collect(stream).await;
    let shape: Vec<String> = events
        .iter()
        .map(|event| match event {
            StreamResponse::Task(task) => format!("task {:?}", task.status.state),
            StreamResponse::StatusUpdate(update) => format!("status {:?}", update.status.state),
            StreamResponse::ArtifactUpdate(_) => "artifact".to_owned(),
            StreamResponse::Message(_) => "message".to_owned(),
        })
        .collect();
    assert_eq!(
        shape.first().map(String::as_str),
        Some("task Submitted"),
        "{shape:?}"
    );
    assert_eq!(
        shape.get(1).map(String::as_str),
        Some("status Working"),
        "{shape:?}"
    );
    assert!(shape.contains(&"artifact".to_owned()), "{shape:?}");
    assert_eq!(
        shape.last().map(String::as_str),
        Some("status Completed"),
        "{shape:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chunked_artifacts_are_stored_whole_and_the_log_rebuilds_them() {
    let store: Arc<dyn TaskStore> = Arc::new(MemoryStore::new());
    let (service, _) = answering_on(chunked(), Some(Arc::clone(&store)));
    let task = send(&service, "alice", first("make a file", "task"))
        .await
        .expect("answered");
    drop(service);
    // A restart reads the artifact back whole, and so does the log alone.
    let (restarted, _) = answering_on(json!({}), Some(Arc::clone(&store)));
    let stored = get(&restarted, "alice", &task.id).await.expect("visible");
    assert_eq!(stored.artifacts, task.artifacts);
    assert_eq!(stored.artifacts[0].parts.len(), 2, "{stored:#?}");
    let log = store.log(task.id.clone()).await.expect("log");
    let rebuilt = replay(&log).expect("replays");
    assert_eq!(rebuilt.to_task(None), stored);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reused_first_message_id_starts_a_new_task_unless_deduplicated() {
    let loaded = PluginLoader::new(runtime()).load(None, CommandRegistry::builder());
    let reusing = TaskService::new(
        TaskSettings {
            dedupe_first_messages: false,
            ..settings()
        },
        Registries::new(loaded.registry),
        offline_models(&settings()),
    );
    let deduplicating = service();
    let message = user_message(None, vec![Part::text("hello")]);
    for (service, same) in [(&deduplicating, true), (&reusing, false)] {
        let first = send(service, "alice", request(message.clone()))
            .await
            .expect("started");
        let again = send(service, "alice", request(message.clone()))
            .await
            .expect("answered");
        assert_eq!(first.id == again.id, same, "{first:#?} {again:#?}");
    }
}
