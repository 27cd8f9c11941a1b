//! Issue 8, items 5, 6 and 8: roles are enforced by the host, whatever the
//! plugins folder holds; an executor at a phase that never runs is refused
//! at load; a participant id granted by a task event follows the id rule.

use std::path::Path;
use std::process::Command;

use serde_json::{Value, json};

use crate::server::support::{Server, status_text};
use crate::support::PluginsFolder;

/// No admins: nobody here is more than a reporter.
const CONFIG: &str = r#"
[models]
default = "offline-echo"
selectable = ["offline-echo", "offline-large"]
"#;

/// A `builtin` plugin of the operator's own that tries to widen rights: no
/// role policy hook, `/model` for reporters only (so the built-in policy,
/// were it the only guard, would be gone), `/plugins` declared again for
/// everyone, and an executor at a phase that never runs.
fn replaced_builtin(folder: &PluginsFolder) {
    let builtin = Path::new(env!("CARGO_MANIFEST_DIR")).join("../plugins/builtin/builtin.wasm");
    let target = folder.path().join("builtin");
    std::fs::create_dir_all(&target).expect("mkdir");
    std::fs::copy(&builtin, target.join("builtin.wasm")).expect("copy the built-in component");
    let write = |file: &str, value: Value| {
        std::fs::write(target.join(file), value.to_string()).expect("write a manifest");
    };
    write(
        "plugin.json",
        json!({ "name": "builtin", "version": "9.9.9", "description": "operator's own" }),
    );
    write(
        "commands.json",
        json!({ "commands": [
            { "name": "model", "description": "m", "usage": "/model [name]",
              "arguments": [{ "name": "name", "type": "string", "required": false }],
              "roles": ["reporter"] },
            { "name": "plugins", "description": "p", "usage": "/plugins",
              "roles": ["reporter", "assignee"] }
        ] }),
    );
    write(
        "hooks.json",
        json!({ "hooks": [
            { "name": "model-body", "point": "command.invoked.in", "command": "model",
              "component": "builtin.wasm" },
            { "name": "never", "point": "task.created.in", "component": "builtin.wasm" }
        ] }),
    );
}

fn grant(id: &str, role: &str) -> Value {
    json!({ "kind": "task", "payload": { "participants": [{ "id": id, "role": role }] } })
}

#[tokio::test(flavor = "multi_thread")]
async fn a_replaced_builtin_cannot_widen_anyones_rights() {
    let folder = PluginsFolder::new();
    replaced_builtin(&folder);
    let server = Server::start(CONFIG, Some(folder.path()));
    let (alice, bob, carol) = (
        server.client("alice"),
        server.client("bob"),
        server.client("carol"),
    );
    let task = alice.say(None, "hello").await;
    let id = task["id"].as_str().expect("an id").to_owned();
    alice.send_data(&id, grant("bob", "watcher")).await;
    alice.send_data(&id, grant("carol", "assignee")).await;

    // The operator's /model is for reporters only and no policy hook
    // guards it: the host refuses the assignee.
    let refused = carol.say(Some(&id), "/model offline-large").await;
    let text = status_text(&refused);
    assert!(
        text.starts_with("/model is for reporter; carol is an assignee"),
        "{text}"
    );
    assert_eq!(refused["metadata"]["sub_state"], "awaiting-next-message");
    // A watcher runs no command at all.
    let message = crate::server::support::text_message(Some(&id), "/model offline-large");
    let watcher = bob.rpc("SendMessage", json!({ "message": message })).await;
    assert_eq!(
        watcher["error"]["data"][0]["reason"], "ROLE_REFUSED",
        "{watcher}"
    );
    // /plugins stays the host's, admins only: the folder cannot redeclare it.
    let plugins = alice.say(Some(&id), "/plugins").await;
    let text = status_text(&plugins);
    assert!(text.starts_with("/plugins is for admin"), "{text}");
    // The reporter's /model works: the replaced body does run.
    let switched = alice.say(Some(&id), "/model offline-large").await;
    assert!(!status_text(&switched).contains("is for"), "{switched}");
}

#[test]
fn an_executor_at_a_phase_that_never_runs_is_refused_at_load() {
    let folder = PluginsFolder::new();
    replaced_builtin(&folder);
    let output = Command::new(env!("CARGO_BIN_EXE_tiny-harness"))
        .args(["plugins", "check", &folder.path().display().to_string()])
        .env(
            "TINY_HARNESS_CACHE_DIR",
            crate::support::component_cache_dir(),
        )
        .output()
        .expect("the binary runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        !output.status.success(),
        "a skipped part fails the check: {stdout}"
    );
    assert!(
        stdout.contains("hook `never`")
            && stdout.contains("is at `task.created.in`, where no executor ever runs")
            && stdout
                .contains("task.created runs executors at task.created.pre, task.created.post"),
        "{stdout}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_granted_participant_id_follows_the_id_rule() {
    let server = Server::start(CONFIG, None);
    let alice = server.client("alice");
    let task = alice.say(None, "hello").await;
    let id = task["id"].as_str().expect("an id").to_owned();
    for bad in [" bob\n".to_owned(), "x".repeat(5000)] {
        let message = crate::server::support::data_message(&id, grant(&bad, "watcher"));
        let answer = alice
            .rpc("SendMessage", json!({ "message": message }))
            .await;
        assert_eq!(answer["error"]["code"], -32602, "{answer}");
        let text = answer["error"]["message"].as_str().unwrap_or("");
        assert!(text.contains("participants[0].id"), "{text}");
    }
    // Nothing changed: alice is still the only participant.
    let task = alice.get_task(&id).await;
    assert_eq!(task["history"].as_array().map(Vec::len), Some(2), "{task}");
}
