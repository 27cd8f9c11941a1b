//! Issue 9, the soak: many conversations at once doing turns (streamed and
//! not), commands, hostile commands (a plugin that loops past its deadline,
//! one that floods the log), completions and cancels, with subscribers watching, while a
//! plugin comes and goes in the plugins folder. Afterwards:
//!
//! * every acknowledged message is in its task's history exactly once, in
//!   the order it was sent, and nothing else is;
//! * every stream received its events in order and ended on a final status;
//! * no task is left WORKING: each ended COMPLETED or CANCELED as its
//!   conversation decided;
//! * the server's resident memory comes back near its baseline once the
//!   conversations have gone idle.
//!
//! Bounded by default (200 conversations); `TINY_HARNESS_SOAK_CONVERSATIONS`
//! runs a longer one.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::sync::Semaphore;

use crate::durability::support::message_with_id;
use crate::server::support::{Client, Server, state, status_text, take_sse_events};
use crate::support::{PluginsFolder, resident_kib};

/// Conversations in the bounded soak.
const CONVERSATIONS: usize = 200;
/// Conversations in flight at once.
const CONCURRENCY: usize = 24;
/// Every how many conversations one is watched by a subscriber.
const WATCH_EVERY: usize = 8;

const CONFIG: &str = r#"
[models]
default = "offline-echo"

[store]
idle_timeout_secs = 1

[rate_limit]
per_participant_burst = 1000000
per_participant_per_second = 1000000.0
per_address_burst = 1000000
per_address_per_second = 1000000.0
"#;

/// What one conversation did: the ids of the messages the server
/// acknowledged, in order, and how it ended.
struct Conversation {
    task_id: String,
    acknowledged: Vec<String>,
    ending: Ending,
    /// Subscriptions opened before a turn, each with the state its turn
    /// ends in (a subscription closes on the turn's final status).
    watched: Vec<(tokio::task::JoinHandle<Vec<Value>>, &'static str)>,
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Ending {
    Completed,
    Canceled,
}

impl Ending {
    fn state(self) -> &'static str {
        match self {
            Ending::Completed => "TASK_STATE_COMPLETED",
            Ending::Canceled => "TASK_STATE_CANCELED",
        }
    }
}

fn conversations() -> usize {
    std::env::var("TINY_HARNESS_SOAK_CONVERSATIONS")
        .ok()
        .and_then(|value| value.parse().ok())
        .unwrap_or(CONVERSATIONS)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn hundreds_of_conversations_under_reloads_and_hostile_plugins_lose_and_leak_nothing() {
    let folder = PluginsFolder::new()
        .with_fixture("looper")
        .with_fixture("flooder");
    let server = Server::start(CONFIG, Some(folder.path()));
    let pid = server.pid();

    // The baseline: after a first wave of conversations as wide as the
    // soak's has run every kind of turn, so compiled components and the
    // instance pool's slots (each keeps up to 4 MiB resident for reuse)
    // are part of it.
    let mut warm_up = tokio::task::JoinSet::new();
    for index in 0..CONCURRENCY {
        let client = server.client("warm-up");
        warm_up.spawn(async move {
            let done = converse(client.clone(), 100_000 + index).await;
            check(&client, done).await;
        });
    }
    while let Some(done) = warm_up.join_next().await {
        done.expect("a warm-up conversation panicked");
    }
    let baseline = settled_resident_kib(pid).await;

    let reloading = Arc::new(AtomicBool::new(true));
    let reloader = tokio::spawn(reload_until_stopped(
        folder.path().to_owned(),
        Arc::clone(&reloading),
    ));
    let gate = Arc::new(Semaphore::new(CONCURRENCY));
    let mut running = tokio::task::JoinSet::new();
    for index in 1..=conversations() {
        let client = server.client(&format!("p{}", index % 16));
        let gate = Arc::clone(&gate);
        running.spawn(async move {
            let _turn = gate.acquire_owned().await.expect("the gate stays open");
            let done = converse(client.clone(), index).await;
            (client, done)
        });
    }
    let mut finished = Vec::new();
    while let Some(done) = running.join_next().await {
        finished.push(done.expect("a conversation panicked"));
    }
    reloading.store(false, Ordering::Relaxed);
    let reloads = reloader.await.expect("the reloader ran");
    assert!(reloads > 0, "the plugin was never reloaded during the soak");

    let total = finished.len();
    for (client, done) in finished {
        check(&client, done).await;
    }
    assert_eq!(total, conversations());

    // Nothing is left working for anyone.
    for participant in 0..16 {
        let client = server.client(&format!("p{participant}"));
        let listed = client.ok("ListTasks", json!({"pageSize": 100})).await;
        for task in listed["tasks"].as_array().into_iter().flatten() {
            assert_ne!(state(task), "TASK_STATE_WORKING", "{task}");
        }
    }

    // Memory comes back: the conversations have ended, their actors left.
    let bound = baseline + baseline / 2 + (32 << 10);
    let settled = wait_for_resident_below(pid, bound).await;
    assert!(
        settled <= bound,
        "resident memory {settled} KiB after the soak, baseline {baseline} KiB"
    );
}

/// One conversation: a streamed first turn, a command, a hostile command, a
/// plain turn, then Complete or Cancel. Every send must be acknowledged.
async fn converse(client: Client, index: usize) -> Conversation {
    let mut acknowledged = Vec::new();
    let first_id = format!("c{index}-m0");
    let events = client
        .stream(
            "SendStreamingMessage",
            json!({"message": message_with_id(None, &first_id, &format!("hello {index}"))}),
        )
        .await;
    let task_id = check_turn_stream(&events, &format!("You said: hello {index}"));
    acknowledged.push(first_id);

    let watch = index.is_multiple_of(WATCH_EVERY);
    let mut watched = Vec::new();

    let hostile = match index % 3 {
        0 => "/spin",
        1 => "/flood 5000",
        _ => "/greet bob",
    };
    for (turn, text) in ["/status", hostile, "and again"].into_iter().enumerate() {
        if watch {
            watched.push((
                subscribe(&client, &task_id).await,
                "TASK_STATE_INPUT_REQUIRED",
            ));
        }
        let id = format!("c{index}-m{}", turn + 1);
        let reply = client
            .ok(
                "SendMessage",
                json!({"message": message_with_id(Some(&task_id), &id, text)}),
            )
            .await;
        let task = &reply["task"];
        assert_eq!(state(task), "TASK_STATE_INPUT_REQUIRED", "{text}: {task}");
        assert!(
            !status_text(task).is_empty(),
            "{text} had no answer: {task}"
        );
        acknowledged.push(id);
    }

    let ending = if index.is_multiple_of(2) {
        Ending::Completed
    } else {
        Ending::Canceled
    };
    if watch {
        watched.push((subscribe(&client, &task_id).await, ending.state()));
    }
    match ending {
        Ending::Completed => {
            let id = format!("c{index}-complete");
            let control = json!({
                "messageId": id, "role": "ROLE_USER", "taskId": task_id,
                "parts": [{"data": {"kind": "control", "action": "complete"}}],
            });
            let reply = client.ok("SendMessage", json!({"message": control})).await;
            assert_eq!(state(&reply["task"]), "TASK_STATE_COMPLETED", "{reply}");
            acknowledged.push(id);
        }
        Ending::Canceled => {
            let canceled = client.ok("CancelTask", json!({"id": task_id})).await;
            assert_eq!(state(&canceled), "TASK_STATE_CANCELED", "{canceled}");
        }
    }
    Conversation {
        task_id,
        acknowledged,
        ending,
        watched,
    }
}

/// A streamed turn's events: the task first, then updates whose states
/// never go back to SUBMITTED, ending on the parked status with the reply.
/// Answers the task's id.
fn check_turn_stream(events: &[Value], reply: &str) -> String {
    let first = events.first().expect("a stream with events");
    let task_id = first["result"]["task"]["id"]
        .as_str()
        .unwrap_or_else(|| panic!("the stream starts with the task: {first}"))
        .to_owned();
    for event in &events[1..] {
        let update = &event["result"]["statusUpdate"];
        assert_eq!(update["taskId"], task_id.as_str(), "{event}");
        assert_ne!(update["status"]["state"], "TASK_STATE_SUBMITTED", "{event}");
    }
    let last = &events.last().expect("events")["result"]["statusUpdate"];
    assert_eq!(
        last["status"]["state"], "TASK_STATE_INPUT_REQUIRED",
        "{last}"
    );
    let text = last["status"]["message"]["parts"][0]["text"]
        .as_str()
        .unwrap_or("");
    assert!(text.starts_with(reply), "{last}");
    task_id
}

/// What the server kept of one conversation is what it acknowledged.
async fn check(client: &Client, done: Conversation) {
    let task = client.get_task(&done.task_id).await;
    assert_eq!(state(&task), done.ending.state(), "{task}");
    let user_ids: Vec<String> = task["history"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|message| message["role"] == "ROLE_USER")
        .filter_map(|message| message["messageId"].as_str().map(str::to_owned))
        .collect();
    assert_eq!(user_ids, done.acknowledged, "{}", done.task_id);
    for (watched, ends_in) in done.watched {
        let events = watched.await.expect("the subscriber ran");
        check_subscription(&events, ends_in);
    }
}

/// A subscriber saw the task first, then its turn's updates, and the
/// stream closed on the turn's final status, `ends_in`, with nothing after.
fn check_subscription(events: &[Value], ends_in: &str) {
    assert!(
        events
            .first()
            .is_some_and(|first| first["result"]["task"].is_object()),
        "{events:?}"
    );
    let states: Vec<&str> = events[1..]
        .iter()
        .filter_map(|event| event["result"]["statusUpdate"]["status"]["state"].as_str())
        .collect();
    assert_eq!(states.last().copied(), Some(ends_in), "{states:?}");
    let finals = states
        .iter()
        .filter(|state| **state != "TASK_STATE_WORKING")
        .count();
    assert_eq!(finals, 1, "one final status, last: {states:?}");
}

/// Subscribe to `task_id` and wait for its first event (the task), so
/// everything after is seen; the rest of the stream is read in the
/// background until it closes.
async fn subscribe(client: &Client, task_id: &str) -> tokio::task::JoinHandle<Vec<Value>> {
    let request = json!({"jsonrpc": "2.0", "id": 1, "method": "SubscribeToTask",
        "params": {"id": task_id}});
    let mut response = client
        .http
        .post(format!("{}/", client.base))
        .header("A2A-Version", "1.0")
        .header("X-Participant-Id", &client.participant)
        .header("Accept", "text/event-stream")
        .json(&request)
        .send()
        .await
        .expect("subscribed");
    let mut buffer = String::new();
    let mut events = Vec::new();
    while events.is_empty() {
        let chunk = tokio::time::timeout(Duration::from_secs(30), response.chunk())
            .await
            .expect("the first event within 30 s")
            .expect("the stream reads")
            .expect("the stream stays open");
        buffer.push_str(&String::from_utf8_lossy(&chunk));
        events.extend(take_sse_events(&mut buffer));
    }
    tokio::spawn(async move {
        loop {
            let chunk = tokio::time::timeout(Duration::from_secs(60), response.chunk()).await;
            let Ok(Ok(Some(chunk))) = chunk else {
                return events;
            };
            buffer.push_str(&String::from_utf8_lossy(&chunk));
            events.extend(take_sse_events(&mut buffer));
        }
    })
}

/// Move the `greeter` plugin in and out of the plugins folder (whole
/// folders, renamed in, as an operator's deploy does) until told to stop;
/// answers how many times it did.
async fn reload_until_stopped(plugins: std::path::PathBuf, running: Arc<AtomicBool>) -> usize {
    let staging = PluginsFolder::new();
    let mut reloads = 0;
    while running.load(Ordering::Relaxed) {
        let target = plugins.join("greeter");
        if target.exists() {
            let parked = staging.path().join(format!("gone-{reloads}"));
            std::fs::rename(&target, &parked).expect("move the plugin out");
            std::fs::remove_dir_all(&parked).expect("remove it");
        } else {
            staging.add_fixture("greeter");
            std::fs::rename(staging.path().join("greeter"), &target).expect("move it in");
        }
        reloads += 1;
        tokio::time::sleep(Duration::from_millis(150)).await;
    }
    reloads
}

/// Resident memory once it has settled (idle actors leave after 1 s): two
/// readings a second apart within 1% of each other.
async fn settled_resident_kib(pid: u32) -> u64 {
    let mut last = resident_kib(pid);
    for _ in 0..30 {
        tokio::time::sleep(Duration::from_secs(1)).await;
        let now = resident_kib(pid);
        if now.abs_diff(last) * 100 <= last {
            return now;
        }
        last = now;
    }
    last
}

/// Wait up to 90 s (the maintenance sweep gives freed memory back every minute) for resident memory to fall to `bound`; answers the
/// last reading.
async fn wait_for_resident_below(pid: u32, bound: u64) -> u64 {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(90);
    loop {
        let now = resident_kib(pid);
        if now <= bound || tokio::time::Instant::now() >= deadline {
            return now;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}
