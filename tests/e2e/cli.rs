//! The `tiny-harness plugins` commands, run as a user would.

use std::process::{Command, Output};

use crate::support::PluginsFolder;

fn harness(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_tiny-harness"))
        .args(args)
        .env(
            "TINY_HARNESS_CACHE_DIR",
            crate::support::component_cache_dir(),
        )
        .output()
        .expect("the binary runs")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn plugins_check_passes_on_a_clean_folder_and_fails_on_a_bad_one() {
    let good = PluginsFolder::new().with_fixture("greeter");
    let output = harness(&["plugins", "check", &good.path().display().to_string()]);
    let stdout = text(&output.stdout);
    assert!(output.status.success(), "{stdout}{}", text(&output.stderr));
    assert!(
        stdout.contains("loaded    builtin 0.1.0 (embedded in the harness)"),
        "{stdout}"
    );
    assert!(stdout.contains("/greet"), "{stdout}");
    assert!(
        stdout.ends_with("2 plugin(s): 2 loaded, 0 rejected, 0 part(s) skipped\n"),
        "{stdout}"
    );

    let bad = PluginsFolder::new()
        .with_fixture("old-abi")
        .with_manifest_fixture("bad-plugin-json");
    let output = harness(&["plugins", "check", &bad.path().display().to_string()]);
    let stdout = text(&output.stdout);
    assert_eq!(output.status.code(), Some(1), "{stdout}");
    assert!(stdout.contains("REJECTED  bad-plugin-json"), "{stdout}");
    assert!(stdout.contains("tiny-harness:plugin@0.0.9"), "{stdout}");

    let output = harness(&["plugins", "check", "/no/such/folder"]);
    assert_eq!(output.status.code(), Some(1));
    assert!(text(&output.stderr).contains("does not exist"));
}

#[test]
fn plugins_run_tries_a_command_without_a_server() {
    let folder = PluginsFolder::new().with_fixture("greeter");
    let dir = folder.path().display().to_string();
    let output = harness(&["plugins", "run", &dir, "/greet Ada"]);
    assert!(output.status.success(), "{}", text(&output.stderr));
    assert_eq!(text(&output.stdout), "Hello, Ada!\n");

    let output = harness(&["plugins", "run", &dir, "/model other"]);
    assert!(output.status.success(), "{}", text(&output.stderr));
    assert!(text(&output.stdout).contains(r#"effect: {"set_model":"other"}"#));

    let output = harness(&[
        "plugins", "run", &dir, "--role", "watcher", "--as", "bob", "/status",
    ]);
    assert_eq!(output.status.code(), Some(1));
    assert!(
        text(&output.stderr).contains("bob"),
        "{}",
        text(&output.stderr)
    );

    let output = harness(&["plugins", "run", &dir, "/greet"]);
    assert_eq!(output.status.code(), Some(1));
    assert!(text(&output.stderr).contains("usage: /greet <name>"));

    let output = harness(&["plugins", "run", &dir, "hello there"]);
    assert_eq!(output.status.code(), Some(1));
    assert!(text(&output.stderr).contains("not a registered command"));
}
