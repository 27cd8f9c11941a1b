//! Hostile plugins against the real binary (issue 9): a call blocked in a
//! host call is cut at its deadline; a plugin that fills its instance quota
//! is busy while the built-in plugin keeps answering; manifests that are
//! FIFOs or point at `/dev/zero` are refused with the reason, and so are
//! oversized declarations; a log flood is cut with one notice.

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::plugin_server::PluginServer;
use crate::server::support::{
    Client, DEFAULT_CONFIG, complete_control, state, status_text, text_message,
};
use crate::support::PluginsFolder;

/// The `sleeper` fixture (`/nap <ms>` logs `napping <ms> ms in task <id>`,
/// then sleeps in WASI) with its command's deadline set to `timeout_ms`.
fn sleeper(timeout_ms: u64) -> PluginsFolder {
    let folder = PluginsFolder::new().with_fixture("sleeper");
    write_json(
        &folder.path().join("sleeper/commands.json"),
        &json!({"commands": [{
            "name": "nap", "description": "Sleeps", "usage": "/nap <ms>",
            "arguments": [{"name": "ms", "type": "integer", "required": true}],
            "timeout_ms": timeout_ms,
        }]}),
    );
    folder
}

fn write_json(path: &Path, value: &Value) {
    std::fs::write(path, value.to_string()).expect("write");
}

/// Start `n` naps of `ms`, each in a conversation of its own, without
/// waiting for them; return once the plugin has logged that all began.
async fn start_naps(
    server: &PluginServer,
    client: &Client,
    n: usize,
    ms: u64,
) -> Vec<tokio::task::JoinHandle<Value>> {
    let naps = (0..n)
        .map(|_| {
            let client = client.clone();
            let message = text_message(None, &format!("/nap {ms}"));
            tokio::spawn(
                async move { client.rpc("SendMessage", json!({"message": message})).await },
            )
        })
        .collect();
    server
        .wait_for_log(&format!("napping {ms} ms in task"), n)
        .await;
    naps
}

/// A new conversation's id.
async fn conversation(client: &Client) -> String {
    let task = client.say(None, "hello").await;
    task["id"].as_str().expect("an id").to_owned()
}

/// Start `/nap <ms>` in `task` without waiting for it; return once the
/// plugin has logged that the nap began.
///
/// (Each send counts against the rate limit of the test's one address:
/// tests send as few messages as they can.)
async fn start_nap(
    server: &PluginServer,
    client: &Client,
    task: &str,
    ms: u64,
) -> tokio::task::JoinHandle<Value> {
    let running = {
        let client = client.clone();
        let message = text_message(Some(task), &format!("/nap {ms}"));
        tokio::spawn(async move { client.rpc("SendMessage", json!({"message": message})).await })
    };
    server
        .wait_for_log(&format!("napping {ms} ms in task {task}"), 1)
        .await;
    running
}

#[tokio::test(flavor = "multi_thread")]
async fn a_call_blocked_in_a_wasi_sleep_is_cut_at_its_deadline_and_the_task_goes_on() {
    let folder = sleeper(500);
    let server = PluginServer::start(DEFAULT_CONFIG, folder.path());
    let alice = server.client("alice");
    let id = conversation(&alice).await;

    let started = Instant::now();
    let task = alice.say(Some(&id), "/nap 30000").await;
    let took = started.elapsed();
    assert_eq!(status_text(&task), "command /nap timed out after 500 ms");
    // Without the timer around the call, the guest sleeps its 30 s and is
    // stopped only when it next runs guest code.
    assert!(
        took < Duration::from_secs(15),
        "cut at its deadline, not when the sleep ends: {took:?}"
    );
    assert_eq!(state(&task), "TASK_STATE_INPUT_REQUIRED");
    assert_eq!(
        status_text(&alice.say(Some(&id), "/nap 10").await),
        "Napped 10 ms.",
        "the task goes on, in a fresh instance"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn cancel_and_complete_cut_a_sleeping_call_and_give_its_instance_back() {
    let folder = sleeper(60_000);
    // One call at a time: the next nap runs only if the cut one's instance
    // was really given back.
    let config = format!("{DEFAULT_CONFIG}\n[plugins.instances]\nper_plugin = 1\nwait_ms = 5000\n");
    let server = PluginServer::start(&config, folder.path());
    let alice = server.client("alice");

    for how in ["cancel", "complete"] {
        let id = conversation(&alice).await;
        let running = start_nap(&server, &alice, &id, 60_000).await;
        let started = Instant::now();
        let ended = match how {
            "cancel" => alice.ok("CancelTask", json!({"id": id})).await,
            _ => alice.send_data(&id, complete_control()).await["result"]["task"].clone(),
        };
        let expected = match how {
            "cancel" => "TASK_STATE_CANCELED",
            _ => "TASK_STATE_COMPLETED",
        };
        assert_eq!(state(&ended), expected, "{how}: {ended}");
        let cut = running.await.expect("joined");
        assert!(
            started.elapsed() < Duration::from_secs(15),
            "{how} cut the nap: {:?}",
            started.elapsed()
        );
        assert_eq!(state(&cut["result"]["task"]), expected, "{how}: {cut}");
        assert_eq!(
            status_text(&alice.say(None, "/nap 10").await),
            "Napped 10 ms.",
            "{how}: the plugin's one instance is free again"
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_plugin_that_exhausts_its_quota_is_busy_while_status_keeps_answering() {
    let folder = sleeper(60_000);
    let config = format!("{DEFAULT_CONFIG}\n[plugins.instances]\nper_plugin = 3\nwait_ms = 300\n");
    let server = PluginServer::start(&config, folder.path());
    let alice = server.client("alice");
    let naps = start_naps(&server, &alice, 3, 60_000).await;

    let started = Instant::now();
    let busy = status_text(&alice.say(None, "/nap 10").await);
    assert_eq!(
        busy,
        "command /nap is busy: plugin `sleeper` already runs all 3 calls it may run at once \
         ([plugins.instances] per_plugin); waited 300 ms"
    );
    assert!(started.elapsed() < Duration::from_secs(10));
    let bob = server.client("bob");
    for _ in 0..5 {
        let status = status_text(&bob.say(None, "/status").await);
        assert!(status.contains("State: TASK_STATE"), "{status}");
    }
    assert!(
        naps.iter().all(|nap| !nap.is_finished()),
        "the naps still run"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn the_builtin_plugin_keeps_its_reserve_when_the_shared_instances_are_full() {
    let folder = sleeper(60_000);
    let config = format!(
        "{DEFAULT_CONFIG}\n[plugins.instances]\ntotal = 8\nbuiltin = 2\nper_plugin = 100\n\
         per_component = 100\nwait_ms = 300\n"
    );
    let server = PluginServer::start(&config, folder.path());
    let alice = server.client("alice");
    let naps = start_naps(&server, &alice, 6, 60_000).await;
    let busy = status_text(&alice.say(None, "/nap 10").await);
    assert_eq!(
        busy,
        "command /nap is busy: plugin `sleeper` finds no room for an instance: all 6 instance \
         slots shared by the plugins other than the built-in one ([plugins.instances] total - \
         builtin) are in use; waited 300 ms"
    );
    // The role policy and the body of /status run in the built-in plugin's
    // reserve.
    let bob = server.client("bob");
    for _ in 0..5 {
        let status = status_text(&bob.say(None, "/status").await);
        assert!(status.contains("State: TASK_STATE"), "{status}");
    }
    assert!(
        naps.iter().all(|nap| !nap.is_finished()),
        "the naps still run"
    );
}

/// Run `tiny-harness plugins check DIR`, failing the test if it does not
/// finish within a minute (a read that never ends).
fn check(dir: &Path) -> (bool, String) {
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_tiny-harness"))
        .args(["plugins", "check"])
        .arg(dir)
        .env(
            "TINY_HARNESS_CACHE_DIR",
            crate::support::component_cache_dir(),
        )
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("the binary runs");
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().expect("waits") {
            break status;
        }
        if started.elapsed() > Duration::from_secs(60) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("`plugins check` did not finish: a manifest read blocks");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let mut stdout = String::new();
    std::io::Read::read_to_string(&mut child.stdout.take().expect("stdout"), &mut stdout)
        .expect("read");
    (status.success(), stdout)
}

fn mkfifo(path: &Path) {
    let status = std::process::Command::new("mkfifo")
        .arg(path)
        .status()
        .expect("mkfifo runs");
    assert!(status.success(), "mkfifo {}", path.display());
}

#[test]
fn manifests_that_are_fifos_or_lead_to_dev_zero_are_refused_with_the_reason() {
    let folder = PluginsFolder::new().with_fixture("greeter");
    let plugin = |name: &str| {
        let dir = folder.path().join(name);
        std::fs::create_dir_all(&dir).expect("mkdir");
        dir
    };
    std::os::unix::fs::symlink("/dev/zero", plugin("zero").join("plugin.json")).expect("symlink");
    mkfifo(&plugin("fifo").join("plugin.json"));
    let hooks_fifo = plugin("hooks-fifo");
    write_json(
        &hooks_fifo.join("plugin.json"),
        &json!({"name": "hooks-fifo", "version": "1.0.0"}),
    );
    mkfifo(&hooks_fifo.join("hooks.json"));
    // A plugin whose component is a FIFO, and one whose commands.json
    // leads to /dev/zero.
    let component_fifo = plugin("component-fifo");
    write_json(
        &component_fifo.join("plugin.json"),
        &json!({"name": "component-fifo", "version": "1.0.0"}),
    );
    write_json(
        &component_fifo.join("commands.json"),
        &json!({"commands": [{"name": "stuck", "description": "x", "usage": "/stuck"}]}),
    );
    write_json(
        &component_fifo.join("hooks.json"),
        &json!({"hooks": [{"name": "stuck-body", "point": "command.invoked.in",
                           "command": "stuck", "component": "stuck.wasm"}]}),
    );
    mkfifo(&component_fifo.join("stuck.wasm"));
    let commands_zero = plugin("commands-zero");
    write_json(
        &commands_zero.join("plugin.json"),
        &json!({"name": "commands-zero", "version": "1.0.0"}),
    );
    std::os::unix::fs::symlink("/dev/zero", commands_zero.join("commands.json")).expect("symlink");

    let (ok, report) = check(folder.path());
    assert!(!ok, "{report}");
    for expected in [
        "REJECTED  zero",
        "plugin.json cannot be read: it resolves to /dev/zero, which leaves the plugin directory",
        "REJECTED  fifo",
        "plugin.json cannot be read: it is a FIFO, not a regular file",
        "skipped hooks.json: it is a FIFO, not a regular file",
        "component `stuck.wasm` cannot be read: it is a FIFO, not a regular file",
        "skipped commands.json: it resolves to /dev/zero, which leaves the plugin directory",
    ] {
        assert!(report.contains(expected), "`{expected}` in:\n{report}");
    }
    assert!(
        report.contains("loaded    greeter "),
        "the rest loads: {report}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_dev_zero_manifest_dropped_into_a_served_folder_is_rejected_and_the_reload_finishes() {
    let folder = PluginsFolder::new();
    let server = PluginServer::start(DEFAULT_CONFIG, folder.path());
    // Assembled beside the folder, then renamed in: one event, as a careful
    // installer would do it.
    let outside = tempfile::tempdir().expect("tempdir");
    let staged = outside.path().join("zero");
    std::fs::create_dir(&staged).expect("mkdir");
    std::os::unix::fs::symlink("/dev/zero", staged.join("plugin.json")).expect("symlink");
    let fifo = outside.path().join("fifo");
    std::fs::create_dir(&fifo).expect("mkdir");
    mkfifo(&fifo.join("plugin.json"));
    std::fs::rename(&staged, folder.path().join("zero")).expect("rename");
    std::fs::rename(&fifo, folder.path().join("fifo")).expect("rename");
    folder.add_fixture("greeter");

    let rejected = server
        .wait_for_log(
            "plugin zero rejected: plugin.json cannot be read: it resolves to /dev/zero",
            1,
        )
        .await;
    assert!(!rejected.is_empty());
    server
        .wait_for_log(
            "plugin fifo rejected: plugin.json cannot be read: it is a FIFO",
            1,
        )
        .await;
    let alice = server.client("alice");
    let started = Instant::now();
    loop {
        let reply = status_text(&alice.say(None, "/greet Ada").await);
        if reply == "Hello, Ada!" {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "the reload never finished: {reply}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(status_text(&alice.say(None, "/status").await).contains("State: TASK_STATE"));
}

#[tokio::test(flavor = "multi_thread")]
async fn oversized_declarations_are_refused_and_never_reach_the_card() {
    let huge = "d".repeat(50 << 10);
    let arguments: Vec<Value> = (0..20)
        .map(|n| json!({"name": format!("a{n}"), "type": "string"}))
        .collect();
    let folder = PluginsFolder::new().with_fixture("greeter");
    let commands = folder.path().join("greeter/commands.json");
    let mut declared: Value =
        serde_json::from_str(&std::fs::read_to_string(&commands).expect("read")).expect("json");
    let greet = declared["commands"][0].clone();
    let variant = |name: &str, field: &str, value: Value| {
        let mut command = greet.clone();
        command["name"] = json!(name);
        command[field] = value;
        command
    };
    let list = declared["commands"].as_array_mut().expect("a list");
    list.push(variant("wordy", "description", json!(huge)));
    list.push(variant("long-usage", "usage", json!("u".repeat(300))));
    list.push(variant("many-args", "arguments", json!(arguments)));
    write_json(&commands, &declared);
    // A plugin declaring 65 commands, and one declaring 65 hooks.
    let crowded = folder.path().join("crowded");
    std::fs::create_dir(&crowded).expect("mkdir");
    write_json(
        &crowded.join("plugin.json"),
        &json!({"name": "crowded", "version": "1.0.0"}),
    );
    let many: Vec<Value> = (0..65)
        .map(|n| json!({"name": format!("c{n}"), "description": "x", "usage": "/x"}))
        .collect();
    write_json(&crowded.join("commands.json"), &json!({"commands": many}));
    let hooks: Vec<Value> = (0..65)
        .map(|n| json!({"name": format!("h{n}"), "point": "command.invoked.pre", "url": "http://127.0.0.1:9/"}))
        .collect();
    write_json(&crowded.join("hooks.json"), &json!({"hooks": hooks}));

    let (ok, report) = check(folder.path());
    assert!(!ok, "{report}");
    for expected in [
        "skipped command /wordy: its description is 51200 bytes, more than the 1024 allowed ([plugins.declarations] description_bytes)",
        "skipped command /long-usage: its usage is 300 bytes, more than the 256 allowed ([plugins.declarations] usage_bytes)",
        "skipped command /many-args: it declares 20 arguments, more than the 16 allowed ([plugins.declarations] arguments)",
        "skipped commands.json: declares 65 commands, more than the 64 a plugin may ([plugins.declarations] commands)",
        "skipped hooks.json: declares 65 hooks, more than the 64 a plugin may ([plugins.declarations] hooks)",
    ] {
        assert!(report.contains(expected), "`{expected}` in:\n{report}");
    }

    let server = PluginServer::start(DEFAULT_CONFIG, folder.path());
    let card = crate::support::http()
        .get(format!("{}/.well-known/agent-card.json", server.base()))
        .send()
        .await
        .expect("card")
        .text()
        .await
        .expect("text");
    assert!(card.contains("\"greet\""), "the rest is served");
    assert!(!card.contains("wordy") && !card.contains("ddddddddddddddddd"));
    assert!(
        card.len() < 64 << 10,
        "the card stays small: {} bytes",
        card.len()
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_log_flood_is_cut_at_its_budget_with_one_notice_per_call() {
    let folder = PluginsFolder::new().with_fixture("flooder");
    // A slow refill, so what the second call gets is what the first left.
    let config = format!(
        "{DEFAULT_CONFIG}\n[plugins.logs]\nlines_per_call = 100\nburst = 150\nlines_per_second = 1\n"
    );
    let server = PluginServer::start(&config, folder.path());
    let alice = server.client("alice");

    assert_eq!(
        status_text(&alice.say(None, "/flood 5000").await),
        "Flooded 5000 lines."
    );
    let notices = server.wait_for_log("dropped", 1).await;
    assert_eq!(notices.len(), 1, "one notice for the call: {notices:#?}");
    assert!(
        notices[0].contains("plugin flooder: dropped 4900 log line(s)")
            && notices[0].contains("the budget is 100 lines and 65536 bytes per call"),
        "{notices:#?}"
    );
    assert_eq!(
        server.log_lines("flood line").len(),
        100,
        "the call's budget"
    );

    // The second call finds the plugin's rate nearly spent: 50 lines left of
    // the burst, plus one a second since.
    let started = Instant::now();
    alice.say(None, "/flood 5000").await;
    let notices = server.wait_for_log("dropped", 2).await;
    let written = server.log_lines("flood line").len() - 100;
    let slack = started.elapsed().as_secs() as usize + 2;
    assert!(
        (50..=50 + slack).contains(&written),
        "the plugin's rate: {written} lines"
    );
    assert!(
        notices[1].contains(&format!("dropped {} log line(s)", 5000 - written)),
        "{notices:#?}"
    );
}
