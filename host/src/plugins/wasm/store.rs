//! The per-invocation store: a deny-all WASI context, the plugin's identity
//! for host imports, memory accounting, and the wall-clock deadline.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use wasmtime::component::ResourceTable;
use wasmtime::{ResourceLimiter, Store, Trap, UpdateDeadline};
use wasmtime_wasi::p2::pipe::MemoryOutputPipe;
use wasmtime_wasi::{WasiCtx, WasiCtxBuilder, WasiCtxView, WasiView};

/// How much of a guest's stderr is kept to explain a trap (a Rust panic
/// message, say). Anything beyond is dropped.
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
}

/// Caps linear memory across every memory of one instance and remembers
/// whether the cap was hit, so the trap that follows is reported as
/// out-of-memory rather than as a mystery `unreachable`.
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

/// The data of one invocation's store.
pub(crate) struct StoreState {
    wasi: WasiCtx,
    table: ResourceTable,
    pub(crate) limits: GuestLimits,
    pub(crate) plugin: Arc<PluginIdentity>,
    stderr: MemoryOutputPipe,
}

impl StoreState {
    /// A store for one invocation of `plugin`'s component.
    ///
    /// WASI is deny-all: no preopened directories, no environment, no
    /// arguments, no network (socket checks refuse every address, name
    /// lookup is off), stdin empty, stdout discarded. Only stderr is captured
    /// (bounded) to explain traps.
    pub(crate) fn new(plugin: Arc<PluginIdentity>) -> Self {
        let stderr = MemoryOutputPipe::new(STDERR_CAPTURE_BYTES);
        let wasi = WasiCtxBuilder::new().stderr(stderr.clone()).build();
        StoreState {
            wasi,
            table: ResourceTable::new(),
            limits: GuestLimits {
                cap: plugin.memory_bytes,
                in_use: 0,
                exhausted: false,
            },
            plugin,
            stderr,
        }
    }

    /// What the guest last said on stderr, to explain a trap: a Rust panic
    /// (`panicked at file:line:` plus its message) when there is one, else
    /// the last meaningful line.
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

impl WasiView for StoreState {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView {
            ctx: &mut self.wasi,
            table: &mut self.table,
        }
    }
}

/// A fresh store for one invocation of `plugin`, with its memory cap and a
/// wall-clock deadline: it traps once `timeout` has passed, and until then
/// yields to the async executor on every epoch tick so a busy guest never
/// monopolises a Tokio worker.
pub(crate) fn new_store(
    engine: &wasmtime::Engine,
    plugin: Arc<PluginIdentity>,
    timeout: Duration,
) -> Store<StoreState> {
    let mut store = Store::new(engine, StoreState::new(plugin));
    let deadline = Instant::now() + timeout;
    store.set_epoch_deadline(1);
    store.epoch_deadline_callback(move |_| {
        if Instant::now() >= deadline {
            Err(Trap::Interrupt.into())
        } else {
            Ok(UpdateDeadline::Yield(1))
        }
    });
    store.limiter(|state| &mut state.limits);
    store
}
