//! The example tools (`word_count`, in Rust and in Python, both built
//! against contract 0.2.0), loaded by the real loader and called through
//! `tool.invoked` as the agent loop calls them.

use serde_json::{Value, json};
use tiny_harness::commands::CommandRegistry;
use tiny_harness::domain::{TaskView, ToolCall, ToolContext, ToolResult};
use tiny_harness::hooks::{HookCall, HookPoint, Operation, Phase};
use tiny_harness::plugins::{PluginLoader, PluginStatus};

use crate::support::{examples_dir, runtime};

/// `examples/plugins/<dir>` loaded alone (next to the built-in plugin).
struct ToolExample {
    registry: CommandRegistry,
    _folder: tempfile::TempDir,
}

impl ToolExample {
    fn load(dir: &str, component: &str, plugin: &str) -> Self {
        let source = examples_dir().join(dir);
        assert!(
            source.join(component).is_file(),
            "example {dir} is not built: run tests/run.sh (or examples/plugins/{dir}/build.sh)"
        );
        let folder = tempfile::tempdir().expect("tempdir");
        let target = folder.path().join(dir);
        std::fs::create_dir(&target).expect("mkdir");
        for file in [
            "plugin.json",
            "commands.json",
            "tools.json",
            "hooks.json",
            component,
        ] {
            if source.join(file).is_file() {
                std::fs::copy(source.join(file), target.join(file)).expect("copy");
            }
        }
        let loaded =
            PluginLoader::new(runtime()).load(Some(folder.path()), CommandRegistry::builder());
        let report = loaded
            .report
            .plugin(plugin)
            .expect("the plugin is reported");
        let PluginStatus::Loaded { tools, .. } = &report.status else {
            panic!("{plugin} rejected:\n{}", loaded.report);
        };
        assert_eq!(tools, &["word_count"], "{}", loaded.report);
        ToolExample {
            registry: loaded.registry,
            _folder: folder,
        }
    }

    /// `word_count` with `arguments`, through the `tool.invoked.in` chain.
    async fn word_count(&self, arguments: Value) -> ToolResult {
        let context = ToolContext {
            task: TaskView::scratch("alice"),
            call: ToolCall {
                id: "call-1".into(),
                name: "word_count".into(),
                arguments,
            },
            result: None,
        };
        let point = HookPoint::new(Operation::ToolInvoked, Phase::In);
        let done = self
            .registry
            .hooks()
            .run_typed(
                HookCall::new(point, Some("task-1")),
                Some("word_count"),
                context,
            )
            .await
            .expect("the chain runs");
        done.result.expect("the body set a result")
    }
}

async fn check_word_count(dir: &str, component: &str, plugin: &str) {
    let example = ToolExample::load(dir, component, plugin);
    let tool = example.registry.tool("word_count").expect("declared");
    assert!(tool.schema.check(&json!({ "text": 3 })).is_err(), "{dir}");
    let result = example
        .word_count(json!({ "text": "one two  three\nfour" }))
        .await;
    let ToolResult::Output(output) = result else {
        panic!("{dir}: {result:?}");
    };
    // The result is the tool's JSON document, as the model reads it.
    let output: Value = match output {
        Value::String(text) => serde_json::from_str(&text).unwrap_or(Value::String(text)),
        other => other,
    };
    assert_eq!(output, json!({ "words": 4 }), "{dir}");
    let long = "word ".repeat(30_000);
    let result = example.word_count(json!({ "text": long })).await;
    let ToolResult::Error(message) = result else {
        panic!("{dir}: a text too long is an error: {result:?}");
    };
    assert!(message.contains("at most 100"), "{dir}: {message}");
}

#[tokio::test]
async fn rust_word_count() {
    check_word_count("rust", "rust.wasm", "example-rust").await;
}

#[tokio::test]
async fn python_word_count() {
    check_word_count("python-tool", "python-tool.wasm", "example-python-tool").await;
}
