//! Opening one session with an MCP server: a child process speaking over
//! its stdio, or a streamable HTTP endpoint; then the MCP handshake.
//!
//! A stdio server is a native process outside the sandbox. It starts in a
//! process group of its own, so that whatever it starts (`npx` starts
//! `node`) is killed with it, with an environment of exactly what its
//! settings say (never the harness's own: API keys live there), and its
//! stderr goes to the harness's log, tagged with its name, at most
//! [`STDERR_LINES_PER_MINUTE`] lines a minute of at most
//! [`STDERR_LINE_BYTES`] bytes each.

use std::collections::{BTreeMap, HashMap};
use std::io;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use process_wrap::tokio::{ChildWrapper, CommandWrap, KillOnDrop, ProcessGroup};
use rmcp::model::{ClientConfig, Implementation, ProgressNotificationParam, ProgressToken};
use rmcp::service::{NotificationContext, RoleClient, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::async_rw::AsyncRwTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{ClientHandler, ServiceExt};
use tokio::io::{AsyncBufReadExt, AsyncRead, BufReader, ReadBuf};
use tokio::sync::mpsc;

use super::settings::Transport;

/// The most stderr lines of one server logged per minute; the rest are
/// counted and the count logged.
pub(crate) const STDERR_LINES_PER_MINUTE: u32 = 120;

/// The longest stderr line logged; longer ones are cut.
pub(crate) const STDERR_LINE_BYTES: usize = 2048;

/// Where a server's progress notifications go: one sender per call in
/// flight, by the progress token the call carries.
pub(crate) type ProgressRoutes = Arc<Mutex<HashMap<ProgressToken, mpsc::Sender<String>>>>;

/// The client side of one session: answers the server's requests with the
/// SDK's defaults (no sampling, no roots, elicitation declined), routes
/// progress to the call it belongs to, and notes a changed tool list.
pub(crate) struct Handler {
    pub(crate) progress: ProgressRoutes,
    /// Told when the server says its tool list changed.
    pub(crate) tools_changed: mpsc::Sender<()>,
}

impl ClientHandler for Handler {
    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(
            Default::default(),
            Implementation::new("tiny-harness", env!("CARGO_PKG_VERSION")),
        )
    }

    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        let route = match self.progress.lock() {
            Ok(routes) => routes.get(&params.progress_token).cloned(),
            Err(_) => None,
        };
        let Some(route) = route else { return };
        let text = match (params.message, params.total) {
            (Some(message), _) => message,
            (None, Some(total)) => format!("{} of {total}", params.progress),
            (None, None) => format!("{}", params.progress),
        };
        // Progress is best effort: a call that cannot take it now misses it.
        let _ = route.try_send(text);
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        let _ = self.tools_changed.try_send(());
    }
}

/// An open session, and the process behind it (stdio).
pub(crate) struct Session {
    pub(crate) service: RunningService<RoleClient, Handler>,
    child: Mutex<Option<Child>>,
    /// Why the transport closed, when the harness knows better than "closed"
    /// (a message over the size limit).
    pub(crate) broke: Arc<Mutex<Option<String>>>,
}

impl Session {
    /// Whether the session can still carry calls.
    pub(crate) fn is_closed(&self) -> bool {
        self.service.is_closed() || self.service.peer().is_transport_closed()
    }

    /// What ended a session whose transport closed: the reason the harness
    /// cut it, or a stdio server's exit status, waiting at most `within`
    /// for the process to exit (its stdout closes a moment before).
    pub(crate) async fn why_ended(&self, within: Duration) -> String {
        if let Some(reason) = self.broke.lock().ok().and_then(|why| why.clone()) {
            return reason;
        }
        let child = self.child.lock().ok().and_then(|mut child| child.take());
        let Some(mut child) = child else {
            return "the connection closed".to_owned();
        };
        // The child, dropped after this, kills what is left of its group.
        match tokio::time::timeout(within, child.0.wait()).await {
            Ok(Ok(status)) => format!("the process exited: {status}"),
            Ok(Err(error)) => format!("its process cannot be waited for: {error}"),
            Err(_) => "it closed its output and was stopped".to_owned(),
        }
    }

    /// What ended the session, as far as it can be told now: the process's
    /// exit, or the reason the harness cut it.
    pub(crate) fn why_closed(&self) -> String {
        if let Some(reason) = self.broke.lock().ok().and_then(|why| why.clone()) {
            return reason;
        }
        let Ok(mut child) = self.child.lock() else {
            return "the connection closed".to_owned();
        };
        match child.as_mut().map(|child| child.0.try_wait()) {
            Some(Ok(Some(status))) => format!("the process exited: {status}"),
            Some(Ok(None)) => "it closed its output".to_owned(),
            Some(Err(error)) => format!("its process cannot be waited for: {error}"),
            None => "the connection closed".to_owned(),
        }
    }
}

/// A stdio server's process group, killed when the session is dropped.
struct Child(Box<dyn ChildWrapper>);

impl Drop for Child {
    fn drop(&mut self) {
        // The group leader's wrapper signals the whole group.
        let _ = self.0.start_kill();
    }
}

/// Start a session with `transport`'s server (the MCP handshake included).
/// `max_message_bytes` bounds every message the server sends.
pub(crate) async fn open(
    server: &str,
    transport: &Transport,
    client: &reqwest::Client,
    handler: Handler,
    max_message_bytes: usize,
) -> Result<Session, String> {
    let broke = Arc::new(Mutex::new(None));
    match transport {
        Transport::Stdio {
            command,
            args,
            env,
            cwd,
        } => {
            let mut child = spawn(command, args, env, cwd.as_deref())
                .map_err(|error| format!("cannot start `{command}`: {error}"))?;
            let stdin = child.stdin().take();
            let stdout = child.stdout().take();
            let stderr = child.stderr().take();
            let (Some(stdin), Some(stdout)) = (stdin, stdout) else {
                return Err("the process has no stdin or stdout".into());
            };
            if let Some(stderr) = stderr {
                tokio::spawn(log_stderr(server.to_owned(), stderr));
            }
            let child = Child(child);
            let reader = Bounded::new(stdout, max_message_bytes, broke.clone());
            // The reader enforces the bound and says why; the SDK's own
            // (which drops a long line silently) must never come first.
            let transport = AsyncRwTransport::<RoleClient, _, _>::new(reader, stdin)
                .with_max_line_length(usize::MAX);
            let service = handler
                .serve(transport)
                .await
                .map_err(|error| format!("the MCP handshake failed: {error}"))?;
            Ok(Session {
                service,
                child: Mutex::new(Some(child)),
                broke,
            })
        }
        Transport::Http {
            url,
            headers,
            token,
        } => {
            let mut custom = HashMap::new();
            for (name, value) in headers {
                let name = reqwest::header::HeaderName::from_bytes(name.as_bytes())
                    .map_err(|error| format!("header `{name}`: {error}"))?;
                let value = reqwest::header::HeaderValue::from_str(value)
                    .map_err(|error| format!("header `{name}`: {error}"))?;
                custom.insert(name, value);
            }
            let mut config = StreamableHttpClientTransportConfig::with_uri(url.as_str())
                .custom_headers(custom)
                .max_sse_event_size(max_message_bytes)
                .max_json_response_size(max_message_bytes);
            if let Some(token) = token {
                config = config.auth_header(token.expose());
            }
            let transport = StreamableHttpClientTransport::with_client(client.clone(), config);
            let service = handler
                .serve(transport)
                .await
                .map_err(|error| format!("the MCP handshake failed: {error}"))?;
            Ok(Session {
                service,
                child: Mutex::new(None),
                broke,
            })
        }
    }
}

/// Start `command` with exactly `env`, in a process group of its own.
fn spawn(
    command: &str,
    args: &[String],
    env: &BTreeMap<String, String>,
    cwd: Option<&std::path::Path>,
) -> io::Result<Box<dyn ChildWrapper>> {
    let mut process = tokio::process::Command::new(command);
    process
        .args(args)
        .env_clear()
        .envs(env)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    if let Some(cwd) = cwd {
        process.current_dir(cwd);
    }
    die_with_the_harness(&mut process);
    let mut wrapped = CommandWrap::from(process);
    wrapped.wrap(ProcessGroup::leader()).wrap(KillOnDrop);
    wrapped.spawn()
}

/// On Linux, the server is killed when the harness dies, even by SIGKILL
/// (which runs no drop): no stdio server outlives the harness that started it.
#[cfg(target_os = "linux")]
#[allow(unsafe_code)]
fn die_with_the_harness(process: &mut tokio::process::Command) {
    // SAFETY: the closure runs in the forked child before exec and calls
    // only prctl(2), which is async-signal-safe; it allocates nothing.
    unsafe {
        process.pre_exec(|| {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) == -1 {
                return Err(io::Error::last_os_error());
            }
            Ok(())
        });
    }
}

#[cfg(not(target_os = "linux"))]
fn die_with_the_harness(_process: &mut tokio::process::Command) {}

/// Log a server's stderr, line by line, within its budget.
async fn log_stderr(server: String, stderr: tokio::process::ChildStderr) {
    let mut lines = BufReader::new(stderr);
    let mut line = Vec::new();
    let mut window = Instant::now();
    let (mut logged, mut dropped) = (0u32, 0u64);
    loop {
        line.clear();
        // Read at most a bounded line: a server that never writes a newline
        // must not grow this buffer.
        match read_bounded_line(&mut lines, &mut line, STDERR_LINE_BYTES).await {
            Ok(0) | Err(_) => break,
            Ok(_) => {}
        }
        if window.elapsed() >= Duration::from_secs(60) {
            if dropped > 0 {
                tracing::warn!(mcp = %server, dropped, "stderr lines of the MCP server not logged (more than {STDERR_LINES_PER_MINUTE} a minute)");
            }
            window = Instant::now();
            (logged, dropped) = (0, 0);
        }
        if logged >= STDERR_LINES_PER_MINUTE {
            dropped += 1;
            continue;
        }
        logged += 1;
        let text = String::from_utf8_lossy(&line);
        tracing::info!(mcp = %server, "stderr: {}", text.trim_end());
    }
}

/// Read up to and including the next newline into `line`, keeping at most
/// `max` bytes of it (the rest of a long line is read and dropped).
async fn read_bounded_line<R: AsyncBufReadExt + Unpin>(
    reader: &mut R,
    line: &mut Vec<u8>,
    max: usize,
) -> io::Result<usize> {
    let mut total = 0;
    loop {
        let buffer = reader.fill_buf().await?;
        if buffer.is_empty() {
            return Ok(total);
        }
        let (take, done) = match buffer.iter().position(|byte| *byte == b'\n') {
            Some(at) => (at + 1, true),
            None => (buffer.len(), false),
        };
        let room = max.saturating_sub(line.len());
        line.extend_from_slice(&buffer[..take.min(room)]);
        reader.consume(take);
        total += take;
        if done {
            return Ok(total);
        }
    }
}

/// A server's stdout that fails once a message (a line) grows past `max`
/// bytes, saying so in `broke`: the session ends and the call in flight
/// gets the reason, instead of the harness buffering without bound.
struct Bounded<R> {
    inner: R,
    max: usize,
    line: usize,
    broke: Arc<Mutex<Option<String>>>,
}

impl<R> Bounded<R> {
    fn new(inner: R, max: usize, broke: Arc<Mutex<Option<String>>>) -> Self {
        Bounded {
            inner,
            max,
            line: 0,
            broke,
        }
    }
}

impl<R: AsyncRead + Unpin> AsyncRead for Bounded<R> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let polled = Pin::new(&mut self.inner).poll_read(cx, buf);
        if let Poll::Ready(Ok(())) = &polled {
            let mut line = self.line;
            for byte in &buf.filled()[before..] {
                line = if *byte == b'\n' { 0 } else { line + 1 };
                if line > self.max {
                    let reason = format!(
                        "it sent a message longer than {} bytes (max_result_bytes)",
                        self.max
                    );
                    if let Ok(mut broke) = self.broke.lock() {
                        *broke = Some(reason.clone());
                    }
                    // A read that fails hands over nothing.
                    buf.set_filled(before);
                    return Poll::Ready(Err(io::Error::new(io::ErrorKind::InvalidData, reason)));
                }
            }
            self.line = line;
        }
        polled
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncReadExt;

    #[tokio::test]
    async fn a_message_over_the_bound_fails_the_reader_and_says_why() {
        let broke = Arc::new(Mutex::new(None));
        let input: &[u8] = b"{\"short\":1}\n0123456789abcdef\n";
        let mut reader = Bounded::new(input, 12, broke.clone());
        let mut read = Vec::new();
        let error = reader
            .read_to_end(&mut read)
            .await
            .expect_err("over the bound");
        assert_eq!(error.kind(), io::ErrorKind::InvalidData);
        let reason = broke.lock().expect("lock").clone().expect("a reason");
        assert!(reason.contains("longer than 12 bytes"), "{reason}");

        let mut reader = Bounded::new(input, 16, Arc::new(Mutex::new(None)));
        let mut read = Vec::new();
        reader
            .read_to_end(&mut read)
            .await
            .expect("within the bound");
        assert_eq!(read, input);
    }

    #[tokio::test]
    async fn stderr_lines_are_cut_to_their_bound() {
        let input: &[u8] = b"0123456789\nshort\n";
        let mut reader = BufReader::new(input);
        let mut line = Vec::new();
        assert_eq!(
            read_bounded_line(&mut reader, &mut line, 4)
                .await
                .expect("read"),
            11
        );
        assert_eq!(line, b"0123");
        line.clear();
        read_bounded_line(&mut reader, &mut line, 4)
            .await
            .expect("read");
        assert_eq!(line, b"shor");
    }
}
