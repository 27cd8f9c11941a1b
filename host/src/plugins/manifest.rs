//! The manifest files of a plugin directory: plugin.json, commands.json,
//! tools.json, hooks.json. See docs/contracts.md for their shapes.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::Value;

use super::grants::{Capability, CapabilityRequest, requested};
use super::settings::DeclarationLimits;
use super::wasm::{
    DEFAULT_MAX_INVOCATIONS, DEFAULT_MEMORY_BYTES, DEFAULT_POOL_SIZE, InstancePolicy,
    MAX_MEMORY_BYTES, MAX_POOL_SIZE, Reuse,
};
use crate::commands::CommandSpec;
use crate::hooks::{HookPoint, Operation};
use crate::tools::ToolDeclaration;

/// plugin.json: who the plugin is. Agent Plugins 1.0 compatible, so fields
/// this harness does not use (author, homepage, ...) are accepted and ignored.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
pub struct PluginManifest {
    pub name: String,
    pub version: semver::Version,
    #[serde(default)]
    pub description: String,
    /// Defaults for the values the plugin reads with `host.config(key)`.
    #[serde(default)]
    pub config: BTreeMap<String, String>,
    #[serde(default)]
    pub limits: Limits,
    #[serde(default)]
    pub instances: Instances,
    /// What the plugin asks for beyond the sandbox's defaults; the operator
    /// must grant each (see `grants.rs`).
    #[serde(default)]
    pub capabilities: CapabilityRequest,
}

/// Resource limits for every instance of the plugin's components.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Limits {
    /// Linear memory per instance, in MiB.
    pub memory_mib: Option<u64>,
}

impl Limits {
    pub fn memory_bytes(&self) -> u64 {
        self.memory_mib
            .map(|mib| mib << 20)
            .unwrap_or(DEFAULT_MEMORY_BYTES)
    }
}

/// Whether and how the plugin's component instances are reused between
/// calls: `{"reuse": "never" | "per-task" | "stateless", "pool_size": N,
/// "max_invocations": N}`, every field optional. See [`Reuse`] for the
/// modes; `pool_size` and `max_invocations` are accepted (and unused) with
/// `never`, so reuse can be switched off without editing the rest.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Instances {
    #[serde(default)]
    pub reuse: Reuse,
    /// Idle instances kept per component, 1 to [`MAX_POOL_SIZE`].
    pub pool_size: Option<u32>,
    /// Calls one instance serves before it is discarded, at least 1.
    pub max_invocations: Option<u32>,
}

impl Instances {
    pub fn policy(&self) -> InstancePolicy {
        InstancePolicy {
            reuse: self.reuse,
            pool_size: self.pool_size.unwrap_or(DEFAULT_POOL_SIZE),
            max_invocations: self.max_invocations.unwrap_or(DEFAULT_MAX_INVOCATIONS),
        }
    }
}

/// Why a plugin.json is invalid; the whole plugin is rejected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ManifestError {
    #[error("plugin.json is missing")]
    Missing,
    #[error("plugin.json cannot be read: {0}")]
    Unreadable(String),
    #[error("plugin.json is invalid: {0}")]
    Invalid(String),
}

impl PluginManifest {
    /// Everything the plugin asks for: its `capabilities`, and reuse across
    /// tasks when its instances are `stateless`.
    pub fn requested_capabilities(&self) -> Vec<Capability> {
        requested(&self.capabilities, self.instances.reuse == Reuse::Stateless)
    }

    pub fn parse(text: &str) -> Result<Self, ManifestError> {
        let manifest: PluginManifest =
            serde_json::from_str(text).map_err(|err| ManifestError::Invalid(err.to_string()))?;
        manifest.validate()?;
        Ok(manifest)
    }

    fn validate(&self) -> Result<(), ManifestError> {
        if !is_valid_plugin_name(&self.name) {
            return Err(ManifestError::Invalid(format!(
                "name `{}` must be 1-64 characters of a-z, 0-9, `.` and `-`",
                self.name
            )));
        }
        if let Some(mib) = self.limits.memory_mib
            && (mib == 0 || mib << 20 > MAX_MEMORY_BYTES)
        {
            return Err(ManifestError::Invalid(format!(
                "limits.memory_mib must be between 1 and {}",
                MAX_MEMORY_BYTES >> 20
            )));
        }
        if let Some(size) = self.instances.pool_size
            && !(1..=MAX_POOL_SIZE).contains(&size)
        {
            return Err(ManifestError::Invalid(format!(
                "instances.pool_size must be between 1 and {MAX_POOL_SIZE} \
                 (to keep no instances, set instances.reuse to `never`)"
            )));
        }
        if self.instances.max_invocations == Some(0) {
            return Err(ManifestError::Invalid(
                "instances.max_invocations must be at least 1".into(),
            ));
        }
        Ok(())
    }
}

/// 1-64 characters of `[a-z0-9.-]`.
pub fn is_valid_plugin_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .chars()
            .all(|c| matches!(c, 'a'..='z' | '0'..='9' | '.' | '-'))
}

/// One hooks.json entry.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HookDeclaration {
    pub name: String,
    pub point: String,
    /// For `command.invoked.*`: the command it serves.
    #[serde(default)]
    pub command: Option<String>,
    /// For `tool.invoked.*`: the tool it serves (`command` is accepted there
    /// too, as before tools had their own key).
    #[serde(default)]
    pub tool: Option<String>,
    #[serde(default)]
    pub priority: Option<i32>,
    /// A component file inside the plugin directory...
    #[serde(default)]
    pub component: Option<String>,
    /// ...or a remote JSON-RPC endpoint.
    #[serde(default)]
    pub url: Option<String>,
    #[serde(default)]
    pub timeout_ms: Option<u64>,
}

/// Where a hook's executor lives.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ExecutorSource {
    Component(String),
    Remote(String),
}

/// Which command or tool an entry is for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum HookFilter {
    /// Every call at its point.
    None,
    Command(String),
    Tool(String),
}

impl HookDeclaration {
    /// What the entry is filtered to at `point`: `command` for
    /// `command.invoked`, `tool` (or `command`) for `tool.invoked`.
    pub fn filter(&self, point: HookPoint) -> Result<HookFilter, String> {
        let tools = point.operation == Operation::ToolInvoked;
        match (&self.command, &self.tool) {
            (Some(_), Some(_)) => Err("has both `command` and `tool`; give one".into()),
            (None, None) => Ok(HookFilter::None),
            (None, Some(tool)) if tools => Ok(HookFilter::Tool(tool.clone())),
            (None, Some(_)) => Err(format!(
                "has `tool`, which only tool.invoked entries take; `{point}` is not one"
            )),
            (Some(name), None) if tools => Ok(HookFilter::Tool(name.clone())),
            (Some(command), None) => Ok(HookFilter::Command(command.clone())),
        }
    }

    pub fn source(&self) -> Result<ExecutorSource, String> {
        match (&self.component, &self.url) {
            (Some(path), None) => Ok(ExecutorSource::Component(path.clone())),
            (None, Some(url)) => Ok(ExecutorSource::Remote(url.clone())),
            (Some(_), Some(_)) => Err("has both `component` and `url`; give one".into()),
            (None, None) => Err("has neither `component` nor `url`".into()),
        }
    }
}

/// Entries of a manifest list, each parsed on its own so that one bad entry
/// is skipped (with its reason) without losing the others.
pub struct Entries<T> {
    pub valid: Vec<T>,
    /// `(label, reason)` for each entry that did not parse.
    pub invalid: Vec<(String, String)>,
}

/// Parse `{"<key>": [entry, ...]}`. A file that is not of that shape at all
/// is an error for the whole file.
pub fn parse_entries<T: serde::de::DeserializeOwned>(
    text: &str,
    key: &str,
) -> Result<Entries<T>, String> {
    let document: Value = serde_json::from_str(text).map_err(|err| err.to_string())?;
    let list = document
        .get(key)
        .and_then(Value::as_array)
        .ok_or_else(|| format!("expected an object with a `{key}` array"))?;
    let mut entries = Entries {
        valid: Vec::new(),
        invalid: Vec::new(),
    };
    for (index, entry) in list.iter().enumerate() {
        let label = entry
            .get("name")
            .and_then(Value::as_str)
            .map(str::to_owned)
            .unwrap_or_else(|| format!("#{index}"));
        match T::deserialize(entry) {
            Ok(parsed) => entries.valid.push(parsed),
            Err(err) => entries.invalid.push((label, err.to_string())),
        }
    }
    Ok(entries)
}

impl<T> Entries<T> {
    /// How many entries the file has, good or bad.
    pub fn len(&self) -> usize {
        self.valid.len() + self.invalid.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// commands.json entries.
pub fn parse_commands(text: &str) -> Result<Entries<CommandSpec>, String> {
    parse_entries(text, "commands")
}

/// hooks.json entries.
pub fn parse_hooks(text: &str) -> Result<Entries<HookDeclaration>, String> {
    parse_entries(text, "hooks")
}

/// tools.json entries: `{"tools": [declaration, ...]}`.
pub fn parse_tools(text: &str) -> Result<Entries<ToolDeclaration>, String> {
    parse_entries(text, "tools")
}

/// A tool declaration within the sizes the operator allows: its
/// description and input schema go to the model with every request.
pub fn check_tool_size(tool: &ToolDeclaration, limits: &DeclarationLimits) -> Result<(), String> {
    let too_long = |what: &str, len: usize, allowed: usize, key: &str| {
        format!(
            "its {what} is {len} bytes, more than the {allowed} allowed ([plugins.declarations] {key})"
        )
    };
    if tool.description.len() > limits.tool_description_bytes {
        return Err(too_long(
            "description",
            tool.description.len(),
            limits.tool_description_bytes,
            "tool_description_bytes",
        ));
    }
    let schema_bytes = tool.input_schema.to_string().len();
    if schema_bytes > limits.tool_schema_bytes {
        return Err(too_long(
            "input_schema",
            schema_bytes,
            limits.tool_schema_bytes,
            "tool_schema_bytes",
        ));
    }
    Ok(())
}

/// A file that declares more entries than a plugin may: refused whole,
/// since which ones to keep would be a guess.
pub fn check_entry_count(
    declared: usize,
    allowed: usize,
    what: &str,
    key: &str,
) -> Result<(), String> {
    if declared > allowed {
        return Err(format!(
            "declares {declared} {what}, more than the {allowed} a plugin may ([plugins.declarations] {key})"
        ));
    }
    Ok(())
}

/// A command declaration within the sizes the agent card can afford to
/// serve to anyone: its description, usage line and arguments.
pub fn check_command_size(spec: &CommandSpec, limits: &DeclarationLimits) -> Result<(), String> {
    let too_long = |what: &str, len: usize, allowed: usize, key: &str| {
        format!(
            "its {what} is {len} bytes, more than the {allowed} allowed ([plugins.declarations] {key})"
        )
    };
    if spec.description.len() > limits.description_bytes {
        return Err(too_long(
            "description",
            spec.description.len(),
            limits.description_bytes,
            "description_bytes",
        ));
    }
    if spec.usage.len() > limits.usage_bytes {
        return Err(too_long(
            "usage",
            spec.usage.len(),
            limits.usage_bytes,
            "usage_bytes",
        ));
    }
    if spec.arguments.len() > limits.arguments {
        return Err(format!(
            "it declares {} arguments, more than the {} allowed ([plugins.declarations] arguments)",
            spec.arguments.len(),
            limits.arguments
        ));
    }
    for argument in &spec.arguments {
        let description = argument.description.as_deref().unwrap_or("");
        if description.len() > limits.description_bytes {
            return Err(too_long(
                &format!("argument `{}`'s description", argument.name),
                description.len(),
                limits.description_bytes,
                "description_bytes",
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plugin_names_follow_the_agent_plugins_rule() {
        for good in ["builtin", "a", "my-plugin.v2", &"x".repeat(64)] {
            assert!(is_valid_plugin_name(good), "{good}");
        }
        for bad in [
            "",
            "Bad",
            "has space",
            "under_score",
            &"x".repeat(65),
            "../up",
        ] {
            assert!(!is_valid_plugin_name(bad), "{bad}");
        }
    }

    #[test]
    fn plugin_json_is_validated() {
        let ok = PluginManifest::parse(r#"{"name": "p", "version": "1.2.3", "homepage": "x"}"#)
            .expect("valid");
        assert_eq!(ok.limits.memory_bytes(), DEFAULT_MEMORY_BYTES);
        for bad in [
            r#"{"name": "P", "version": "1.0.0"}"#,
            r#"{"name": "p", "version": "one"}"#,
            r#"{"version": "1.0.0"}"#,
            r#"{"name": "p", "version": "1.0.0", "limits": {"memory_mib": 0}}"#,
            r#"{"name": "p", "version": "1.0.0", "limits": {"memory_mib": 4096}}"#,
            r#"{"name": "p", "version": "1.0.0", "limits": {"memroy_mib": 4}}"#,
            "not json",
        ] {
            assert!(PluginManifest::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn instances_default_to_a_per_task_pool() {
        let manifest =
            PluginManifest::parse(r#"{"name": "p", "version": "1.0.0"}"#).expect("valid");
        assert_eq!(manifest.instances.policy(), InstancePolicy::default());
        assert_eq!(
            InstancePolicy::default(),
            InstancePolicy {
                reuse: Reuse::PerTask,
                pool_size: DEFAULT_POOL_SIZE,
                max_invocations: DEFAULT_MAX_INVOCATIONS,
            }
        );
    }

    #[test]
    fn instances_are_parsed_and_validated() {
        let parse = |instances: &str| {
            PluginManifest::parse(&format!(
                r#"{{"name": "p", "version": "1.0.0", "instances": {instances}}}"#
            ))
            .map(|manifest| manifest.instances.policy())
        };
        for (text, reuse) in [
            (r#"{"reuse": "never"}"#, Reuse::Never),
            (r#"{"reuse": "per-task"}"#, Reuse::PerTask),
            (r#"{"reuse": "stateless"}"#, Reuse::Stateless),
            ("{}", Reuse::PerTask),
        ] {
            assert_eq!(parse(text).expect(text).reuse, reuse, "{text}");
        }
        let full = parse(r#"{"reuse": "stateless", "pool_size": 64, "max_invocations": 1}"#)
            .expect("valid");
        assert_eq!(
            full,
            InstancePolicy {
                reuse: Reuse::Stateless,
                pool_size: 64,
                max_invocations: 1
            }
        );
        // Sizes are accepted with `never`, so reuse can be toggled alone.
        assert!(parse(r#"{"reuse": "never", "pool_size": 4}"#).is_ok());

        for (bad, reason) in [
            (r#"{"reuse": "sometimes"}"#, "unknown variant `sometimes`"),
            (r#"{"reuse": "per_task"}"#, "unknown variant `per_task`"),
            (r#"{"reuse": true}"#, "expected value"),
            (r#"{"pool_size": 0}"#, "pool_size must be between 1 and 64"),
            (r#"{"pool_size": 65}"#, "pool_size must be between 1 and 64"),
            (r#"{"pool_size": -1}"#, "invalid value"),
            (r#"{"pool_size": 1.5}"#, "invalid type"),
            (
                r#"{"max_invocations": 0}"#,
                "max_invocations must be at least 1",
            ),
            (r#"{"max_invocations": 4294967296}"#, "invalid value"),
            (r#"{"pool_sise": 4}"#, "unknown field `pool_sise`"),
            (r#""stateless""#, "invalid type"),
        ] {
            match parse(bad) {
                Err(ManifestError::Invalid(message)) => {
                    assert!(message.contains(reason), "{bad}: {message}")
                }
                other => panic!("{bad} must be invalid, got {other:?}"),
            }
        }
    }

    #[test]
    fn a_bad_entry_is_skipped_and_the_rest_kept() {
        let hooks = parse_hooks(
            r#"{"hooks": [
                {"name": "ok", "point": "command.invoked.pre", "component": "a.wasm"},
                {"name": "typo", "point": "command.invoked.pre", "componnet": "a.wasm"},
                {"point": "x"}
            ]}"#,
        )
        .expect("file parses");
        assert_eq!(hooks.valid.len(), 1);
        assert_eq!(hooks.invalid.len(), 2);
        assert_eq!(hooks.invalid[0].0, "typo");
        assert!(
            hooks.invalid[0].1.contains("componnet"),
            "{:?}",
            hooks.invalid
        );
        assert_eq!(hooks.invalid[1].0, "#2");
        assert!(parse_hooks(r#"{"hook": []}"#).is_err());
    }

    #[test]
    fn a_hook_is_filtered_to_a_command_or_a_tool_by_its_point() {
        let entry = |command: Option<&str>, tool: Option<&str>| HookDeclaration {
            name: "h".into(),
            point: String::new(),
            command: command.map(Into::into),
            tool: tool.map(Into::into),
            priority: None,
            component: Some("a.wasm".into()),
            url: None,
            timeout_ms: None,
        };
        let point = |text: &str| text.parse::<HookPoint>().expect("a point");
        let tool_in = point("tool.invoked.in");
        let command_in = point("command.invoked.in");
        assert_eq!(
            entry(None, Some("dice")).filter(tool_in),
            Ok(HookFilter::Tool("dice".into()))
        );
        assert_eq!(
            entry(Some("dice"), None).filter(tool_in),
            Ok(HookFilter::Tool("dice".into()))
        );
        assert_eq!(
            entry(Some("status"), None).filter(command_in),
            Ok(HookFilter::Command("status".into()))
        );
        assert_eq!(entry(None, None).filter(tool_in), Ok(HookFilter::None));
        let both = entry(Some("a"), Some("b"))
            .filter(tool_in)
            .expect_err("both");
        assert!(both.contains("both `command` and `tool`"), "{both}");
        let misplaced = entry(None, Some("dice"))
            .filter(command_in)
            .expect_err("not a tool point");
        assert!(
            misplaced.contains("only tool.invoked entries"),
            "{misplaced}"
        );
    }

    #[test]
    fn tools_json_entries_are_declarations_and_sizes_are_capped() {
        let tools = parse_tools(
            r#"{"tools": [
                {"name": "dice", "description": "Rolls a die",
                 "input_schema": {"type": "object"}, "timeout_ms": 500},
                {"name": "typo", "description": "x", "timeout": 5},
                {"description": "no name"}
            ]}"#,
        )
        .expect("file parses");
        assert_eq!(tools.valid.len(), 1);
        assert_eq!(tools.valid[0].timeout_ms, 500);
        assert_eq!(tools.invalid.len(), 2);
        assert_eq!(tools.invalid[0].0, "typo");
        assert!(
            tools.invalid[0].1.contains("timeout"),
            "{:?}",
            tools.invalid
        );
        assert!(parse_tools(r#"{"tool": []}"#).is_err());

        let limits = DeclarationLimits {
            tool_description_bytes: 16,
            tool_schema_bytes: 20,
            ..DeclarationLimits::default()
        };
        let mut dice = tools.valid[0].clone();
        assert!(check_tool_size(&dice, &limits).is_ok());
        dice.description = "a long description".into();
        let error = check_tool_size(&dice, &limits).expect_err("too long");
        assert!(error.contains("tool_description_bytes"), "{error}");
        dice.description = "short".into();
        dice.input_schema = serde_json::json!({"type": "object", "properties": {}});
        let error = check_tool_size(&dice, &limits).expect_err("too big");
        assert!(error.contains("tool_schema_bytes"), "{error}");
    }

    #[test]
    fn a_hook_needs_exactly_one_source() {
        let declaration = |component: Option<&str>, url: Option<&str>| HookDeclaration {
            name: "h".into(),
            point: "command.invoked.pre".into(),
            command: None,
            tool: None,
            priority: None,
            component: component.map(Into::into),
            url: url.map(Into::into),
            timeout_ms: None,
        };
        assert!(declaration(Some("a.wasm"), None).source().is_ok());
        assert!(declaration(None, Some("http://x")).source().is_ok());
        assert!(
            declaration(Some("a.wasm"), Some("http://x"))
                .source()
                .is_err()
        );
        assert!(declaration(None, None).source().is_err());
    }
}
