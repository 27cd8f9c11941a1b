//! A command's declaration (from commands.json or code) and the validation of
//! its arguments before any body runs.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::Argument;
use crate::domain::Role;

/// How long a body may run when the declaration does not say.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_millis(2000);

/// The longest a declaration may ask for: a command holds up a conversation's
/// turn, so a runaway body must not hold it for minutes.
pub const MAX_TIMEOUT: Duration = Duration::from_secs(60);

/// What kind of value an argument takes.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "lowercase")]
pub enum ArgumentType {
    /// One whitespace-separated token.
    String,
    /// A whole number.
    Integer,
    /// One of a fixed set of tokens.
    Enum { values: Vec<String> },
    /// The rest of the line; only as the last argument.
    Text,
}

/// One declared argument.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ArgumentSpec {
    pub name: String,
    #[serde(flatten)]
    pub kind: ArgumentType,
    #[serde(default)]
    pub required: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
}

/// A command's public declaration: what the agent card lists.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CommandSpec {
    pub name: String,
    pub description: String,
    pub usage: String,
    #[serde(default)]
    pub arguments: Vec<ArgumentSpec>,
    /// Who may run it; the built-in `pre` role policy enforces this.
    #[serde(default = "default_roles")]
    pub roles: Vec<Role>,
    #[serde(default = "default_timeout_ms")]
    pub timeout_ms: u64,
}

fn default_roles() -> Vec<Role> {
    vec![Role::Reporter, Role::Assignee, Role::Admin]
}

fn default_timeout_ms() -> u64 {
    DEFAULT_TIMEOUT.as_millis() as u64
}

/// A declaration that cannot be registered.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("command `{name}`: {problem}")]
pub struct InvalidSpec {
    pub name: String,
    pub problem: String,
}

/// Arguments that do not fit the declaration.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{problem}; usage: {usage}")]
pub struct UsageError {
    pub problem: String,
    pub usage: String,
}

impl CommandSpec {
    pub fn timeout(&self) -> Duration {
        Duration::from_millis(self.timeout_ms)
    }

    /// Check the declaration itself: a valid name, sane arguments, a bounded
    /// timeout.
    pub fn validate(&self) -> Result<(), InvalidSpec> {
        let invalid = |problem: String| InvalidSpec {
            name: self.name.clone(),
            problem,
        };
        if !is_valid_command_name(&self.name) {
            return Err(invalid(
                "a command name is 1-32 characters of a-z, 0-9 and -, starting with a letter"
                    .into(),
            ));
        }
        if self.timeout_ms == 0 || self.timeout() > MAX_TIMEOUT {
            return Err(invalid(format!(
                "timeout_ms must be between 1 and {}",
                MAX_TIMEOUT.as_millis()
            )));
        }
        let mut seen_optional = false;
        for (index, argument) in self.arguments.iter().enumerate() {
            if argument.name.is_empty() {
                return Err(invalid(format!("argument {index} has no name")));
            }
            if self.arguments[..index]
                .iter()
                .any(|a| a.name == argument.name)
            {
                return Err(invalid(format!(
                    "argument `{}` is declared twice",
                    argument.name
                )));
            }
            if argument.required && seen_optional {
                return Err(invalid(format!(
                    "required argument `{}` follows an optional one",
                    argument.name
                )));
            }
            seen_optional |= !argument.required;
            match &argument.kind {
                ArgumentType::Text if index + 1 != self.arguments.len() => {
                    return Err(invalid(format!(
                        "text argument `{}` must be the last argument",
                        argument.name
                    )));
                }
                ArgumentType::Enum { values } if values.is_empty() => {
                    return Err(invalid(format!(
                        "enum argument `{}` has no values",
                        argument.name
                    )));
                }
                _ => {}
            }
        }
        Ok(())
    }

    /// Parse `raw` (everything after `/<name>`) against the declared arguments.
    pub fn parse_arguments(&self, raw: &str) -> Result<Vec<Argument>, UsageError> {
        let usage = |problem: String| UsageError {
            problem,
            usage: self.usage.clone(),
        };
        let mut rest = raw.trim();
        let mut parsed = Vec::with_capacity(self.arguments.len());
        for spec in &self.arguments {
            if rest.is_empty() {
                if spec.required {
                    return Err(usage(format!("missing argument <{}>", spec.name)));
                }
                break;
            }
            let value = match spec.kind {
                ArgumentType::Text => std::mem::take(&mut rest),
                _ => {
                    let (token, tail) = rest.split_once(char::is_whitespace).unwrap_or((rest, ""));
                    rest = tail.trim_start();
                    token
                }
            };
            check_value(spec, value).map_err(usage)?;
            parsed.push(Argument {
                name: spec.name.clone(),
                value: value.to_owned(),
            });
        }
        if !rest.is_empty() {
            return Err(usage(format!("unexpected argument `{rest}`")));
        }
        Ok(parsed)
    }
}

fn check_value(spec: &ArgumentSpec, value: &str) -> Result<(), String> {
    match &spec.kind {
        ArgumentType::String | ArgumentType::Text => Ok(()),
        ArgumentType::Integer => value
            .parse::<i64>()
            .map(drop)
            .map_err(|_| format!("<{}> must be a whole number, not `{value}`", spec.name)),
        ArgumentType::Enum { values } if values.iter().any(|v| v == value) => Ok(()),
        ArgumentType::Enum { values } => Err(format!(
            "<{}> must be one of {}, not `{value}`",
            spec.name,
            values.join(", ")
        )),
    }
}

/// 1-32 characters of `a-z`, `0-9` and `-`, starting with a letter.
pub fn is_valid_command_name(name: &str) -> bool {
    let mut chars = name.chars();
    matches!(chars.next(), Some('a'..='z'))
        && name.len() <= 32
        && chars.all(|c| matches!(c, 'a'..='z' | '0'..='9' | '-'))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn spec(arguments: serde_json::Value) -> CommandSpec {
        serde_json::from_value(json!({
            "name": "t", "description": "d", "usage": "/t ...", "arguments": arguments
        }))
        .expect("valid spec json")
    }

    fn values(parsed: Vec<Argument>) -> Vec<(String, String)> {
        parsed.into_iter().map(|a| (a.name, a.value)).collect()
    }

    #[test]
    fn declarations_parse_with_defaults() {
        let spec = spec(json!([{"name": "level", "type": "enum", "values": ["low", "high"]}]));
        assert_eq!(
            spec.roles,
            vec![Role::Reporter, Role::Assignee, Role::Admin]
        );
        assert_eq!(spec.timeout(), DEFAULT_TIMEOUT);
        assert!(!spec.arguments[0].required);
        spec.validate().expect("valid");
    }

    #[test]
    fn arguments_are_checked_against_their_types() {
        let spec = spec(json!([
            {"name": "count", "type": "integer", "required": true},
            {"name": "level", "type": "enum", "values": ["low", "high"]},
            {"name": "note", "type": "text"}
        ]));
        spec.validate().expect("valid");
        assert_eq!(
            values(
                spec.parse_arguments("  3 high some free  text ")
                    .expect("fits")
            ),
            vec![
                ("count".into(), "3".into()),
                ("level".into(), "high".into()),
                ("note".into(), "some free  text".into())
            ]
        );
        assert_eq!(values(spec.parse_arguments("3").expect("fits")).len(), 1);
        let err = spec.parse_arguments("").unwrap_err();
        assert_eq!(err.to_string(), "missing argument <count>; usage: /t ...");
        let err = spec.parse_arguments("three").unwrap_err();
        assert!(err.problem.contains("whole number"), "{err}");
        let err = spec.parse_arguments("3 extreme").unwrap_err();
        assert!(err.problem.contains("one of low, high"), "{err}");
    }

    #[test]
    fn extra_arguments_are_a_usage_error() {
        let spec = spec(json!([{"name": "name", "type": "string"}]));
        let err = spec.parse_arguments("a b").unwrap_err();
        assert_eq!(err.problem, "unexpected argument `b`");
        assert!(spec.parse_arguments("a").is_ok());
        assert!(spec.parse_arguments("").is_ok());
    }

    #[test]
    fn bad_declarations_are_rejected() {
        let bad_arguments = [
            json!([{"name": "a", "type": "text"}, {"name": "b", "type": "string"}]),
            json!([{"name": "a", "type": "string"}, {"name": "a", "type": "string"}]),
            json!([{"name": "a", "type": "string"}, {"name": "b", "type": "string", "required": true}]),
            json!([{"name": "a", "type": "enum", "values": []}]),
        ];
        for arguments in bad_arguments {
            assert!(spec(arguments.clone()).validate().is_err(), "{arguments}");
        }
        let mut named = spec(json!([]));
        for name in ["", "Model", "1x", "a b", &"x".repeat(33)] {
            named.name = name.into();
            assert!(named.validate().is_err(), "{name}");
        }
        named.name = "ok".into();
        named.timeout_ms = 0;
        assert!(named.validate().is_err());
        named.timeout_ms = 600_000;
        assert!(named.validate().is_err());
    }
}
