//! The one wasmtime engine and linker every plugin shares, the accounting of
//! its instance slots (`capacity.rs`), and the epoch ticker that turns
//! wall-clock deadlines into interrupts.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use wasmtime::component::{HasSelf, Linker};
use wasmtime::{
    Config, Enabled, Engine, EngineWeak, InstanceAllocationStrategy, PoolingAllocationConfig,
};

use super::bindings::{since_v0_1_0, since_v0_2_0};
use super::cache::ComponentCache;
use super::capacity::{Capacity, MEMORIES_PER_SLOT, TABLES_PER_SLOT};
use super::clock::SandboxClocks;
use super::store::StoreState;
use crate::plugins::settings::{DEFAULT_RANDOM_REQUEST_BYTES, InstanceLimits, LogLimits};

/// How often the engine's epoch advances. A guest that runs past its
/// deadline is stopped within one tick, and a busy guest yields its Tokio
/// worker once per tick; 5 ms keeps both bounded at 200 wake-ups a second.
pub(crate) const EPOCH_TICK: Duration = Duration::from_millis(5);

/// The most linear memory any single plugin instance may be granted. The
/// pooling allocator reserves address space for this per slot; per-plugin
/// caps (plugin.json `limits.memory_mib`) are checked against it.
pub const MAX_MEMORY_BYTES: u64 = 1 << 30;

/// The memory a plugin instance gets when its manifest does not say.
/// Rust and C guests need a few MiB; 64 MiB leaves room for bigger runtimes
/// while stopping a runaway allocation quickly.
pub const DEFAULT_MEMORY_BYTES: u64 = 64 << 20;

/// Core instances one component may create. Interpreted-language runtimes
/// (Python, JS) are components of many core instances with large function
/// tables. Core instances take no pool slot of their own (the allocator only
/// counts them), so the engine allows this many per component slot and the
/// count never binds before the slots do.
const MAX_CORE_INSTANCES_PER_COMPONENT: u32 = 64;

/// Memories one component may define; see `capacity::Cost`.
pub(crate) const MAX_MEMORIES_PER_COMPONENT: u32 = 8;

/// Tables one component may define.
pub(crate) const MAX_TABLES_PER_COMPONENT: u32 = 32;

/// Linear memory kept resident (and reset in place) per warm pool slot.
const KEEP_RESIDENT_BYTES: usize = 4 << 20;

/// Table memory kept resident per warm pool slot.
const KEEP_RESIDENT_TABLE_BYTES: usize = 64 << 10;

/// Settings for [`WasmRuntime::new`].
#[derive(Clone, Debug, Default)]
pub struct RuntimeConfig {
    /// Where compiled components are cached; `None` disables the disk cache.
    pub cache_dir: Option<PathBuf>,
}

/// The runtime's bounds (`[plugins.instances]`, `[plugins.logs]`,
/// `[plugins] random_request_bytes`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RuntimeLimits {
    pub instances: InstanceLimits,
    pub logs: LogLimits,
    pub random_request_bytes: u64,
}

impl Default for RuntimeLimits {
    fn default() -> Self {
        RuntimeLimits {
            instances: InstanceLimits::default(),
            logs: LogLimits::default(),
            random_request_bytes: DEFAULT_RANDOM_REQUEST_BYTES,
        }
    }
}

/// The engine, the linker with every host import, the instance accounting
/// and the compile cache. Built once; cloning is cheap.
#[derive(Clone)]
pub struct WasmRuntime {
    pub(crate) engine: Engine,
    /// Every import a component may have: WASI (deny-all) and each
    /// contract version's host interface.
    pub(crate) linker: Arc<Linker<StoreState>>,
    /// The same and `wasi:http`, for plugins granted network rules only.
    pub(crate) http_linker: Arc<Linker<StoreState>>,
    pub(crate) cache: ComponentCache,
    pub(crate) capacity: Arc<Capacity>,
    /// The most one `get-random-bytes` call may ask for.
    pub(crate) random_request_bytes: u64,
}

impl WasmRuntime {
    /// A runtime with the default limits.
    pub fn new(config: RuntimeConfig) -> anyhow::Result<Self> {
        Self::with_limits(config, RuntimeLimits::default())
    }

    pub fn with_limits(config: RuntimeConfig, limits: RuntimeLimits) -> anyhow::Result<Self> {
        let engine = Engine::new(&engine_config(&limits.instances))?;
        let linker = Arc::new(build_linker(&engine, false)?);
        let http_linker = Arc::new(build_linker(&engine, true)?);
        spawn_epoch_ticker(engine.weak())?;
        Ok(WasmRuntime {
            cache: ComponentCache::new(config.cache_dir),
            capacity: Arc::new(Capacity::new(limits.instances, limits.logs)),
            random_request_bytes: limits.random_request_bytes,
            engine,
            linker,
            http_linker,
        })
    }
}

/// The pooling allocator's slots: `limits.total` component instances, and
/// per instance room for [`MEMORIES_PER_SLOT`] memories and
/// [`TABLES_PER_SLOT`] tables. `Capacity` hands these out; wasmtime never
/// sees an instantiation it has no slot for.
fn engine_config(limits: &InstanceLimits) -> Config {
    let total = limits.total;
    let mut pool = PoolingAllocationConfig::default();
    pool.total_component_instances(total)
        .total_core_instances(total.saturating_mul(MAX_CORE_INSTANCES_PER_COMPONENT))
        .total_memories(total.saturating_mul(MEMORIES_PER_SLOT))
        .total_tables(total.saturating_mul(TABLES_PER_SLOT))
        // One fiber stack per instance being instantiated or called; an
        // instance does one of those at a time.
        .total_stacks(total)
        .max_core_instances_per_component(MAX_CORE_INSTANCES_PER_COMPONENT)
        .max_memories_per_component(MAX_MEMORIES_PER_COMPONENT)
        .max_tables_per_component(MAX_TABLES_PER_COMPONENT)
        .table_elements(100_000)
        .max_memory_size(MAX_MEMORY_BYTES as usize)
        // A fresh instance per call is only cheap if resetting a freed slot
        // is. By default wasmtime `madvise`s a slot's memory away and the
        // next instance page-faults it back in: measured, 40% of a Rust
        // body's dispatch time. Instead keep the low pages resident and,
        // with PAGEMAP_SCAN (Linux >= 6.7, else ignored), reset only the
        // pages the guest dirtied. 4 MiB covers a Rust or C guest's stack,
        // data and heap; bigger guests fall back to madvise above it.
        .linear_memory_keep_resident(KEEP_RESIDENT_BYTES)
        .table_keep_resident(KEEP_RESIDENT_TABLE_BYTES)
        .pagemap_scan(Enabled::Auto)
        // Warm slots bound the memory kept resident: 32 x 4 MiB at most.
        .max_unused_warm_slots(32);

    let mut config = Config::new();
    config
        .allocation_strategy(InstanceAllocationStrategy::Pooling(pool))
        .epoch_interruption(true)
        .wasm_component_model(true);
    config
}

/// Every `add_to_linker` in one place. With `http`, wasi:http's
/// `outgoing-handler` and `types` too (their requests pass `http.rs`'s
/// gate); without it a component that imports them cannot be linked.
fn build_linker(engine: &Engine, http: bool) -> anyhow::Result<Linker<StoreState>> {
    let mut linker = Linker::new(engine);
    // Every guest toolchain imports WASI (Rust's std does, even unused). The
    // context behind it denies everything: see `StoreState::new`.
    wasmtime_wasi::p2::add_to_linker_async(&mut linker)?;
    // Then the monotonic clock is replaced by the sandbox's, whose waits
    // move a virtual clock (`clock.rs`); only these four functions are
    // redefined, the rest of WASI stays wasmtime-wasi's.
    linker.allow_shadowing(true);
    wasmtime_wasi::p2::bindings::clocks::monotonic_clock::add_to_linker::<StoreState, SandboxClocks>(
        &mut linker,
        StoreState::clock_view,
    )?;
    linker.allow_shadowing(false);
    if http {
        wasmtime_wasi_http::p2::add_only_http_to_linker_async(&mut linker)?;
    }
    // Each contract version's `host` (0.1.0's delegates to the latest's).
    since_v0_2_0::Plugin::add_to_linker::<StoreState, HasSelf<StoreState>>(&mut linker, |state| {
        state
    })?;
    since_v0_1_0::Plugin::add_to_linker::<StoreState, HasSelf<StoreState>>(&mut linker, |state| {
        state
    })?;
    Ok(linker)
}

/// Advance the epoch every [`EPOCH_TICK`] for as long as the engine lives.
/// Without a ticker no deadline fires, so failing to start one is an error.
fn spawn_epoch_ticker(engine: EngineWeak) -> anyhow::Result<()> {
    std::thread::Builder::new()
        .name("wasm-epoch".into())
        .spawn(move || {
            while let Some(engine) = engine.upgrade() {
                engine.increment_epoch();
                drop(engine);
                std::thread::sleep(EPOCH_TICK);
            }
        })
        .map_err(|err| anyhow::anyhow!("cannot start the Wasm epoch ticker thread: {err}"))?;
    Ok(())
}
