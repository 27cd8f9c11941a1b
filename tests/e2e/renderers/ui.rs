//! The web page at `/ui` in a real headless Chromium (Debian's `chromium`, driven by
//! `playwright-core` from npm: `tests/ui`), against the real binary. Each test starts a
//! server of its own and runs one case of `tests/ui/cases`; screenshots land in
//! `target/ui-artifacts`. `tests/run.sh` installs the browser and the npm package.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use super::support::{CONFIG, Served};

/// A case that has not finished by then has hung.
const CASE_TIMEOUT: Duration = Duration::from_secs(240);

/// The line a case prints to have the server restarted (`cases/lost-connection.mjs`).
const RESTART: &str = "ui-control: restart";

fn ui_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/ui")
}

/// Says what to install instead of failing with a node stack trace.
fn check_tools() {
    assert!(
        ui_dir().join("node_modules/playwright-core").is_dir(),
        "playwright-core is not installed: run `npm ci --prefix tests/ui` (tests/run.sh does)"
    );
    let chromium = std::env::var("CHROMIUM").unwrap_or_else(|_| "/usr/bin/chromium".into());
    assert!(
        Path::new(&chromium).exists(),
        "no browser at {chromium}: `apt-get install chromium` (tests/run.sh does)"
    );
}

/// Runs `tests/ui/cases/<case>.mjs` against `served`, restarting the server when the case
/// asks, and fails with everything the case printed.
fn run_case(case: &str, served: &mut Served) {
    check_tools();
    let tmp = Path::new(env!("CARGO_TARGET_TMPDIR"));
    let mut node = Command::new("node")
        .arg(ui_dir().join("run.mjs"))
        .arg(case)
        .arg(&served.base)
        .env("UI_ARTIFACTS", tmp.join("../ui-artifacts"))
        // Chromium's throwaway profile goes under target/, not the machine's /tmp.
        .env("TMPDIR", tmp)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("node runs (it is installed with npm)");
    let (lines, output) = mpsc::channel();
    for stream in [
        Box::new(node.stdout.take().expect("stdout")) as Box<dyn std::io::Read + Send>,
        Box::new(node.stderr.take().expect("stderr")),
    ] {
        let lines = lines.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(stream).lines().map_while(Result::ok) {
                let _ = lines.send(line);
            }
        });
    }
    drop(lines);
    let mut stdin = node.stdin.take();
    let started = Instant::now();
    let mut printed = Vec::new();
    let status = loop {
        match output.recv_timeout(Duration::from_millis(100)) {
            Ok(line) => {
                if line.trim() == RESTART
                    && let Some(mut input) = stdin.take()
                {
                    served.restart();
                    writeln!(input, "restarted").expect("the case reads its stdin");
                }
                printed.push(line);
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            Err(mpsc::RecvTimeoutError::Disconnected) => break node.wait().expect("node ends"),
        }
        if started.elapsed() > CASE_TIMEOUT {
            let _ = node.kill();
            let _ = node.wait();
            panic!("ui case {case} hung; it printed:\n{}", printed.join("\n"));
        }
    };
    assert!(
        status.success(),
        "ui case {case} failed; it printed:\n{}",
        printed.join("\n")
    );
    assert!(
        printed
            .iter()
            .any(|line| line == &format!("ui case {case}: ok")),
        "ui case {case} did not report success:\n{}",
        printed.join("\n")
    );
}

#[test]
fn a_message_streams_its_reply_and_the_turn_ends_on_input_required() {
    run_case("streamed-reply", &mut Served::start(CONFIG));
}

#[test]
fn commands_complete_from_the_card_and_the_plugin() {
    run_case("completion", &mut Served::with_greeter(CONFIG));
}

#[test]
fn the_inbox_lists_waiting_conversations_first_and_follows_new_ones() {
    run_case("inbox", &mut Served::start(CONFIG));
}

#[test]
fn complete_is_refused_with_its_reason_while_a_sub_task_is_open_then_accepted() {
    run_case("complete-refused", &mut Served::start(CONFIG));
}

#[test]
fn cancel_stops_the_conversation() {
    run_case("cancel", &mut Served::start(CONFIG));
}

#[test]
fn a_watcher_reads_and_follows_without_controls() {
    run_case("watcher", &mut Served::start(CONFIG));
}

#[test]
fn a_reload_mid_turn_resumes_the_stream() {
    run_case("reload-resume", &mut Served::start(CONFIG));
}

#[test]
fn a_lost_connection_resumes_with_subscribe_to_task() {
    run_case("lost-connection", &mut Served::start(CONFIG));
}

#[test]
fn a_phone_and_a_keyboard_are_enough() {
    run_case("phone-keyboard", &mut Served::start(CONFIG));
}

#[test]
fn streamed_pieces_tool_calls_traces_and_artifacts_render_safely() {
    run_case("conventions", &mut Served::start(CONFIG));
}

#[test]
fn with_tokens_the_page_asks_for_one_and_keeps_it_in_the_tab_only() {
    let config = format!("{CONFIG}[auth]\ntokens = {{ \"tok-alice\" = \"alice\" }}\n");
    run_case("token", &mut Served::start(&config));
}
