//! The built-in role policy, a `command.invoked.pre` executor: watchers never
//! run commands; anyone else needs a role the command allows, or admin.

use serde_json::Value;
use tiny_harness_plugin::{Decision, Role};

/// The hook point this policy serves.
pub(crate) const POINT: &str = "command.invoked.pre";

/// The roles a command allows when its context names none (the
/// `commands.json` default).
const DEFAULT_ROLES: [&str; 3] = ["reporter", "assignee", "admin"];

/// Decides whether the sender in a `command.invoked` context may run the
/// command. A context that is not what the contract describes is `invalid`.
pub(crate) fn check(context: &str) -> Decision {
    match parse(context) {
        Ok(request) => decide(&request),
        Err(problem) => Decision::invalid(format!("malformed command.invoked context: {problem}")),
    }
}

/// The parts of the context the policy looks at.
struct Request {
    command: String,
    roles: Vec<String>,
    sender: String,
    role: Role,
}

fn parse(context: &str) -> Result<Request, String> {
    let value: Value = serde_json::from_str(context).map_err(|e| e.to_string())?;
    let command = string_at(&value, &["command", "name"])?;
    let sender = string_at(&value, &["sender", "id"])?;
    let role_name = string_at(&value, &["sender", "role"])?;
    let role = Role::parse(&role_name)
        .ok_or_else(|| format!("sender.role \"{role_name}\" is not a known role"))?;
    let roles = match value.pointer("/command/roles") {
        None | Some(Value::Null) => DEFAULT_ROLES.iter().map(|r| (*r).to_owned()).collect(),
        Some(Value::Array(items)) => items
            .iter()
            .map(|item| item.as_str().map(str::to_owned))
            .collect::<Option<Vec<_>>>()
            .ok_or("command.roles must be a list of role names")?,
        Some(_) => return Err("command.roles must be a list of role names".to_owned()),
    };
    Ok(Request {
        command,
        roles,
        sender,
        role,
    })
}

/// The string at `path`, or a message naming the missing field.
fn string_at(value: &Value, path: &[&str]) -> Result<String, String> {
    path.iter()
        .try_fold(value, |v, key| v.get(key))
        .and_then(Value::as_str)
        .map(str::to_owned)
        .ok_or_else(|| format!("missing string field {}", path.join(".")))
}

fn decide(request: &Request) -> Decision {
    let Request {
        command,
        roles,
        sender,
        role,
    } = request;
    match role {
        Role::Watcher => Decision::refused(format!(
            "watchers cannot run commands; {sender} is a watcher"
        )),
        Role::Admin => Decision::Pass,
        _ if roles.iter().any(|allowed| allowed == role.as_str()) => Decision::Pass,
        _ => Decision::refused(format!(
            "/{command} is for {}; {sender} is {} {role}",
            roles.join(", "),
            article(*role)
        )),
    }
}

fn article(role: Role) -> &'static str {
    match role {
        Role::Assignee | Role::Admin => "an",
        Role::Reporter | Role::Watcher => "a",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tiny_harness_plugin::{Abort, AbortReason};

    fn context(role: &str, roles: &str) -> String {
        format!(
            r#"{{"command": {{"name": "deploy", "raw_arguments": "", "arguments": {{}},
                 "usage": "/deploy", "roles": {roles}}},
                "sender": {{"id": "bob", "role": "{role}"}},
                "task": {{}}, "result": null}}"#
        )
    }

    fn aborted(decision: Decision) -> Abort {
        match decision {
            Decision::Abort(abort) => abort,
            other => panic!("expected an abort, got {other:?}"),
        }
    }

    #[test]
    fn watchers_are_always_refused() {
        let abort = aborted(check(&context("watcher", r#"["watcher", "admin"]"#)));
        assert_eq!(abort.reason, AbortReason::Refused);
        assert_eq!(
            abort.message,
            "watchers cannot run commands; bob is a watcher"
        );
    }

    #[test]
    fn allowed_roles_and_admins_pass() {
        assert_eq!(
            check(&context("reporter", r#"["reporter"]"#)),
            Decision::Pass
        );
        assert_eq!(check(&context("admin", r#"["reporter"]"#)), Decision::Pass);
        assert_eq!(check(&context("assignee", "null")), Decision::Pass);
    }

    #[test]
    fn other_roles_are_refused_with_names() {
        let abort = aborted(check(&context("assignee", r#"["reporter", "admin"]"#)));
        assert_eq!(abort.reason, AbortReason::Refused);
        assert_eq!(
            abort.message,
            "/deploy is for reporter, admin; bob is an assignee"
        );
    }

    #[test]
    fn malformed_contexts_are_invalid() {
        for bad in [
            "not json",
            "{}",
            r#"{"command": {"name": "x"}, "sender": {"id": "bob"}}"#,
            &context("root", r#"["reporter"]"#),
            &context("reporter", r#""reporter""#),
            &context("reporter", "[1]"),
        ] {
            let abort = aborted(check(bad));
            assert_eq!(abort.reason, AbortReason::Invalid, "{bad}");
            assert!(
                abort
                    .message
                    .starts_with("malformed command.invoked context: ")
            );
        }
    }
}
