//! The example plugins (`examples/plugins/<lang>`): the same commands and
//! policy written in Rust, C, Go, Python and JavaScript, each loaded by the
//! real loader and checked for the same behaviour.
//!
//! The components are built by `examples/plugins/build.sh` (which
//! `tests/run.sh` runs first); a missing one fails its test.

// A test binary has no public API; `pub` here only shares helpers between modules.
#![allow(unreachable_pub)]

mod latency;
mod support;
mod tools;

use serde_json::Value;
use tiny_harness::commands::CommandFailure;
use tiny_harness::task::Role;

use support::Example;

const DICE_USAGE: &str = "usage: /dice NdM";

/// Every check, for one language.
async fn check_example(lang: &'static str) {
    let example = Example::load(lang);
    dice_rolls_in_range_with_matching_data(&example).await;
    dice_rolls_differ_between_fresh_instances(&example).await;
    dice_refuses_bad_specs_with_the_usage(&example).await;
    echo_replies_with_the_text(&example).await;
    policy_refuses_forbidden_echoes_only(&example).await;
    policy_passes_other_commands_and_watchers_stay_refused(&example).await;
}

async fn dice_rolls_in_range_with_matching_data(example: &Example) {
    let lang = example.lang;
    for _ in 0..5 {
        let outcome = example.reply("/dice 3d6").await;
        assert!(outcome.effects.is_empty(), "{lang}");
        let data = outcome.reply.data.expect("dice replies with data");
        let rolls: Vec<u64> = data["rolls"]
            .as_array()
            .unwrap_or_else(|| panic!("{lang}: no rolls in {data}"))
            .iter()
            .map(|roll| roll.as_u64().expect("a roll is a number"))
            .collect();
        assert_eq!(rolls.len(), 3, "{lang}: {data}");
        assert!(rolls.iter().all(|r| (1..=6).contains(r)), "{lang}: {data}");
        let total: u64 = rolls.iter().sum();
        assert_eq!(data["total"], Value::from(total), "{lang}: {data}");
        let shown: Vec<String> = rolls.iter().map(u64::to_string).collect();
        assert_eq!(
            outcome.reply.text,
            format!("3d6: {} = {total}", shown.join(" + ")),
            "{lang}"
        );
    }
    let outcome = example.reply("/dice 100d1000").await;
    let data = outcome.reply.data.expect("data");
    let rolls = data["rolls"].as_array().expect("rolls");
    assert_eq!(rolls.len(), 100, "{lang}");
    assert!(
        rolls
            .iter()
            .all(|r| r.as_u64().is_some_and(|r| (1..=1000).contains(&r))),
        "{lang}: {data}"
    );
}

/// A component snapshotted at build time (Python, JavaScript) must still
/// read fresh randomness per instance, not replay a seed from the build.
async fn dice_rolls_differ_between_fresh_instances(example: &Example) {
    let first = example.reply("/dice 100d1000").await.reply.data;
    let second = example.reply("/dice 100d1000").await.reply.data;
    assert_ne!(first, second, "{}: the same 100 rolls twice", example.lang);
}

async fn dice_refuses_bad_specs_with_the_usage(example: &Example) {
    for bad in [
        "0d6", "2d1", "banana", "101d6", "2d1001", "d6", "2d", "2x6", "-1d6", "2d6d6", "12345d6",
    ] {
        match example.failure(&format!("/dice {bad}")).await {
            CommandFailure::Usage(message) => assert!(
                message.contains(DICE_USAGE),
                "{}: /dice {bad}: {message}",
                example.lang
            ),
            other => panic!("{}: /dice {bad}: {other:?}", example.lang),
        }
    }
    // Missing arguments are the host's to refuse, with the declared usage.
    match example.failure("/dice").await {
        CommandFailure::Usage(message) => assert!(message.contains("/dice NdM"), "{message}"),
        other => panic!("{}: /dice: {other:?}", example.lang),
    }
}

async fn echo_replies_with_the_text(example: &Example) {
    let outcome = example.reply("/echo hi there").await;
    assert_eq!(outcome.reply.text, "hi there", "{}", example.lang);
    assert_eq!(outcome.reply.data, None, "{}", example.lang);
    assert!(outcome.effects.is_empty(), "{}", example.lang);
    let unicode = example.reply("/echo \"quoted\" \\ é ✓").await;
    assert_eq!(unicode.reply.text, "\"quoted\" \\ é ✓", "{}", example.lang);
}

async fn policy_refuses_forbidden_echoes_only(example: &Example) {
    for refused in [
        "/echo something forbidden",
        "/echo FORBIDDEN!",
        "/echo \"forbidden\"",
    ] {
        assert_eq!(
            example.failure(refused).await,
            CommandFailure::Refused("echo refuses forbidden words".into()),
            "{}: {refused}",
            example.lang
        );
    }
    // Only the whole word counts.
    for passed in ["/echo forbiddenness", "/echo unforbidden fruit"] {
        let text = passed.trim_start_matches("/echo ");
        assert_eq!(
            example.reply(passed).await.reply.text,
            text,
            "{}",
            example.lang
        );
    }
}

async fn policy_passes_other_commands_and_watchers_stay_refused(example: &Example) {
    let lang = example.lang;
    // The policy sees every command's context and leaves the others alone.
    let status = example.reply("/status").await;
    assert!(status.reply.text.contains("State:"), "{lang}: {status:?}");

    match example.send_as(Role::Watcher, "/echo hi").await {
        Err(CommandFailure::Refused(message)) => {
            assert!(
                message.contains("watchers cannot run commands"),
                "{lang}: {message}"
            )
        }
        other => panic!("{lang}: a watcher's /echo: {other:?}"),
    }
}

#[tokio::test]
async fn rust_example() {
    check_example("rust").await;
}

#[tokio::test]
async fn c_example() {
    check_example("c").await;
}

#[tokio::test]
async fn go_example() {
    check_example("go").await;
}

#[tokio::test]
async fn python_example() {
    check_example("python").await;
}

#[tokio::test]
async fn js_example() {
    check_example("js").await;
}
