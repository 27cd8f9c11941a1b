//! A real `tiny-harness serve` whose log the test reads: the sandbox and
//! abuse tests wait for what plugins log (a nap that began) and count what
//! reached the log (a flood cut by its budget).

use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};

use crate::server::support::Client;
use crate::support::{Spawned, spawn_server};

/// The log filter: the harness's plugin lines (what plugins log, load
/// reports, dropped-line notices) at info, the rest at warn.
const LOG_FILTER: &str = "warn,tiny_harness::plugins=info";

/// A running harness, killed when dropped.
pub struct PluginServer {
    spawned: Spawned,
    /// Participant -> bearer token, from the configuration's `[auth] tokens`.
    tokens: BTreeMap<String, String>,
    _dir: tempfile::TempDir,
}

impl PluginServer {
    /// Start on a free loopback port with `config` (TOML) and `plugins`.
    pub fn start(config: &str, plugins: &Path) -> Self {
        let dir = tempfile::Builder::new()
            .prefix("plugin-server-")
            .tempdir_in(env!("CARGO_TARGET_TMPDIR"))
            .expect("tempdir");
        let config_path = dir.path().join("tiny-harness.toml");
        std::fs::write(&config_path, config).expect("write config");
        let spawned = spawn_server(&config_path, plugins, LOG_FILTER);
        let tokens = tiny_harness::config::Config::from_toml(config)
            .map(|config| {
                config
                    .auth
                    .tokens
                    .into_iter()
                    .map(|(token, participant)| (participant, token))
                    .collect()
            })
            .unwrap_or_default();
        PluginServer {
            spawned,
            tokens,
            _dir: dir,
        }
    }

    /// A client for `participant`: with its bearer token when the
    /// configuration gives it one, self-asserted otherwise.
    pub fn client(&self, participant: &str) -> Client {
        Client {
            http: crate::support::http(),
            base: self.spawned.base.clone(),
            participant: participant.to_owned(),
            token: self.tokens.get(participant).cloned(),
        }
    }

    pub fn base(&self) -> &str {
        &self.spawned.base
    }

    /// Every log line so far that contains `needle`, without the colours
    /// the log's formatter may add.
    pub fn log_lines(&self, needle: &str) -> Vec<String> {
        self.spawned
            .log
            .lock()
            .expect("log")
            .iter()
            .map(|line| without_colours(line))
            .filter(|line| line.contains(needle))
            .collect()
    }

    /// Wait (at most a minute) until `count` log lines contain `needle`.
    pub async fn wait_for_log(&self, needle: &str, count: usize) -> Vec<String> {
        let started = Instant::now();
        loop {
            let lines = self.log_lines(needle);
            if lines.len() >= count {
                return lines;
            }
            assert!(
                started.elapsed() < Duration::from_secs(60),
                "{count} log lines with `{needle}` expected, saw {}:\n{}",
                lines.len(),
                self.spawned.log.lock().expect("log").join("\n")
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

/// `line` without ANSI escape sequences (`ESC [ ... m`).
fn without_colours(line: &str) -> String {
    let mut plain = String::with_capacity(line.len());
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            for c in chars.by_ref() {
                if c.is_ascii_alphabetic() {
                    break;
                }
            }
        } else {
            plain.push(c);
        }
    }
    plain
}

impl Drop for PluginServer {
    fn drop(&mut self) {
        let _ = self.spawned.child.kill();
        let _ = self.spawned.child.wait();
    }
}
