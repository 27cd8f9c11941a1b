//! The built-in plugin, compiled into the binary so the harness runs on its
//! defaults from anywhere. `host/build.rs` builds `plugins/builtin` from
//! source for wasm32-wasip2; a plugins folder that holds its own `builtin`
//! plugin takes precedence over this copy.

/// The built-in plugin's name.
pub const BUILTIN: &str = "builtin";

pub(crate) const PLUGIN_JSON: &str =
    include_str!(concat!(env!("BUILTIN_PLUGIN_DIR"), "/plugin.json"));
pub(crate) const COMMANDS_JSON: &str =
    include_str!(concat!(env!("BUILTIN_PLUGIN_DIR"), "/commands.json"));
pub(crate) const HOOKS_JSON: &str =
    include_str!(concat!(env!("BUILTIN_PLUGIN_DIR"), "/hooks.json"));

/// The component file the built-in hooks.json names.
pub(crate) const COMPONENT_FILE: &str = "builtin.wasm";
pub(crate) const COMPONENT: &[u8] = include_bytes!(env!("BUILTIN_PLUGIN_WASM"));
