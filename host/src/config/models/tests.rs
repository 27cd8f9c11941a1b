//! `[models]`: parsing, checking, and the settings (keys from the
//! environment) the adapters are built from.

use std::path::PathBuf;
use std::time::Duration;

use super::*;
use crate::config::Config;
use crate::domain::Effort;
use crate::model::Models;

const TWO_PROVIDERS: &str = r#"
[models]
default = "gpt"

[models.gpt]
provider = "openai"
model = "gpt-5-mini"
api_key_env = "TEST_OPENAI_KEY"
reasoning_effort = { medium = "medium", high = "high" }
max_output_tokens = 4000
read_timeout_secs = 30
max_attempts = 2

[models.claude]
provider = "anthropic"
base_url = "https://claude.example/"
model = "claude-sonnet-4-5"
api_key = "sk-ant-in-the-file"
thinking_budget = { high = 4096 }

[models.echo]
provider = "offline"
context_window = 1000
"#;

fn error(text: &str) -> String {
    match Config::from_toml(text) {
        Ok(config) => panic!("expected an error, got {config:?}"),
        Err(error) => error.to_string(),
    }
}

fn env(name: &str) -> Option<String> {
    (name == "TEST_OPENAI_KEY").then(|| "sk-openai-from-env".to_owned())
}

#[test]
fn tables_name_the_models_and_settings_carry_their_providers() {
    let config = Config::from_toml(TWO_PROVIDERS).expect("valid");
    assert_eq!(config.models.default_name(), "gpt");
    assert_eq!(config.models.names(), ["claude", "echo", "gpt"]);
    let settings = config
        .models
        .settings(&ExtraRoots::default(), env)
        .expect("the key is in the environment");
    let [claude, echo, gpt] = settings.as_slice() else {
        panic!("three models: {settings:?}");
    };
    let ProviderSettings::OpenAi(openai) = &gpt.provider else {
        panic!("{gpt:?}");
    };
    assert_eq!(openai.base_url.as_str(), "https://api.openai.com/v1");
    assert_eq!(openai.model, "gpt-5-mini");
    assert_eq!(
        openai.api_key.as_ref().map(Secret::expose),
        Some("sk-openai-from-env")
    );
    assert_eq!(openai.reasoning_effort.get(Effort::Low), None);
    assert_eq!(
        openai
            .reasoning_effort
            .get(Effort::High)
            .map(String::as_str),
        Some("high")
    );
    assert_eq!(openai.max_tokens_field, MaxTokensField::MaxCompletionTokens);
    assert_eq!(openai.http.read_timeout, Duration::from_secs(30));
    assert_eq!(openai.http.connect_timeout, Duration::from_secs(10));
    assert_eq!(openai.http.retry.max_attempts, 2);
    assert_eq!(openai.http.retry.budget, Duration::from_secs(60));
    assert_eq!(gpt.context_window, defaults::OPENAI_CONTEXT_WINDOW);
    assert_eq!(gpt.max_output_tokens, Some(4000));

    let ProviderSettings::Anthropic(anthropic) = &claude.provider else {
        panic!("{claude:?}");
    };
    assert_eq!(anthropic.base_url.as_str(), "https://claude.example/");
    assert_eq!(anthropic.api_key.expose(), "sk-ant-in-the-file");
    assert_eq!(anthropic.thinking_budget.get(Effort::High), Some(&4096));
    assert_eq!(claude.context_window, 200_000);
    assert_eq!(claude.max_output_tokens, Some(8192));

    assert_eq!(echo.provider, ProviderSettings::Offline);
    assert_eq!(echo.context_window, 1000);

    let models = Models::build(&settings, config.models.default_name()).expect("adapters");
    assert_eq!(
        models.names().collect::<Vec<_>>(),
        ["claude", "echo", "gpt"]
    );
    assert_eq!(
        models.get("echo").map(|entry| entry.context_window),
        Some(1000)
    );
}

#[test]
fn no_table_means_the_embedded_offline_models() {
    let config = Config::from_toml("[models]\ndefault = \"offline-large\"").expect("valid");
    let settings = config
        .models
        .settings(&ExtraRoots::default(), |_| None)
        .expect("no keys needed");
    let names: Vec<&str> = settings.iter().map(|model| model.name.as_str()).collect();
    assert_eq!(names, ["offline-echo", "offline-large"]);
    assert!(
        settings
            .iter()
            .all(|model| model.provider == ProviderSettings::Offline)
    );
}

#[test]
fn keys_never_print_and_a_missing_variable_is_named() {
    let config = Config::from_toml(TWO_PROVIDERS).expect("valid");
    let printed = format!("{config:?}");
    assert!(!printed.contains("sk-ant-in-the-file"), "{printed}");
    let settings = config
        .models
        .settings(&ExtraRoots::default(), env)
        .expect("valid");
    let printed = format!("{settings:?}");
    assert!(!printed.contains("sk-ant-in-the-file"), "{printed}");
    assert!(!printed.contains("sk-openai-from-env"), "{printed}");

    let unset = config
        .models
        .settings(&ExtraRoots::default(), |_| None)
        .expect_err("the variable is not set")
        .to_string();
    assert!(unset.contains("`models.gpt.api_key_env`"), "{unset}");
    assert!(unset.contains("`TEST_OPENAI_KEY` is not set"), "{unset}");
    let empty = config
        .models
        .settings(&ExtraRoots::default(), |_| Some("  ".into()))
        .expect_err("an empty variable")
        .to_string();
    assert!(empty.contains("TEST_OPENAI_KEY"), "{empty}");
}

#[test]
fn the_old_selectable_list_says_how_to_migrate() {
    let message = error("[models]\ndefault = \"offline-echo\"\nselectable = [\"offline-echo\"]");
    assert!(message.contains("`models.selectable` is gone"), "{message}");
    assert!(message.contains("[models.<name>]"), "{message}");
    assert!(message.contains("provider = \"offline\""), "{message}");
}

#[test]
fn invalid_tables_are_explained() {
    let openai = "[models]\ndefault = \"m\"\n[models.m]\nprovider = \"openai\"\nmodel = \"x\"\n";
    let anthropic = "[models]\ndefault = \"m\"\n[models.m]\nprovider = \"anthropic\"\nmodel = \"x\"\napi_key_env = \"K\"\n";
    let cases: Vec<(String, &str)> = vec![
        (
            format!("{openai}bse_url = \"x\""),
            "unknown field `bse_url`",
        ),
        (
            "[models]\ndefault = \"m\"\n[models.m]\nmodel = \"x\"".into(),
            "missing field `provider`",
        ),
        (
            "[models]\ndefault = \"m\"\n[models.m]\nprovider = \"gemini\"".into(),
            "unknown variant `gemini`",
        ),
        (
            "[models.m]\nprovider = \"offline\"".into(),
            "`models.default`: name the model new conversations start on, one of m",
        ),
        (
            "[models]\ndefault = \"offline-echo\"\n[models.m]\nprovider = \"offline\"".into(),
            "`models.default`: `offline-echo` is not a configured model (m)",
        ),
        (
            "[models]\ndefault = \"m\"\n[models.m]\nprovider = \"offline\"\nbase_url = \"http://x\""
                .into(),
            "`models.m.base_url`: the offline model is not reached over the network",
        ),
        (
            "[models]\ndefault = \"m\"\n[models.m]\nprovider = \"openai\"".into(),
            "`models.m.model`",
        ),
        (
            format!("{openai}thinking_budget = {{ high = 2000 }}"),
            "`models.m.thinking_budget`",
        ),
        (
            format!("{openai}base_url = \"ftp://x\""),
            "`models.m.base_url`",
        ),
        (
            format!("{openai}base_url = \"not a url\""),
            "`models.m.base_url`",
        ),
        (format!("{openai}base_url = \"http://x/v1?key=1\""), "query"),
        (
            format!("{openai}api_key = \"a\"\napi_key_env = \"B\""),
            "not both",
        ),
        (
            format!("{openai}api_key_env = \"A B\""),
            "`models.m.api_key_env`",
        ),
        (
            format!("{openai}reasoning_effort = {{ high = \"\" }}"),
            "`models.m.reasoning_effort.high`",
        ),
        (
            format!("{openai}reasoning_effort = {{ extreme = \"x\" }}"),
            "unknown field `extreme`",
        ),
        (
            format!("{openai}max_attempts = 0"),
            "`models.m.max_attempts`",
        ),
        (
            format!("{openai}max_attempts = 11"),
            "`models.m.max_attempts`",
        ),
        (
            format!("{openai}read_timeout_secs = 0"),
            "`models.m.read_timeout_secs`",
        ),
        (
            format!("{openai}context_window = 0"),
            "`models.m.context_window`",
        ),
        (
            format!("{anthropic}reasoning_effort = {{ high = \"high\" }}"),
            "`models.m.reasoning_effort`",
        ),
        (
            format!("{anthropic}max_tokens_field = \"max_tokens\""),
            "`models.m.max_tokens_field`",
        ),
        (
            format!("{anthropic}thinking_budget = {{ low = 500 }}"),
            "`models.m.thinking_budget.low`",
        ),
        (
            format!("{anthropic}max_output_tokens = 2000\nthinking_budget = {{ high = 2000 }}"),
            "below max_output_tokens (2000)",
        ),
        (
            "[models]\ndefault = \"m\"\n[models.m]\nprovider = \"anthropic\"\nmodel = \"x\"".into(),
            "`models.m.api_key_env`: an anthropic model needs a key",
        ),
        (
            "[models]\ndefault = \"a b\"\n[models.\"a b\"]\nprovider = \"offline\"".into(),
            "`models.a b`: a model name is 1 to 64",
        ),
    ];
    for (text, expected) in cases {
        let message = error(&text);
        assert!(message.contains(expected), "{text}\n-> {message}");
    }
}

/// Every example configuration under `examples/models/` loads with the real
/// loader and builds its adapters (keys from a stand-in environment).
#[test]
fn the_example_model_configurations_are_valid() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../examples/models");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|error| panic!("{}: {error}", dir.display()))
        .map(|entry| entry.expect("an entry").path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "toml"))
        .collect();
    files.sort();
    let names: Vec<String> = files
        .iter()
        .filter_map(|path| path.file_name()?.to_str().map(str::to_owned))
        .collect();
    assert!(
        ["anthropic.toml", "ollama.toml", "openai.toml"]
            .iter()
            .all(|name| names.iter().any(|file| file == name)),
        "{names:?}"
    );
    for file in files {
        let config =
            Config::load(Some(&file)).unwrap_or_else(|error| panic!("{}: {error}", file.display()));
        assert!(!config.models.entries.is_empty(), "{}", file.display());
        let settings = config
            .models
            .settings(&config.extra_roots, |_| Some("a-stand-in-key".into()))
            .unwrap_or_else(|error| panic!("{}: {error}", file.display()));
        Models::build(&settings, config.models.default_name())
            .unwrap_or_else(|error| panic!("{}: {error}", file.display()));
    }
}
