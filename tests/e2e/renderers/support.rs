//! A server for the renderer tests: its own folder (configuration, database, plugins),
//! restartable on the same port, so a client that lost its connection can find it again.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Child;

use crate::support::{PluginsFolder, spawn_server_on};

/// Loopback, callers self-asserted (admins need tokens: `admin_config`).
pub const CONFIG: &str = crate::server::support::DEFAULT_CONFIG;

pub use crate::server::support::admin_config;

/// One server folder and the process serving it.
pub struct Served {
    dir: tempfile::TempDir,
    plugins: PathBuf,
    /// Kept alive as long as the server may read it.
    _fixtures: Option<PluginsFolder>,
    child: Option<Child>,
    /// `http://127.0.0.1:PORT`.
    pub base: String,
    /// Participant -> bearer token, from the configuration's `[auth] tokens`.
    tokens: BTreeMap<String, String>,
}

impl Served {
    /// Serve `config` with the built-in plugin only.
    pub fn start(config: &str) -> Served {
        Self::start_with(config, None)
    }

    /// Serve `config` with the built-in plugin and the greeter fixture (`/greet`, whose
    /// plugin exports argument completion).
    pub fn with_greeter(config: &str) -> Served {
        Self::start_with(config, Some(PluginsFolder::new().with_fixture("greeter")))
    }

    pub fn start_with(config: &str, fixtures: Option<PluginsFolder>) -> Served {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(dir.path().join("tiny-harness.toml"), config).expect("write config");
        let plugins = match &fixtures {
            Some(folder) => folder.path().to_owned(),
            None => {
                let empty = dir.path().join("plugins");
                std::fs::create_dir_all(&empty).expect("mkdir");
                empty
            }
        };
        let tokens = tiny_harness::config::Config::from_toml(config)
            .expect("a valid configuration")
            .auth
            .tokens
            .into_iter()
            .map(|(token, participant)| (participant, token))
            .collect();
        let mut served = Served {
            dir,
            plugins,
            _fixtures: fixtures,
            child: None,
            base: String::new(),
            tokens,
        };
        served.spawn("127.0.0.1:0");
        served
    }

    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    fn spawn(&mut self, listen: &str) {
        let config = self.dir().join("tiny-harness.toml");
        let spawned = spawn_server_on(&config, &self.plugins, "warn", listen);
        self.base = spawned.base;
        self.child = Some(spawned.child);
    }

    /// SIGKILL the server, then start it again on the same folder and port.
    pub fn restart(&mut self) {
        let listen = self.base.trim_start_matches("http://").to_owned();
        self.kill();
        self.spawn(&listen);
    }

    fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// An A2A client of this server speaking as `participant`: with its bearer token when
    /// the configuration gives it one, self-asserted otherwise.
    pub fn client(&self, participant: &str) -> crate::server::support::Client {
        crate::server::support::Client {
            http: crate::support::http(),
            base: self.base.clone(),
            participant: participant.to_owned(),
            token: self.tokens.get(participant).cloned(),
        }
    }

    /// A POST to `path` as `participant`, identified as [`Served::client`] would be.
    pub fn post(&self, participant: &str, path: &str) -> reqwest::RequestBuilder {
        let request = crate::support::http()
            .post(format!("{}{path}", self.base))
            .header("A2A-Version", "1.0");
        match self.tokens.get(participant) {
            Some(token) => request.bearer_auth(token),
            None => request.header("X-Participant-Id", participant),
        }
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        self.kill();
    }
}
