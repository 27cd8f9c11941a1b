//! Push notifications to a local receiver: every event of the task, in
//! order, with the configured Authorization header and token, retried when
//! the receiver fails; configurations kept across a kill.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::routing::post;
use serde_json::{Value, json};

use tiny_harness::server::tls::TlsListener;

use super::support::Harness;
use crate::server::support::{DEFAULT_CONFIG, text_message};
use crate::support::PrivateCa;

/// One notification as the receiver saw it.
#[derive(Clone, Debug)]
struct Delivery {
    hook: String,
    headers: HeaderMap,
    body: Value,
    accepted: bool,
}

#[derive(Default)]
struct Receiver {
    deliveries: Mutex<Vec<Delivery>>,
    /// Failures still to answer, per hook.
    failures: Mutex<HashMap<String, usize>>,
}

impl Receiver {
    fn accepted(&self, hook: &str) -> Vec<Delivery> {
        let deliveries = self.deliveries.lock().expect("lock");
        deliveries
            .iter()
            .filter(|d| d.hook == hook && d.accepted)
            .cloned()
            .collect()
    }

    fn all(&self, hook: &str) -> Vec<Delivery> {
        let deliveries = self.deliveries.lock().expect("lock");
        deliveries
            .iter()
            .filter(|d| d.hook == hook)
            .cloned()
            .collect()
    }
}

async fn hook(
    State(receiver): State<Arc<Receiver>>,
    Path(name): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> StatusCode {
    let failing = {
        let mut failures = receiver.failures.lock().expect("lock");
        match failures.get_mut(&name) {
            Some(left) if *left > 0 => {
                *left -= 1;
                true
            }
            _ => false,
        }
    };
    receiver.deliveries.lock().expect("lock").push(Delivery {
        hook: name,
        headers,
        body: serde_json::from_slice(&body).unwrap_or(Value::Null),
        accepted: !failing,
    });
    if failing {
        StatusCode::INTERNAL_SERVER_ERROR
    } else {
        StatusCode::OK
    }
}

/// A webhook receiver on loopback; `flaky` fails its first two requests.
async fn receiver() -> (SocketAddr, Arc<Receiver>) {
    let receiver = Arc::new(Receiver::default());
    receiver
        .failures
        .lock()
        .expect("lock")
        .insert("flaky".into(), 2);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    let app = receiver_app(&receiver);
    tokio::spawn(async move { axum::serve(listener, app).await });
    (addr, receiver)
}

fn receiver_app(receiver: &Arc<Receiver>) -> axum::Router {
    axum::Router::new()
        .route("/hook/{name}", post(hook))
        .with_state(Arc::clone(receiver))
}

/// Wait until `hook` has accepted `count` notifications.
async fn accepted(receiver: &Receiver, hook: &str, count: usize) -> Vec<Delivery> {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(15);
    loop {
        let accepted = receiver.accepted(hook);
        if accepted.len() >= count {
            return accepted;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "{hook} accepted only {accepted:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn header<'a>(delivery: &'a Delivery, name: &str) -> &'a str {
    delivery
        .headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
}

fn update_state(delivery: &Delivery) -> &str {
    delivery.body["statusUpdate"]["status"]["state"]
        .as_str()
        .unwrap_or("")
}

const PUSH_CONFIG: &str = "\n[push]\nallow_private = true\ninitial_backoff_ms = 50\n";

#[tokio::test(flavor = "multi_thread")]
async fn events_reach_webhooks_with_their_credentials_and_retries() {
    let (addr, receiver) = receiver().await;
    let mut harness = Harness::start(&format!("{DEFAULT_CONFIG}{PUSH_CONFIG}"), None);
    let alice = harness.client("alice");
    let card: Value = crate::support::http()
        .get(format!("{}/.well-known/agent-card.json", harness.base))
        .send()
        .await
        .expect("card")
        .json()
        .await
        .expect("json");
    assert_eq!(card["capabilities"]["pushNotifications"], true);

    let task = alice.say(None, "hello").await;
    let id = task["id"].as_str().expect("id").to_owned();
    // JSON-RPC: a bearer token and a notification token, on a receiver that
    // fails twice.
    let flaky = alice
        .ok(
            "CreateTaskPushNotificationConfig",
            json!({
                "taskId": id,
                "url": format!("http://{addr}/hook/flaky"),
                "token": "tok-1",
                "authentication": {"scheme": "Bearer", "credentials": "s3cret"},
            }),
        )
        .await;
    let flaky_id = flaky["id"].as_str().expect("an id is assigned").to_owned();
    assert_eq!(flaky["taskId"], id.as_str());
    // HTTP+JSON: basic credentials and a chosen id.
    let steady: Value = alice
        .http
        .post(format!(
            "{}/tasks/{id}/pushNotificationConfigs",
            harness.base
        ))
        .header("A2A-Version", "1.0")
        .header("X-Participant-Id", "alice")
        .json(&json!({
            "id": "steady",
            "url": format!("http://{addr}/hook/steady"),
            "authentication": {"scheme": "Basic", "credentials": "YWxpY2U6cHc="},
        }))
        .send()
        .await
        .expect("sent")
        .json()
        .await
        .expect("json");
    assert_eq!(steady["id"], "steady", "{steady}");

    alice.say(Some(&id), "ping").await;
    let steady = accepted(&receiver, "steady", 2).await;
    assert_eq!(
        steady.iter().map(update_state).collect::<Vec<_>>(),
        ["TASK_STATE_WORKING", "TASK_STATE_INPUT_REQUIRED"]
    );
    assert_eq!(steady[1].body["statusUpdate"]["taskId"], id.as_str());
    assert_eq!(
        steady[1].body["statusUpdate"]["metadata"]["sub_state"],
        "awaiting-next-message"
    );
    for delivery in &steady {
        assert_eq!(header(delivery, "authorization"), "Basic YWxpY2U6cHc=");
        assert_eq!(header(delivery, "content-type"), "application/a2a+json");
    }
    // Two failures, then the same event again, then the next, in order.
    let flaky = accepted(&receiver, "flaky", 2).await;
    let tries = receiver.all("flaky");
    assert_eq!(tries.len(), 4, "{tries:?}");
    assert_eq!(
        tries
            .iter()
            .map(|d| (update_state(d), d.accepted))
            .collect::<Vec<_>>(),
        [
            ("TASK_STATE_WORKING", false),
            ("TASK_STATE_WORKING", false),
            ("TASK_STATE_WORKING", true),
            ("TASK_STATE_INPUT_REQUIRED", true),
        ]
    );
    for delivery in &flaky {
        assert_eq!(header(delivery, "authorization"), "Bearer s3cret");
        assert_eq!(header(delivery, "x-a2a-notification-token"), "tok-1");
    }
    // Every webhook sees the same event under the same number, counting up.
    let seqs = |deliveries: &[Delivery]| -> Vec<u64> {
        deliveries
            .iter()
            .map(|d| {
                header(d, "x-tiny-harness-event-seq")
                    .parse()
                    .expect("a number")
            })
            .collect()
    };
    assert_eq!(seqs(&flaky), seqs(&steady));
    assert_eq!(seqs(&steady)[1], seqs(&steady)[0] + 1);
    let retried = seqs(&tries);
    assert_eq!(retried[0], retried[2], "a retry repeats its event's number");

    // Both bindings read the configurations back; bob, a watcher, sees
    // none of alice's credentials.
    let listed = alice
        .ok("ListTaskPushNotificationConfigs", json!({"taskId": id}))
        .await;
    assert_eq!(
        listed["configs"].as_array().map(Vec::len),
        Some(2),
        "{listed}"
    );
    // In pages of one, by id: the two configurations once each.
    let first = alice
        .ok(
            "ListTaskPushNotificationConfigs",
            json!({"taskId": id, "pageSize": 1}),
        )
        .await;
    let token = first["nextPageToken"].as_str().expect("a next page");
    let second = alice
        .ok(
            "ListTaskPushNotificationConfigs",
            json!({"taskId": id, "pageSize": 1, "pageToken": token}),
        )
        .await;
    assert!(second.get("nextPageToken").is_none(), "{second}");
    let mut paged = vec![
        first["configs"][0]["id"].clone(),
        second["configs"][0]["id"].clone(),
    ];
    let mut all: Vec<Value> = listed["configs"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|config| config["id"].clone())
        .collect();
    paged.sort_by_key(Value::to_string);
    all.sort_by_key(Value::to_string);
    assert_eq!(paged, all);
    let forged = alice
        .rpc(
            "ListTaskPushNotificationConfigs",
            json!({"taskId": id, "pageToken": "not-ours"}),
        )
        .await;
    assert_eq!(forged["error"]["code"], -32602, "{forged}");
    let got: Value = alice
        .http
        .get(format!(
            "{}/tasks/{id}/pushNotificationConfigs/steady",
            harness.base
        ))
        .header("A2A-Version", "1.0")
        .header("X-Participant-Id", "alice")
        .send()
        .await
        .expect("sent")
        .json()
        .await
        .expect("json");
    assert_eq!(got["url"], format!("http://{addr}/hook/steady"));
    alice
        .send_data(
            &id,
            json!({"kind": "task", "payload": {"participants": [{"id": "bob", "role": "watcher"}]}}),
        )
        .await;
    let bobs = harness
        .client("bob")
        .ok("ListTaskPushNotificationConfigs", json!({"taskId": id}))
        .await;
    assert_eq!(bobs["configs"], json!([]), "{bobs}");

    // Deleted: nothing more goes there. Kept: survives a kill.
    let deleted = alice
        .http
        .delete(format!(
            "{}/tasks/{id}/pushNotificationConfigs/steady",
            harness.base
        ))
        .header("A2A-Version", "1.0")
        .header("X-Participant-Id", "alice")
        .send()
        .await
        .expect("sent");
    assert_eq!(deleted.status(), 200);
    let steady_before = receiver.accepted("steady").len();
    let flaky_before = receiver.accepted("flaky").len();
    harness.restart();
    let alice = harness.client("alice");
    let listed = alice
        .ok("ListTaskPushNotificationConfigs", json!({"taskId": id}))
        .await;
    assert_eq!(listed["configs"][0]["id"], flaky_id.as_str(), "{listed}");
    assert_eq!(listed["configs"].as_array().map(Vec::len), Some(1));
    alice.say(Some(&id), "after the restart").await;
    accepted(&receiver, "flaky", flaky_before + 2).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(receiver.accepted("steady").len(), steady_before);

    // A webhook in a send's configuration hears the new task's first turn.
    let fresh = alice
        .ok(
            "SendMessage",
            json!({
                "message": text_message(None, "a new conversation"),
                "configuration": {"taskPushNotificationConfig": {"url": format!("http://{addr}/hook/fresh")}},
            }),
        )
        .await;
    let fresh_events = accepted(&receiver, "fresh", 2).await;
    assert_eq!(
        fresh_events[0].body["statusUpdate"]["taskId"],
        fresh["task"]["id"]
    );
    assert_eq!(update_state(&fresh_events[1]), "TASK_STATE_INPUT_REQUIRED");
}

#[tokio::test(flavor = "multi_thread")]
async fn webhooks_on_private_addresses_are_refused_by_default() {
    let harness = Harness::start(DEFAULT_CONFIG, None);
    let alice = harness.client("alice");
    let task = alice.say(None, "hello").await;
    let id = task["id"].as_str().expect("id");
    for url in [
        "http://127.0.0.1:9/hook",
        "http://localhost:9/hook",
        "http://10.0.0.1/hook",
    ] {
        let refused = alice
            .rpc(
                "CreateTaskPushNotificationConfig",
                json!({"taskId": id, "url": url}),
            )
            .await;
        assert_eq!(refused["error"]["code"], -32602, "{url}: {refused}");
        let message = refused["error"]["message"].as_str().unwrap_or("");
        assert!(message.contains("allow_private"), "{url}: {message}");
    }
    // In a send's configuration too: the message is refused, not accepted
    // without its webhook.
    let refused = alice
        .rpc(
            "SendMessage",
            json!({
                "message": text_message(Some(id), "hi"),
                "configuration": {"taskPushNotificationConfig": {"url": "http://127.0.0.1:9/x"}},
            }),
        )
        .await;
    assert_eq!(refused["error"]["code"], -32602, "{refused}");
    assert_eq!(
        alice.get_task(id).await["history"].as_array().map(Vec::len),
        Some(2)
    );
}

/// The task's log is the outbox: a notification still being retried when
/// the server is SIGKILLed is sent once the server is back, and a webhook
/// that already had every event gets none of them again.
#[tokio::test(flavor = "multi_thread")]
async fn notifications_in_flight_at_a_kill_are_sent_after_the_restart() {
    let (addr, receiver) = receiver().await;
    receiver
        .failures
        .lock()
        .expect("lock")
        .insert("outage".into(), usize::MAX);
    // Retries a minute apart: the kill comes while the first undelivered
    // event waits for its second attempt.
    let config =
        format!("{DEFAULT_CONFIG}\n[push]\nallow_private = true\ninitial_backoff_ms = 60000\n");
    let mut harness = Harness::start(&config, None);
    let alice = harness.client("alice");
    let task = alice.say(None, "hello").await;
    let id = task["id"].as_str().expect("id").to_owned();
    for hook in ["outage", "steady"] {
        alice
            .ok(
                "CreateTaskPushNotificationConfig",
                json!({"taskId": id, "id": hook, "url": format!("http://{addr}/hook/{hook}")}),
            )
            .await;
    }

    alice.say(Some(&id), "ping").await;
    accepted(&receiver, "steady", 2).await;
    wait_for_cursor(&harness, &id, "steady").await;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(15);
    while receiver.all("outage").is_empty() {
        assert!(tokio::time::Instant::now() < deadline, "outage never tried");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    harness.kill();

    // The receiver is back; the server restarts with no new message sent.
    receiver
        .failures
        .lock()
        .expect("lock")
        .insert("outage".into(), 0);
    harness.restart();
    let outage = accepted(&receiver, "outage", 2).await;
    assert_eq!(
        outage.iter().map(update_state).collect::<Vec<_>>(),
        ["TASK_STATE_WORKING", "TASK_STATE_INPUT_REQUIRED"],
        "only the turn after the webhook was created, in order"
    );
    assert!(harness.logged("resending push notifications a restart left undelivered"));
    let numbers = |deliveries: Vec<Delivery>| -> Vec<String> {
        deliveries
            .iter()
            .map(|d| header(d, "x-tiny-harness-event-seq").to_owned())
            .collect()
    };
    assert_eq!(
        numbers(outage.clone()),
        numbers(receiver.accepted("steady")),
        "resent under their original numbers"
    );
    // Let anything wrongly resent to `steady` arrive before counting.
    wait_for_cursor(&harness, &id, "outage").await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(receiver.accepted("steady").len(), 2, "steady had them all");
    assert_eq!(receiver.accepted("outage").len(), 2, "each event once");
}

/// Wait until webhook `config` of task `task` is recorded, in the database,
/// as having every event the task logged.
async fn wait_for_cursor(harness: &Harness, task: &str, config: &str) {
    let db = rusqlite::Connection::open(harness.db_path()).expect("opens");
    let deadline = tokio::time::Instant::now() + Duration::from_secs(15);
    loop {
        let (cursor, latest): (i64, i64) = db
            .query_row(
                "SELECT delivered_seq,
                        (SELECT event_seq FROM tasks WHERE id = ?1)
                 FROM push_configs WHERE task_id = ?1 AND config_id = ?2",
                [task, config],
                |row| Ok((row.get(0)?, row.get(1)?)),
            )
            .expect("the webhook is stored");
        if cursor == latest {
            return;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "{config} stays at event {cursor} of {latest}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// An https webhook behind a private CA: delivered once the CA is in
/// `[tls] extra_ca_files`; without it the certificate is refused and
/// nothing reaches the receiver.
#[tokio::test(flavor = "multi_thread")]
async fn https_webhooks_are_delivered_when_their_ca_is_trusted() {
    let ca_dir = tempfile::tempdir().expect("tempdir");
    let ca = PrivateCa::issue(ca_dir.path());
    let receiver = Arc::new(Receiver::default());
    let tcp = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = tcp.local_addr().expect("addr");
    let listener = TlsListener::new(tcp, ca.acceptor()).expect("a TLS listener");
    let app = receiver_app(&receiver);
    tokio::spawn(async move { axum::serve(listener, app).await });
    let ca_file = &ca.ca_file;
    let push = "\n[push]\nallow_private = true\ninitial_backoff_ms = 50\nmax_attempts = 2\n";

    let untrusting = Harness::start(&format!("{DEFAULT_CONFIG}{push}"), None);
    let alice = untrusting.client("alice");
    let task = alice.say(None, "hello").await;
    let id = task["id"].as_str().expect("id");
    alice
        .ok(
            "CreateTaskPushNotificationConfig",
            json!({"taskId": id, "url": format!("https://127.0.0.1:{}/hook/refused", addr.port())}),
        )
        .await;
    alice.say(Some(id), "ping").await;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(15);
    while !untrusting.logged("a push notification could not be delivered") {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the untrusted certificate was never refused"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(
        untrusting.logged("certificate"),
        "the log says why: the certificate"
    );
    assert!(receiver.all("refused").is_empty());
    drop(untrusting);

    let config = format!(
        "{DEFAULT_CONFIG}{push}\n[tls]\nextra_ca_files = [\"{}\"]\n",
        ca_file.display()
    );
    let trusting = Harness::start(&config, None);
    let alice = trusting.client("alice");
    let task = alice.say(None, "hello").await;
    let id = task["id"].as_str().expect("id");
    alice
        .ok(
            "CreateTaskPushNotificationConfig",
            json!({"taskId": id, "url": format!("https://localhost:{}/hook/secure", addr.port()), "token": "t"}),
        )
        .await;
    alice.say(Some(id), "ping").await;
    let delivered = accepted(&receiver, "secure", 2).await;
    assert_eq!(
        delivered.iter().map(update_state).collect::<Vec<_>>(),
        ["TASK_STATE_WORKING", "TASK_STATE_INPUT_REQUIRED"]
    );
    assert_eq!(header(&delivered[0], "x-a2a-notification-token"), "t");
}
