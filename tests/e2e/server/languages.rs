//! Commands in any Wasm language, over A2A with the real server: each
//! example plugin (`examples/plugins/<lang>`) serves `/dice` and `/echo`,
//! and a Python plugin dropped into the served folder replaces the built-in
//! `/status` body with no rebuild and no restart.
//!
//! The components are built by `examples/plugins/build.sh` (which
//! `tests/run.sh` runs first); a missing one fails its test with that advice.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::Value;

use super::support::{Client, DEFAULT_CONFIG, Server, admin_config, state, status_text, sub_state};
use crate::support::PluginsFolder;

const DICE_USAGE: &str = "usage: /dice NdM";
const PYTHON_STATUS: &str = "python-status";
const PYTHON_STATUS_REPLY: &str = "Status (from Python): ";
const BUILTIN_STATUS_REPLY: &str = "State: ";

/// Polls stay under the default rate limit (5 sends a second per participant).
const POLL_INTERVAL: Duration = Duration::from_millis(250);

fn examples_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/plugins")
}

/// Copy example `name` into `folder/name` as a plugin author ships it: its
/// manifests and its built `<name>.wasm`, nothing else. The component goes
/// first and the manifests last, as a user dropping it into a served folder
/// would.
fn add_example(folder: &Path, name: &str) {
    let source = examples_dir().join(name);
    let component = source.join(format!("{name}.wasm"));
    assert!(
        component.is_file(),
        "example {name} is not built: run tests/run.sh (no {})",
        component.display()
    );
    let target = folder.join(name);
    std::fs::create_dir_all(&target).expect("mkdir");
    std::fs::copy(&component, target.join(format!("{name}.wasm"))).expect("copy the component");
    copy_manifests(&source, &target);
}

fn copy_manifests(source: &Path, target: &Path) {
    for file in ["plugin.json", "commands.json", "hooks.json"] {
        let from = source.join(file);
        if from.is_file() {
            std::fs::copy(&from, target.join(file)).expect("copy a manifest");
        }
    }
}

/// The data part of a task's status message, if any.
fn status_data(task: &Value) -> Option<&Value> {
    task["status"]["message"]["parts"]
        .as_array()?
        .iter()
        .find_map(|part| part.get("data"))
}

fn task_id(task: &Value) -> String {
    task["id"].as_str().expect("a task id").to_owned()
}

/// `/dice 3d6` answers `3d6: a + b + c = total` (each 1-6) with the same
/// rolls as data, `/dice 0d6` the usage, `/echo hi` "hi"; every command
/// parks the conversation again.
async fn dice_and_echo_over_a2a(lang: &str) {
    let folder = PluginsFolder::new();
    add_example(folder.path(), lang);
    let server = Server::start(DEFAULT_CONFIG, Some(folder.path()));
    let alice = server.client("alice");

    let task = alice.say(None, "/dice 3d6").await;
    let id = task_id(&task);
    assert_eq!(state(&task), "TASK_STATE_INPUT_REQUIRED", "{lang}: {task}");
    assert_eq!(sub_state(&task), Some("awaiting-next-message"), "{lang}");
    let text = status_text(&task);
    let (rolls, total) = parse_dice_reply(&text, 3)
        .unwrap_or_else(|| panic!("{lang}: `/dice 3d6` answered `{text}`"));
    assert!(
        rolls.iter().all(|roll| (1..=6).contains(roll)),
        "{lang}: {text}"
    );
    assert_eq!(rolls.iter().sum::<u64>(), total, "{lang}: {text}");
    let data = status_data(&task).unwrap_or_else(|| panic!("{lang}: no data in {task}"));
    assert_eq!(data["rolls"], serde_json::json!(rolls), "{lang}: {data}");
    assert_eq!(data["total"], total, "{lang}: {data}");

    let task = alice.say(Some(&id), "/dice 0d6").await;
    let text = status_text(&task);
    assert!(
        text.contains(DICE_USAGE),
        "{lang}: `/dice 0d6` answered `{text}`"
    );
    assert_eq!(state(&task), "TASK_STATE_INPUT_REQUIRED", "{lang}");

    let task = alice.say(Some(&id), "/echo hi").await;
    assert_eq!(status_text(&task), "hi", "{lang}");
    assert_eq!(sub_state(&task), Some("awaiting-next-message"), "{lang}");
}

/// `NdM: a + b + ... = total` with `count` rolls, as numbers.
fn parse_dice_reply(text: &str, count: usize) -> Option<(Vec<u64>, u64)> {
    let (_, rest) = text.split_once(": ")?;
    let (rolls, total) = rest.split_once(" = ")?;
    let rolls: Vec<u64> = rolls
        .split(" + ")
        .map(str::parse)
        .collect::<Result<_, _>>()
        .ok()?;
    (rolls.len() == count).then_some((rolls, total.parse().ok()?))
}

#[tokio::test(flavor = "multi_thread")]
async fn rust_dice_and_echo_over_a2a() {
    dice_and_echo_over_a2a("rust").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn c_dice_and_echo_over_a2a() {
    dice_and_echo_over_a2a("c").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn go_dice_and_echo_over_a2a() {
    dice_and_echo_over_a2a("go").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn python_dice_and_echo_over_a2a() {
    dice_and_echo_over_a2a("python").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn js_dice_and_echo_over_a2a() {
    dice_and_echo_over_a2a("js").await;
}

/// Send `/status` to the conversation `id` until the reply starts with
/// `prefix`, for at most `limit`; returns the task and how long it took.
async fn until_status(
    client: &Client,
    id: &str,
    prefix: &str,
    limit: Duration,
) -> (Value, Duration) {
    let started = Instant::now();
    loop {
        let task = client.say(Some(id), "/status").await;
        let reply = status_text(&task);
        if reply.starts_with(prefix) {
            return (task, started.elapsed());
        }
        assert!(
            started.elapsed() < limit,
            "/status still answers `{reply}` after {limit:?}"
        );
        tokio::time::sleep(POLL_INTERVAL).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_python_plugin_replaces_the_builtin_status_body_without_a_rebuild() {
    let folder = PluginsFolder::new();
    let server = Server::start(DEFAULT_CONFIG, Some(folder.path()));
    let alice = server.client("alice");
    let id = task_id(&alice.say(None, "hello").await);
    let builtin = status_text(&alice.say(Some(&id), "/status").await);
    assert!(builtin.starts_with(BUILTIN_STATUS_REPLY), "{builtin}");

    // The first load may have to compile the ~18 MB Python component: ~11 s
    // in a debug build on an idle 2-core machine, and more than twice that
    // while the other tests build and compile in parallel, hence a generous
    // limit here (the "within 2 s" is checked below, once it is compiled).
    // The compiled component is cached on disk, keyed by its content, so
    // every later load of it takes milliseconds.
    add_example(folder.path(), PYTHON_STATUS);
    let (task, took) =
        until_status(&alice, &id, PYTHON_STATUS_REPLY, Duration::from_secs(60)).await;
    eprintln!("python /status, first load (may compile): {took:?}");
    let reply = status_text(&task);
    assert_eq!(
        reply,
        "Status (from Python): TASK_STATE_INPUT_REQUIRED / awaiting-next-message, \
         model offline-echo, effort medium, 1 participant(s), 0 open sub-task(s)",
    );
    let data = status_data(&task).unwrap_or_else(|| panic!("no data in {task}"));
    assert_eq!(data["source"], "python", "{data}");
    assert_eq!(data["model"], "offline-echo", "{data}");
    assert_eq!(data["participants"][0]["id"], "alice", "{data}");
    assert_eq!(data["participants"][0]["role"], "reporter", "{data}");
    // The command's reply ends the turn as any other: the task parks.
    assert_eq!(state(&task), "TASK_STATE_INPUT_REQUIRED", "{task}");
    assert_eq!(sub_state(&task), Some("awaiting-next-message"), "{task}");

    // Removing the plugin brings the built-in body back, and dropping it in
    // again, now compiled and cached, brings it back without a compile. The
    // reload itself takes ~0.1-0.6 s (the reload bench measures it); the
    // 5 s bound only keeps this test honest on a loaded 2-core CI machine,
    // where it once exceeded 2 s while the durability tests ran beside it.
    std::fs::remove_dir_all(folder.path().join(PYTHON_STATUS)).expect("remove the plugin");
    until_status(&alice, &id, BUILTIN_STATUS_REPLY, Duration::from_secs(5)).await;
    add_example(folder.path(), PYTHON_STATUS);
    let (_, took) = until_status(&alice, &id, PYTHON_STATUS_REPLY, Duration::from_secs(5)).await;
    eprintln!("python /status, cached: {took:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_broken_status_replacement_leaves_the_builtin_body_serving() {
    let folder = PluginsFolder::new();
    let server = Server::start(&admin_config(), Some(folder.path()));
    let alice = server.client("alice");
    let id = task_id(&alice.say(None, "hello").await);

    // The python-status plugin, but its component is garbage.
    let source = examples_dir().join(PYTHON_STATUS);
    let target = folder.path().join(PYTHON_STATUS);
    std::fs::create_dir_all(&target).expect("mkdir");
    std::fs::write(
        target.join(format!("{PYTHON_STATUS}.wasm")),
        b"\0asm, but not really",
    )
    .expect("write the broken component");
    copy_manifests(&source, &target);

    // /plugins (admins only; `root` is admin_config's admin, with its token) reports the skip.
    let root = server.client("root");
    let started = Instant::now();
    let report = loop {
        let report = root.say(None, "/plugins").await;
        if status_text(&report).contains("example-python-status") {
            break report;
        }
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "the broken plugin never showed in /plugins: {}",
            status_text(&report)
        );
        tokio::time::sleep(POLL_INTERVAL).await;
    };
    let text = status_text(&report);
    assert!(text.contains("skipped hook `status-body`"), "{text}");
    assert!(text.contains("not a valid WebAssembly component"), "{text}");
    let data = status_data(&report).unwrap_or_else(|| panic!("no data in {report}"));
    let plugin = data["plugins"]
        .as_array()
        .and_then(|plugins| {
            plugins
                .iter()
                .find(|p| p["name"] == "example-python-status")
        })
        .unwrap_or_else(|| panic!("no example-python-status in {data}"));
    assert_eq!(plugin["status"], "loaded", "{plugin}");
    let problems = plugin["problems"].to_string();
    assert!(problems.contains("status-body"), "{problems}");

    // The built-in body still answers.
    let reply = status_text(&alice.say(Some(&id), "/status").await);
    assert!(reply.starts_with(BUILTIN_STATUS_REPLY), "{reply}");
}
