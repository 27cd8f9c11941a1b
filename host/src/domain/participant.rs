//! Participants of a task and their roles.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// A participant's role in one conversation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// Started the conversation; may add participants and complete it.
    Reporter,
    /// Works on the conversation; may send, run commands and complete.
    Assignee,
    /// Reads and subscribes only.
    Watcher,
    /// Named in the configuration; may do everything.
    Admin,
}

impl Role {
    pub const ALL: [Role; 4] = [Role::Reporter, Role::Assignee, Role::Watcher, Role::Admin];

    pub fn as_str(self) -> &'static str {
        match self {
            Role::Reporter => "reporter",
            Role::Assignee => "assignee",
            Role::Watcher => "watcher",
            Role::Admin => "admin",
        }
    }
}

impl fmt::Display for Role {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Role {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Role::ALL
            .into_iter()
            .find(|role| role.as_str() == s)
            .ok_or_else(|| {
                format!("unknown role `{s}`: expected reporter, assignee, watcher or admin")
            })
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Participant {
    pub id: String,
    pub role: Role,
}

/// The longest participant id accepted, in characters.
pub const MAX_PARTICIPANT_ID_CHARS: usize = 128;

/// A participant id is 1 to [`MAX_PARTICIPANT_ID_CHARS`] characters, none of them control
/// characters, without leading or trailing whitespace.
pub fn check_participant_id(id: &str) -> Result<(), String> {
    if id.is_empty() {
        return Err("a participant id cannot be empty".to_owned());
    }
    if id.chars().count() > MAX_PARTICIPANT_ID_CHARS {
        return Err(format!(
            "a participant id is at most {MAX_PARTICIPANT_ID_CHARS} characters"
        ));
    }
    if id.chars().any(char::is_control) {
        return Err("a participant id cannot contain control characters".to_owned());
    }
    if id.trim() != id {
        return Err("a participant id cannot start or end with whitespace".to_owned());
    }
    Ok(())
}
