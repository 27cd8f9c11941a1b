//! What a turn costs does not grow with the conversation (issue 14, item
//! 2): the bytes it commits, the bytes its hooks are handed, and the
//! history it reads (beyond its model's window) are the same at turn 20 and
//! at turn 200. Sizes, not times: these hold on a loaded machine.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use super::*;
use crate::model::{ModelEntry, OfflineModel};
use crate::push::PushSettings;
use crate::store::{
    ListPage, ListQuery, LogEntry, MemoryStore, MessageLookup, PushConfigRecord, StoreFuture,
    StoredEvent, StoredPushConfig, StoredTask, TaskStore, TaskWrite,
};
use crate::task::Durability;

/// A memory store that counts the bytes committed to it and the bytes of
/// history read back from it.
#[derive(Default)]
struct Metered {
    inner: MemoryStore,
    written: AtomicUsize,
    history_read: AtomicUsize,
    /// The messages each commit stored, in commit order.
    commits: Mutex<Vec<usize>>,
    /// Tasks read back whole (with history).
    loads: AtomicUsize,
    /// Hand out each history message pretty-printed, as no serializer of
    /// the harness writes it: an answer that shows it so copied the text.
    pretty_history: AtomicBool,
}

impl Metered {
    fn take(&self) -> (usize, usize) {
        (
            self.written.swap(0, Ordering::SeqCst),
            self.history_read.swap(0, Ordering::SeqCst),
        )
    }

    /// The messages of each commit since the last call.
    fn take_commits(&self) -> Vec<usize> {
        std::mem::take(&mut *self.commits.lock().expect("not poisoned"))
    }
}

fn write_bytes(write: &TaskWrite) -> usize {
    let entries: usize = write
        .entries
        .iter()
        .map(|entry| {
            entry.document.len() + entry.event.as_ref().map_or(0, |event| event.document.len())
        })
        .sum();
    let messages: usize = write.messages.iter().map(|m| m.document.len()).sum();
    let artifacts: usize = write.artifacts.iter().map(|a| a.document.len()).sum();
    write.head.document.len() + entries + messages + artifacts
}

impl TaskStore for Metered {
    fn commit(&self, writes: Vec<TaskWrite>) -> StoreFuture<'_, ()> {
        let bytes: usize = writes.iter().map(write_bytes).sum();
        self.written.fetch_add(bytes, Ordering::SeqCst);
        let messages = writes.iter().map(|write| write.messages.len()).sum();
        self.commits.lock().expect("not poisoned").push(messages);
        self.inner.commit(writes)
    }
    fn load(&self, id: String, history: Option<usize>) -> StoreFuture<'_, Option<StoredTask>> {
        self.loads.fetch_add(1, Ordering::SeqCst);
        Box::pin(async move {
            let mut loaded = self.inner.load(id, history).await?;
            if self.pretty_history.load(Ordering::SeqCst) {
                for document in loaded.iter_mut().flat_map(|task| &mut task.history) {
                    let value: Value = serde_json::from_str(document).expect("stored JSON");
                    *document = serde_json::to_string_pretty(&value).expect("serializes");
                }
            }
            let bytes: usize = loaded
                .iter()
                .flat_map(|task| &task.history)
                .map(String::len)
                .sum();
            self.history_read.fetch_add(bytes, Ordering::SeqCst);
            Ok(loaded)
        })
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
        self.inner.put_push_config(config)
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

/// The offline model with a window of `window` tokens, under every name
/// the test settings select.
fn windowed_models(window: u64) -> Models {
    every_model_is(Arc::new(OfflineModel::new()), window)
}

/// `model` with a window of `window` tokens, under every name the test
/// settings select.
fn every_model_is(model: Arc<dyn crate::model::Model>, window: u64) -> Models {
    let entries: BTreeMap<String, ModelEntry> = settings()
        .selectable_models
        .iter()
        .map(|name| {
            let entry = ModelEntry {
                model: Arc::clone(&model),
                context_window: window,
                max_output_tokens: None,
            };
            (name.clone(), entry)
        })
        .collect();
    Models::new(entries, settings().default_model).expect("the default is selectable")
}

/// Every hook context handed to the hooks at the points a plain turn runs.
fn listening(sizes: &Arc<Mutex<Vec<usize>>>) -> RegistryBuilder {
    let mut builder = CommandRegistry::builder();
    for point in [
        HookPoint::new(Operation::RequestReceived, Phase::Pre),
        HookPoint::new(Operation::TaskStateChanged, Phase::Post),
    ] {
        let sizes = Arc::clone(sizes);
        builder = with_hook(builder, point, 100, move |context| {
            let size = serde_json::to_vec(context).map_or(0, |bytes| bytes.len());
            sizes.lock().expect("not poisoned").push(size);
            Decision::Pass
        });
    }
    builder
}

/// One plain follow-up, and what it cost: bytes committed, bytes of
/// history read, the largest hook context.
async fn turn(
    service: &TaskService,
    store: &Metered,
    hooks: &Mutex<Vec<usize>>,
    id: &str,
    n: usize,
) -> (usize, usize, usize) {
    store.take();
    hooks.lock().expect("not poisoned").clear();
    // The same length of text every turn: only the history differs.
    let text = format!("message {n:06}");
    let mut message = say(Some(id), &text);
    message.configuration = Some(SendMessageConfiguration {
        history_length: Some(2),
        ..SendMessageConfiguration::default()
    });
    let task = send(service, "alice", message).await.expect("sent");
    assert_parked(&task, "awaiting-next-message");
    assert_eq!(
        task.history.len(),
        2,
        "the answer carries what it asked for"
    );
    let (written, read) = store.take();
    let hooked = hooks
        .lock()
        .expect("not poisoned")
        .iter()
        .copied()
        .max()
        .unwrap_or(0);
    (written, read, hooked)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_turn_costs_the_same_at_any_length_of_the_conversation() {
    let store = Arc::new(Metered::default());
    let sizes = Arc::new(Mutex::new(Vec::new()));
    let loaded = PluginLoader::new(runtime()).load(None, listening(&sizes));
    assert!(!loaded.report.has_problems(), "{}", loaded.report);
    // A window of 2,048 tokens: full after about 70 turns (some 140
    // messages, more than a first read's 64), so later turns read only what
    // fits it.
    let service = TaskService::with_durability(
        settings(),
        Registries::new(loaded.registry),
        windowed_models(2_048),
        Durability {
            store: Arc::clone(&store) as Arc<dyn TaskStore>,
            idle_timeout: Duration::from_secs(60),
            accept_commit_delay: Durability::DEFAULT_ACCEPT_COMMIT_DELAY,
            retain_terminal: None,
            push: PushSettings::default(),
        },
    );
    let task = start(&service, "alice", "hello").await;
    let mut at = BTreeMap::new();
    let mut loads = BTreeMap::new();
    for n in 1..=220 {
        let loads_before = store.loads.load(Ordering::SeqCst);
        let cost = turn(&service, &store, &sizes, &task.id, n).await;
        loads.insert(n, store.loads.load(Ordering::SeqCst) - loads_before);
        if [20, 150, 220].contains(&n) {
            at.insert(n, cost);
        }
    }
    // The window reaches further back than a first read's 64 messages,
    // and each turn still reads the store once: as far back as the last
    // turn's window went, and a margin.
    let reads_more_than_once: Vec<_> = loads.iter().filter(|&(_, &n)| n != 1).collect();
    assert!(
        reads_more_than_once.is_empty(),
        "turns that read the store more or less than once: {reads_more_than_once:?}"
    );
    let (early, late) = (at[&20], at[&220]);
    // Equal up to the digits of counters and timestamps.
    let close = |a: usize, b: usize| a.abs_diff(b) <= 32;
    assert!(
        early.0 > 0 && early.2 > 0,
        "the meter sees the turn: {early:?}"
    );
    assert!(
        close(early.0, late.0),
        "bytes committed by turn 20: {}, by turn 220: {}",
        early.0,
        late.0
    );
    assert!(
        close(early.2, late.2),
        "largest hook context at turn 20: {} bytes, at turn 220: {}",
        early.2,
        late.2
    );
    // Once the window is full, a turn reads what fits it, never the
    // history (300 messages by turn 150, 440 by turn 220).
    let middle = at[&150];
    assert!(middle.1 > 0, "the turn read its transcript: {middle:?}");
    assert!(
        middle.1.abs_diff(late.1) * 20 <= middle.1,
        "history read at turn 150: {} bytes, at turn 220: {}",
        middle.1,
        late.1
    );

    // GetTask with historyLength reads what it returns and nothing more.
    store.take();
    let request = GetTaskRequest {
        id: task.id.clone(),
        history_length: Some(1),
        ..Default::default()
    };
    let got = service
        .get_task(&who("alice"), request)
        .await
        .expect("task");
    assert_eq!(got.history.len(), 1);
    let returned = serde_json::to_string(&messages(&got)[0])
        .expect("json")
        .len();
    let (_, read) = store.take();
    assert!(
        read <= returned + 64,
        "GetTask read {read} bytes of history to return {returned}"
    );
}

/// An answer with the whole history (A2A's default without
/// `historyLength`) copies each stored message as the store keeps it: it
/// neither parses it nor serializes it again, so a long history costs a
/// copy.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_copies_the_stored_history_unparsed() {
    let store = Arc::new(Metered::default());
    let service = metered_service(&store, offline_models(&settings()));
    let task = start(&service, "alice", "hello").await;
    for n in 0..3 {
        send(
            &service,
            "alice",
            say(Some(&task.id), &format!("again {n}")),
        )
        .await
        .expect("sent");
    }
    store.pretty_history.store(true, Ordering::SeqCst);
    let answered = send(&service, "alice", say(Some(&task.id), "last"))
        .await
        .expect("sent");
    let request = GetTaskRequest {
        id: task.id.clone(),
        ..Default::default()
    };
    let got = service
        .get_task(&who("alice"), request)
        .await
        .expect("task");
    for task in [answered, got] {
        let json = serde_json::to_string(&task).expect("serializes");
        assert_eq!(
            json.matches("\n  \"messageId\": ").count(),
            10,
            "every message as the store formatted it: {json}"
        );
        let texts = history_texts(&task);
        assert_eq!((texts[0].as_str(), texts[8].as_str()), ("hello", "last"));
    }
}

fn metered_service(store: &Arc<Metered>, models: Models) -> TaskService {
    let loaded = PluginLoader::new(runtime()).load(None, CommandRegistry::builder());
    TaskService::with_durability(
        settings(),
        Registries::new(loaded.registry),
        models,
        Durability {
            store: Arc::clone(store) as Arc<dyn TaskStore>,
            ..Durability::in_memory()
        },
    )
}

/// A message whose sender waits for its turn's end is stored with the
/// turn's reply when the turn is quick: one commit per follow-up, not two
/// (issue 14, item 4). Once anyone can tell (a subscriber, a sender answered
/// at acceptance), it is stored before its turn starts.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_quick_turn_stores_its_message_with_its_reply_unless_someone_watches() {
    let store = Arc::new(Metered::default());
    let service = metered_service(&store, offline_models(&settings()));
    let task = start(&service, "alice", "hello").await;
    assert_eq!(
        store.take_commits(),
        [2],
        "created with its message and reply"
    );
    assert_eq!(
        store.loads.swap(0, Ordering::SeqCst),
        0,
        "a first turn has nothing to read back"
    );
    let parked = send(&service, "alice", say(Some(&task.id), "again"))
        .await
        .expect("a follow-up");
    assert_parked(&parked, "awaiting-next-message");
    assert_eq!(store.take_commits(), [2], "a follow-up is one commit");

    // Answered at acceptance: the message is stored before the answer.
    let accepted = send(&service, "alice", immediately(say(Some(&task.id), "now")))
        .await
        .expect("accepted");
    assert_eq!(accepted.status.state, TaskState::Working);
    let parked = poll_for(&service, &task.id, |t| {
        t.status.state == TaskState::InputRequired && t.history.len() == 6
    })
    .await;
    assert_eq!(store.take_commits(), [1, 1], "acceptance, then the reply");

    // A subscriber sees the message accepted before the turn's reply.
    let mut events = subscribe(&service, "alice", &task.id)
        .await
        .expect("subscribed");
    within(10, events.next()).await.expect("the task first");
    send(&service, "alice", say(Some(&task.id), "watched"))
        .await
        .expect("a watched follow-up");
    assert_eq!(store.take_commits(), [1, 1], "a watched turn commits twice");

    let texts = history_texts(&parked);
    assert_eq!(texts.len(), 6, "each message stored once: {texts:?}");
    assert_eq!((texts[0].as_str(), texts[2].as_str()), ("hello", "again"));
}

/// A model whose answer waits for the test to let it go.
struct Held {
    gate: Arc<tokio::sync::Semaphore>,
}

impl crate::model::Model for Held {
    fn stream(&self, _request: crate::domain::ModelRequest) -> crate::model::ModelStream {
        use crate::domain::{ModelEvent, StopReason};
        let gate = Arc::clone(&self.gate);
        let answer = futures_util::stream::once(async move {
            if let Ok(permit) = gate.acquire().await {
                permit.forget();
            }
            Ok(ModelEvent::TextDelta("let go".into()))
        });
        let stop = futures_util::stream::once(async { Ok(ModelEvent::Stop(StopReason::EndTurn)) });
        Box::pin(futures_util::StreamExt::chain(answer, stop))
    }
}

fn held_models(gate: &Arc<tokio::sync::Semaphore>) -> Models {
    let held = Held {
        gate: Arc::clone(gate),
    };
    every_model_is(Arc::new(held), 100_000)
}

/// A turn that outlasts `accept_commit_delay` does not keep its message
/// unstored: the store has it while the turn still runs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_turn_stores_its_message_before_it_ends() {
    let store = Arc::new(Metered::default());
    let gate = Arc::new(tokio::sync::Semaphore::new(1));
    let service = metered_service(&store, held_models(&gate));
    let task = start(&service, "alice", "hello").await;
    store.take_commits();

    let message = say(Some(&task.id), "take your time");
    let message_id = message.message.message_id.clone();
    let follow_up = tokio::spawn({
        let service = service.clone();
        async move { send(&service, "alice", message).await }
    });
    within(20, async {
        while store
            .message(task.id.clone(), message_id.clone())
            .await
            .expect("readable")
            .is_none()
        {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await;
    assert!(!follow_up.is_finished(), "the turn is still held");
    assert_eq!(store.take_commits(), [1], "the message alone");

    gate.add_permits(1);
    let parked = within(20, follow_up)
        .await
        .expect("joined")
        .expect("the turn ends");
    assert_parked(&parked, "awaiting-next-message");
    assert_eq!(store.take_commits(), [1], "then the reply");
    let whole = get(&service, "alice", &task.id).await.expect("visible");
    assert_eq!(whole.history.len(), 4, "{:?}", whole.history);
}
