//! The sandboxed WebAssembly runtime: one engine, one linker, a compiled and
//! pre-instantiated component per plugin, and a store per instance with a
//! memory cap, a per-call wall-clock deadline, a log budget, and the clocks
//! and randomness the plugin was granted (or deterministic stand-ins), and
//! `wasi:http` only for plugins granted network rules (`http.rs`).
//! Instances are fresh per call or, as the plugin declares, reused from a
//! bounded warm pool; how many may live at once is accounted per plugin and
//! per component, with a reserve for the built-in plugin.

#[allow(unsafe_code)] // The generated bindings use unchecked typed functions.
mod bindings;
mod cache;
mod capacity;
mod clock;
mod component;
mod engine;
mod executor;
mod host_api;
mod http;
mod log_budget;
mod pool;
mod random;
mod store;

pub use clock::{SANDBOX_EPOCH_SECS, SANDBOX_MONOTONIC_START_NS};
pub use component::{ComponentError, PluginComponent};
pub use engine::{
    DEFAULT_MEMORY_BYTES, MAX_MEMORY_BYTES, RuntimeConfig, RuntimeLimits, WasmRuntime,
};
pub use executor::{WasmCommandBody, WasmCompleter, WasmHookExecutor, WasmToolBody};
pub use http::{NetworkAccess, plugin_client};
pub use pool::{DEFAULT_MAX_INVOCATIONS, DEFAULT_POOL_SIZE, InstancePolicy, MAX_POOL_SIZE, Reuse};
pub use store::{PluginIdentity, Sandbox};
