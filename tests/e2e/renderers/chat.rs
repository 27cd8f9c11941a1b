//! `tiny-harness chat` in a real pseudo-terminal: tmux runs the real binary, the test
//! types with `send-keys` and reads the screen (and its scrollback) with `capture-pane`,
//! as a person at a terminal would. Each test has its own server and tmux server.

use std::path::PathBuf;
use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use serde_json::json;

use super::support::{CONFIG, Served};
use crate::server::support::state;

/// How long the screen may take to show what a test waits for (a loaded machine).
const WAIT: Duration = Duration::from_secs(30);

static NEXT: AtomicU32 = AtomicU32::new(0);

/// A tmux server of its own running `tiny-harness chat`, killed when dropped.
struct Terminal {
    socket: PathBuf,
    _home: tempfile::TempDir,
}

impl Terminal {
    /// `tiny-harness chat --url <served> <args>` in a 120x50 terminal.
    fn start(served: &Served, args: &[&str]) -> Terminal {
        let tmp = PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
        let socket = tmp.join(format!(
            "tmux-{}-{}.sock",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        // Its own home, so the history file is the test's.
        let home = tempfile::tempdir().expect("tempdir");
        let quoted: Vec<String> = args.iter().map(|arg| format!("'{arg}'")).collect();
        // The pane stays after the client exits, so a test can read why it did.
        let command = format!(
            "env HOME='{}' XDG_STATE_HOME= TERM=xterm-256color '{}' chat --url '{}' {}; \
             echo \"[chat exited $?]\"; sleep 3600",
            home.path().display(),
            env!("CARGO_BIN_EXE_tiny-harness"),
            served.base,
            quoted.join(" ")
        );
        let terminal = Terminal {
            socket,
            _home: home,
        };
        terminal.tmux(&[
            "-f",
            "/dev/null",
            "new-session",
            "-d",
            "-s",
            "chat",
            "-x",
            "120",
            "-y",
            "50",
            &command,
        ]);
        terminal
    }

    fn tmux(&self, args: &[&str]) -> String {
        let output = Command::new("tmux")
            .arg("-S")
            .arg(&self.socket)
            .args(args)
            .output()
            .expect("tmux runs (tests/run.sh installs it)");
        assert!(
            output.status.success(),
            "tmux {args:?}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        String::from_utf8_lossy(&output.stdout).into_owned()
    }

    /// Types `text` literally.
    fn type_text(&self, text: &str) {
        self.tmux(&["send-keys", "-t", "chat", "-l", text]);
    }

    /// Presses a key (`Enter`, `Tab`, `C-c`).
    fn press(&self, key: &str) {
        self.tmux(&["send-keys", "-t", "chat", key]);
    }

    /// Types `line` and presses Enter.
    fn enter(&self, line: &str) {
        self.type_text(line);
        self.press("Enter");
    }

    /// Everything the terminal shows and has scrolled off, wrapped lines joined.
    fn screen(&self) -> String {
        self.tmux(&["capture-pane", "-p", "-J", "-t", "chat", "-S", "-2000"])
    }

    /// Waits until the screen shows `text` `times` times; returns the screen.
    fn wait_for_times(&self, text: &str, times: usize) -> String {
        let deadline = Instant::now() + WAIT;
        loop {
            let screen = self.screen();
            if screen.matches(text).count() >= times {
                return screen;
            }
            assert!(
                Instant::now() < deadline,
                "the terminal never showed {text:?} ({times}x); it shows:\n{screen}"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    fn wait_for(&self, text: &str) -> String {
        self.wait_for_times(text, 1)
    }

    /// Keeps what the terminal showed as a test artifact (`target/ui-artifacts`).
    fn save(&self, name: &str) {
        let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("../ui-artifacts");
        std::fs::create_dir_all(&dir).expect("mkdir");
        std::fs::write(dir.join(format!("chat-{name}.txt")), self.screen()).expect("write");
    }
}

impl Drop for Terminal {
    fn drop(&mut self) {
        let _ = Command::new("tmux")
            .arg("-S")
            .arg(&self.socket)
            .arg("kill-server")
            .output();
        let _ = std::fs::remove_file(&self.socket);
    }
}

/// The id of alice's only conversation, read over A2A.
async fn only_task(served: &Served, participant: &str) -> serde_json::Value {
    let page = served
        .client(participant)
        .ok("ListTasks", json!({"historyLength": 10}))
        .await;
    let tasks = page["tasks"].as_array().expect("tasks");
    assert_eq!(tasks.len(), 1, "{page}");
    tasks[0].clone()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_turn_streams_its_progress_and_ends_on_input_required() {
    let served = Served::start(CONFIG);
    let terminal = Terminal::start(&served, &["--as", "alice"]);
    terminal.wait_for("Type a message to start a new conversation");
    terminal.enter("work for 2 seconds");
    terminal.wait_for("── conversation ");
    terminal.wait_for("   · Working: ");
    terminal.wait_for("agent › Worked for 2 seconds.");
    let screen = terminal.wait_for("── waiting for your next message · ");
    let progress = screen.find("· Working:").expect("progress");
    let reply = screen.find("Worked for 2 seconds.").expect("reply");
    assert!(
        progress < reply,
        "progress came before the reply:\n{screen}"
    );
    let task = only_task(&served, "alice").await;
    assert_eq!(
        state(&task),
        "TASK_STATE_INPUT_REQUIRED",
        "the turn parked, not completed"
    );
    let short = short_id(task["id"].as_str().expect("id"));
    assert!(
        screen.contains(&format!("alice@{short} ›")),
        "the prompt names it:\n{screen}"
    );
    terminal.save("turn");
}

#[tokio::test(flavor = "multi_thread")]
async fn tab_completes_command_names_and_plugin_arguments() {
    let served = Served::with_greeter(CONFIG);
    let terminal = Terminal::start(&served, &["--as", "alice"]);
    terminal.wait_for("Type a message");
    terminal.enter("work for 1 seconds");
    terminal.wait_for("agent › Worked for 1 seconds.");
    // Every command the reporter may run, in a menu with usage and description.
    terminal.type_text("/");
    terminal.press("Tab");
    let screen = terminal.wait_for("/sub-task");
    assert!(
        screen.contains("/effort [low|medium|high] — Show or change"),
        "{screen}"
    );
    terminal.save("menu");
    terminal.press("C-c");
    terminal.type_text("/st");
    terminal.press("Tab");
    terminal.wait_for("› /status");
    terminal.press("Enter");
    terminal.wait_for("Participants: alice (reporter)");
    // The greeter's completion export, through the completion route.
    terminal.type_text("/greet w");
    terminal.press("Tab");
    terminal.wait_for("› /greet world");
    terminal.press("Enter");
    terminal.wait_for("agent › Hello, world!");
    terminal.save("completion");
}

#[tokio::test(flavor = "multi_thread")]
async fn complete_is_refused_while_a_sub_task_is_open_and_cancel_ends_it() {
    let served = Served::start(CONFIG);
    let terminal = Terminal::start(&served, &["--as", "alice"]);
    terminal.wait_for("Type a message");
    terminal.enter("hello");
    terminal.wait_for("agent › You said: hello");
    terminal.enter(":complete");
    terminal.wait_for("── completed · ");
    terminal.enter("hello again");
    terminal.wait_for("this conversation is finished; :new starts another");

    terminal.enter(":new");
    terminal.wait_for("the next message starts a new conversation");
    terminal.enter("second");
    terminal.wait_for("agent › You said: second");
    terminal.enter("/sub-task work for 20 seconds");
    terminal.wait_for("Starting a sub-task: work for 20 seconds");
    terminal.enter(":complete");
    let screen = terminal.wait_for("not completed: ");
    assert!(screen.contains("1 sub-task is still open"), "{screen}");
    terminal.enter(":cancel");
    terminal.wait_for("── canceled · ");
    terminal.save("complete-cancel");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_conversation_resumes_by_id() {
    let served = Served::start(CONFIG);
    let alice = served.client("alice");
    let task = alice.say(None, "remember me").await;
    let id = task["id"].as_str().expect("id").to_owned();
    let terminal = Terminal::start(&served, &["--as", "alice", &id]);
    terminal.wait_for("you   › remember me");
    terminal.wait_for("agent › You said: remember me");
    let waiting = format!("── waiting for your next message · {} ──", short_id(&id));
    terminal.wait_for(&waiting);
    terminal.enter("and more");
    terminal.wait_for("agent › You said: and more");
    // The reply is shown as it streams, before the turn's end is stored:
    // the turn's end (the second wait line) comes after its commit.
    terminal.wait_for_times(&waiting, 2);
    let history = alice.get_task(&id).await["history"]
        .as_array()
        .expect("history")
        .len();
    assert_eq!(history, 4, "the same task went on");
}

#[tokio::test(flavor = "multi_thread")]
async fn ctrl_c_stops_the_wait_not_the_turn() {
    let served = Served::start(CONFIG);
    let terminal = Terminal::start(&served, &["--as", "alice"]);
    terminal.wait_for("Type a message");
    terminal.enter("work for 8 seconds");
    terminal.wait_for("   · Working: ");
    terminal.press("C-c");
    terminal.wait_for("stopped waiting: the turn goes on on the server");
    let task = only_task(&served, "alice").await;
    assert_eq!(state(&task), "TASK_STATE_WORKING", "the turn goes on");
    assert!(
        !terminal.screen().contains("[chat exited"),
        "the client is still running"
    );
    terminal.enter(":follow");
    terminal.wait_for("agent › Worked for 8 seconds.");
    terminal.wait_for("── waiting for your next message · ");
}

#[tokio::test(flavor = "multi_thread")]
async fn follow_shows_the_end_of_a_turn_that_ended_after_ctrl_c() {
    let served = Served::start(CONFIG);
    let terminal = Terminal::start(&served, &["--as", "alice"]);
    terminal.wait_for("Type a message");
    terminal.enter("work for 2 seconds");
    terminal.wait_for("   · Working: ");
    terminal.press("C-c");
    terminal.wait_for("stopped waiting: the turn goes on on the server");
    // The turn ends on the server while the client is not watching.
    let deadline = Instant::now() + WAIT;
    while state(&only_task(&served, "alice").await) != "TASK_STATE_INPUT_REQUIRED" {
        assert!(Instant::now() < deadline, "the turn never parked");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(
        !terminal.screen().contains("Worked for 2 seconds."),
        "the reply came while the client was not watching"
    );
    // What :follow shows is the end of the turn it stopped waiting for, not a wait for
    // the next one.
    terminal.enter(":follow");
    terminal.wait_for("agent › Worked for 2 seconds.");
    terminal.wait_for("── waiting for your next message · ");
}

#[tokio::test(flavor = "multi_thread")]
async fn the_inbox_lists_waiting_conversations_first_and_opens_by_number() {
    let served = Served::start(CONFIG);
    let alice = served.client("alice");
    let replied = alice.say(None, "hello there").await;
    let asked = alice.say(None, "please ask me something").await;
    let short = |task: &serde_json::Value| short_id(task["id"].as_str().expect("id")).to_owned();
    let terminal = Terminal::start(&served, &["--as", "alice"]);
    let screen = terminal.wait_for("Type a message");
    assert!(
        screen.contains(&format!(
            "  1. {}  the agent asked you a question",
            short(&asked)
        )),
        "{screen}"
    );
    assert!(
        screen.contains(&format!(
            "  2. {}  waiting for your next message",
            short(&replied)
        )),
        "{screen}"
    );
    terminal.enter(":open 2");
    terminal.wait_for(&format!("── conversation {} · context", short(&replied)));
    terminal.wait_for("you are the reporter");
    terminal.enter(":inbox");
    terminal.wait_for_times("the agent asked you a question", 2);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_watcher_reads_but_cannot_write() {
    let served = Served::start(CONFIG);
    let alice = served.client("alice");
    let task = alice.say(None, "hello bob").await;
    let id = task["id"].as_str().expect("id").to_owned();
    let watcher =
        json!({"kind": "task", "payload": {"participants": [{"id": "bob", "role": "watcher"}]}});
    alice.send_data(&id, watcher).await;
    let before = alice.get_task(&id).await["history"]
        .as_array()
        .expect("history")
        .len();
    let terminal = Terminal::start(&served, &["--as", "bob", &id]);
    terminal.wait_for("you are a watcher");
    terminal.wait_for("agent › You said: hello bob");
    terminal.enter("let me in");
    terminal.wait_for("you are a watcher here: you can read and :follow, but not write");
    let after = alice.get_task(&id).await["history"]
        .as_array()
        .expect("history")
        .len();
    assert_eq!(after, before, "nothing was sent");
}

#[test]
fn with_tokens_the_client_speaks_with_a_bearer_token() {
    let config = format!("{CONFIG}[auth]\ntokens = {{ \"tok-alice\" = \"alice\" }}\n");
    let served = Served::start(&config);
    let refused = Command::new(env!("CARGO_BIN_EXE_tiny-harness"))
        .args(["chat", "--url", &served.base, "--token", "wrong"])
        .output()
        .expect("runs");
    assert!(!refused.status.success(), "a wrong token stops the client");
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(stderr.contains("Authentication failed"), "{stderr}");

    let terminal = Terminal::start(&served, &["--token", "tok-alice"]);
    terminal.wait_for("Type a message");
    terminal.enter("hello with a token");
    terminal.wait_for("agent › You said: hello with a token");
}

/// How the terminal client shortens an id: its last 8 characters (the
/// harness's ids are UUIDv7, whose first characters are the time).
fn short_id(id: &str) -> &str {
    &id[id.len().saturating_sub(8)..]
}
