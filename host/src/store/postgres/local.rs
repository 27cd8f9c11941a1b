//! A local PostgreSQL server for the tests and for trying the store: Debian's
//! `postgresql` binaries (`apt install postgresql`), a cluster in a fresh
//! folder, trust authentication on a free loopback port, durability off
//! (nothing in it needs to survive a crash).
//!
//! One per test process ([`LocalPostgres::shared`]), each test in a
//! database of its own ([`LocalPostgres::database`]). It stops with the
//! process that started it (the kernel's parent-death signal), so a test
//! run that is killed leaves no server behind; the folders of earlier
//! runs' servers are removed by the next.

use std::ffi::OsString;
use std::fs;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

/// How long a start may take to accept connections.
const STARTUP: Duration = Duration::from_secs(60);

/// The folders servers run in: `tiny-harness-postgres-<pid>`.
const FOLDER_PREFIX: &str = "tiny-harness-postgres-";

/// A running server.
pub struct LocalPostgres {
    port: u16,
    databases: AtomicU32,
    _child: Child,
}

impl LocalPostgres {
    /// This process's server, started on first use.
    pub fn shared() -> Result<&'static LocalPostgres, String> {
        static SERVER: OnceLock<Result<LocalPostgres, String>> = OnceLock::new();
        SERVER
            .get_or_init(|| {
                // The parent-death signal fires when the thread that
                // started the server ends: a thread of its own, parked for
                // the life of the process.
                let (started, answer) = std::sync::mpsc::channel();
                std::thread::Builder::new()
                    .name("local-postgres".into())
                    .spawn(move || {
                        let _ = started.send(LocalPostgres::start());
                        loop {
                            std::thread::park();
                        }
                    })
                    .map_err(|error| format!("cannot start a thread: {error}"))?;
                answer
                    .recv()
                    .map_err(|_| "the local PostgreSQL never started".to_owned())?
            })
            .as_ref()
            .map_err(Clone::clone)
    }

    /// A URL to a new, empty database of this server.
    pub async fn database(&self) -> Result<String, String> {
        let number = self.databases.fetch_add(1, Ordering::Relaxed);
        let name = format!("test_{number}");
        let (client, connection) =
            tokio_postgres::connect(&self.url("postgres"), tokio_postgres::NoTls)
                .await
                .map_err(|error| format!("cannot reach the local PostgreSQL: {error}"))?;
        let connection = tokio::spawn(connection);
        let created = client
            .batch_execute(&format!("CREATE DATABASE {name}"))
            .await
            .map_err(|error| format!("cannot create database {name}: {error}"));
        drop(client);
        let _ = connection.await;
        created.map(|()| self.url(&name))
    }

    /// The URL of database `name`.
    pub fn url(&self, name: &str) -> String {
        format!("postgres://postgres@127.0.0.1:{}/{name}", self.port)
    }

    fn start() -> Result<LocalPostgres, String> {
        let bin = binaries()?;
        remove_stale_folders();
        let folder = std::env::temp_dir().join(format!("{FOLDER_PREFIX}{}", std::process::id()));
        let _ = fs::remove_dir_all(&folder);
        fs::create_dir_all(&folder)
            .map_err(|error| format!("cannot create {folder:?}: {error}"))?;
        let user = RunAs::detect(&folder)?;
        let data = folder.join("data");
        let log = folder.join("postgres.log");
        let initdb = user
            .command(&bin.join("initdb"))
            .args([
                "--auth=trust",
                "--username=postgres",
                "--encoding=UTF8",
                "--no-sync",
            ])
            .arg("-D")
            .arg(&data)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .output()
            .map_err(|error| format!("cannot run initdb: {error}"))?;
        if !initdb.status.success() {
            return Err(format!(
                "initdb failed: {}",
                String::from_utf8_lossy(&initdb.stderr).trim()
            ));
        }
        // A port free a moment ago may be taken before the server binds it:
        // then it exits, and another is tried.
        let mut last = String::new();
        for _ in 0..3 {
            let port = free_port()?;
            let mut child = user
                .command(&bin.join("postgres"))
                .arg("-D")
                .arg(&data)
                .args(["-p", &port.to_string()])
                .args(["-c", "listen_addresses=127.0.0.1"])
                .args(["-c", "unix_socket_directories="])
                .args(["-c", "fsync=off", "-c", "synchronous_commit=off"])
                .args(["-c", "full_page_writes=off", "-c", "max_connections=300"])
                .stdout(Stdio::null())
                .stderr(
                    fs::File::create(&log)
                        .map_err(|error| format!("cannot create {log:?}: {error}"))?,
                )
                .spawn()
                .map_err(|error| format!("cannot start postgres: {error}"))?;
            match accepts(port, &mut child) {
                Ok(()) => {
                    return Ok(LocalPostgres {
                        port,
                        databases: AtomicU32::new(0),
                        _child: child,
                    });
                }
                Err(reason) => {
                    let _ = child.kill();
                    let _ = child.wait();
                    last = format!("{reason}; its log: {}", tail(&log));
                }
            }
        }
        Err(format!("the local PostgreSQL did not start: {last}"))
    }
}

/// The folder of Debian's PostgreSQL binaries (or `TINY_HARNESS_POSTGRES_BIN`).
fn binaries() -> Result<PathBuf, String> {
    if let Some(dir) = std::env::var_os("TINY_HARNESS_POSTGRES_BIN") {
        return Ok(PathBuf::from(dir));
    }
    let mut found: Vec<PathBuf> = fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .map(|entry| entry.path().join("bin"))
        .filter(|bin| bin.join("initdb").is_file())
        .collect();
    // The newest major version.
    found.sort_by_key(|bin| {
        bin.parent()
            .and_then(|version| version.file_name())
            .and_then(|name| name.to_str())
            .and_then(|name| name.parse::<u32>().ok())
            .unwrap_or(0)
    });
    found.pop().ok_or_else(|| {
        "PostgreSQL is not installed (no /usr/lib/postgresql/*/bin/initdb): \
         `apt install postgresql`, or set TINY_HARNESS_POSTGRES_BIN"
            .to_owned()
    })
}

/// Who runs the server: PostgreSQL refuses to run as root, so root runs it
/// as the `postgres` user Debian's package creates.
enum RunAs {
    Myself,
    Postgres,
}

impl RunAs {
    fn detect(folder: &Path) -> Result<RunAs, String> {
        if user_id(None)? != 0 {
            return Ok(RunAs::Myself);
        }
        let uid = user_id(Some("postgres")).map_err(|_| {
            "running as root needs the `postgres` user (apt install postgresql)".to_owned()
        })?;
        std::os::unix::fs::chown(folder, Some(uid), None)
            .map_err(|error| format!("cannot give {folder:?} to postgres: {error}"))?;
        Ok(RunAs::Postgres)
    }

    /// `program`, stopped by the kernel when the calling thread ends.
    fn command(&self, program: &Path) -> Command {
        let mut command = Command::new("setpriv");
        if let RunAs::Postgres = self {
            command.args(["--reuid=postgres", "--regid=postgres", "--init-groups"]);
        }
        // SIGINT: a fast shutdown, the server ending its sessions itself.
        command.args(["--pdeathsig=INT", "--"]);
        command.arg(program);
        command
    }
}

/// The user id of `user`, or of this process (`id -u`).
fn user_id(user: Option<&str>) -> Result<u32, String> {
    let output = Command::new("id")
        .arg("-u")
        .args(user)
        .output()
        .map_err(|error| format!("cannot run id: {error}"))?;
    String::from_utf8_lossy(&output.stdout)
        .trim()
        .parse()
        .map_err(|_| format!("id -u {} answered no user id", user.unwrap_or_default()))
}

fn free_port() -> Result<u16, String> {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .map(|address| address.port())
        .map_err(|error| format!("no free port: {error}"))
}

/// Wait until the server on `port` accepts connections, or has exited.
fn accepts(port: u16, child: &mut Child) -> Result<(), String> {
    let deadline = Instant::now() + STARTUP;
    loop {
        if let Ok(Some(status)) = child.try_wait() {
            return Err(format!("postgres exited ({status})"));
        }
        if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() && ready(port) {
            return Ok(());
        }
        if Instant::now() > deadline {
            return Err(format!(
                "postgres did not accept connections in {STARTUP:?}"
            ));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Whether a session can be opened (the port may be open while the server
/// is still starting up).
fn ready(port: u16) -> bool {
    let Ok(runtime) = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    else {
        return false;
    };
    runtime.block_on(async {
        let url = format!("postgres://postgres@127.0.0.1:{port}/postgres");
        match tokio_postgres::connect(&url, tokio_postgres::NoTls).await {
            Ok((client, connection)) => {
                let connection = tokio::spawn(connection);
                let answered = client.batch_execute("SELECT 1").await.is_ok();
                drop(client);
                let _ = connection.await;
                answered
            }
            Err(_) => false,
        }
    })
}

/// Remove the folders of servers whose process is gone.
fn remove_stale_folders() {
    let Ok(entries) = fs::read_dir(std::env::temp_dir()) else {
        return;
    };
    for entry in entries.flatten() {
        let name: OsString = entry.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|name| name.strip_prefix(FOLDER_PREFIX))
        else {
            continue;
        };
        if !Path::new("/proc").join(pid).exists() {
            let _ = fs::remove_dir_all(entry.path());
        }
    }
}

fn tail(log: &Path) -> String {
    let text = fs::read_to_string(log).unwrap_or_default();
    let lines: Vec<&str> = text.lines().rev().take(5).collect();
    lines.into_iter().rev().collect::<Vec<_>>().join(" | ")
}
