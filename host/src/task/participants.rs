//! Participant updates carried by a task event envelope:
//! `{"kind": "task", "payload": {"participants": [{"id": "bob", "role": "watcher"}]}}`.

use serde_json::Value;

use crate::a2a::error::A2aError;
use crate::domain::{Participant, Role, check_participant_id};

/// Roles a task event may grant. Admins come from the configuration, and the
/// reporter is whoever started the task.
const GRANTABLE: [Role; 2] = [Role::Assignee, Role::Watcher];

/// Parse `payload.participants` (at JSON path `field`).
pub(crate) fn parse_grants(
    list: Option<&Value>,
    field: &str,
) -> Result<Vec<Participant>, A2aError> {
    let items = match list {
        Some(Value::Array(items)) if !items.is_empty() => items,
        _ => {
            return Err(A2aError::invalid_field(
                field,
                format!(
                    "{field} must be a non-empty list of {{\"id\", \"role\"}} objects; \
                     changing participants is the only task event"
                ),
            ));
        }
    };
    items
        .iter()
        .enumerate()
        .map(|(index, item)| parse_grant(item, &format!("{field}[{index}]")))
        .collect()
}

fn parse_grant(item: &Value, field: &str) -> Result<Participant, A2aError> {
    let id_field = format!("{field}.id");
    let id = item.get("id").and_then(Value::as_str).ok_or_else(|| {
        A2aError::invalid_field(&id_field, format!("{id_field} must be a string"))
    })?;
    // The same rule as everywhere an id enters (headers, tokens, metadata,
    // the configuration).
    check_participant_id(id)
        .map_err(|problem| A2aError::invalid_field(&id_field, format!("{id_field}: {problem}")))?;
    let role_field = format!("{field}.role");
    let role: Role = item
        .get("role")
        .and_then(Value::as_str)
        .ok_or_else(|| format!("{role_field} must be a string"))
        .and_then(|name| name.parse())
        .map_err(|problem| A2aError::invalid_field(&role_field, problem))?;
    if !GRANTABLE.contains(&role) {
        return Err(A2aError::invalid_field(
            &role_field,
            format!(
                "{role_field}: the {role} role cannot be granted by a task event (admins come \
                 from the configuration, the reporter is whoever started the task); grant \
                 assignee or watcher"
            ),
        ));
    }
    Ok(Participant {
        id: id.to_owned(),
        role,
    })
}

/// Grants must leave the reporter as the reporter.
pub(crate) fn check_grants(
    current: &[Participant],
    grants: &[Participant],
) -> Result<(), A2aError> {
    let reporter = current.iter().find(|p| p.role == Role::Reporter);
    match reporter {
        Some(reporter) if grants.iter().any(|grant| grant.id == reporter.id) => {
            Err(A2aError::invalid_params(format!(
                "{} is this task's reporter; the reporter's role cannot be changed",
                reporter.id
            )))
        }
        _ => Ok(()),
    }
}

/// The agent's confirmation, e.g. `Participants updated: bob (watcher).`
pub(crate) fn confirmation(grants: &[Participant]) -> String {
    let named: Vec<String> = grants
        .iter()
        .map(|grant| format!("{} ({})", grant.id, grant.role))
        .collect();
    format!("Participants updated: {}.", named.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn field_of(error: A2aError) -> Option<String> {
        match error {
            A2aError::InvalidParams { field, .. } => field,
            other => panic!("expected InvalidParams, got {other:?}"),
        }
    }

    #[test]
    fn grants_parse_and_refuse_admin_and_reporter() {
        let list = json!([{"id": "bob", "role": "watcher"}, {"id": "carol", "role": "assignee"}]);
        let grants = parse_grants(Some(&list), "p").expect("valid");
        assert_eq!(
            confirmation(&grants),
            "Participants updated: bob (watcher), carol (assignee)."
        );
        for role in ["admin", "reporter", "boss"] {
            let list = json!([{"id": "bob", "role": role}]);
            let error = parse_grants(Some(&list), "p").expect_err(role);
            assert_eq!(field_of(error).as_deref(), Some("p[0].role"));
        }
        let error = parse_grants(Some(&json!([{"role": "watcher"}])), "p").expect_err("no id");
        assert_eq!(field_of(error).as_deref(), Some("p[0].id"));
        for bad in [" bob\n", "", "x".repeat(5000).as_str(), "bo\u{7}b"] {
            let list = json!([{"id": bad, "role": "watcher"}]);
            let error = parse_grants(Some(&list), "p").expect_err("a bad id");
            assert_eq!(field_of(error).as_deref(), Some("p[0].id"), "{bad:?}");
        }
        assert!(parse_grants(Some(&json!([])), "p").is_err());
        assert!(parse_grants(None, "p").is_err());
    }

    #[test]
    fn the_reporter_keeps_their_role() {
        let current = [Participant {
            id: "alice".into(),
            role: Role::Reporter,
        }];
        let demote = [Participant {
            id: "alice".into(),
            role: Role::Watcher,
        }];
        assert!(check_grants(&current, &demote).is_err());
        assert!(check_grants(&current, &[]).is_ok());
    }
}
