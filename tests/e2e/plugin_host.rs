//! The plugin host through real components: built-in commands, argument
//! validation, replacing a body, new commands, native executors, hostile
//! plugins, and the load report.

use std::sync::Arc;

use serde_json::json;
use tiny_harness::commands::{
    CommandFailure, CommandRegistry, CommandSpec, Effect, NativeBody, Outcome,
};
use tiny_harness::hooks::{
    Abort, AbortReason, Decision, ExecutorKind, HookEntry, HookPoint, NativeExecutor, Operation,
    Phase,
};
use tiny_harness::plugins::{PluginLoader, PluginStatus};
use tiny_harness::task::{Participant, Role};

use crate::support::{PluginsFolder, runtime, send, send_as};

fn builtin_only() -> CommandRegistry {
    let loaded = PluginsFolder::new().load();
    assert!(!loaded.report.has_problems(), "{}", loaded.report);
    loaded.registry
}

#[tokio::test]
async fn the_embedded_builtin_plugin_declares_the_four_commands() {
    let registry = builtin_only();
    let names: Vec<_> = registry.commands().map(|c| c.spec.name.as_str()).collect();
    assert_eq!(names, ["effort", "model", "status", "sub-task"]);
    for command in registry.commands() {
        assert_eq!(command.origin, "builtin");
        assert!(!command.spec.description.is_empty());
        assert!(
            command
                .spec
                .usage
                .starts_with(&format!("/{}", command.spec.name))
        );
    }
}

#[tokio::test]
async fn model_shows_the_current_and_selectable_models_or_asks_to_switch() {
    let registry = builtin_only();
    let shown = send(&registry, "/model").await.expect("shows");
    assert!(
        shown.reply.text.contains("offline-echo"),
        "{}",
        shown.reply.text
    );
    assert!(
        shown.reply.text.contains("offline-large"),
        "{}",
        shown.reply.text
    );
    assert!(shown.effects.is_empty());
    let data = shown.reply.data.expect("structured data");
    assert_eq!(data["model"], "offline-echo");
    assert_eq!(data["selectable"], json!(["offline-echo", "offline-large"]));

    let switched = send(&registry, "/model offline-large")
        .await
        .expect("switches");
    assert_eq!(
        switched.effects,
        vec![Effect::SetModel("offline-large".into())]
    );
    assert!(switched.reply.text.contains("offline-large"));
}

#[tokio::test]
async fn effort_takes_low_medium_or_high() {
    let registry = builtin_only();
    let shown = send(&registry, "/effort").await.expect("shows");
    assert!(shown.reply.text.contains("medium"), "{}", shown.reply.text);
    assert!(shown.effects.is_empty());
    for level in ["low", "medium", "high"] {
        let outcome = send(&registry, &format!("/effort {level}"))
            .await
            .expect("sets");
        assert_eq!(outcome.effects, vec![Effect::SetEffort(level.into())]);
    }
    let Err(CommandFailure::Usage(message)) = send(&registry, "/effort extreme").await else {
        panic!("an unknown level is a usage error");
    };
    assert!(message.contains("low, medium, high"), "{message}");
    assert!(
        message.contains("usage: /effort [low|medium|high]"),
        "{message}"
    );
}

#[tokio::test]
async fn sub_task_spawns_a_child_with_the_whole_goal() {
    let registry = builtin_only();
    let outcome = send(&registry, "/sub-task write the   release notes")
        .await
        .expect("spawns");
    assert_eq!(
        outcome.effects,
        vec![Effect::SpawnSubtask("write the   release notes".into())]
    );
    let Err(CommandFailure::Usage(message)) = send(&registry, "/sub-task").await else {
        panic!("a goal is required");
    };
    assert_eq!(message, "missing argument <goal>; usage: /sub-task <goal>");
}

#[tokio::test]
async fn status_reports_the_conversation() {
    let registry = builtin_only();
    let outcome = send(&registry, "/status").await.expect("reports");
    let text = &outcome.reply.text;
    for expected in [
        "TASK_STATE_INPUT_REQUIRED",
        "awaiting-next-message",
        "offline-echo",
        "medium",
        "alice",
    ] {
        assert!(text.contains(expected), "`{expected}` missing from {text}");
    }
    let data = outcome.reply.data.expect("structured data");
    assert_eq!(data["state"], "TASK_STATE_INPUT_REQUIRED");
    assert_eq!(data["participants"][0]["id"], "alice");
    assert!(outcome.effects.is_empty());
    let Err(CommandFailure::Usage(message)) = send(&registry, "/status now").await else {
        panic!("/status takes no argument");
    };
    assert!(message.contains("unexpected argument `now`"), "{message}");
}

#[tokio::test]
async fn the_builtin_role_policy_refuses_watchers_and_undeclared_roles() {
    let registry = builtin_only();
    let watcher = Participant {
        id: "bob".into(),
        role: Role::Watcher,
    };
    let Err(CommandFailure::Refused(message)) = send_as(&registry, watcher, "/status").await else {
        panic!("watchers cannot run commands");
    };
    assert!(message.contains("bob"), "{message}");
    let admin = Participant {
        id: "root".into(),
        role: Role::Admin,
    };
    send_as(&registry, admin, "/status")
        .await
        .expect("admins may");
    let assignee = Participant {
        id: "carol".into(),
        role: Role::Assignee,
    };
    send_as(&registry, assignee, "/effort low")
        .await
        .expect("assignees may");
}

#[tokio::test]
async fn only_exact_registered_commands_are_commands() {
    let registry = builtin_only();
    assert!(registry.parse("/status").is_some());
    assert!(registry.parse("/model  fast").is_some());
    for ordinary in [
        "/unknown",
        "status",
        " /status",
        "please /status",
        "/statusx",
        "/",
        "",
    ] {
        assert!(
            registry.parse(ordinary).is_none(),
            "`{ordinary}` is an ordinary message"
        );
    }
}

#[tokio::test]
async fn a_plugin_replaces_the_status_body_without_rebuilding_the_harness() {
    let loaded = PluginsFolder::new().with_fixture("status-override").load();
    assert!(!loaded.report.has_problems(), "{}", loaded.report);
    let outcome = send(&loaded.registry, "/status").await.expect("runs");
    assert!(
        outcome.reply.text.starts_with("custom status:"),
        "the lower-priority body wins: {}",
        outcome.reply.text
    );
    assert!(outcome.reply.text.contains("TASK_STATE_INPUT_REQUIRED"));
    // The built-in body is still registered behind it, and still declared by
    // the built-in plugin.
    let bodies: Vec<_> = loaded
        .registry
        .hooks()
        .entries(
            HookPoint::new(Operation::CommandInvoked, Phase::In),
            Some("status"),
        )
        .map(|entry| (entry.qualified_name(), entry.priority))
        .collect();
    assert_eq!(
        bodies,
        [
            ("status-override/status-override".to_owned(), 500),
            ("builtin/status-body".to_owned(), 1000)
        ]
    );
    assert_eq!(
        loaded.registry.get("status").expect("declared").origin,
        "builtin"
    );
}

#[tokio::test]
async fn a_plugin_adds_a_new_command() {
    let loaded = PluginsFolder::new().with_fixture("greeter").load();
    assert!(!loaded.report.has_problems(), "{}", loaded.report);
    let outcome = send(&loaded.registry, "/greet Ada").await.expect("greets");
    assert_eq!(outcome.reply.text, "Hello, Ada!");
    let Err(CommandFailure::Usage(message)) = send(&loaded.registry, "/greet").await else {
        panic!("a name is required");
    };
    assert_eq!(message, "missing argument <name>; usage: /greet <name>");
    // The built-ins still work next to it.
    send(&loaded.registry, "/status").await.expect("status");
}

#[tokio::test]
async fn an_infinite_loop_is_stopped_at_its_deadline_and_the_harness_keeps_serving() {
    let loaded = PluginsFolder::new().with_fixture("looper").load();
    assert!(!loaded.report.has_problems(), "{}", loaded.report);
    let started = std::time::Instant::now();
    let Err(CommandFailure::Failed(message)) = send(&loaded.registry, "/spin").await else {
        panic!("the loop must be stopped");
    };
    assert_eq!(message, "command /spin timed out after 200 ms");
    assert!(started.elapsed() < std::time::Duration::from_secs(5));
    send(&loaded.registry, "/status")
        .await
        .expect("the next command works");
    // And the same command again: a trapped store is never reused.
    let again = send(&loaded.registry, "/spin").await;
    assert!(matches!(again, Err(CommandFailure::Failed(m)) if m.contains("timed out")));
}

#[tokio::test]
async fn a_memory_bomb_is_stopped_at_its_cap() {
    let loaded = PluginsFolder::new().with_fixture("memory-hog").load();
    assert!(!loaded.report.has_problems(), "{}", loaded.report);
    let Err(CommandFailure::Failed(message)) = send(&loaded.registry, "/hog").await else {
        panic!("the allocation must be stopped");
    };
    assert_eq!(
        message,
        format!("command /hog ran out of memory (limit {} bytes)", 64 << 20)
    );
    send(&loaded.registry, "/status")
        .await
        .expect("the next command works");
}

#[tokio::test]
async fn a_trap_is_reported_with_what_the_plugin_said() {
    let loaded = PluginsFolder::new().with_fixture("trapper").load();
    assert!(!loaded.report.has_problems(), "{}", loaded.report);
    let Err(CommandFailure::Failed(message)) = send(&loaded.registry, "/crash").await else {
        panic!("the trap must be reported");
    };
    assert!(message.starts_with("command /crash trapped:"), "{message}");
    assert!(
        message.contains("panicked"),
        "the panic message is kept: {message}"
    );
    send(&loaded.registry, "/status")
        .await
        .expect("the next command works");
}

#[tokio::test]
async fn a_component_built_against_another_contract_version_is_refused_by_name() {
    let loaded = PluginsFolder::new().with_fixture("old-abi").load();
    let plugin = loaded.report.plugin("old-abi").expect("reported");
    let reasons: Vec<_> = plugin.skipped.iter().map(|s| s.reason.as_str()).collect();
    assert!(
        reasons
            .iter()
            .any(|reason| reason.contains("component `old-abi.wasm`")
                && reason.contains("tiny-harness:plugin@0.0.9")
                && reason.contains("tiny-harness:plugin@0.1.0")),
        "{reasons:?}"
    );
    assert!(
        loaded.registry.parse("/old").is_none(),
        "its command is not registered"
    );
    send(&loaded.registry, "/status")
        .await
        .expect("the rest still loads");
}

#[tokio::test]
async fn manifests_escaping_their_root_invalid_or_conflicting_are_reported() {
    let folder = PluginsFolder::new()
        .with_manifest_fixture("escape")
        .with_manifest_fixture("bad-plugin-json")
        .with_manifest_fixture("duplicate-command");
    let loaded = folder.load();
    let report = &loaded.report;
    assert!(report.has_problems());

    let escape = report.plugin("escape").expect("reported");
    assert!(
        escape
            .skipped
            .iter()
            .any(|s| s.what == "hook `escape-body`"
                && s.reason.contains("leaves the plugin directory")),
        "{report}"
    );
    let bad = report
        .plugin("bad-plugin-json")
        .expect("reported by folder name");
    assert!(
        matches!(&bad.status, PluginStatus::Rejected { reason } if reason.contains("plugin.json is invalid")),
        "{report}"
    );
    let duplicate = report.plugin("duplicate-command").expect("reported");
    assert!(
        duplicate.skipped.iter().any(|s| s
            .reason
            .contains("declared by both `builtin` and `duplicate-command`")),
        "{report}"
    );
    assert_eq!(
        loaded.registry.get("status").expect("kept").origin,
        "builtin"
    );
    send(&loaded.registry, "/status")
        .await
        .expect("the built-in is not shadowed");
}

#[tokio::test]
async fn bad_entries_are_skipped_and_the_rest_of_the_plugin_loads() {
    let folder = PluginsFolder::new()
        .with_fixture("greeter")
        .with_plugin("no-manifest", &[("hooks.json", "{}")])
        .with_plugin(
            "sloppy",
            &[
                ("plugin.json", r#"{"name": "sloppy", "version": "1.0.0"}"#),
                (
                    "commands.json",
                    r#"{"commands": [{"name": "Bad Name", "description": "", "usage": ""},
                                     {"name": "fine", "description": "d", "usage": "/fine"}]}"#,
                ),
                (
                    "hooks.json",
                    r#"{"hooks": [
                        {"name": "a", "point": "command.invoked.sometime", "component": "x.wasm"},
                        {"name": "b", "point": "command.invoked.in", "command": "fine", "component": "missing.wasm"},
                        {"name": "c", "point": "command.invoked.in", "command": "nobody", "url": "http://127.0.0.1:9/"},
                        {"name": "d", "point": "command.invoked.in", "command": "fine", "url": "ftp://x/"},
                        {"name": "e", "point": "task.created.pre", "command": "fine", "url": "http://127.0.0.1:9/"}
                    ]}"#,
                ),
                ("junk.wasm", "not a component"),
            ],
        );
    let loaded = folder.load();
    let report = &loaded.report;
    let no_manifest = report.plugin("no-manifest").expect("reported");
    assert!(
        matches!(&no_manifest.status, PluginStatus::Rejected { reason } if reason == "plugin.json is missing")
    );
    let sloppy = report.plugin("sloppy").expect("reported");
    let reason_of = |what: &str| {
        sloppy
            .skipped
            .iter()
            .find(|s| s.what == what)
            .map(|s| s.reason.clone())
            .unwrap_or_else(|| panic!("{what} not skipped: {report}"))
    };
    assert!(reason_of("command /Bad Name").contains("a command name is"));
    assert!(reason_of("hook `a`").contains("unknown hook point"));
    assert!(reason_of("hook `b`").contains("does not exist"));
    assert!(reason_of("hook `c`").contains("no plugin declares"));
    assert!(reason_of("hook `d`").contains("must be http or https"));
    assert!(reason_of("hook `e`").contains("neither command.invoked nor tool.invoked"));
    assert!(reason_of("command /fine").contains("not registered"));
    // The good plugin next to them is untouched.
    assert_eq!(
        send(&loaded.registry, "/greet Bo")
            .await
            .expect("greets")
            .reply
            .text,
        "Hello, Bo!"
    );
}

#[tokio::test]
async fn a_broken_component_file_is_skipped_with_its_reason() {
    let loaded = PluginsFolder::new()
        .with_fixture("greeter")
        .with_plugin("broken", &[])
        .load();
    assert!(loaded.report.plugin("broken").is_some());
    // Overwrite greeter's component with garbage in a second folder.
    let folder = PluginsFolder::new().with_fixture("greeter");
    std::fs::write(folder.path().join("greeter/greeter.wasm"), b"\0asm garbage").expect("write");
    let loaded = folder.load();
    let greeter = loaded.report.plugin("greeter").expect("reported");
    assert!(
        greeter
            .skipped
            .iter()
            .any(|s| s.reason.contains("not a valid WebAssembly component")),
        "{}",
        loaded.report
    );
    assert!(loaded.registry.parse("/greet x").is_none());
}

#[tokio::test]
async fn code_registers_commands_and_native_executors() {
    let mut builder = CommandRegistry::builder();
    let spec: CommandSpec = serde_json::from_value(json!({
        "name": "ping", "description": "Answers pong", "usage": "/ping [word]",
        "arguments": [{"name": "word", "type": "string"}]
    }))
    .expect("spec");
    builder
        .register(
            spec,
            Arc::new(NativeBody(
                |invocation: &tiny_harness::commands::Invocation| {
                    Ok(Outcome::text(format!(
                        "pong {}",
                        invocation.argument("word").unwrap_or("")
                    )))
                },
            )),
        )
        .expect("registers");
    let loaded = PluginLoader::new(runtime()).load(None, builder);
    let registry = loaded.registry;
    assert_eq!(
        send(&registry, "/ping hi").await.expect("pongs").reply.text,
        "pong hi"
    );
    assert_eq!(registry.get("ping").expect("declared").origin, "native");
    send(&registry, "/status")
        .await
        .expect("the built-ins load too");

    // A native `pre` executor can tighten policy for every command.
    let mut builder = CommandRegistry::builder();
    builder
        .add_hook(HookEntry {
            name: "no-model-changes".into(),
            origin: "native".into(),
            point: HookPoint::new(Operation::CommandInvoked, Phase::Pre),
            command: None,
            priority: 50,
            kind: ExecutorKind::Native,
            source: "native".into(),
            executor: Arc::new(NativeExecutor::new(|_, context| {
                Ok(if context["command"]["name"] == "model" {
                    Decision::Abort(Abort {
                        reason: AbortReason::Policy,
                        message: "model changes are frozen".into(),
                    })
                } else {
                    Decision::Pass
                })
            })),
        })
        .expect("adds");
    let registry = PluginLoader::new(runtime()).load(None, builder).registry;
    let Err(CommandFailure::Refused(message)) = send(&registry, "/model x").await else {
        panic!("the native policy refuses");
    };
    assert_eq!(message, "model changes are frozen");
    send(&registry, "/status")
        .await
        .expect("other commands pass");
}

#[tokio::test]
async fn compiled_components_are_cached_on_disk_and_a_corrupt_cache_entry_is_recompiled() {
    use tiny_harness::plugins::wasm::{RuntimeConfig, WasmRuntime};
    let cache = tempfile::tempdir().expect("tempdir");
    let runtime = WasmRuntime::new(RuntimeConfig {
        cache_dir: Some(cache.path().to_owned()),
    })
    .expect("runtime");
    let folder = PluginsFolder::new().with_fixture("greeter");
    let load =
        || PluginLoader::new(runtime.clone()).load(Some(folder.path()), CommandRegistry::builder());
    load();
    let artifacts: Vec<_> = std::fs::read_dir(cache.path())
        .expect("cache dir exists")
        .map(|entry| entry.expect("entry").path())
        .collect();
    assert_eq!(artifacts.len(), 2, "builtin and greeter: {artifacts:?}");
    assert!(
        artifacts
            .iter()
            .all(|path| path.extension().is_some_and(|e| e == "cwasm"))
    );
    for artifact in &artifacts {
        std::fs::write(artifact, b"corrupt").expect("corrupt it");
    }
    let loaded = load();
    assert!(!loaded.report.has_problems(), "{}", loaded.report);
    assert_eq!(
        send(&loaded.registry, "/greet Cy")
            .await
            .expect("greets")
            .reply
            .text,
        "Hello, Cy!"
    );
    for artifact in &artifacts {
        assert!(std::fs::metadata(artifact).expect("rewritten").len() > 1000);
    }
}

/// Warm instance pools (plugin.json `instances`), through the `counter`
/// fixture: `/count` answers how many calls its instance has served, so a
/// fresh instance answers 1.
mod instance_reuse {
    use serde_json::{Value, json};
    use tiny_harness::commands::{CommandFailure, CommandRegistry, Outcome};
    use tiny_harness::plugins::PluginStatus;
    use tiny_harness::task::TaskView;

    use crate::support::{PluginsFolder, reporter};

    /// The counter fixture with plugin.json's `instances` (and `limits`, if
    /// given) replaced.
    fn counter(instances: Option<Value>, limits: Option<Value>) -> CommandRegistry {
        let folder = PluginsFolder::new().with_fixture("counter");
        let mut manifest = json!({"name": "counter", "version": "0.1.0"});
        if let Some(instances) = instances {
            manifest["instances"] = instances;
        }
        if let Some(limits) = limits {
            manifest["limits"] = limits;
        }
        std::fs::write(
            folder.path().join("counter/plugin.json"),
            manifest.to_string(),
        )
        .expect("write plugin.json");
        let loaded = folder.load();
        assert!(!loaded.report.has_problems(), "{}", loaded.report);
        loaded.registry
    }

    fn counter_with(instances: Value) -> CommandRegistry {
        counter(Some(instances), None)
    }

    /// Send `message` as the reporter of task `task`.
    async fn send_in(
        registry: &CommandRegistry,
        task: &str,
        message: &str,
    ) -> Result<Outcome, CommandFailure> {
        let mut view = TaskView::scratch("alice");
        view.id = task.to_owned();
        let call = registry
            .parse(message)
            .unwrap_or_else(|| panic!("`{message}` is not a registered command"));
        registry.invoke(call, reporter(), view).await
    }

    /// `/count` in task `task`: the calls its instance has served.
    async fn count(registry: &CommandRegistry, task: &str) -> u32 {
        let outcome = send_in(registry, task, "/count").await.expect("counts");
        outcome.reply.text.parse().expect("a number")
    }

    async fn counts(registry: &CommandRegistry, tasks: &[&str]) -> Vec<u32> {
        let mut counts = Vec::new();
        for task in tasks {
            counts.push(count(registry, task).await);
        }
        counts
    }

    #[tokio::test]
    async fn never_gives_every_call_a_fresh_instance() {
        let registry = counter_with(json!({"reuse": "never"}));
        assert_eq!(counts(&registry, &["a", "a", "b", "a"]).await, [1, 1, 1, 1]);
    }

    #[tokio::test]
    async fn by_default_a_task_reuses_its_own_instance_and_never_another_tasks() {
        for registry in [
            counter(None, None),
            counter_with(json!({"reuse": "per-task"})),
        ] {
            assert_eq!(
                counts(&registry, &["a", "a", "b", "a", "b", "c"]).await,
                [1, 2, 1, 3, 2, 1]
            );
        }
    }

    #[tokio::test]
    async fn stateless_instances_are_reused_across_tasks() {
        let registry = counter_with(json!({"reuse": "stateless"}));
        assert_eq!(counts(&registry, &["a", "b", "c", "a"]).await, [1, 2, 3, 4]);
    }

    #[tokio::test]
    async fn an_instance_is_discarded_after_max_invocations() {
        let registry = counter_with(json!({"reuse": "stateless", "max_invocations": 3}));
        assert_eq!(
            counts(&registry, &["a", "b", "a", "b", "a", "b", "a"]).await,
            [1, 2, 3, 1, 2, 3, 1]
        );
        let registry = counter_with(json!({"reuse": "per-task", "max_invocations": 1}));
        assert_eq!(counts(&registry, &["a", "a", "a"]).await, [1, 1, 1]);
    }

    #[tokio::test]
    async fn the_pool_keeps_at_most_pool_size_idle_instances_least_recently_used_first() {
        let registry = counter_with(json!({"reuse": "per-task", "pool_size": 2}));
        // a, b, c each leave an instance; keeping two drops a's, the oldest.
        assert_eq!(counts(&registry, &["a", "b", "c"]).await, [1, 1, 1]);
        // b and c kept theirs; a starts again (and its return drops b's,
        // now the least recently used).
        assert_eq!(counts(&registry, &["b", "c", "a"]).await, [2, 2, 1]);
        assert_eq!(counts(&registry, &["c", "a", "b"]).await, [3, 2, 1]);
    }

    /// After `failing` (which counts, then fails as `expected`), the task's
    /// next call starts in a fresh instance, under both reusing modes.
    async fn assert_failure_discards_the_instance(
        failing: &str,
        expected: &str,
        limits: Option<Value>,
    ) {
        for reuse in ["per-task", "stateless"] {
            let registry = counter(Some(json!({"reuse": reuse})), limits.clone());
            assert_eq!(counts(&registry, &["a", "a"]).await, [1, 2], "{reuse}");
            let Err(CommandFailure::Failed(message)) = send_in(&registry, "a", failing).await
            else {
                panic!("{failing} must fail ({reuse})");
            };
            assert!(message.contains(expected), "{reuse}: {message}");
            assert_eq!(
                count(&registry, "a").await,
                1,
                "{reuse}: the instance {failing} ran in must be discarded"
            );
            assert_eq!(
                count(&registry, "a").await,
                2,
                "{reuse}: and the new one kept"
            );
        }
    }

    #[tokio::test]
    async fn a_trapped_instance_is_discarded() {
        assert_failure_discards_the_instance("/count-trap", "trapping after call 3", None).await;
    }

    #[tokio::test]
    async fn a_timed_out_instance_is_discarded() {
        assert_failure_discards_the_instance("/count-spin", "timed out after 100 ms", None).await;
    }

    #[tokio::test]
    async fn a_reused_instance_gets_the_deadline_of_its_own_call() {
        let registry = counter_with(json!({"reuse": "per-task"}));
        // A warm instance whose last call had a 2 s deadline...
        assert_eq!(counts(&registry, &["a", "a"]).await, [1, 2]);
        // ...is stopped at this call's 100 ms, not at the old deadline.
        let started = std::time::Instant::now();
        let Err(CommandFailure::Failed(message)) = send_in(&registry, "a", "/count-spin").await
        else {
            panic!("the loop must be stopped");
        };
        assert_eq!(message, "command /count-spin timed out after 100 ms");
        assert!(
            started.elapsed() < std::time::Duration::from_millis(1500),
            "stopped after {:?}",
            started.elapsed()
        );
    }

    #[tokio::test]
    async fn an_instance_out_of_memory_is_discarded() {
        assert_failure_discards_the_instance(
            "/count-hog",
            &format!("ran out of memory (limit {} bytes)", 16 << 20),
            Some(json!({"memory_mib": 16})),
        )
        .await;
    }

    #[tokio::test]
    async fn hook_executors_reuse_instances_by_the_contexts_task() {
        let registry = counter(None, None);
        let mut refusals = Vec::new();
        for task in ["a", "a", "b", "a"] {
            let Err(CommandFailure::Refused(message)) =
                send_in(&registry, task, "/count-hook").await
            else {
                panic!("the counter's pre hook refuses /count-hook");
            };
            refusals.push(message);
        }
        assert_eq!(
            refusals,
            ["hook call 1", "hook call 2", "hook call 1", "hook call 3"]
        );
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn concurrent_calls_each_get_an_instance_of_their_own() {
        let registry =
            std::sync::Arc::new(counter_with(json!({"reuse": "stateless", "pool_size": 2})));
        let calls: Vec<_> = (0..32)
            .map(|call| {
                let registry = registry.clone();
                tokio::spawn(async move { count(&registry, &format!("t{}", call % 4)).await })
            })
            .collect();
        let mut seen = std::collections::BTreeMap::<u32, usize>::new();
        for call in calls {
            *seen
                .entry(call.await.expect("the call completes"))
                .or_default() += 1;
        }
        // However the calls overlapped, each instance counted 1, 2, 3... in
        // turn: no count can be seen more often than the one before it.
        let frequencies: Vec<usize> = seen.values().copied().collect();
        assert_eq!(seen.keys().next(), Some(&1), "{seen:?}");
        assert!(frequencies.is_sorted_by(|a, b| a >= b), "{seen:?}");
        assert_eq!(frequencies.iter().sum::<usize>(), 32);
        // The pool still works after the burst.
        assert!(count(&registry, "t0").await >= 1);
    }

    #[tokio::test]
    async fn invalid_instances_settings_reject_the_plugin_with_the_reason() {
        let folder = PluginsFolder::new()
            .with_plugin(
                "zero-pool",
                &[(
                    "plugin.json",
                    r#"{"name": "zero-pool", "version": "1.0.0", "instances": {"pool_size": 0}}"#,
                )],
            )
            .with_plugin(
                "odd-reuse",
                &[(
                    "plugin.json",
                    r#"{"name": "odd-reuse", "version": "1.0.0", "instances": {"reuse": "always"}}"#,
                )],
            );
        let loaded = folder.load();
        for (plugin, reason) in [
            ("zero-pool", "instances.pool_size must be between 1 and 64"),
            ("odd-reuse", "unknown variant `always`"),
        ] {
            let report = loaded.report.plugin(plugin).expect("reported");
            assert!(
                matches!(&report.status, PluginStatus::Rejected { reason: r } if r.contains(reason)),
                "{plugin}: {}",
                loaded.report
            );
        }
    }
}

#[tokio::test]
async fn completion_offers_command_names_then_the_plugins_own_suggestions() {
    let loaded = PluginsFolder::new().with_fixture("greeter").load();
    let registry = &loaded.registry;
    let values = |suggestions: Vec<tiny_harness::commands::Suggestion>| -> Vec<String> {
        suggestions.into_iter().map(|s| s.value).collect()
    };
    assert_eq!(
        values(registry.complete("/s").await.expect("names")),
        ["/status", "/sub-task"]
    );
    assert_eq!(
        values(registry.complete("/gr").await.expect("names")),
        ["/greet"]
    );
    // The greeter component's completion export answers for /greet.
    assert_eq!(
        values(registry.complete("/greet w").await.expect("args")),
        ["world"]
    );
    assert_eq!(
        values(registry.complete("/greet ").await.expect("args")),
        ["world", "team"]
    );
    // No completion export (the built-ins), or not a command: nothing.
    assert!(
        registry
            .complete("/status x")
            .await
            .expect("none")
            .is_empty()
    );
    assert!(registry.complete("hello").await.expect("none").is_empty());
    assert!(registry.complete("/nope x").await.expect("none").is_empty());
}

/// A `pre` executor rewriting the context's task id cannot borrow another
/// task's warm instance: pooling keys on the harness's own task id.
#[tokio::test]
async fn an_executor_cannot_spoof_its_way_into_another_tasks_instance() {
    use tiny_harness::task::TaskView;

    let folder = PluginsFolder::new().with_fixture("counter");
    let mut builder = CommandRegistry::builder();
    builder
        .add_hook(HookEntry {
            name: "spoof-task".into(),
            origin: "native".into(),
            point: HookPoint::new(Operation::CommandInvoked, Phase::Pre),
            command: None,
            priority: 1,
            kind: ExecutorKind::Native,
            source: "native".into(),
            executor: Arc::new(NativeExecutor::new(|_, context| {
                let mut spoofed = context.clone();
                spoofed["task"]["id"] = json!("victim");
                Ok(Decision::Replace(spoofed))
            })),
        })
        .expect("adds");
    let loaded = PluginLoader::new(runtime()).load(Some(folder.path()), builder);
    assert!(!loaded.report.has_problems(), "{}", loaded.report);
    let count_in = |task: &'static str| {
        let registry = loaded.registry.clone();
        async move {
            let mut view = TaskView::scratch("alice");
            view.id = task.to_owned();
            let call = registry.parse("/count").expect("registered");
            let outcome = registry
                .invoke(call, crate::support::reporter(), view)
                .await
                .expect("counts");
            outcome.reply.text.parse::<u32>().expect("a number")
        }
    };
    assert_eq!(count_in("victim").await, 1);
    assert_eq!(count_in("victim").await, 2);
    // Every context now claims to be "victim", but the attacker's task gets
    // its own instance, and the victim's count is untouched.
    assert_eq!(count_in("attacker").await, 1);
    assert_eq!(count_in("victim").await, 3);
}
