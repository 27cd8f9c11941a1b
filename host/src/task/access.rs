//! Who may do what to a task, and when.
//!
//! A caller who is neither a participant nor a configured admin gets
//! TaskNotFound for every operation: a task's existence is not leaked.
//! Watchers read and subscribe; a message, command, control or CancelTask
//! from one is refused before anything else happens. These checks are pure
//! functions of the record, so the service can check early and the task's
//! actor can check again, authoritatively, before it acts.

use super::classify::Kind;
use super::state::{Lifecycle, TaskRecord};
use crate::a2a::error::A2aError;
use crate::domain::Role;

/// `who`'s role on `record`: configured admins are admins on every task;
/// anyone else has their participant role, if any.
pub(crate) fn role_of(record: &TaskRecord, who: &str, admins: &[String]) -> Option<Role> {
    if admins.iter().any(|admin| admin == who) {
        return Some(Role::Admin);
    }
    record
        .participants
        .iter()
        .find(|participant| participant.id == who)
        .map(|participant| participant.role)
}

/// `who`'s role, or TaskNotFound when they may not see the task.
pub(crate) fn visible(record: &TaskRecord, who: &str, admins: &[String]) -> Result<Role, A2aError> {
    role_of(record, who, admins).ok_or_else(|| not_found(&record.id))
}

pub(crate) fn not_found(task_id: &str) -> A2aError {
    A2aError::TaskNotFound {
        task_id: task_id.to_owned(),
    }
}

/// Watchers read; they never act on a task.
pub(crate) fn may_act(role: Role, who: &str, doing: &str) -> Result<(), A2aError> {
    if role == Role::Watcher {
        return Err(refused(
            role,
            format!(
                "{who} is a watcher on this task: watchers can read and subscribe, but cannot {doing}"
            ),
        ));
    }
    Ok(())
}

/// Whether `sender`'s message of `class` may be processed now. In order:
/// the sender sees the task, is not a watcher, has a role for this kind of
/// message; the message's contextId matches; the task takes messages.
pub(crate) fn admit_message(
    record: &TaskRecord,
    admins: &[String],
    sender: &str,
    context_id: Option<&str>,
    kind: &Kind,
) -> Result<Role, A2aError> {
    let role = visible(record, sender, admins)?;
    may_act(role, sender, "send messages, run commands or complete it")?;
    if matches!(kind, Kind::Participants(_)) && !matches!(role, Role::Reporter | Role::Admin) {
        let is = with_article(role);
        return Err(refused(
            role,
            format!("only the reporter or an admin can change participants; {sender} is {is}"),
        ));
    }
    if let Some(context_id) = context_id
        && context_id != record.context_id
    {
        return Err(A2aError::invalid_field(
            "message.contextId",
            format!(
                "message.contextId `{context_id}` does not match task {}'s context `{}`",
                record.id, record.context_id
            ),
        ));
    }
    if let Lifecycle::Delegated { .. } = record.lifecycle {
        return Err(A2aError::UnsupportedOperation(format!(
            "task {} is a delegated sub-task: it works on its goal and finishes on its own, so \
             it takes no messages (cancel it with CancelTask)",
            record.id
        )));
    }
    if record.is_terminal() {
        return Err(A2aError::UnsupportedOperation(format!(
            "task {} is {} and accepts no more messages; start a new task (sending the same \
             contextId continues the conversation)",
            record.id,
            record.state()
        )));
    }
    Ok(role)
}

/// Whether `sender` may cancel the task now.
pub(crate) fn admit_cancel(
    record: &TaskRecord,
    admins: &[String],
    sender: &str,
) -> Result<Role, A2aError> {
    let role = visible(record, sender, admins)?;
    may_act(role, sender, "cancel it")?;
    if record.is_terminal() {
        return Err(A2aError::TaskNotCancelable {
            task_id: record.id.clone(),
            state: record.state(),
        });
    }
    Ok(role)
}

fn refused(role: Role, message: String) -> A2aError {
    A2aError::RoleRefused {
        role: role.as_str().to_owned(),
        message,
    }
}

fn with_article(role: Role) -> String {
    match role {
        Role::Assignee | Role::Admin => format!("an {role}"),
        Role::Reporter | Role::Watcher => format!("a {role}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::task::Participant;

    fn record() -> TaskRecord {
        let participant = |id: &str, role| Participant {
            id: id.into(),
            role,
        };
        TaskRecord::new(
            "t1".into(),
            "c1".into(),
            Lifecycle::Conversation,
            vec![
                participant("alice", Role::Reporter),
                participant("bob", Role::Watcher),
                participant("carol", Role::Assignee),
            ],
            "m".into(),
            "medium".into(),
        )
    }

    #[test]
    fn roles_come_from_the_configuration_first() {
        let admins = vec!["root".to_owned(), "bob".to_owned()];
        let task = record();
        assert_eq!(role_of(&task, "root", &admins), Some(Role::Admin));
        assert_eq!(role_of(&task, "bob", &admins), Some(Role::Admin));
        assert_eq!(role_of(&task, "alice", &admins), Some(Role::Reporter));
        assert_eq!(role_of(&task, "mallory", &admins), None);
    }

    #[test]
    fn admission_checks_visibility_then_roles_then_the_task() {
        let task = record();
        let none: &[String] = &[];
        assert!(matches!(
            admit_message(&task, none, "mallory", None, &Kind::Ordinary),
            Err(A2aError::TaskNotFound { .. })
        ));
        assert!(matches!(
            admit_message(&task, none, "bob", None, &Kind::Complete),
            Err(A2aError::RoleRefused { role, .. }) if role == "watcher"
        ));
        assert!(matches!(
            admit_message(&task, none, "carol", None, &Kind::Participants(Vec::new())),
            Err(A2aError::RoleRefused { role, .. }) if role == "assignee"
        ));
        assert!(matches!(
            admit_message(&task, none, "alice", Some("other"), &Kind::Ordinary),
            Err(A2aError::InvalidParams { .. })
        ));
        assert_eq!(
            admit_message(&task, none, "carol", Some("c1"), &Kind::Complete).ok(),
            Some(Role::Assignee)
        );
        assert!(matches!(
            admit_cancel(&task, none, "bob"),
            Err(A2aError::RoleRefused { .. })
        ));
    }
}
