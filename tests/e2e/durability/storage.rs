//! A store that cannot take writes refuses new work with a clear error
//! (STORE_UNAVAILABLE) instead of acknowledging what it could not store, and
//! works again once it can.
//!
//! * A full disk: a real one, a 2 MiB tmpfs holding the database. Mounting
//!   needs root (CAP_SYS_ADMIN); without it the test says so and passes.
//!   (Root ignores file permissions, and a tmpfs cannot be remounted
//!   read-only while the database is open, so "read-only" is not staged
//!   here; the store's own tests cover SQLite's read-only error.)
//! * A locked database: another process holds SQLite's write lock.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use serde_json::{Value, json};

use super::support::{Harness, is_parked, message_with_id, user_message_ids};
use crate::server::support::{Client, DEFAULT_CONFIG};

/// A small tmpfs mounted for one test, unmounted when dropped.
struct SmallDisk {
    dir: tempfile::TempDir,
}

impl SmallDisk {
    fn mount(size: &str) -> Option<SmallDisk> {
        let dir = tempfile::tempdir().ok()?;
        let mounted = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(dir.path())
            .output()
            .ok()?
            .status
            .success();
        mounted.then_some(SmallDisk { dir })
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }
}

impl Drop for SmallDisk {
    fn drop(&mut self) {
        // Lazy: the killed server's files are closed by now, but be safe.
        let _ = Command::new("umount")
            .arg("-l")
            .arg(self.dir.path())
            .status();
    }
}

/// SendMessage; `Ok(task)` or `Err(the error object)`.
async fn send(client: &Client, message: Value) -> Result<Value, Value> {
    let response = client.rpc("SendMessage", json!({"message": message})).await;
    match response.get("error") {
        Some(error) => Err(error.clone()),
        None => Ok(response["result"]["task"].clone()),
    }
}

fn reason(error: &Value) -> &str {
    error["data"][0]["reason"].as_str().unwrap_or("")
}

#[tokio::test(flavor = "multi_thread")]
async fn a_full_disk_refuses_new_work_and_loses_nothing_acknowledged() {
    let Some(disk) = SmallDisk::mount("2m") else {
        eprintln!("skipped: cannot mount a tmpfs here (needs root); see the locked-database test");
        return;
    };
    // Space to give back later, so the server can be seen recovering.
    let ballast = disk.path().join("ballast");
    std::fs::write(&ballast, vec![0u8; 512 * 1024]).expect("ballast");
    let db = disk.path().join("th.db");
    let config = format!("{DEFAULT_CONFIG}\n[store]\npath = \"{}\"\n", db.display());
    let mut harness = Harness::start(&config, None);
    let alice = harness.client("alice");
    let task = alice.say(None, "hello").await;
    let task_id = task["id"].as_str().expect("id").to_owned();

    // Fill the disk with 16 KiB messages until the store refuses one.
    let text = "x".repeat(16 * 1024);
    let mut acknowledged = Vec::new();
    let mut refusal = None;
    for n in 0..400 {
        let id = format!("fill-{n}");
        match send(&alice, message_with_id(Some(&task_id), &id, &text)).await {
            Ok(_) => acknowledged.push(id),
            Err(error) => {
                refusal = Some((id, error));
                break;
            }
        }
    }
    let (refused_id, refusal) = refusal.expect("the disk fills up");
    assert_eq!(reason(&refusal), "STORE_UNAVAILABLE", "{refusal}");
    assert_eq!(refusal["code"], -32603, "{refusal}");
    assert!(!acknowledged.is_empty());
    // The disk may fill on the message's acceptance or on its turn's reply:
    // the error says which, and an accepted message must not be lost.
    if accepted(&refusal, &task_id) {
        acknowledged.push(refused_id);
    }
    // New work is refused over REST with 503 and Retry-After, unless the
    // store found room again: a checkpoint that completes lets the WAL be
    // rewritten from its start without growing the file. Either way the
    // answer is honest, and checked against what survives the restart.
    let response = send_new_over_rest(&alice, "new-1").await;
    let new_conversation_accepted = match response.status().as_u16() {
        200 => true,
        503 => refused_over_rest(response).await,
        other => panic!("neither accepted nor refused: {other}"),
    };

    // Reads still work, and show everything acknowledged, once.
    let stored = user_message_ids(&alice.get_task(&task_id).await);
    for id in &acknowledged {
        assert_eq!(stored.iter().filter(|s| *s == id).count(), 1, "{id}");
    }

    // Space comes back: the server takes work again without a restart.
    std::fs::remove_file(&ballast).expect("freed");
    let after = send(&alice, message_with_id(Some(&task_id), "after-1", "hi"))
        .await
        .expect("accepted once there is room");
    assert!(is_parked(&after), "{after}");
    acknowledged.push("after-1".into());

    // And after a kill, every acknowledged message is there exactly once.
    harness.restart();
    let alice = harness.client("alice");
    let task = alice.get_task(&task_id).await;
    let stored = user_message_ids(&task);
    for id in &acknowledged {
        assert_eq!(stored.iter().filter(|s| *s == id).count(), 1, "{id}");
    }
    let listed = alice.ok("ListTasks", json!({})).await;
    let expected = if new_conversation_accepted { 2 } else { 1 };
    assert_eq!(
        listed["totalSize"], expected,
        "a refused conversation does not exist, an accepted one does: {listed}"
    );
    harness.kill();
}

/// A new conversation over HTTP+JSON.
async fn send_new_over_rest(client: &Client, message_id: &str) -> reqwest::Response {
    client
        .post(format!("{}/message:send", client.base))
        .json(&json!({"message": message_with_id(None, message_id, "hello again")}))
        .send()
        .await
        .expect("sent")
}

/// Checks a 503 answer over HTTP+JSON (Retry-After, STORE_UNAVAILABLE);
/// whether it says its message was accepted.
async fn refused_over_rest(response: reqwest::Response) -> bool {
    assert_eq!(response.status(), 503);
    assert!(response.headers().contains_key("retry-after"));
    let body: Value = response.json().await.expect("json");
    let info = &body["error"]["details"][0];
    assert_eq!(info["reason"], "STORE_UNAVAILABLE", "{body}");
    accepted_flag(&info["metadata"], &body)
}

/// Whether a STORE_UNAVAILABLE error says its message was accepted into
/// `task_id` (only its turn's result was not stored) or not accepted at all.
fn accepted(error: &Value, task_id: &str) -> bool {
    let metadata = &error["data"][0]["metadata"];
    let accepted = accepted_flag(metadata, error);
    let message = error["message"].as_str().unwrap_or("");
    if accepted {
        assert_eq!(metadata["taskId"], task_id, "{error}");
        assert!(message.contains("was accepted into task"), "{error}");
    } else {
        assert!(message.contains("was not accepted"), "{error}");
    }
    accepted
}

/// The ErrorInfo metadata's `accepted` flag, which every STORE_UNAVAILABLE
/// error carries; `answer` is shown when it is missing.
fn accepted_flag(metadata: &Value, answer: &Value) -> bool {
    match metadata["accepted"].as_str() {
        Some("true") => true,
        Some("false") => false,
        other => panic!("no accepted flag ({other:?}): {answer}"),
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_locked_database_refuses_writes_until_it_is_released() {
    let mut harness = Harness::start(DEFAULT_CONFIG, None);
    let alice = harness.client("alice");
    let task = alice.say(None, "hello").await;
    let task_id = task["id"].as_str().expect("id").to_owned();

    // Another process takes SQLite's write lock and keeps it.
    let other = rusqlite::Connection::open(harness.db_path()).expect("opens");
    other.execute_batch("BEGIN EXCLUSIVE").expect("locks");
    let message = message_with_id(Some(&task_id), "locked-1", "are you there?");
    let refused = tokio::time::timeout(Duration::from_secs(15), send(&alice, message.clone()))
        .await
        .expect("refused promptly")
        .expect_err("refused");
    assert_eq!(reason(&refused), "STORE_UNAVAILABLE", "{refused}");
    assert!(
        refused["message"].as_str().unwrap_or("").contains("locked"),
        "{refused}"
    );
    let started = send(&alice, message_with_id(None, "new-1", "hi")).await;
    assert!(started.is_err(), "{started:?}");
    let response = send_new_over_rest(&alice, "new-2").await;
    assert!(
        !refused_over_rest(response).await,
        "a refused message was not accepted"
    );
    // Reads go on (WAL readers do not wait for the writer), without it.
    let read = alice.get_task(&task_id).await;
    assert_eq!(
        user_message_ids(&read),
        [task["history"][0]["messageId"].as_str().unwrap_or("")]
    );

    // Released: the same message goes through, once.
    other.execute_batch("ROLLBACK").expect("unlocks");
    let accepted = send(&alice, message).await.expect("accepted now");
    assert!(is_parked(&accepted), "{accepted}");
    harness.restart();
    let alice = harness.client("alice");
    let ids = user_message_ids(&alice.get_task(&task_id).await);
    assert_eq!(
        ids.iter().filter(|id| *id == "locked-1").count(),
        1,
        "{ids:?}"
    );
    assert_eq!(alice.ok("ListTasks", json!({})).await["totalSize"], 1);
}
