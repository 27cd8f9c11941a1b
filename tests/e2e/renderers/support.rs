//! A server for the renderer tests: its own folder (configuration, database, plugins),
//! restartable on the same port, so a client that lost its connection can find it again.

use std::path::{Path, PathBuf};
use std::process::Child;

use crate::support::{PluginsFolder, spawn_server_on};

/// An admin, for the role tests; defaults otherwise (the offline model).
pub const CONFIG: &str = "admins = [\"root\"]\n";

/// One server folder and the process serving it.
pub struct Served {
    dir: tempfile::TempDir,
    plugins: PathBuf,
    /// Kept alive as long as the server may read it.
    _fixtures: Option<PluginsFolder>,
    child: Option<Child>,
    /// `http://127.0.0.1:PORT`.
    pub base: String,
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
        let mut served = Served {
            dir,
            plugins,
            _fixtures: fixtures,
            child: None,
            base: String::new(),
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

    /// An A2A client of this server speaking as `participant`.
    pub fn client(&self, participant: &str) -> crate::server::support::Client {
        crate::server::support::Client {
            http: crate::support::http(),
            base: self.base.clone(),
            participant: participant.to_owned(),
        }
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        self.kill();
    }
}
