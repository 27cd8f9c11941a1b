use super::*;
use crate::plugins::manifest::{PluginManifest, parse_commands, parse_hooks};

fn render(name: &str, lang: Lang) -> Scaffold {
    Scaffold::render(name, lang).unwrap_or_else(|err| panic!("{name} ({lang}): {err}"))
}

fn contents<'a>(scaffold: &'a Scaffold, path: &str) -> &'a str {
    scaffold
        .files
        .iter()
        .find(|file| file.path == Path::new(path))
        .map(|file| file.contents.as_str())
        .unwrap_or_else(|| panic!("no {path} in the {} scaffold", scaffold.lang))
}

#[test]
fn every_language_renders_manifests_the_loader_accepts() {
    for lang in Lang::ALL {
        let scaffold = render("weather", lang);
        let manifest =
            PluginManifest::parse(contents(&scaffold, "plugin.json")).expect("plugin.json");
        assert_eq!(manifest.name, "weather");

        let commands = parse_commands(contents(&scaffold, "commands.json")).expect("commands.json");
        assert!(
            commands.invalid.is_empty(),
            "{lang}: {:?}",
            commands.invalid
        );
        assert_eq!(commands.valid.len(), 1);
        let spec = &commands.valid[0];
        assert_eq!(spec.name, "weather");
        assert_eq!(spec.usage, "/weather [text]");
        spec.validate().expect("a valid command");

        let hooks = parse_hooks(contents(&scaffold, "hooks.json")).expect("hooks.json");
        assert!(hooks.invalid.is_empty(), "{lang}: {:?}", hooks.invalid);
        let hook = &hooks.valid[0];
        assert_eq!(hook.point, "command.invoked.in");
        assert_eq!(hook.command.as_deref(), Some("weather"));
        assert_eq!(hook.component.as_deref(), Some("weather.wasm"));

        assert_eq!(contents(&scaffold, "wit/plugin.wit"), PLUGIN_WIT);
        let build = scaffold
            .files
            .iter()
            .find(|file| file.path == Path::new("build.sh"))
            .expect("build.sh");
        assert!(build.executable);
        assert!(
            build.contents.starts_with("#!/usr/bin/env bash\n"),
            "{lang}"
        );
        assert!(build.contents.contains("set -euo pipefail"), "{lang}");
        assert!(build.contents.contains("weather.wasm"), "{lang}");
        assert!(
            contents(&scaffold, "README.md").contains("/weather hi"),
            "{lang}"
        );
    }
}

#[test]
fn each_language_has_its_sources() {
    let rust = render("weather", Lang::Rust);
    assert!(contents(&rust, "Cargo.toml").contains("name = \"plugin-weather\""));
    assert!(contents(&rust, "src/lib.rs").contains("Hello from weather: {text}"));
    assert_eq!(contents(&rust, "wit/sdk-rust/src/lib.rs"), SDK_LIB_RS);
    assert_eq!(contents(&rust, "wit/sdk-rust/Cargo.toml"), SDK_CARGO_TOML);
    assert!(contents(&rust, "build.sh").contains("release/plugin_weather.wasm"));

    let python = render("weather", Lang::Python);
    assert!(contents(&python, "app.py").contains("class Command(exports.Command)"));
    assert!(contents(&python, "build.sh").contains("-w command-plugin"));

    let js = render("weather", Lang::Js);
    assert!(contents(&js, "app.js").contains("export const command"));
    let package: Value = serde_json::from_str(contents(&js, "package.json")).expect("package.json");
    assert_eq!(
        package["devDependencies"]["componentize-qjs"],
        COMPONENTIZE_QJS_VERSION
    );
    assert_eq!(package["name"], "tiny-harness-plugin-weather");
}

/// The vendored SDK reads the contract at `../plugin.wit` from its crate
/// folder, `wit/sdk-rust`: that is where the scaffold writes it.
#[test]
fn the_vendored_sdk_finds_the_contract_where_it_is_written() {
    assert!(SDK_LIB_RS.contains(r#"path: "../plugin.wit""#));
    let rust = render("weather", Lang::Rust);
    let paths: Vec<&Path> = rust.files.iter().map(|file| file.path.as_path()).collect();
    assert!(
        paths.contains(&Path::new("wit/sdk-rust/Cargo.toml")),
        "{paths:?}"
    );
    assert!(paths.contains(&Path::new("wit/plugin.wit")), "{paths:?}");
}

#[test]
fn the_rust_workspace_provides_what_the_sdk_inherits() {
    let rust = render("weather", Lang::Rust);
    let manifest: toml::Table = contents(&rust, "Cargo.toml")
        .parse()
        .expect("Cargo.toml is TOML");
    let workspace = manifest["workspace"].as_table().expect("a workspace");
    assert!(
        workspace["package"].get("edition").is_some(),
        "{workspace:?}"
    );
    assert!(
        workspace["package"].get("rust-version").is_some(),
        "{workspace:?}"
    );
    assert!(
        workspace["dependencies"].get("wit-bindgen").is_some(),
        "{workspace:?}"
    );
    assert!(workspace.get("lints").is_some(), "{workspace:?}");
    assert!(
        workspace["dependencies"]
            .get("tiny-harness-plugin")
            .is_none(),
        "no path into this repository"
    );
    let dependency = &manifest["dependencies"]["tiny-harness-plugin"];
    assert_eq!(dependency["path"].as_str(), Some("wit/sdk-rust"));
}

#[test]
fn the_command_is_the_plugin_name_when_it_can_be() {
    assert_eq!(render("weather", Lang::Js).command, "weather");
    assert_eq!(render("dice-2", Lang::Js).command, "dice-2");
    for (name, why) in [
        ("my.plugin", "not a valid command name"),
        ("9lives", "not a valid command name"),
        ("-x", "not a valid command name"),
        ("status", "already serves /status"),
        ("sub-task", "already serves /sub-task"),
        ("plugins", "already serves /plugins"),
    ] {
        let scaffold = render(name, Lang::Python);
        assert_eq!(scaffold.command, FALLBACK_COMMAND, "{name}");
        let note = scaffold.command_note.as_deref().expect("a note");
        assert!(note.contains(why), "{name}: {note}");
        assert!(contents(&scaffold, "commands.json").contains("\"/hello [text]\""));
    }
}

#[test]
fn bad_names_are_refused_with_the_rule() {
    let too_long = "a".repeat(65);
    for name in [
        "",
        "Weather",
        "a/b",
        "a b",
        "..",
        ".",
        "ünï",
        too_long.as_str(),
    ] {
        let err = Scaffold::render(name, Lang::Rust).expect_err(name);
        assert!(
            matches!(err, ScaffoldError::InvalidName(_)),
            "{name}: {err}"
        );
        assert!(
            err.to_string().contains("1-64 characters of a-z, 0-9"),
            "{err}"
        );
    }
    let err = Scaffold::render(BUILTIN, Lang::Rust).expect_err("builtin");
    assert!(matches!(err, ScaffoldError::ReservedName(_)), "{err}");
    // Still fine: the loader's rule, with dots and dashes anywhere.
    render(&"a".repeat(64), Lang::Rust);
    render("v1.2-beta.", Lang::Rust);
}

#[test]
fn crate_names_are_valid_cargo_names() {
    assert_eq!(crate_name("weather"), "plugin-weather");
    assert_eq!(crate_name("my.plugin"), "plugin-my-plugin");
    assert_eq!(crate_name("9lives"), "plugin-9lives");
    let rust = render("fn", Lang::Rust);
    assert!(contents(&rust, "build.sh").contains("release/plugin_fn.wasm"));
}

#[test]
fn no_placeholder_is_left_and_placeholders_are_found() {
    assert_eq!(placeholder("a {{name}} b"), Some("{{name}}"));
    assert_eq!(placeholder(r#"format!("{{\"a\":{}}}")"#), None);
    assert_eq!(placeholder("{{ name }}"), None);
    assert_eq!(placeholder("{{{{x}}"), Some("{{x}}"));
    for lang in Lang::ALL {
        for file in render("weather", lang).files {
            if !file.path.starts_with("wit") {
                assert_eq!(placeholder(&file.contents), None, "{}", file.path.display());
            }
        }
    }
}

#[test]
fn toolchain_pins_match_the_examples() {
    let python = include_str!("../../../examples/plugins/python/build.sh");
    assert!(
        python.contains(&format!(
            "ensure_pip componentize-py {COMPONENTIZE_PY_VERSION}"
        )),
        "examples/plugins/python/build.sh pins another componentize-py"
    );
    let js: Value = serde_json::from_str(include_str!("../../../examples/plugins/js/package.json"))
        .expect("the JS example's package.json");
    assert_eq!(
        js["devDependencies"]["componentize-qjs"],
        COMPONENTIZE_QJS_VERSION
    );
}

#[test]
fn writing_refuses_an_existing_folder_and_leaves_it_alone() {
    let parent = tempfile::tempdir().expect("tempdir");
    let created = create("weather", Lang::Js, parent.path()).expect("created");
    assert_eq!(created.root, parent.path().join("weather"));
    let build = created.root.join("build.sh");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&build)
            .expect("build.sh")
            .permissions()
            .mode();
        assert_eq!(mode & 0o111, 0o111, "build.sh is executable: {mode:o}");
    }
    std::fs::write(created.root.join("app.js"), "// mine").expect("edit");

    let err = create("weather", Lang::Rust, parent.path()).expect_err("exists");
    assert!(matches!(err, ScaffoldError::Exists(_)), "{err}");
    assert!(err.to_string().contains("already exists"), "{err}");
    let app = std::fs::read_to_string(created.root.join("app.js")).expect("app.js");
    assert_eq!(app, "// mine", "nothing was overwritten");
    assert!(!created.root.join("Cargo.toml").exists());

    // A file in the way counts too.
    std::fs::write(parent.path().join("taken"), "").expect("a file");
    let err = create("taken", Lang::Rust, parent.path()).expect_err("a file");
    assert!(matches!(err, ScaffoldError::Exists(_)), "{err}");
}

#[test]
fn the_parent_folder_is_created_and_the_summary_says_what_next() {
    let parent = tempfile::tempdir().expect("tempdir");
    let nested = parent.path().join("a/b");
    let created = create("status", Lang::Rust, &nested).expect("created");
    assert!(created.root.join("wit/sdk-rust/src/lib.rs").is_file());
    let summary = created.to_string();
    assert!(
        summary.contains("Created the Rust plugin `status`"),
        "{summary}"
    );
    assert!(summary.contains("the command is /hello"), "{summary}");
    assert!(summary.contains("\"/hello hi\""), "{summary}");
}

#[test]
fn languages_parse_by_their_command_line_names() {
    for lang in Lang::ALL {
        assert_eq!(lang.as_str().parse::<Lang>(), Ok(lang));
    }
    assert!("cobol".parse::<Lang>().is_err());
}
