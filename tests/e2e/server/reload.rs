//! Hot reload: plugins dropped into, changed in, or removed from the served
//! folder take effect without a restart; a broken new version leaves the
//! previous one serving; running commands are not disturbed.

use std::time::{Duration, Instant};

use serde_json::json;

use super::support::{Client, DEFAULT_CONFIG, Server, admin_config, status_text, text_message};
use crate::support::PluginsFolder;

/// Send `message` to a fresh conversation until its reply satisfies `ok`,
/// for at most `limit`; returns how long it took.
async fn until_reply(
    client: &Client,
    message: &str,
    limit: Duration,
    ok: impl Fn(&str) -> bool,
) -> Duration {
    let started = Instant::now();
    loop {
        let reply = status_text(&client.say(None, message).await);
        if ok(&reply) {
            return started.elapsed();
        }
        assert!(
            started.elapsed() < limit,
            "`{message}` still answers `{reply}` after {limit:?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_dropped_in_plugin_works_within_a_second_and_leaves_when_removed() {
    let folder = PluginsFolder::new();
    let server = Server::start(DEFAULT_CONFIG, Some(folder.path()));
    let alice = server.client("alice");
    assert!(status_text(&alice.say(None, "/greet Ada").await).contains("You said: /greet Ada"));

    folder.add_fixture("greeter");
    let took = until_reply(&alice, "/greet Ada", Duration::from_secs(1), |reply| {
        reply == "Hello, Ada!"
    })
    .await;
    eprintln!("drop-in to working command: {took:?}");

    let card: serde_json::Value = crate::support::http()
        .get(format!("{}/.well-known/agent-card.json", server.base))
        .send()
        .await
        .expect("card")
        .json()
        .await
        .expect("json");
    assert!(
        card.to_string().contains("\"greet\""),
        "the card follows the generation"
    );

    std::fs::remove_dir_all(folder.path().join("greeter")).expect("remove");
    until_reply(&alice, "/greet Ada", Duration::from_secs(2), |reply| {
        reply.contains("You said: /greet Ada")
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_broken_new_version_leaves_the_previous_one_serving_and_says_why() {
    let folder = PluginsFolder::new().with_fixture("greeter");
    // /plugins is for admins, and admins need tokens.
    let server = Server::start(&admin_config(), Some(folder.path()));
    let alice = server.client("alice");
    assert_eq!(
        status_text(&alice.say(None, "/greet Bo").await),
        "Hello, Bo!"
    );

    // A broken component and a new command in the same (broken) version.
    std::fs::write(
        folder.path().join("greeter/greeter.wasm"),
        b"\0asm not really",
    )
    .expect("break it");
    let root = server.client("root");
    let started = Instant::now();
    let report = loop {
        let report = status_text(&root.say(None, "/plugins").await);
        if report.contains("previous version keeps serving") {
            break report;
        }
        assert!(
            started.elapsed() < Duration::from_secs(3),
            "no reload reported: {report}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert!(
        report.contains("not a valid WebAssembly component"),
        "{report}"
    );
    assert_eq!(
        status_text(&alice.say(None, "/greet Bo").await),
        "Hello, Bo!",
        "the old body still serves"
    );

    // /plugins is for admins only.
    let refused = status_text(&alice.say(None, "/plugins").await);
    assert!(refused.contains("admin"), "{refused}");

    // Fixing it brings the new version in.
    folder.add_fixture("greeter");
    until_reply(&root, "/plugins", Duration::from_secs(2), |report| {
        !report.contains("previous version")
    })
    .await;
    assert_eq!(
        status_text(&alice.say(None, "/greet Bo").await),
        "Hello, Bo!"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_reload_during_a_running_command_does_not_disturb_it() {
    let folder = PluginsFolder::new().with_fixture("sleeper");
    let server = Server::start(DEFAULT_CONFIG, Some(folder.path()));
    let alice = server.client("alice");
    let running = {
        let alice = alice.clone();
        tokio::spawn(async move {
            alice
                .rpc(
                    "SendMessage",
                    json!({"message": text_message(None, "/nap 1500")}),
                )
                .await
        })
    };
    tokio::time::sleep(Duration::from_millis(300)).await;
    // Change the plugin under the running command: a new description, and
    // another plugin dropped in, each a reload.
    let commands = folder.path().join("sleeper/commands.json");
    let changed = std::fs::read_to_string(&commands)
        .expect("read")
        .replace("Sleeps", "Naps");
    std::fs::write(&commands, changed).expect("write");
    folder.add_fixture("greeter");
    let response = running.await.expect("joined");
    assert_eq!(
        status_text(&response["result"]["task"]),
        "Napped 1500 ms.",
        "{response}"
    );
    until_reply(&alice, "/greet Cy", Duration::from_secs(2), |reply| {
        reply == "Hello, Cy!"
    })
    .await;
    assert_eq!(
        status_text(&alice.say(None, "/nap 10").await),
        "Napped 10 ms."
    );
}
