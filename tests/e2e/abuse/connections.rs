//! Issue 9 item 8, the connection cap: with few file descriptors, a flood of idle
//! connections is refused quickly while a normal client gets its answers, the cap is
//! logged, and running out of descriptors never silences the server for everyone.

use std::time::{Duration, Instant};

use serde_json::json;
use tokio::io::AsyncReadExt;
use tokio::net::TcpStream;

use crate::server::support::{Client, DEFAULT_CONFIG, status_text};
use crate::support::{Spawned, Started, start_server};

/// How long a normal client may take during a flood. The server's header read timeout is
/// far longer (60 s), so only a server that sheds the flood answers in time.
const ANSWER_WITHIN: Duration = Duration::from_secs(10);

struct Flooded {
    spawned: Spawned,
    _dir: tempfile::TempDir,
}

impl Drop for Flooded {
    fn drop(&mut self) {
        let _ = self.spawned.child.kill();
        let _ = self.spawned.child.wait();
    }
}

/// A server with `limits` and at most `open_files` file descriptors.
fn start(limits: &str, open_files: u32) -> Flooded {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = dir.path().join("tiny-harness.toml");
    std::fs::write(
        &config,
        format!("{DEFAULT_CONFIG}\n[limits]\nheader_read_timeout_secs = 60\n{limits}\n"),
    )
    .expect("config");
    let plugins = dir.path().join("plugins");
    std::fs::create_dir_all(&plugins).expect("mkdir");
    match start_server(&config, &plugins, "warn", Some(open_files)) {
        Started::Serving(spawned) => Flooded { spawned, _dir: dir },
        Started::Exited { status, log } => panic!("did not start ({status}): {log}"),
    }
}

/// `count` connections that never send a byte.
async fn flood(base: &str, count: usize) -> Vec<TcpStream> {
    let address = base.trim_start_matches("http://");
    let mut idle = Vec::with_capacity(count);
    for _ in 0..count {
        idle.push(TcpStream::connect(address).await.expect("connects"));
    }
    idle
}

/// How many of `idle` the server has closed (or answered with its 503) within `within`.
async fn closed_by_the_server(idle: &mut [TcpStream], within: Duration) -> usize {
    let deadline = tokio::time::Instant::now() + within;
    let mut closed = 0;
    for stream in idle.iter_mut() {
        let mut buffer = [0u8; 512];
        let left = deadline.saturating_duration_since(tokio::time::Instant::now());
        match tokio::time::timeout(left.max(Duration::from_millis(1)), stream.read(&mut buffer))
            .await
        {
            // EOF, a 503, or a reset: the server let go of it.
            Ok(Ok(0)) | Ok(Err(_)) => closed += 1,
            Ok(Ok(read)) => {
                let text = String::from_utf8_lossy(&buffer[..read]);
                assert!(text.starts_with("HTTP/1.1 503"), "{text}");
                closed += 1;
            }
            Err(_) => {}
        }
    }
    closed
}

/// The card and a SendMessage from a fresh client, each within [`ANSWER_WITHIN`].
async fn a_normal_client_gets_its_answers(base: &str) {
    let client = Client {
        http: crate::support::http(),
        base: base.to_owned(),
        participant: "alice".to_owned(),
        token: None,
    };
    let started = Instant::now();
    let card = tokio::time::timeout(
        ANSWER_WITHIN,
        client
            .http
            .get(format!("{base}/.well-known/agent-card.json"))
            .send(),
    )
    .await
    .expect("the card answered during the flood")
    .expect("the card");
    assert_eq!(card.status(), 200);
    let task = tokio::time::timeout(ANSWER_WITHIN, client.say(None, "hello during a flood"))
        .await
        .expect("SendMessage answered during the flood");
    assert!(
        status_text(&task).contains("hello during a flood"),
        "{task}"
    );
    eprintln!("answered in {:?}", started.elapsed());
}

fn logged(spawned: &Spawned, text: &str) -> bool {
    spawned
        .log
        .lock()
        .expect("log")
        .iter()
        .any(|line| line.contains(text))
}

#[tokio::test(flavor = "multi_thread")]
async fn issue_9_8_a_connection_flood_is_refused_quickly_while_a_normal_client_gets_its_answers() {
    let server = start("max_connections = 32", 256);
    let base = server.spawned.base.clone();
    // Far more idle sockets than the server has descriptors.
    let mut idle = flood(&base, 400).await;
    a_normal_client_gets_its_answers(&base).await;
    // All but the newest of the flood were shed, promptly: at most the cap stays open.
    let closed = closed_by_the_server(&mut idle, Duration::from_secs(5)).await;
    assert!(
        closed >= 400 - 32,
        "only {closed} of 400 idle connections were closed"
    );
    assert!(
        logged(&server.spawned, "connection cap reached"),
        "the cap was logged"
    );
    // Once the flood is gone, everything is as before.
    drop(idle);
    a_normal_client_gets_its_answers(&base).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn issue_9_8_running_out_of_file_descriptors_never_silences_the_server() {
    // A cap above the descriptors the process has: accept itself fails (EMFILE).
    let server = start("max_connections = 4096", 128);
    let base = server.spawned.base.clone();
    let idle = flood(&base, 400).await;
    a_normal_client_gets_its_answers(&base).await;
    assert!(
        logged(&server.spawned, "cannot accept connections"),
        "the accept errors were logged"
    );
    drop(idle);
    let ok = crate::server::support::Client {
        http: crate::support::http(),
        base: base.clone(),
        participant: "bob".to_owned(),
        token: None,
    }
    .ok("ListTasks", json!({}))
    .await;
    assert!(ok["tasks"].is_array(), "{ok}");
}
