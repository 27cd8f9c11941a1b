//! Tools the model may call, beside its intrinsic ones (`spawn_subtask`,
//! `ask_participant`, in `crate::task`): declared by plugins, MCP servers
//! or A2A delegates, each with a body that is a `tool.invoked.in` executor
//! filtered to the tool's name, exactly as a command's body is a
//! `command.invoked.in` executor filtered to the command.
//!
//! A declaration says what the model is offered (name, description, input
//! schema), who may use it (the roles of the participant whose message
//! started the turn), how long a call may take, and whether a participant
//! must approve each call first.
//!
//! * `schema.rs`: the input schema compiled, and the check every call's
//!   arguments pass before the body runs;
//! * `body.rs`: tool bodies (Wasm components, native Rust) as `in`
//!   executors.
//!
//! Two kinds of sources live here beside the declarations, outside the
//! registry (they outlive its generations): MCP servers ([`mcp`]) and other
//! A2A agents as delegates ([`delegate`]), started together as
//! [`ToolSources`].

mod body;
pub mod delegate;
pub mod mcp;
mod schema;
pub(crate) mod settings;
mod sources;

pub use body::{NativeTool, ToolBody, ToolBodyExecutor, ToolBodyResult};
pub use schema::ArgumentSchema;
pub use sources::{ToolSourceSettings, ToolSources};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::domain::{Role, ToolSpec};

/// The longest tool name: what OpenAI and Anthropic accept.
pub const MAX_TOOL_NAME_CHARS: usize = 64;

/// The longest tool description, in bytes: it is sent with every request.
pub const MAX_TOOL_DESCRIPTION_BYTES: usize = 4096;

/// The largest input schema, in bytes of JSON: it is sent with every request.
pub const MAX_TOOL_SCHEMA_BYTES: usize = 16 << 10;

/// How long a tool call may take when its declaration does not say.
pub const DEFAULT_TOOL_TIMEOUT_MS: u64 = 30_000;

/// The longest a tool call may be allowed to take.
pub const MAX_TOOL_TIMEOUT_MS: u64 = 600_000;

/// Names the harness's intrinsic tools take; no declaration may use them.
pub const INTRINSIC_TOOLS: [&str; 2] = ["spawn_subtask", "ask_participant"];

/// Whether a call runs at once or waits for a participant's approval.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Approval {
    /// The call runs as soon as the model makes it.
    #[default]
    Auto,
    /// The turn parks (`awaiting-approval`) until a participant approves or
    /// denies the call.
    Ask,
}

/// A tool the model may be offered.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolDeclaration {
    /// `[A-Za-z0-9_-]`, 1 to [`MAX_TOOL_NAME_CHARS`]: the providers' rule.
    pub name: String,
    pub description: String,
    /// A JSON Schema for the call's arguments (an object schema).
    #[serde(default = "empty_object_schema")]
    pub input_schema: Value,
    #[serde(default = "default_timeout_ms")]
    pub timeout_ms: u64,
    /// Whose turns may use it: the role of the participant whose message
    /// started the turn. Admins may use every tool.
    #[serde(default = "default_roles")]
    pub roles: Vec<Role>,
    #[serde(default)]
    pub approval: Approval,
}

fn empty_object_schema() -> Value {
    serde_json::json!({ "type": "object" })
}

fn default_timeout_ms() -> u64 {
    DEFAULT_TOOL_TIMEOUT_MS
}

fn default_roles() -> Vec<Role> {
    vec![Role::Reporter, Role::Assignee, Role::Admin]
}

/// Why a declaration cannot be used.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("tool `{name}`: {problem}")]
pub struct InvalidTool {
    pub name: String,
    pub problem: String,
}

impl ToolDeclaration {
    /// Check the declaration against the rules above.
    pub fn validate(&self) -> Result<(), InvalidTool> {
        let invalid = |problem: String| InvalidTool {
            name: self.name.clone(),
            problem,
        };
        if !is_valid_tool_name(&self.name) {
            return Err(invalid(format!(
                "a tool name is 1 to {MAX_TOOL_NAME_CHARS} of A-Z, a-z, 0-9, `_` and `-`"
            )));
        }
        if INTRINSIC_TOOLS.contains(&self.name.as_str()) {
            return Err(invalid("the name is one of the harness's own tools".into()));
        }
        if self.description.trim().is_empty() {
            return Err(invalid(
                "a tool needs a description: the model reads it".into(),
            ));
        }
        if self.description.len() > MAX_TOOL_DESCRIPTION_BYTES {
            return Err(invalid(format!(
                "the description is {} bytes; at most {MAX_TOOL_DESCRIPTION_BYTES}",
                self.description.len()
            )));
        }
        if !self.input_schema.is_object() {
            return Err(invalid("input_schema must be a JSON Schema object".into()));
        }
        let schema_bytes = self.input_schema.to_string().len();
        if schema_bytes > MAX_TOOL_SCHEMA_BYTES {
            return Err(invalid(format!(
                "input_schema is {schema_bytes} bytes; at most {MAX_TOOL_SCHEMA_BYTES}"
            )));
        }
        if !(1..=MAX_TOOL_TIMEOUT_MS).contains(&self.timeout_ms) {
            return Err(invalid(format!(
                "timeout_ms must be 1 to {MAX_TOOL_TIMEOUT_MS}"
            )));
        }
        Ok(())
    }

    /// Whether a turn started by `role` may be offered this tool.
    pub fn allows(&self, role: Role) -> bool {
        role == Role::Admin || (role != Role::Watcher && self.roles.contains(&role))
    }

    /// What the model is offered.
    pub fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: self.name.clone(),
            description: self.description.clone(),
            input_schema: self.input_schema.clone(),
        }
    }
}

/// The providers' rule for a function name.
pub fn is_valid_tool_name(name: &str) -> bool {
    (1..=MAX_TOOL_NAME_CHARS).contains(&name.len())
        && name
            .bytes()
            .all(|byte| byte.is_ascii_alphanumeric() || byte == b'_' || byte == b'-')
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn declaration(name: &str) -> ToolDeclaration {
        serde_json::from_value(json!({ "name": name, "description": "rolls a die" }))
            .expect("a declaration")
    }

    #[test]
    fn declarations_follow_the_providers_rules_and_take_defaults() {
        let dice = declaration("dice");
        assert!(dice.validate().is_ok());
        assert_eq!(dice.approval, Approval::Auto);
        assert_eq!(dice.timeout_ms, DEFAULT_TOOL_TIMEOUT_MS);
        assert!(dice.allows(Role::Reporter) && dice.allows(Role::Admin));
        assert!(!dice.allows(Role::Watcher));
        for bad in ["", "has.dot", "has space", &"x".repeat(65), "spawn_subtask"] {
            assert!(declaration(bad).validate().is_err(), "{bad:?}");
        }
        let mut long = declaration("long");
        long.description = "x".repeat(MAX_TOOL_DESCRIPTION_BYTES + 1);
        assert!(long.validate().is_err());
        let typo: Result<ToolDeclaration, _> =
            serde_json::from_value(json!({ "name": "x", "description": "d", "aproval": "ask" }));
        assert!(typo.is_err(), "unknown fields are errors");
    }
}
