//! Sandbox grants (issue 8, item 4), through the real binary: a component
//! reaches what the README's sandbox section says, line by line, and real
//! clocks, real randomness and instance reuse across conversations only when
//! its plugin.json asks for them and the operator grants them.
//!
//! The `probe` fixture calls each WASI interface and answers with what it
//! saw (its reply's data); it asks for `clocks` and `random`.

use std::time::SystemTime;

use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use crate::plugin_server::PluginServer;
use crate::server::support::{Client, DEFAULT_CONFIG, admin_config, status_text};
use crate::support::PluginsFolder;

/// 2000-01-01T00:00:00Z, where the sandbox's wall clock starts.
const SANDBOX_EPOCH_SECS: u64 = 946_684_800;

/// One hour, where the sandbox's monotonic clock starts.
const SANDBOX_MONOTONIC_START_NS: u64 = 3_600_000_000_000;

/// `/probe` in a new conversation (so a fresh instance); its data.
async fn probe(client: &Client) -> Value {
    probe_with(client, "/probe").await
}

async fn probe_with(client: &Client, command: &str) -> Value {
    data_of(&client.say(None, command).await)
}

/// The data part of a task's status message.
fn data_of(task: &Value) -> Value {
    task["status"]["message"]["parts"]
        .as_array()
        .and_then(|parts| parts.iter().find_map(|part| part.get("data")))
        .cloned()
        .unwrap_or_else(|| panic!("the reply has data: {task}"))
}

fn number(data: &Value, key: &str) -> u64 {
    data[key]
        .as_u64()
        .unwrap_or_else(|| panic!("{key} is a number: {data}"))
}

fn text<'a>(data: &'a Value, key: &str) -> &'a str {
    data[key]
        .as_str()
        .unwrap_or_else(|| panic!("{key} is a string: {data}"))
}

/// The probe, and a copy of it under another name (to tell per-plugin
/// seeds apart).
fn probes() -> PluginsFolder {
    let folder = PluginsFolder::new().with_fixture("probe");
    let twin = folder.path().join("probe-twin");
    std::fs::create_dir_all(&twin).expect("mkdir");
    std::fs::copy(
        folder.path().join("probe/probe.wasm"),
        twin.join("probe.wasm"),
    )
    .expect("copy");
    for (file, contents) in [
        (
            "plugin.json",
            json!({"name": "probe-twin", "version": "1.0.0",
                   "capabilities": {"clocks": true, "random": true}}),
        ),
        (
            "commands.json",
            json!({"commands": [{"name": "probe-twin", "description": "The probe", "usage": "/probe-twin"}]}),
        ),
        (
            "hooks.json",
            json!({"hooks": [{"name": "body", "point": "command.invoked.in",
                              "command": "probe-twin", "component": "probe.wasm"}]}),
        ),
    ] {
        std::fs::write(twin.join(file), contents.to_string()).expect("write");
    }
    folder
}

/// Each line of the README's "What a component can reach" table, checked
/// on a plugin that asks for clocks and randomness and is granted nothing.
#[tokio::test(flavor = "multi_thread")]
async fn an_ungranted_component_reaches_exactly_what_the_readme_says() {
    let folder = probes();
    let server = PluginServer::start(DEFAULT_CONFIG, folder.path());
    let alice = server.client("alice");
    let first = probe(&alice).await;
    let second = probe(&alice).await;

    // wasi:clocks/wall-clock: 2000-01-01T00:00:00Z plus the time waited.
    assert_eq!(
        number(&first, "wall_seconds"),
        SANDBOX_EPOCH_SECS,
        "{first}"
    );
    assert_eq!(number(&first, "wall_nanoseconds"), 0, "{first}");
    assert_eq!(number(&first, "wall_after_sleep"), SANDBOX_EPOCH_SECS);

    // wasi:clocks/monotonic-clock: starts at one hour, moves by exactly what
    // the guest slept, and not at all while it computes.
    let start = SANDBOX_MONOTONIC_START_NS;
    let nap = number(&first, "nap_nanoseconds");
    assert_eq!(number(&first, "monotonic_start"), start, "{first}");
    assert_eq!(
        number(&first, "monotonic_after_sleep"),
        start + nap,
        "{first}"
    );
    assert_eq!(
        number(&first, "monotonic_after_work"),
        start + nap,
        "{first}"
    );

    // wasi:random/*: deterministic per plugin: a fresh instance reads the
    // same values, another plugin other ones; the insecure seed is the
    // documented hash of the plugin's name.
    for key in ["random", "random_u64", "insecure", "insecure_seed"] {
        assert_eq!(first[key], second[key], "{key}: {first} / {second}");
    }
    let twin = &probe_with(&alice, "/probe-twin").await;
    for key in ["random", "insecure", "insecure_seed"] {
        assert_ne!(first[key], twin[key], "{key} differs by plugin: {twin}");
    }
    let seed: [u8; 32] = Sha256::digest(b"tiny-harness/insecure-seed/probe").into();
    let expected = u128::from_le_bytes(seed[..16].try_into().expect("16 bytes"));
    assert_eq!(text(&first, "insecure_seed"), format!("{expected:032x}"));

    // wasi:cli/environment: no variables, no arguments, no working directory.
    assert_eq!(number(&first, "environment"), 0);
    assert_eq!(number(&first, "arguments"), 0);
    assert_eq!(text(&first, "cwd"), "None");
    // wasi:filesystem: no preopened directories, so no file can be opened.
    assert_eq!(number(&first, "preopens"), 0);
    assert!(text(&first, "std_read_dir").starts_with("error"), "{first}");
    // wasi:sockets: TCP and UDP refused, name lookup refused.
    assert!(text(&first, "tcp").contains("access-denied"), "{first}");
    assert!(text(&first, "udp").contains("access-denied"), "{first}");
    assert!(text(&first, "lookup").starts_with("error"), "{first}");
    // wasi:cli/stdin is empty; stdout and stderr are accepted and never
    // reach the harness's output (stderr is kept only to explain a trap,
    // see plugin_host's trapper tests); no stream is a terminal.
    assert_eq!(text(&first, "stdin"), "error StreamError::Closed");
    assert_eq!(text(&first, "stdout"), "ok ()");
    assert_eq!(text(&first, "stderr"), "ok ()");
    assert_eq!(text(&first, "terminals"), "[false, false, false]");
    assert!(server.log_lines("probe was here").is_empty());
    assert!(server.log_lines("probe stderr").is_empty());
    // wasi:cli/exit ends the call, as a failure the sender is told about.
    let exited = status_text(&alice.say(None, "/probe-exit").await);
    assert_eq!(
        exited,
        "command /probe-exit failed: the plugin called exit (status 0) instead of answering"
    );
    // One random request is capped at 1 MiB.
    let big = status_text(&alice.say(None, "/probe-big-random").await);
    assert!(
        big.starts_with("command /probe-big-random failed")
            && big.contains("requested len 2097152 exceeds limit 1048576"),
        "{big}"
    );
    // tiny-harness:plugin/host: the plugin's configuration, and the log.
    assert_eq!(
        text(&first, "config_greeting"),
        r#"Some("hello from plugin.json")"#
    );
    server.wait_for_log("probe: logging works", 2).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_granted_component_reads_real_time_and_real_randomness() {
    let folder = probes();
    let config =
        format!("{DEFAULT_CONFIG}\n[plugins.grants.probe]\nclocks = true\nrandom = true\n");
    let server = PluginServer::start(&config, folder.path());
    let alice = server.client("alice");
    let first = probe(&alice).await;
    let second = probe(&alice).await;

    let now = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .expect("after 1970")
        .as_secs();
    let wall = number(&first, "wall_seconds");
    assert!(now.abs_diff(wall) < 600, "the real time: {wall} vs {now}");
    let nap = number(&first, "nap_nanoseconds");
    let slept = number(&first, "monotonic_after_sleep") - number(&first, "monotonic_start");
    assert!(
        slept >= nap,
        "a real sleep takes at least its time: {first}"
    );
    assert!(
        number(&first, "monotonic_after_work") > number(&first, "monotonic_after_sleep"),
        "real work takes real time: {first}"
    );
    for key in ["random", "random_u64", "insecure", "insecure_seed"] {
        assert_ne!(first[key], second[key], "{key} is really random");
    }

    // The twin asked for the same and was granted nothing.
    let twin = &probe_with(&alice, "/probe-twin").await;
    assert_eq!(number(twin, "wall_seconds"), SANDBOX_EPOCH_SECS, "{twin}");
}

#[tokio::test(flavor = "multi_thread")]
async fn stateless_reuse_across_conversations_needs_a_grant() {
    let folder = PluginsFolder::new().with_fixture("counter");
    std::fs::write(
        folder.path().join("counter/plugin.json"),
        json!({"name": "counter", "version": "0.1.0", "instances": {"reuse": "stateless"}})
            .to_string(),
    )
    .expect("write plugin.json");
    // `/count` answers how many calls its instance served; each `say` is a
    // new conversation.
    let counts = async |server: &PluginServer| {
        let alice = server.client("alice");
        let mut counts = Vec::new();
        for _ in 0..3 {
            counts.push(status_text(&alice.say(None, "/count").await));
        }
        counts
    };
    let ungranted = PluginServer::start(DEFAULT_CONFIG, folder.path());
    assert_eq!(counts(&ungranted).await, ["1", "1", "1"]);
    let note = ungranted
        .wait_for_log("its `stateless` instances run `per-task` instead", 1)
        .await;
    assert!(note[0].contains("counter"), "{note:?}");
    drop(ungranted);

    let config = format!("{DEFAULT_CONFIG}\n[plugins.grants.counter]\nreuse_across_tasks = true\n");
    let granted = PluginServer::start(&config, folder.path());
    assert_eq!(counts(&granted).await, ["1", "2", "3"]);
}

#[tokio::test(flavor = "multi_thread")]
async fn the_report_plugins_and_the_log_show_what_was_asked_and_granted() {
    let folder = probes();
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).expect("tempdir");
    let config_path = dir.path().join("tiny-harness.toml");
    // `root` is an admin, with a token: `/plugins` is for admins.
    let config = format!(
        "{}\n[plugins.grants.probe]\nclocks = true\n",
        admin_config()
    );
    std::fs::write(&config_path, &config).expect("write config");

    // The load report of `plugins check`.
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_tiny-harness"))
        .args(["plugins", "check", "--config"])
        .arg(&config_path)
        .arg(folder.path())
        .env(
            "TINY_HARNESS_CACHE_DIR",
            crate::support::component_cache_dir(),
        )
        .output()
        .expect("the binary runs");
    let report = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "notes are not problems: {report}");
    let section = |name: &str| {
        let start = report
            .find(&format!("loaded    {name} "))
            .unwrap_or_else(|| panic!("{name} loaded: {report}"));
        let rest = &report[start..];
        rest[..rest[1..]
            .find("loaded    ")
            .map_or(rest.len(), |end| end + 1)]
            .to_owned()
    };
    assert!(
        section("builtin").contains("capabilities: asked nothing; granted nothing"),
        "the built-in plugin needs nothing: {report}"
    );
    let probe = section("probe");
    assert!(
        probe.contains("capabilities: asked clocks, random; granted clocks; not granted random"),
        "{probe}"
    );
    assert!(
        probe.contains(
            "note: random not granted: it reads random bytes from streams seeded by its name"
        ),
        "{probe}"
    );
    assert!(
        probe.contains("grant it with [plugins.grants.probe] random = true"),
        "{probe}"
    );

    // `/plugins`, for an admin.
    let server = PluginServer::start(&config, folder.path());
    let root = server.client("root");
    let task = root.say(None, "/plugins").await;
    let text = status_text(&task);
    assert!(
        text.contains("capabilities: asked clocks, random; granted clocks; not granted random"),
        "{text}"
    );
    let plugins = &data_of(&task)["plugins"];
    let probe = plugins
        .as_array()
        .and_then(|plugins| plugins.iter().find(|p| p["name"] == "probe"))
        .unwrap_or_else(|| panic!("probe in {plugins}"));
    assert_eq!(
        probe["capabilities"],
        json!({"asked": ["clocks", "random"], "granted": ["clocks"], "denied": ["random"]})
    );

    // The log.
    let loaded = server.wait_for_log("plugin loaded", 3).await;
    assert!(
        loaded.iter().any(|line| line.contains("plugin=probe ")
            && line.contains("asked clocks, random; granted clocks; not granted random")),
        "{loaded:#?}"
    );
    assert!(
        loaded
            .iter()
            .any(|line| line.contains("plugin=builtin") && line.contains("asked nothing")),
        "{loaded:#?}"
    );
}
