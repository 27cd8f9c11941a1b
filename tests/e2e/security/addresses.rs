//! Issue 8 item 7, webhook addresses by category: every disguised private address of the
//! issue (IPv6 forms that embed or translate a private IPv4 address, and 192.0.0.0/24) is
//! refused with `allow_private = false`, when the configuration is created and again when
//! an event would be delivered.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use axum::routing::post;
use serde_json::json;

use crate::durability::support::Harness;
use crate::server::support::{DEFAULT_CONFIG, Server};

/// The issue's addresses, and what each carries.
const DISGUISED: [(&str, &str); 7] = [
    (
        "http://[64:ff9b::169.254.169.254]/latest/meta-data",
        "169.254.169.254",
    ),
    ("http://[64:ff9b:1::192.168.0.1]/hook", "192.168.0.1"),
    ("http://[2002:a9fe:a9fe::1]/hook", "169.254.169.254"),
    ("http://[::10.0.0.1]/hook", "10.0.0.1"),
    ("http://[::ffff:0:10.0.0.1]/hook", "10.0.0.1"),
    // Teredo: server 65.54.227.120, client 10.0.0.1 (inverted in the last 32 bits).
    (
        "http://[2001:0:4136:e378:8000:63bf:f5ff:fffe]/hook",
        "10.0.0.1",
    ),
    ("http://192.0.0.1/hook", "192.0.0.1"),
];

#[tokio::test(flavor = "multi_thread")]
async fn issue_8_7_disguised_private_addresses_are_refused_at_creation() {
    let server = Server::with_defaults();
    let alice = server.client("alice");
    let task = alice.say(None, "hello").await;
    let id = task["id"].as_str().expect("id");
    for (url, inner) in DISGUISED {
        let refused = alice
            .rpc(
                "CreateTaskPushNotificationConfig",
                json!({"taskId": id, "url": url}),
            )
            .await;
        assert_eq!(refused["error"]["code"], -32602, "{url}: {refused}");
        let message = refused["error"]["message"].as_str().unwrap_or("");
        assert!(message.contains("allow_private"), "{url}: {message}");
        assert!(message.contains(inner), "{url} names {inner}: {message}");
    }
    let listed = alice
        .ok("ListTaskPushNotificationConfigs", json!({"taskId": id}))
        .await;
    assert_eq!(
        listed["configs"].as_array().map_or(0, Vec::len),
        0,
        "{listed}"
    );
}

/// A webhook receiver on 127.0.0.1 that counts what it is sent.
async fn receiver() -> (u16, Arc<AtomicUsize>) {
    let count = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&count);
    let app = axum::Router::new().route(
        "/hook",
        post(move || {
            let counted = Arc::clone(&counted);
            async move {
                counted.fetch_add(1, Ordering::SeqCst);
                "ok"
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let port = listener.local_addr().expect("addr").port();
    tokio::spawn(async move { axum::serve(listener, app).await });
    (port, count)
}

async fn until(what: &str, done: impl Fn() -> bool) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(15);
    while !done() {
        assert!(tokio::time::Instant::now() < deadline, "gave up on {what}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn issue_8_7_disguised_private_addresses_are_refused_at_delivery() {
    let (port, received) = receiver().await;
    // Created while the operator allowed private webhooks: 127.0.0.1, IPv4-mapped.
    let allowed = format!("{DEFAULT_CONFIG}\n[push]\nallow_private = true\n");
    let mut harness = Harness::start(&allowed, None);
    let alice = harness.client("alice");
    let task = alice.say(None, "hello").await;
    let id = task["id"].as_str().expect("id").to_owned();
    let url = format!("http://[::ffff:127.0.0.1]:{port}/hook");
    let created = alice
        .rpc(
            "CreateTaskPushNotificationConfig",
            json!({"taskId": id, "url": url}),
        )
        .await;
    assert!(created.get("error").is_none(), "{created}");
    alice.say(Some(&id), "while allowed").await;
    until("a delivery while allowed", || {
        received.load(Ordering::SeqCst) > 0
    })
    .await;

    // The operator turns private webhooks off: the stored one gets nothing more.
    std::fs::write(harness.dir().join("tiny-harness.toml"), DEFAULT_CONFIG).expect("config");
    harness.restart();
    let before = received.load(Ordering::SeqCst);
    let alice = harness.client("alice");
    alice.say(Some(&id), "after the change").await;
    until("the refusal in the log", || {
        harness.logged("could not be delivered") && harness.logged("allow_private")
    })
    .await;
    assert_eq!(
        received.load(Ordering::SeqCst),
        before,
        "a disguised loopback webhook was delivered to"
    );
}
