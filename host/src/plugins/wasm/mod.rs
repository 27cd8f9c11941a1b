//! The sandboxed WebAssembly runtime: one engine, one linker, a compiled and
//! pre-instantiated component per plugin, and a store per instance with a
//! memory cap and a per-call wall-clock deadline. Instances are fresh per
//! call or, as the plugin declares, reused from a bounded warm pool.

#[allow(unsafe_code)] // The generated bindings use unchecked typed functions.
mod bindings;
mod cache;
mod component;
mod engine;
mod executor;
mod host_api;
mod pool;
mod store;

pub use component::{ComponentError, PluginComponent};
pub use engine::{DEFAULT_MEMORY_BYTES, MAX_MEMORY_BYTES, RuntimeConfig, WasmRuntime};
pub use executor::{WasmCommandBody, WasmCompleter, WasmHookExecutor};
pub use pool::{DEFAULT_MAX_INVOCATIONS, DEFAULT_POOL_SIZE, InstancePolicy, MAX_POOL_SIZE, Reuse};
pub use store::PluginIdentity;
