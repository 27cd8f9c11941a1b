//! Loading one example plugin (`examples/plugins/<lang>`) into its own
//! plugins folder, and sending it commands.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};

use tiny_harness::commands::{CommandFailure, CommandRegistry, Outcome};
use tiny_harness::plugins::wasm::{RuntimeConfig, WasmRuntime};
use tiny_harness::plugins::{Grant, Grants, PluginLoader, PluginStatus};
use tiny_harness::task::{Participant, Role, TaskView};

/// One engine for the whole test binary, with a compile cache under the
/// target dir that every run shares (the Python and JavaScript components
/// take seconds to compile; entries are keyed by content and engine).
pub fn runtime() -> WasmRuntime {
    static RUNTIME: OnceLock<WasmRuntime> = OnceLock::new();
    RUNTIME
        .get_or_init(|| {
            let cache_dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("component-cache");
            WasmRuntime::new(RuntimeConfig {
                cache_dir: Some(cache_dir),
            })
            .expect("the Wasm runtime starts")
        })
        .clone()
}

pub fn examples_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/plugins")
}

/// An example plugin loaded alone (every example declares `/dice`, and a
/// command two plugins declare is refused) next to the built-in plugin.
pub struct Example {
    pub lang: &'static str,
    pub registry: CommandRegistry,
    // Keeps the plugins folder alive while the registry uses it.
    _folder: tempfile::TempDir,
}

impl Example {
    /// Loads `examples/plugins/<lang>` as a plugin author ships it: its
    /// manifests (tools.json too, when it declares tools) and its built component `<lang>.wasm`. Panics when the
    /// component has not been built, or when anything fails to load.
    pub fn load(lang: &'static str) -> Self {
        let source = examples_dir().join(lang);
        let component = format!("{lang}.wasm");
        assert!(
            source.join(&component).is_file(),
            "example {lang} is not built: run tests/run.sh \
             (or examples/plugins/{lang}/build.sh)"
        );
        let folder = tempfile::tempdir().expect("tempdir");
        let target = folder.path().join(lang);
        std::fs::create_dir(&target).expect("mkdir");
        for file in ["plugin.json", "commands.json", "hooks.json", &component] {
            std::fs::copy(source.join(file), target.join(file))
                .unwrap_or_else(|e| panic!("copy {lang}/{file}: {e}"));
        }
        // Only the examples that declare tools ship a tools.json.
        if source.join("tools.json").is_file() {
            std::fs::copy(source.join("tools.json"), target.join("tools.json"))
                .unwrap_or_else(|e| panic!("copy {lang}/tools.json: {e}"));
        }

        let name = format!("example-{lang}");
        // `/dice` asks for real randomness; the operator grants it.
        let mut grants = Grants::default();
        grants.per_plugin.insert(
            name.clone(),
            Grant {
                random: true,
                ..Grant::default()
            },
        );
        let loaded = PluginLoader::new(runtime())
            .with_grants(grants)
            .load(Some(folder.path()), CommandRegistry::builder());
        assert!(!loaded.report.has_problems(), "{lang}:\n{}", loaded.report);
        let plugin = loaded
            .report
            .plugin(&name)
            .unwrap_or_else(|| panic!("no plugin {name} in:\n{}", loaded.report));
        match &plugin.status {
            PluginStatus::Loaded {
                commands, hooks, ..
            } => {
                assert_eq!(commands, &["dice", "echo"], "{lang}");
                // The Rust example also serves a tool (tests/examples/tools.rs).
                assert_eq!(
                    hooks.get(..3),
                    Some(&["dice-body", "echo-body", "echo-policy"].map(String::from)[..]),
                    "{lang}"
                );
            }
            PluginStatus::Rejected { reason } => panic!("{name} rejected: {reason}"),
        }
        Example {
            lang,
            registry: loaded.registry,
            _folder: folder,
        }
    }

    /// Sends `message` as the reporter of a new conversation (a task no
    /// call has used, so the components run in fresh instances).
    pub async fn send(&self, message: &str) -> Result<Outcome, CommandFailure> {
        self.send_as(Role::Reporter, message).await
    }

    /// Sends `message` as a participant with `role` to a new conversation.
    pub async fn send_as(&self, role: Role, message: &str) -> Result<Outcome, CommandFailure> {
        static TASKS: AtomicU64 = AtomicU64::new(0);
        let task_id = format!("task-{}", TASKS.fetch_add(1, Ordering::Relaxed));
        self.send_in(&task_id, role, message).await
    }

    /// Sends `message` as a participant with `role` to the conversation
    /// `task_id` (whose calls may share warm instances).
    pub async fn send_in(
        &self,
        task_id: &str,
        role: Role,
        message: &str,
    ) -> Result<Outcome, CommandFailure> {
        let sender = Participant {
            id: if role == Role::Reporter {
                "alice"
            } else {
                "bob"
            }
            .into(),
            role,
        };
        let mut task = TaskView::scratch("alice");
        task.id = task_id.into();
        if role != Role::Reporter {
            task.participants.push(sender.clone());
        }
        let call = self
            .registry
            .parse(message)
            .unwrap_or_else(|| panic!("{}: `{message}` is not a registered command", self.lang));
        self.registry.invoke(call, sender, task).await
    }

    /// Sends `message` and expects an outcome.
    pub async fn reply(&self, message: &str) -> Outcome {
        match self.send(message).await {
            Ok(outcome) => outcome,
            Err(failure) => panic!("{}: `{message}` failed: {failure:?}", self.lang),
        }
    }

    /// Sends `message` and expects a failure.
    pub async fn failure(&self, message: &str) -> CommandFailure {
        match self.send(message).await {
            Ok(outcome) => panic!("{}: `{message}` succeeded: {outcome:?}", self.lang),
            Err(failure) => failure,
        }
    }
}
