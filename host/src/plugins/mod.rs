//! Plugins: directories of manifests and WebAssembly components.
//!
//! ```text
//! plugins/<plugin>/
//!   plugin.json     name, version, description, config defaults, limits,
//!                   capabilities it asks for
//!   commands.json   the commands the plugin declares
//!   tools.json      the tools it offers the model
//!   hooks.json      its executors: hook point, command or tool, priority,
//!                   and a component file in this directory or a remote url
//!   *.wasm          compiled components
//! ```

mod admin;
mod embedded;
pub mod grants;
mod loader;
pub mod manifest;
pub mod network;
mod reload;
mod report;
mod root;
pub mod settings;
pub mod wasm;
mod watch;

pub use admin::register_plugins_command;
pub use embedded::BUILTIN;
pub use grants::{Capability, Grant, Grants};
pub use loader::{DEFAULT_HOOK_TIMEOUT, Loaded, PluginLoader};
pub use reload::{NativeRegistrations, ReloadOutcome, Reloader};
pub use report::{LoadReport, PluginOrigin, PluginReport, PluginStatus, Skipped};
pub use settings::PluginsConfig;
pub use watch::{MAX_DELAY, PluginWatch, QUIET_PERIOD, watch};
