//! What MCP servers and delegate agents share in the configuration: default
//! roles, the checks on names and bounds, and secrets read from the
//! environment.

use std::time::Duration;

use crate::domain::Role;
use crate::secret::Secret;
use crate::tools::MAX_TOOL_TIMEOUT_MS;

/// The longest a source's own timeout may be: a declared tool's longest.
pub(crate) const MAX_SOURCE_TIMEOUT_SECS: u64 = MAX_TOOL_TIMEOUT_MS / 1000;

/// The declared time of a source's tool: the source's own timeout and a
/// second more (within [`MAX_TOOL_TIMEOUT_MS`]), so that a call past its
/// time reads the source's own message (which names its key) and not the
/// harness's generic one.
pub(crate) fn declared_timeout_ms(timeout: Duration) -> u64 {
    u64::try_from(timeout.as_millis())
        .unwrap_or(u64::MAX)
        .saturating_add(1000)
        .min(MAX_TOOL_TIMEOUT_MS)
}

/// Whose turns may use a source's tools when its table does not say:
/// reporter, assignee and admin (admins may use every tool; watchers none).
pub(crate) fn default_roles() -> Vec<Role> {
    vec![Role::Reporter, Role::Assignee, Role::Admin]
}

/// A problem with one key: `(key, what is wrong)`.
pub(crate) type KeyProblem = (String, String);

/// `name` of a `[<section>.<name>]` table: 1 to `max` of A-Z, a-z, 0-9, `_`
/// and `-`, so the tool names made from it fit the providers' rule.
pub(crate) fn check_source_name(section: &str, name: &str, max: usize) -> Result<(), KeyProblem> {
    let valid = (1..=max).contains(&name.len())
        && name
            .bytes()
            .all(|byte| byte.is_ascii_alphanumeric() || byte == b'_' || byte == b'-');
    if valid {
        Ok(())
    } else {
        Err((
            format!("{section}.{name}"),
            format!(
                "a name is 1 to {max} of A-Z, a-z, 0-9, `_` and `-` (tool names are made from it)"
            ),
        ))
    }
}

/// `value` is within `range`, or says so naming `key`.
pub(crate) fn check_range(
    key: String,
    value: u64,
    range: std::ops::RangeInclusive<u64>,
) -> Result<(), KeyProblem> {
    if range.contains(&value) {
        Ok(())
    } else {
        Err((
            key,
            format!("must be from {} to {}", range.start(), range.end()),
        ))
    }
}

/// An environment variable's name as a shell would accept it.
pub(crate) fn check_env_name(key: String, name: &str) -> Result<(), KeyProblem> {
    let mut bytes = name.bytes();
    let first_ok = bytes
        .next()
        .is_some_and(|byte| byte.is_ascii_alphabetic() || byte == b'_');
    if first_ok && bytes.all(|byte| byte.is_ascii_alphanumeric() || byte == b'_') {
        Ok(())
    } else {
        Err((
            key,
            format!("`{name}` is not an environment variable name (A-Z, a-z, 0-9, `_`)"),
        ))
    }
}

/// The secret held by the variable `name`, read through `env`: a variable
/// that is not set (or is empty) is an error naming it, never a value.
pub(crate) fn read_secret(
    key: &str,
    name: &str,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Secret, KeyProblem> {
    match env(name) {
        Some(value) if !value.is_empty() => Ok(Secret::new(value)),
        _ => Err((
            key.to_owned(),
            format!("the environment variable `{name}` is not set"),
        )),
    }
}
