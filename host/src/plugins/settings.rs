//! `[plugins]` of the configuration: the operator's grants and every bound a
//! plugin could otherwise grow without limit (instances, logs, manifest and
//! component files, declarations). Every key is optional; unknown keys are
//! errors.
//!
//! ```toml
//! [plugins]
//! grant_all = false                 # every plugin gets every capability it asks for
//! random_request_bytes = 1048576    # the most one wasi:random get-random-bytes may ask
//!
//! [plugins.grants.my-plugin]        # per plugin, by plugin.json name
//! clocks = true                     # real wall and monotonic clocks
//! random = true                     # the host's secure random source
//! reuse_across_tasks = true         # honour `instances.reuse = "stateless"`
//! network = ["GET https://api.example.com"]  # HTTP requests it may make (of those it asks)
//!
//! [plugins.network]                 # every granted plugin's wasi:http requests
//! request_timeout_ms = 10000        # one request, from connecting to the body's last byte
//! max_request_bytes = 1048576       # one request's body
//! max_response_bytes = 8388608      # one response's body
//! requests_per_call = 16            # requests one call (a tool call, say) may make
//!
//! [plugins.instances]
//! total = 1000                      # component instances alive at once, all plugins
//! builtin = 100                     # of those, reserved for the built-in plugin
//! per_plugin = 100                  # calls in flight at once per other plugin
//! per_component = 50                # ... and per component of it
//! wait_ms = 1000                    # a call that finds none waits this long, then is busy
//!
//! [plugins.logs]
//! lines_per_call = 100              # host.log lines one call may write
//! bytes_per_call = 65536            # ... and their bytes
//! lines_per_second = 20             # per plugin, over all its calls ...
//! burst = 200                       # ... with this many at once
//!
//! [plugins.files]
//! plugin_json_bytes = 65536
//! commands_json_bytes = 1048576
//! hooks_json_bytes = 1048576
//! tools_json_bytes = 1048576
//! component_bytes = 134217728
//!
//! [plugins.declarations]
//! commands = 64                     # per plugin
//! hooks = 64                        # per plugin
//! arguments = 16                    # per command
//! description_bytes = 1024          # per command (and per argument)
//! usage_bytes = 256                 # per command
//! tools = 64                        # per plugin
//! tool_description_bytes = 4096     # per tool (sent to the model with every request)
//! tool_schema_bytes = 16384         # per tool's input_schema, as JSON
//! ```

use std::collections::BTreeMap;
use std::time::Duration;

use serde::Deserialize;

use super::grants::{Grant, Grants};
use super::manifest::is_valid_plugin_name;
use crate::tools::{MAX_TOOL_DESCRIPTION_BYTES, MAX_TOOL_SCHEMA_BYTES};

/// `[plugins]`.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PluginsConfig {
    /// Give every plugin every capability it asks for. Default false.
    pub grant_all: bool,
    /// What each plugin is granted, by plugin name. Default none.
    pub grants: BTreeMap<String, Grant>,
    /// The most bytes one `wasi:random` `get-random-bytes` call may ask for
    /// (the host allocates them on the guest's say-so). Default 1 MiB.
    pub random_request_bytes: u64,
    pub instances: InstanceLimits,
    pub logs: LogLimits,
    pub files: FileLimits,
    pub declarations: DeclarationLimits,
    pub network: NetworkLimits,
}

/// `[plugins] random_request_bytes` by default: seeding a generator takes 32
/// bytes; a megabyte is plenty for anything else a guest does at once.
pub const DEFAULT_RANDOM_REQUEST_BYTES: u64 = 1 << 20;

impl Default for PluginsConfig {
    fn default() -> Self {
        PluginsConfig {
            grant_all: false,
            grants: BTreeMap::new(),
            random_request_bytes: DEFAULT_RANDOM_REQUEST_BYTES,
            instances: InstanceLimits::default(),
            logs: LogLimits::default(),
            files: FileLimits::default(),
            declarations: DeclarationLimits::default(),
            network: NetworkLimits::default(),
        }
    }
}

/// `[plugins.instances]`: how many component instances may be alive, and
/// how they are shared.
///
/// The engine keeps `total` instance slots (and, per slot, room for two
/// linear memories and four tables; an instance that needs more counts for
/// more). `builtin` of them are the built-in plugin's alone, so its role
/// policy and bodies always find one; every other plugin draws from the
/// rest, at most `per_plugin` calls in flight (and `per_component` per
/// component). Idle warm instances stay only while nobody else needs
/// their room.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct InstanceLimits {
    pub total: u32,
    pub builtin: u32,
    pub per_plugin: u32,
    pub per_component: u32,
    pub wait_ms: u64,
}

impl Default for InstanceLimits {
    fn default() -> Self {
        InstanceLimits {
            // Slots are address space, not memory: 1000 is what the engine
            // always had, shared by every plugin.
            total: 1000,
            // A turn runs at most a few built-in calls (the role policy, a
            // body); 100 serves 50 commands at once.
            builtin: 100,
            // One plugin gets a tenth of the engine; nine would be needed to
            // fill it.
            per_plugin: 100,
            // Half a plugin's share: one busy component cannot block its
            // siblings.
            per_component: 50,
            // Long enough to ride out a burst, short enough that a sender
            // learns quickly that the plugin is saturated.
            wait_ms: 1000,
        }
    }
}

impl InstanceLimits {
    pub fn wait(&self) -> Duration {
        Duration::from_millis(self.wait_ms)
    }

    fn validate(&self) -> Result<(), (String, String)> {
        let key = |name: &str| format!("plugins.instances.{name}");
        if !(2..=MAX_TOTAL_INSTANCES).contains(&self.total) {
            return Err((
                key("total"),
                format!("must be from 2 to {MAX_TOTAL_INSTANCES}"),
            ));
        }
        if self.builtin == 0 || self.builtin >= self.total {
            return Err((
                key("builtin"),
                format!(
                    "must be at least 1 and less than plugins.instances.total ({}), so other plugins have room too",
                    self.total
                ),
            ));
        }
        if self.per_plugin == 0 {
            return Err((key("per_plugin"), "must be at least 1".into()));
        }
        if self.per_component == 0 {
            return Err((key("per_component"), "must be at least 1".into()));
        }
        if self.wait_ms > MAX_WAIT_MS {
            return Err((key("wait_ms"), format!("must be at most {MAX_WAIT_MS}")));
        }
        Ok(())
    }
}

/// The most instance slots the engine may reserve; each is address space for
/// two memories (up to 1 GiB each) and four tables.
pub const MAX_TOTAL_INSTANCES: u32 = 10_000;

/// The longest a call may wait for an instance: as long as a command may run.
const MAX_WAIT_MS: u64 = 60_000;

/// `[plugins.logs]`: how much a plugin may write to the harness's log
/// through `host.log`. Beyond the budget lines are counted, not written, and
/// one notice per call says how many were dropped.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LogLimits {
    pub lines_per_call: u32,
    pub bytes_per_call: u64,
    pub lines_per_second: u32,
    pub burst: u32,
}

impl Default for LogLimits {
    fn default() -> Self {
        LogLimits {
            // Enough to trace a command step by step.
            lines_per_call: 100,
            // Sixteen full-length (4 KiB) lines, or a hundred ordinary ones.
            bytes_per_call: 64 << 10,
            // A plugin logging on every call of a busy server stays readable
            // next to the harness's own lines.
            lines_per_second: 20,
            burst: 200,
        }
    }
}

impl LogLimits {
    fn validate(&self) -> Result<(), (String, String)> {
        if self.lines_per_second == 0 {
            return Err((
                "plugins.logs.lines_per_second".into(),
                "must be at least 1 (set lines_per_call = 0 to silence plugins)".into(),
            ));
        }
        if self.burst == 0 {
            return Err(("plugins.logs.burst".into(), "must be at least 1".into()));
        }
        Ok(())
    }
}

/// `[plugins.files]`: the largest file of each kind the loader reads. A
/// bigger file is refused without being read.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct FileLimits {
    pub plugin_json_bytes: u64,
    pub commands_json_bytes: u64,
    pub hooks_json_bytes: u64,
    pub tools_json_bytes: u64,
    pub component_bytes: u64,
}

impl Default for FileLimits {
    fn default() -> Self {
        FileLimits {
            // A name, a version, a description and a few settings.
            plugin_json_bytes: 64 << 10,
            // 64 commands of 1 KiB descriptions fit with room to spare.
            commands_json_bytes: 1 << 20,
            hooks_json_bytes: 1 << 20,
            // 64 tools of 4 KiB descriptions and 16 KiB schemas.
            tools_json_bytes: 1 << 20,
            // Python (~18 MB) and JavaScript (~12 MB) components, several
            // times over.
            component_bytes: 128 << 20,
        }
    }
}

impl FileLimits {
    fn validate(&self) -> Result<(), (String, String)> {
        for (name, value) in [
            ("plugin_json_bytes", self.plugin_json_bytes),
            ("commands_json_bytes", self.commands_json_bytes),
            ("hooks_json_bytes", self.hooks_json_bytes),
            ("tools_json_bytes", self.tools_json_bytes),
            ("component_bytes", self.component_bytes),
        ] {
            if value == 0 {
                return Err((format!("plugins.files.{name}"), "must be at least 1".into()));
            }
        }
        Ok(())
    }
}

/// `[plugins.declarations]`: how much one plugin may declare. Descriptions
/// and usage lines are served on the public agent card, to anyone, as often
/// as they ask.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct DeclarationLimits {
    pub commands: usize,
    pub hooks: usize,
    pub arguments: usize,
    pub description_bytes: usize,
    pub usage_bytes: usize,
    /// Tools one plugin may declare in tools.json.
    pub tools: usize,
    /// A tool's description: the model reads it with every request, so it
    /// costs tokens on every turn.
    pub tool_description_bytes: usize,
    /// A tool's `input_schema`, as JSON: also sent with every request.
    pub tool_schema_bytes: usize,
}

impl Default for DeclarationLimits {
    fn default() -> Self {
        DeclarationLimits {
            commands: 64,
            hooks: 64,
            arguments: 16,
            // A paragraph.
            description_bytes: 1024,
            // A line.
            usage_bytes: 256,
            tools: 64,
            // A page: what a model needs to use a tool well.
            tool_description_bytes: MAX_TOOL_DESCRIPTION_BYTES,
            // A rich object schema with descriptions on every field.
            tool_schema_bytes: MAX_TOOL_SCHEMA_BYTES,
        }
    }
}

impl DeclarationLimits {
    fn validate(&self) -> Result<(), (String, String)> {
        let key = |name: &str| format!("plugins.declarations.{name}");
        if self.tool_description_bytes > MAX_TOOL_DESCRIPTION_BYTES {
            return Err((
                key("tool_description_bytes"),
                format!("must be at most {MAX_TOOL_DESCRIPTION_BYTES}, the most any tool may have"),
            ));
        }
        if self.tool_schema_bytes > MAX_TOOL_SCHEMA_BYTES {
            return Err((
                key("tool_schema_bytes"),
                format!("must be at most {MAX_TOOL_SCHEMA_BYTES}, the most any tool may have"),
            ));
        }
        Ok(())
    }
}

/// `[plugins.network]`: the budget of every `wasi:http` request a granted
/// plugin makes (ungranted plugins make none). A request beyond a bound
/// fails with an error value the guest sees; the call goes on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct NetworkLimits {
    /// One request, from connecting to the last byte of the response body.
    pub request_timeout_ms: u64,
    /// The body of one request; it is read in full before it is sent.
    pub max_request_bytes: u64,
    /// The body of one response.
    pub max_response_bytes: u64,
    /// Requests one call may make (a call's deadline bounds them too).
    pub requests_per_call: u32,
}

impl Default for NetworkLimits {
    fn default() -> Self {
        NetworkLimits {
            // A slow API answers in seconds; the call's own deadline (a
            // tool's `timeout_ms`) still cuts a request that outlives it.
            request_timeout_ms: 10_000,
            // A JSON payload, with room for a small upload.
            max_request_bytes: 1 << 20,
            // A page or an API answer; within the default 64 MiB instance.
            max_response_bytes: 8 << 20,
            // A tool that pages through an API, not one that crawls.
            requests_per_call: 16,
        }
    }
}

/// The longest one request may take: as long as a tool call may.
const MAX_REQUEST_TIMEOUT_MS: u64 = crate::tools::MAX_TOOL_TIMEOUT_MS;

impl NetworkLimits {
    pub fn request_timeout(&self) -> Duration {
        Duration::from_millis(self.request_timeout_ms)
    }

    fn validate(&self) -> Result<(), (String, String)> {
        let key = |name: &str| format!("plugins.network.{name}");
        if !(1..=MAX_REQUEST_TIMEOUT_MS).contains(&self.request_timeout_ms) {
            return Err((
                key("request_timeout_ms"),
                format!("must be from 1 to {MAX_REQUEST_TIMEOUT_MS}"),
            ));
        }
        for (name, value) in [
            ("max_request_bytes", self.max_request_bytes),
            ("max_response_bytes", self.max_response_bytes),
            ("requests_per_call", u64::from(self.requests_per_call)),
        ] {
            if value == 0 {
                return Err((key(name), "must be at least 1".into()));
            }
        }
        Ok(())
    }
}

impl PluginsConfig {
    /// Check every value: `Err((key, problem))`.
    pub fn validate(&self) -> Result<(), (String, String)> {
        for name in self.grants.keys() {
            if !is_valid_plugin_name(name) {
                return Err((
                    format!("plugins.grants.{name}"),
                    "is not a plugin name (1-64 characters of a-z, 0-9, `.` and `-`)".into(),
                ));
            }
        }
        if self.random_request_bytes == 0 {
            return Err((
                "plugins.random_request_bytes".into(),
                "must be at least 1".into(),
            ));
        }
        self.instances.validate()?;
        self.logs.validate()?;
        self.files.validate()?;
        self.declarations.validate()?;
        self.network.validate()
    }

    /// The bounds the Wasm runtime applies.
    pub fn runtime_limits(&self) -> crate::plugins::wasm::RuntimeLimits {
        crate::plugins::wasm::RuntimeLimits {
            instances: self.instances,
            logs: self.logs,
            random_request_bytes: self.random_request_bytes,
        }
    }

    /// The grants the loader applies.
    pub fn grants(&self) -> Grants {
        Grants {
            all: self.grant_all,
            per_plugin: self.grants.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<PluginsConfig, String> {
        #[derive(Deserialize)]
        #[serde(deny_unknown_fields)]
        struct File {
            plugins: PluginsConfig,
        }
        let file: File = toml::from_str(text).map_err(|err| err.to_string())?;
        file.plugins
            .validate()
            .map_err(|(key, problem)| format!("{key}: {problem}"))?;
        Ok(file.plugins)
    }

    #[test]
    fn the_documented_example_is_the_defaults_plus_one_grant() {
        let example: String = include_str!("settings.rs")
            .lines()
            .skip_while(|line| !line.starts_with("//! ```toml"))
            .skip(1)
            .take_while(|line| !line.starts_with("//! ```"))
            .map(|line| line.trim_start_matches("//!").trim_start())
            .collect::<Vec<_>>()
            .join("\n");
        let parsed = parse(&example).expect("the example parses");
        let mut expected = PluginsConfig::default();
        expected.grants.insert(
            "my-plugin".into(),
            Grant {
                clocks: true,
                random: true,
                reuse_across_tasks: true,
                network: vec!["GET https://api.example.com".parse().expect("a rule")],
            },
        );
        assert_eq!(parsed, expected);
    }

    #[test]
    fn bad_values_are_named() {
        for (text, expected) in [
            ("[plugins]\ngrant_al = true", "unknown field `grant_al`"),
            (
                "[plugins]\nrandom_request_bytes = 0",
                "plugins.random_request_bytes",
            ),
            ("[plugins.grants.p]\nclock = true", "unknown field `clock`"),
            ("[plugins.grants.P]\nclocks = true", "plugins.grants.P"),
            (
                "[plugins.instances]\nbuiltin = 1000",
                "plugins.instances.builtin",
            ),
            ("[plugins.instances]\ntotal = 1", "plugins.instances.total"),
            (
                "[plugins.instances]\nper_plugin = 0",
                "plugins.instances.per_plugin",
            ),
            (
                "[plugins.instances]\nwait_ms = 600000",
                "plugins.instances.wait_ms",
            ),
            (
                "[plugins.logs]\nlines_per_second = 0",
                "plugins.logs.lines_per_second",
            ),
            (
                "[plugins.files]\ncomponent_bytes = 0",
                "plugins.files.component_bytes",
            ),
            ("[plugins.declarations]\nflags = 1", "unknown field `flags`"),
            (
                "[plugins.declarations]\ntool_schema_bytes = 1000000",
                "plugins.declarations.tool_schema_bytes",
            ),
            (
                "[plugins.network]\nrequest_timeout_ms = 0",
                "plugins.network.request_timeout_ms",
            ),
            (
                "[plugins.network]\nrequests_per_call = 0",
                "plugins.network.requests_per_call",
            ),
            (
                "[plugins.grants.p]\nnetwork = [\"api.example.com\"]",
                "network rule `api.example.com`: it needs a scheme",
            ),
        ] {
            let error = parse(text).expect_err(text);
            assert!(error.contains(expected), "{text}: {error}");
        }
    }
}
