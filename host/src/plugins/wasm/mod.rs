//! The sandboxed WebAssembly runtime: one engine, one linker, a compiled and
//! pre-instantiated component per plugin, and a fresh store per call with a
//! memory cap and a wall-clock deadline.

#[allow(unsafe_code)] // The generated bindings use unchecked typed functions.
mod bindings;
mod cache;
mod component;
mod engine;
mod executor;
mod host_api;
mod store;

pub use component::{ComponentError, PluginComponent};
pub use engine::{DEFAULT_MEMORY_BYTES, MAX_MEMORY_BYTES, RuntimeConfig, WasmRuntime};
pub use executor::{WasmCommandBody, WasmHookExecutor};
pub use store::PluginIdentity;
