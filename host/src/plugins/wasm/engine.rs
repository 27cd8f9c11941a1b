//! The one wasmtime engine and linker every plugin shares, and the epoch
//! ticker that turns wall-clock deadlines into interrupts.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use wasmtime::component::{HasSelf, Linker};
use wasmtime::{
    Config, Enabled, Engine, EngineWeak, InstanceAllocationStrategy, PoolingAllocationConfig,
};

use super::bindings::Plugin;
use super::cache::ComponentCache;
use super::store::StoreState;

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

/// How many instances may be alive at once across all plugins: calls in
/// flight plus idle warm instances (at most `pool::MAX_POOL_SIZE` per
/// component). Slots are address-space reservations, not committed memory.
const POOL_INSTANCES: u32 = 1000;

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

/// The engine, the linker with every host import, and the compile cache.
/// Built once; cloning is cheap.
#[derive(Clone)]
pub struct WasmRuntime {
    pub(crate) engine: Engine,
    pub(crate) linker: Arc<Linker<StoreState>>,
    pub(crate) cache: ComponentCache,
}

impl WasmRuntime {
    pub fn new(config: RuntimeConfig) -> anyhow::Result<Self> {
        let engine = Engine::new(&engine_config())?;
        let linker = Arc::new(build_linker(&engine)?);
        spawn_epoch_ticker(engine.weak())?;
        Ok(WasmRuntime {
            cache: ComponentCache::new(config.cache_dir),
            engine,
            linker,
        })
    }
}

fn engine_config() -> Config {
    let mut pool = PoolingAllocationConfig::default();
    pool.total_component_instances(POOL_INSTANCES)
        .total_core_instances(POOL_INSTANCES * 4)
        .total_memories(POOL_INSTANCES * 2)
        .total_tables(POOL_INSTANCES * 4)
        // Interpreted-language runtimes (Python, JS) are components of many
        // core instances with large function tables.
        .max_core_instances_per_component(64)
        .max_memories_per_component(8)
        .max_tables_per_component(32)
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

fn build_linker(engine: &Engine) -> anyhow::Result<Linker<StoreState>> {
    let mut linker = Linker::new(engine);
    // Every guest toolchain imports WASI (Rust's std does, even unused). The
    // context behind it denies everything: see `StoreState::new`.
    wasmtime_wasi::p2::add_to_linker_async(&mut linker)?;
    Plugin::add_to_linker::<StoreState, HasSelf<StoreState>>(&mut linker, |state| state)?;
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
