//! The store an instance lives in: a deny-all WASI context (with the clocks
//! and randomness the plugin was granted, or deterministic stand-ins), the
//! plugin's identity for host imports, memory accounting, the log budget
//! and the wall-clock deadline of the call it is serving.
//!
//! A store serves one call at a time. A fresh store serves one call; a warm
//! one (see `pool.rs`) serves several in turn, each armed anew by
//! [`begin_call`].

use std::collections::BTreeMap;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use bytes::Bytes;
use tokio::io::AsyncWrite;
use wasmtime::component::ResourceTable;
use wasmtime::{ResourceLimiter, Store, Trap, UpdateDeadline};
use wasmtime_wasi::cli::{IsTerminal, StdoutStream};
use wasmtime_wasi::p2::{OutputStream, Pollable, StreamResult};
use wasmtime_wasi::{WasiCtx, WasiCtxBuilder, WasiCtxView, WasiView};
use wasmtime_wasi_http::{WasiHttpCtx, WasiHttpCtxView, WasiHttpView};

use super::capacity::PluginShare;
use super::clock::{ClockView, SandboxClock};
use super::http::{HttpGate, NetworkAccess};
use super::log_budget::CallLog;
use super::pool::InstancePolicy;
use super::random::{SeededStream, insecure_seed};

/// How much of a guest's stderr is kept to explain a trap (a Rust panic
/// message, say): the last 4 KiB of the current call, enough for a panic
/// message and its location. Older bytes are dropped.
const STDERR_CAPTURE_BYTES: usize = 4096;

/// Function tables may not grow past this; keeps a hostile guest from
/// exhausting host memory through tables instead of linear memory.
const MAX_TABLE_ELEMENTS: usize = 100_000;

/// Who a store runs for: what host imports need to know about the plugin.
#[derive(Debug)]
pub struct PluginIdentity {
    pub name: String,
    /// The plugin's configuration values (`host.config`).
    pub config: BTreeMap<String, String>,
    /// Linear memory cap for one instance, across all its memories.
    pub memory_bytes: u64,
    /// Whether and how instances are reused between calls (`stateless`
    /// only when reuse across tasks was granted).
    pub instances: InstancePolicy,
    /// What the plugin was granted beyond the sandbox's defaults.
    pub sandbox: Sandbox,
    /// The HTTP requests it may make; `None`: no network, and no wasi:http
    /// to ask with.
    pub network: Option<Arc<NetworkAccess>>,
    /// Its instance quota and log rate, shared with its other generations.
    pub(crate) share: Arc<PluginShare>,
}

/// The real capabilities a plugin's instances get.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Sandbox {
    /// The host's wall and monotonic clocks, instead of the virtual clock.
    pub real_clocks: bool,
    /// The host's random sources, instead of the plugin's seeded streams.
    pub real_random: bool,
}

/// Caps linear memory across every memory of one instance and remembers
/// whether the cap was hit, so the trap that follows is reported as
/// out-of-memory rather than as a mystery `unreachable`.
///
/// Accounting lasts as long as the instance: linear memory never shrinks, so
/// a warm instance that grew near its cap in earlier calls has less headroom
/// in later ones and may run out sooner than a fresh one would. That is the
/// price of reuse; `exhausted` is reset per call, and an instance that hit
/// the cap is never reused.
pub(crate) struct GuestLimits {
    cap: u64,
    in_use: u64,
    pub(crate) exhausted: bool,
}

impl ResourceLimiter for GuestLimits {
    fn memory_growing(
        &mut self,
        current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        let growth = desired.saturating_sub(current) as u64;
        if self.in_use.saturating_add(growth) > self.cap {
            self.exhausted = true;
            return Ok(false);
        }
        self.in_use += growth;
        Ok(true)
    }

    fn table_growing(
        &mut self,
        _current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        Ok(desired <= MAX_TABLE_ELEMENTS)
    }
}

/// The data of one instance's store.
pub(crate) struct StoreState {
    wasi: WasiCtx,
    table: ResourceTable,
    pub(crate) limits: GuestLimits,
    pub(crate) plugin: Arc<PluginIdentity>,
    stderr: StderrCapture,
    clock: SandboxClock,
    /// wasi:http's state; every request passes `http_gate`.
    http_ctx: WasiHttpCtx,
    http_gate: HttpGate,
    /// What the current call has logged, against the log budget.
    pub(crate) log: CallLog,
    /// When the current call must stop; read by the epoch callback.
    deadline: Instant,
}

impl StoreState {
    /// The state of a new store for `plugin`'s component.
    ///
    /// WASI is deny-all: no preopened directories, no environment, no
    /// arguments, no network (TCP, UDP and name lookup are off, and every
    /// address is refused), stdin empty, stdout discarded. Only stderr is
    /// captured (bounded, per call) to explain traps. Clocks and randomness
    /// are the host's only when granted; otherwise the virtual clock
    /// (`clock.rs`) and the plugin's seeded streams (`random.rs`).
    ///
    /// The WASI context is built once per store, not per call: it holds no
    /// per-call state (nothing to read, nowhere to write but the capture),
    /// and its resource table holds handles the guest keeps between calls
    /// (wasi-libc caches its stderr stream), which a rebuilt table would
    /// invalidate.
    ///
    /// One `get-random-bytes` call may ask for at most `random_request_bytes`
    /// (`[plugins] random_request_bytes`); wasmtime-wasi would allocate up
    /// to 64 MiB on the guest's say-so.
    pub(crate) fn new(plugin: Arc<PluginIdentity>, random_request_bytes: u64) -> Self {
        let stderr = StderrCapture::default();
        let clock = SandboxClock::new(plugin.sandbox.real_clocks);
        let mut wasi = WasiCtxBuilder::new();
        wasi.stderr(stderr.clone())
            .allow_tcp(false)
            .allow_udp(false)
            .allow_ip_name_lookup(false)
            .max_random_size(random_request_bytes)
            .wall_clock(clock.clone())
            .monotonic_clock(clock.clone());
        if !plugin.sandbox.real_random {
            wasi.secure_random(SeededStream::new(&plugin.name, "random"))
                .insecure_random(SeededStream::new(&plugin.name, "insecure"))
                .insecure_random_seed(insecure_seed(&plugin.name));
        }
        StoreState {
            wasi: wasi.build(),
            table: ResourceTable::new(),
            limits: GuestLimits {
                cap: plugin.memory_bytes,
                in_use: 0,
                exhausted: false,
            },
            http_ctx: WasiHttpCtx::new(),
            http_gate: HttpGate::new(plugin.network.clone()),
            plugin,
            stderr,
            clock,
            log: CallLog::default(),
            // Replaced by `begin_call` before any guest code runs.
            deadline: Instant::now(),
        }
    }

    /// `wasi:clocks/monotonic-clock` for this store (see `clock.rs`).
    pub(crate) fn clock_view(&mut self) -> ClockView<'_> {
        ClockView {
            clock: &self.clock,
            table: &mut self.table,
        }
    }

    /// End the current call's log budget: one notice if lines were dropped.
    pub(crate) fn finish_call_log(&mut self) {
        self.log
            .finish(&self.plugin.name, &self.plugin.share.log_rate);
    }

    /// What the guest last said on stderr in the current call, to explain a
    /// trap: a Rust panic (`panicked at file:line:` plus its message) when
    /// there is one, else the last meaningful line.
    pub(crate) fn stderr_explanation(&self) -> Option<String> {
        let bytes = self.stderr.contents();
        let text = String::from_utf8_lossy(&bytes);
        let lines: Vec<&str> = text
            .lines()
            .map(str::trim)
            .filter(|line| !line.is_empty() && !line.starts_with("note: run with `RUST_BACKTRACE"))
            .collect();
        if let Some(at) = lines.iter().rposition(|line| line.contains("panicked at")) {
            return Some(lines[at..(at + 2).min(lines.len())].join(" "));
        }
        lines.last().map(|line| (*line).to_owned())
    }
}

impl Drop for StoreState {
    /// A store dropped mid-call (timed out, cut by its task) still says what
    /// its call's log lost.
    fn drop(&mut self) {
        self.finish_call_log();
    }
}

impl WasiView for StoreState {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView {
            ctx: &mut self.wasi,
            table: &mut self.table,
        }
    }
}

impl WasiHttpView for StoreState {
    fn http(&mut self) -> WasiHttpCtxView<'_> {
        WasiHttpCtxView {
            ctx: &mut self.http_ctx,
            table: &mut self.table,
            hooks: &mut self.http_gate,
        }
    }
}

/// A new, empty store for `plugin`, armed for a first call of at most
/// `timeout`. The guest runs with its memory cap and a wall-clock deadline:
/// it traps once the deadline has passed, and until then yields to the async
/// executor on every epoch tick so a busy guest never monopolises a Tokio
/// worker.
pub(crate) fn new_store(
    engine: &wasmtime::Engine,
    plugin: Arc<PluginIdentity>,
    random_request_bytes: u64,
    timeout: Duration,
) -> Store<StoreState> {
    let mut store = Store::new(engine, StoreState::new(plugin, random_request_bytes));
    // Installed once per store; the deadline it checks is per call.
    store.epoch_deadline_callback(|context| {
        if Instant::now() >= context.data().deadline {
            Err(Trap::Interrupt.into())
        } else {
            Ok(UpdateDeadline::Yield(1))
        }
    });
    store.limiter(|state| &mut state.limits);
    begin_call(&mut store, timeout);
    store
}

/// Arm `store` for its next call: a deadline `timeout` from now, an empty
/// stderr capture, a clear out-of-memory flag and a new HTTP request budget. Done for a new store and
/// again before every reuse of a warm one, so no call inherits the previous
/// call's deadline or output.
pub(crate) fn begin_call(store: &mut Store<StoreState>, timeout: Duration) {
    let state = store.data_mut();
    state.finish_call_log();
    state.deadline = Instant::now() + timeout;
    state.stderr.clear();
    state.limits.exhausted = false;
    state.http_gate.begin_call();
    // Check the deadline at the next epoch tick (and, through the callback,
    // at every tick after that).
    store.set_epoch_deadline(1);
}

/// The guest's stderr: the last [`STDERR_CAPTURE_BYTES`] it wrote during the
/// current call.
///
/// Unlike wasmtime-wasi's `MemoryOutputPipe`, a full capture never refuses a
/// write (it drops its oldest bytes instead): a guest that writes to stderr
/// on every call must not start failing, or trapping on a failed
/// `eprintln!`, after a few calls in a warm instance. Every stream the guest
/// opens on stderr shares one buffer, which [`begin_call`] clears.
#[derive(Clone, Default)]
struct StderrCapture(Arc<Mutex<Vec<u8>>>);

impl StderrCapture {
    fn buffer(&self) -> std::sync::MutexGuard<'_, Vec<u8>> {
        // A panic while holding the lock cannot leave a byte buffer in a
        // state worse than "some bytes missing".
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn append(&self, bytes: &[u8]) {
        // Only the tail of a big write can survive; don't copy the rest.
        let bytes = &bytes[bytes.len().saturating_sub(STDERR_CAPTURE_BYTES)..];
        let mut buffer = self.buffer();
        buffer.extend_from_slice(bytes);
        let excess = buffer.len().saturating_sub(STDERR_CAPTURE_BYTES);
        buffer.drain(..excess);
    }

    fn contents(&self) -> Vec<u8> {
        self.buffer().clone()
    }

    fn clear(&self) {
        self.buffer().clear();
    }
}

impl IsTerminal for StderrCapture {
    fn is_terminal(&self) -> bool {
        false
    }
}

impl StdoutStream for StderrCapture {
    fn p2_stream(&self) -> Box<dyn OutputStream> {
        Box::new(self.clone())
    }

    fn async_stream(&self) -> Box<dyn AsyncWrite + Send + Sync> {
        Box::new(self.clone())
    }
}

#[wasmtime_wasi::async_trait]
impl OutputStream for StderrCapture {
    fn write(&mut self, bytes: Bytes) -> StreamResult<()> {
        self.append(&bytes);
        Ok(())
    }

    fn flush(&mut self) -> StreamResult<()> {
        Ok(())
    }

    fn check_write(&mut self) -> StreamResult<usize> {
        // Always ready. The permit bounds what the host allocates for one
        // write (`write-zeroes`, say); a full capture's worth is plenty.
        Ok(STDERR_CAPTURE_BYTES)
    }
}

#[wasmtime_wasi::async_trait]
impl Pollable for StderrCapture {
    async fn ready(&mut self) {}
}

impl AsyncWrite for StderrCapture {
    fn poll_write(
        self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
        bytes: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        self.append(bytes);
        Poll::Ready(Ok(bytes.len()))
    }

    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_stderr_capture_keeps_the_tail_never_refuses_and_clears() {
        let capture = StderrCapture::default();
        let mut stream = capture.p2_stream();
        for _ in 0..3 * STDERR_CAPTURE_BYTES / 10 {
            stream
                .write(Bytes::from_static(b"0123456789"))
                .expect("never refused");
            assert_eq!(
                stream.check_write().expect("always ready"),
                STDERR_CAPTURE_BYTES
            );
        }
        stream
            .write(Bytes::from_static(b"panicked at the end"))
            .expect("never refused");
        let contents = capture.contents();
        assert_eq!(contents.len(), STDERR_CAPTURE_BYTES);
        assert!(contents.ends_with(b"panicked at the end"));
        capture.clear();
        assert!(capture.contents().is_empty());
        let mut big = vec![b'x'; 3 * STDERR_CAPTURE_BYTES];
        big.extend_from_slice(b"the end");
        stream.write(Bytes::from(big)).expect("never refused");
        let contents = capture.contents();
        assert_eq!(contents.len(), STDERR_CAPTURE_BYTES);
        assert!(contents.ends_with(b"the end"));
    }
}
