//! Shared test helpers: plugin folders assembled from the fixtures, and one
//! Wasm runtime for the whole test binary.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use tiny_harness::commands::{CommandFailure, CommandRegistry, Outcome};
use tiny_harness::plugins::wasm::{RuntimeConfig, WasmRuntime};
use tiny_harness::plugins::{Loaded, PluginLoader};
use tiny_harness::task::{Participant, Role, TaskView};

/// The folder holding the fixture sources and manifests.
pub fn fixtures_dir() -> PathBuf {
    PathBuf::from(env!("FIXTURES_DIR"))
}

/// The built component of each fixture plugin, by folder name.
pub fn fixture_wasm(name: &str) -> PathBuf {
    PathBuf::from(match name {
        "looper" => env!("FIXTURE_LOOPER_WASM"),
        "memory-hog" => env!("FIXTURE_MEMORY_HOG_WASM"),
        "trapper" => env!("FIXTURE_TRAPPER_WASM"),
        "old-abi" => env!("FIXTURE_OLD_ABI_WASM"),
        "status-override" => env!("FIXTURE_STATUS_OVERRIDE_WASM"),
        "greeter" => env!("FIXTURE_GREETER_WASM"),
        "counter" => env!("FIXTURE_COUNTER_WASM"),
        "sleeper" => env!("FIXTURE_SLEEPER_WASM"),
        other => panic!("no fixture plugin called {other}"),
    })
}

/// One engine for the whole test binary (as in the server), with a compile
/// cache private to this test run.
pub fn runtime() -> WasmRuntime {
    static RUNTIME: OnceLock<WasmRuntime> = OnceLock::new();
    RUNTIME
        .get_or_init(|| {
            let cache_dir = std::env::temp_dir()
                .join(format!("tiny-harness-test-cache-{}", std::process::id()));
            WasmRuntime::new(RuntimeConfig {
                cache_dir: Some(cache_dir),
            })
            .expect("the Wasm runtime starts")
        })
        .clone()
}

/// A scratch plugins folder.
pub struct PluginsFolder {
    dir: tempfile::TempDir,
}

impl PluginsFolder {
    pub fn new() -> Self {
        PluginsFolder {
            dir: tempfile::tempdir().expect("tempdir"),
        }
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Add fixture plugin `name`: its three manifests and its built
    /// component, as a plugin author would ship it.
    pub fn with_fixture(self, name: &str) -> Self {
        self.add_fixture(name);
        self
    }

    /// Copy fixture plugin `name` in, as a user dropping a plugin into a
    /// served folder would: the component first, the manifests last.
    pub fn add_fixture(&self, name: &str) {
        let source = fixtures_dir().join("plugins").join(name);
        let target = self.path().join(name);
        std::fs::create_dir_all(&target).expect("mkdir");
        std::fs::copy(fixture_wasm(name), target.join(format!("{name}.wasm")))
            .expect("copy component");
        copy_manifests(&source, &target);
    }

    /// Add a manifest-only fixture from tests/fixtures/manifests.
    pub fn with_manifest_fixture(self, name: &str) -> Self {
        let source = fixtures_dir().join("manifests").join(name);
        copy_manifests(&source, &self.path().join(name));
        self
    }

    /// Add a plugin written by the test: `(file name, contents)` pairs.
    pub fn with_plugin(self, name: &str, files: &[(&str, &str)]) -> Self {
        let target = self.path().join(name);
        std::fs::create_dir_all(&target).expect("mkdir");
        for (file, contents) in files {
            std::fs::write(target.join(file), contents).expect("write");
        }
        self
    }

    pub fn load(&self) -> Loaded {
        PluginLoader::new(runtime()).load(Some(self.path()), CommandRegistry::builder())
    }
}

fn copy_manifests(source: &Path, target: &Path) {
    std::fs::create_dir_all(target).expect("mkdir");
    for file in ["plugin.json", "commands.json", "hooks.json"] {
        let from = source.join(file);
        if from.exists() {
            std::fs::copy(&from, target.join(file)).expect("copy manifest");
        }
    }
}

pub fn reporter() -> Participant {
    Participant {
        id: "alice".into(),
        role: Role::Reporter,
    }
}

/// Send `message` as `sender` to a scratch conversation.
pub async fn send_as(
    registry: &CommandRegistry,
    sender: Participant,
    message: &str,
) -> Result<Outcome, CommandFailure> {
    let mut task = TaskView::scratch("alice");
    task.selectable_models = vec!["offline-echo".into(), "offline-large".into()];
    if sender.id != "alice" {
        task.participants.push(sender.clone());
    }
    let call = registry
        .parse(message)
        .unwrap_or_else(|| panic!("`{message}` is not a registered command"));
    registry.invoke(call, sender, task).await
}

/// Send `message` as the reporter.
pub async fn send(registry: &CommandRegistry, message: &str) -> Result<Outcome, CommandFailure> {
    send_as(registry, reporter(), message).await
}
