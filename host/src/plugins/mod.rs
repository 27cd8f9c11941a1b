//! Plugins: directories of manifests and WebAssembly components.
//!
//! ```text
//! plugins/<plugin>/
//!   plugin.json     name, version, description, config defaults, limits
//!   commands.json   the commands the plugin declares
//!   hooks.json      its executors: hook point, command, priority, and a
//!                   component file in this directory or a remote url
//!   *.wasm          compiled components
//! ```

mod embedded;
mod loader;
pub mod manifest;
mod report;
mod root;
pub mod wasm;

pub use embedded::BUILTIN;
pub use loader::{DEFAULT_HOOK_TIMEOUT, Loaded, PluginLoader};
pub use report::{LoadReport, PluginOrigin, PluginReport, PluginStatus, Skipped};
