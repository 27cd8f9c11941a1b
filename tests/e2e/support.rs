//! Shared test helpers: plugin folders assembled from the fixtures, and one
//! Wasm runtime for the whole test binary.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use tiny_harness::commands::{CommandFailure, CommandRegistry, Outcome};
use tiny_harness::plugins::wasm::{RuntimeConfig, WasmRuntime};
use tiny_harness::plugins::{Grants, Loaded, PluginLoader};
use tiny_harness::task::{Participant, Role, TaskView};

/// The folder holding the fixture sources and manifests.
pub fn fixtures_dir() -> PathBuf {
    PathBuf::from(env!("FIXTURES_DIR"))
}

/// The built component of each fixture plugin, by folder name.
pub fn fixture_wasm(name: &str) -> PathBuf {
    PathBuf::from(match name {
        "looper" => env!("FIXTURE_LOOPER_WASM"),
        "memory-hog" => env!("FIXTURE_MEMORY_HOG_WASM"),
        "trapper" => env!("FIXTURE_TRAPPER_WASM"),
        "old-abi" => env!("FIXTURE_OLD_ABI_WASM"),
        "status-override" => env!("FIXTURE_STATUS_OVERRIDE_WASM"),
        "greeter" => env!("FIXTURE_GREETER_WASM"),
        "counter" => env!("FIXTURE_COUNTER_WASM"),
        "sleeper" => env!("FIXTURE_SLEEPER_WASM"),
        "probe" => env!("FIXTURE_PROBE_WASM"),
        "flooder" => env!("FIXTURE_FLOODER_WASM"),
        "amplifier" => env!("FIXTURE_AMPLIFIER_WASM"),
        "tool-kit" => env!("FIXTURE_TOOL_KIT_WASM"),
        "legacy" => env!("FIXTURE_LEGACY_WASM"),
        other => panic!("no fixture plugin called {other}"),
    })
}

/// An HTTP client for talking to the server under test. Built by the
/// harness's own `outbound` module, which installs the TLS crypto provider
/// a bare `reqwest::Client::new()` would panic without.
pub fn http() -> reqwest::Client {
    tiny_harness::outbound::client_builder(&Default::default())
        .build()
        .expect("an HTTP client")
}

/// The compiled-component cache every test shares, under the target dir
/// (`cargo clean` removes it). Entries are keyed by content and engine, and
/// written by rename, so concurrent test processes can share it safely.
pub fn component_cache_dir() -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR")).join("component-cache")
}

/// One engine for the whole test binary (as in the server), with the shared
/// compile cache.
pub fn runtime() -> WasmRuntime {
    static RUNTIME: OnceLock<WasmRuntime> = OnceLock::new();
    RUNTIME
        .get_or_init(|| {
            WasmRuntime::new(RuntimeConfig {
                cache_dir: Some(component_cache_dir()),
            })
            .expect("the Wasm runtime starts")
        })
        .clone()
}

/// A scratch plugins folder.
pub struct PluginsFolder {
    dir: tempfile::TempDir,
}

impl PluginsFolder {
    pub fn new() -> Self {
        PluginsFolder {
            dir: tempfile::tempdir().expect("tempdir"),
        }
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Add fixture plugin `name`: its three manifests and its built
    /// component, as a plugin author would ship it.
    pub fn with_fixture(self, name: &str) -> Self {
        self.add_fixture(name);
        self
    }

    /// Copy fixture plugin `name` in, as a user dropping a plugin into a
    /// served folder would: the component first, the manifests last.
    pub fn add_fixture(&self, name: &str) {
        let source = fixtures_dir().join("plugins").join(name);
        let target = self.path().join(name);
        std::fs::create_dir_all(&target).expect("mkdir");
        std::fs::copy(fixture_wasm(name), target.join(format!("{name}.wasm")))
            .expect("copy component");
        copy_manifests(&source, &target);
    }

    /// Add a manifest-only fixture from tests/fixtures/manifests.
    pub fn with_manifest_fixture(self, name: &str) -> Self {
        let source = fixtures_dir().join("manifests").join(name);
        copy_manifests(&source, &self.path().join(name));
        self
    }

    /// Add a plugin written by the test: `(file name, contents)` pairs.
    pub fn with_plugin(self, name: &str, files: &[(&str, &str)]) -> Self {
        let target = self.path().join(name);
        std::fs::create_dir_all(&target).expect("mkdir");
        for (file, contents) in files {
            std::fs::write(target.join(file), contents).expect("write");
        }
        self
    }

    pub fn load(&self) -> Loaded {
        self.load_with(Grants::default())
    }

    /// Load with the operator's `grants`.
    pub fn load_with(&self, grants: Grants) -> Loaded {
        PluginLoader::new(runtime())
            .with_grants(grants)
            .load(Some(self.path()), CommandRegistry::builder())
    }
}

fn copy_manifests(source: &Path, target: &Path) {
    std::fs::create_dir_all(target).expect("mkdir");
    for file in ["plugin.json", "commands.json", "tools.json", "hooks.json"] {
        let from = source.join(file);
        if from.exists() {
            std::fs::copy(&from, target.join(file)).expect("copy manifest");
        }
    }
}

pub fn reporter() -> Participant {
    Participant {
        id: "alice".into(),
        role: Role::Reporter,
    }
}

/// Send `message` as `sender` to a scratch conversation.
pub async fn send_as(
    registry: &CommandRegistry,
    sender: Participant,
    message: &str,
) -> Result<Outcome, CommandFailure> {
    let mut task = TaskView::scratch("alice");
    task.selectable_models = vec!["offline-echo".into(), "offline-large".into()];
    if sender.id != "alice" {
        task.participants.push(sender.clone());
    }
    let call = registry
        .parse(message)
        .unwrap_or_else(|| panic!("`{message}` is not a registered command"));
    registry.invoke(call, sender, task).await
}

/// Send `message` as the reporter.
pub async fn send(registry: &CommandRegistry, message: &str) -> Result<Outcome, CommandFailure> {
    send_as(registry, reporter(), message).await
}

/// A `tiny-harness serve` process on a free loopback port.
pub struct Spawned {
    pub child: std::process::Child,
    /// `http://127.0.0.1:PORT`, without a trailing slash.
    pub base: String,
    /// Every line the process wrote to stderr so far.
    pub log: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
}

/// Start the real binary with `config` and `plugins`, and wait (at most a
/// minute) for the `listening on http://ADDR` line that says it serves.
///
/// The server's temporary files (its plugin staging copies) go in the
/// config's folder, which the test owns and removes: a server the test
/// SIGKILLs leaves nothing behind in the machine's temp dir.
pub fn spawn_server(config: &Path, plugins: &Path, rust_log: &str) -> Spawned {
    spawn_server_with_env(config, plugins, rust_log, &[])
}

/// [`spawn_server`] with `env` set in the server's environment (API keys).
pub fn spawn_server_with_env(
    config: &Path,
    plugins: &Path,
    rust_log: &str,
    env: &[(&str, &str)],
) -> Spawned {
    match start_server_with_env(config, plugins, rust_log, None, env) {
        Started::Serving(spawned) => spawned,
        Started::Exited { log, status } => {
            panic!("the server did not start ({status}); its log:\n{log}")
        }
    }
}

/// [`spawn_server`] on a chosen address (a restarted server keeps its port, so a client
/// that lost its connection finds it again).
pub fn spawn_server_on(config: &Path, plugins: &Path, rust_log: &str, listen: &str) -> Spawned {
    match start_server_at(config, plugins, rust_log, None, listen, &[]) {
        Started::Serving(spawned) => spawned,
        Started::Exited { log, status } => {
            panic!("the server did not start ({status}); its log:\n{log}")
        }
    }
}

/// How a start of the real binary ended up.
pub enum Started {
    /// It serves.
    Serving(Spawned),
    /// It exited without serving: its exit status and everything it wrote to stderr.
    Exited {
        status: std::process::ExitStatus,
        log: String,
    },
}

/// Start the real binary like [`spawn_server`], with at most
/// `max_open_files` file descriptors if given (`ulimit -n`), and report
/// whether it came to serve or exited first.
pub fn start_server(
    config: &Path,
    plugins: &Path,
    rust_log: &str,
    max_open_files: Option<u32>,
) -> Started {
    start_server_at(
        config,
        plugins,
        rust_log,
        max_open_files,
        "127.0.0.1:0",
        &[],
    )
}

/// [`start_server`] with `env` set in the server's environment.
pub fn start_server_with_env(
    config: &Path,
    plugins: &Path,
    rust_log: &str,
    max_open_files: Option<u32>,
    env: &[(&str, &str)],
) -> Started {
    start_server_at(
        config,
        plugins,
        rust_log,
        max_open_files,
        "127.0.0.1:0",
        env,
    )
}

fn start_server_at(
    config: &Path,
    plugins: &Path,
    rust_log: &str,
    max_open_files: Option<u32>,
    listen: &str,
    env: &[(&str, &str)],
) -> Started {
    use std::io::{BufRead, BufReader};
    use std::process::{Command, Stdio};
    use std::sync::{Arc, Mutex};

    let binary = env!("CARGO_BIN_EXE_tiny-harness");
    let mut command = match max_open_files {
        // The limit applies to the server only, not to the test process.
        Some(limit) => {
            let mut shell = Command::new("sh");
            shell
                .arg("-c")
                .arg(format!("ulimit -n {limit} && exec \"$0\" \"$@\""))
                .arg(binary);
            shell
        }
        None => Command::new(binary),
    };
    let mut child = command
        .envs(env.iter().copied())
        .arg("serve")
        .arg("--config")
        .arg(config)
        .arg("--listen")
        .arg(listen)
        .arg("--plugins")
        .arg(plugins)
        .env("TINY_HARNESS_CACHE_DIR", component_cache_dir())
        .env(
            "TMPDIR",
            config.parent().expect("the config is in a folder"),
        )
        .env("RUST_LOG", rust_log)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the binary starts");
    let stderr = child.stderr.take().expect("stderr");
    let (tx, rx) = std::sync::mpsc::channel();
    let log = Arc::new(Mutex::new(Vec::new()));
    let lines = Arc::clone(&log);
    std::thread::spawn(move || {
        let mut sent = false;
        // Keep draining, so the server never blocks on a full pipe. The
        // sender drops when stderr closes: the process has exited.
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if !sent && let Some(at) = line.find("listening on ") {
                let _ = tx.send(line[at + "listening on ".len()..].trim().to_owned());
                sent = true;
            }
            lines.lock().expect("log").push(line);
        }
    });
    let all_of = |log: &Arc<Mutex<Vec<String>>>| log.lock().expect("log").join("\n");
    match rx.recv_timeout(std::time::Duration::from_secs(60)) {
        Ok(base) => Started::Serving(Spawned {
            child,
            base: base.trim_end_matches('/').to_owned(),
            log,
        }),
        Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
            let status = child.wait().expect("reaped");
            Started::Exited {
                status,
                log: all_of(&log),
            }
        }
        Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
            let _ = child.kill();
            panic!(
                "the server neither served nor exited within a minute; its log:\n{}",
                all_of(&log)
            );
        }
    }
}

/// A private CA, and a server certificate it issued for 127.0.0.1 and
/// localhost, written as PEM files into a folder: `ca.pem`, `server.pem`,
/// `server-key.pem`.
pub struct PrivateCa {
    pub ca_file: PathBuf,
    pub cert_file: PathBuf,
    pub key_file: PathBuf,
}

impl PrivateCa {
    pub fn issue(dir: &Path) -> Self {
        use rcgen::{BasicConstraints, CertificateParams, IsCa, Issuer, KeyPair};
        let ca_key = KeyPair::generate().expect("a CA key");
        let mut ca_params = CertificateParams::new(Vec::<String>::new()).expect("CA params");
        ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        let ca_cert = ca_params.self_signed(&ca_key).expect("the CA certificate");
        let issuer = Issuer::new(ca_params, ca_key);
        let server_key = KeyPair::generate().expect("a server key");
        let server_cert =
            CertificateParams::new(vec!["127.0.0.1".to_owned(), "localhost".to_owned()])
                .expect("server params")
                .signed_by(&server_key, &issuer)
                .expect("the server certificate");
        let ca = PrivateCa {
            ca_file: dir.join("ca.pem"),
            cert_file: dir.join("server.pem"),
            key_file: dir.join("server-key.pem"),
        };
        std::fs::write(&ca.ca_file, ca_cert.pem()).expect("write the CA");
        std::fs::write(&ca.cert_file, server_cert.pem()).expect("write the certificate");
        std::fs::write(&ca.key_file, server_key.serialize_pem()).expect("write the key");
        ca
    }

    /// A TLS acceptor serving the server certificate.
    pub fn acceptor(&self) -> tokio_rustls::TlsAcceptor {
        tiny_harness::server::tls::acceptor(&self.cert_file, &self.key_file)
            .expect("a TLS identity")
    }

    /// An HTTP client that trusts this CA.
    pub fn client(&self) -> reqwest::Client {
        let roots =
            tiny_harness::outbound::ExtraRoots::from_pem_files(std::slice::from_ref(&self.ca_file))
                .expect("the CA");
        tiny_harness::outbound::client_builder(&roots)
            .build()
            .expect("an HTTP client")
    }
}

/// A response read off the wire by [`raw_http`].
#[derive(Debug)]
pub struct RawResponse {
    pub status: u16,
    /// The header lines, lowercased names, as sent.
    pub headers: Vec<(String, String)>,
    pub body: String,
}

impl RawResponse {
    /// The first value of header `name` (lowercase), or "".
    pub fn header(&self, name: &str) -> &str {
        self.headers
            .iter()
            .find(|(key, _)| key == name)
            .map_or("", |(_, value)| value.as_str())
    }

    /// The body as JSON (Null if it is not).
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.body).unwrap_or(serde_json::Value::Null)
    }
}

/// Send `head` (a request line and headers, without the blank line; `Connection: close`
/// is added) and `body` to `base` (`http://ADDR`) exactly as written, as curl would with
/// any `Host` and `Origin` an attacker likes, and read the whole response.
pub async fn raw_http(base: &str, head: &str, body: &str) -> RawResponse {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let address = base.trim_start_matches("http://");
    let mut stream = tokio::net::TcpStream::connect(address)
        .await
        .expect("connects");
    let mut request = head.trim_end().replace('\n', "\r\n");
    request.push_str("\r\nConnection: close\r\n");
    if !body.is_empty() {
        request.push_str(&format!("Content-Length: {}\r\n", body.len()));
    }
    request.push_str("\r\n");
    request.push_str(body);
    stream.write_all(request.as_bytes()).await.expect("written");
    let mut bytes = Vec::new();
    tokio::time::timeout(
        std::time::Duration::from_secs(30),
        stream.read_to_end(&mut bytes),
    )
    .await
    .expect("answered within 30 s")
    .expect("read");
    let text = String::from_utf8_lossy(&bytes).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let mut lines = head.lines();
    let status = lines
        .next()
        .and_then(|line| line.split_whitespace().nth(1))
        .and_then(|code| code.parse().ok())
        .unwrap_or(0);
    let headers = lines
        .filter_map(|line| line.split_once(':'))
        .map(|(name, value)| (name.trim().to_ascii_lowercase(), value.trim().to_owned()))
        .collect();
    RawResponse {
        status,
        headers,
        body: body.to_owned(),
    }
}

/// The server's resident memory, in KiB (Linux `VmRSS`).
pub fn resident_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("proc status");
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))
        .and_then(|value| value.split_whitespace().next())
        .and_then(|kib| kib.parse().ok())
        .expect("VmRSS")
}
