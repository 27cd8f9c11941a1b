//! A workflow's refusal of a message, across the wire.
//!
//! An Update that fails reaches its caller as a failure whose only field we
//! control is its message. The refusal travels there as JSON, so the server
//! answers the sender with the same error the embedded engine would (a
//! stranger's "task not found", a watcher's role refusal, invalid
//! parameters), not with a generic one.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::a2a::error::A2aError;

/// Why a workflow refused a message: the errors its admission check makes.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "refused", rename_all = "snake_case")]
pub enum Refusal {
    TaskNotFound {
        task_id: String,
    },
    RoleRefused {
        role: String,
        message: String,
    },
    InvalidParams {
        message: String,
        field: Option<String>,
    },
    /// Every other refusal, by its text.
    Unsupported {
        message: String,
    },
}

impl Refusal {
    /// The refusal a failure's message carries; a message that is not one
    /// (the workflow failed otherwise) is reported as it is.
    pub fn from_failure_message(message: &str) -> Refusal {
        serde_json::from_str(message).unwrap_or_else(|_| Refusal::Unsupported {
            message: message.to_owned(),
        })
    }
}

impl From<A2aError> for Refusal {
    fn from(error: A2aError) -> Self {
        match error {
            A2aError::TaskNotFound { task_id } => Refusal::TaskNotFound { task_id },
            A2aError::RoleRefused { role, message } => Refusal::RoleRefused { role, message },
            A2aError::InvalidParams { message, field } => Refusal::InvalidParams { message, field },
            A2aError::UnsupportedOperation(message) => Refusal::Unsupported { message },
            other => Refusal::Unsupported {
                message: other.to_string(),
            },
        }
    }
}

impl From<Refusal> for A2aError {
    fn from(refusal: Refusal) -> Self {
        match refusal {
            Refusal::TaskNotFound { task_id } => A2aError::TaskNotFound { task_id },
            Refusal::RoleRefused { role, message } => A2aError::RoleRefused { role, message },
            Refusal::InvalidParams { message, field } => A2aError::InvalidParams { message, field },
            Refusal::Unsupported { message } => A2aError::UnsupportedOperation(message),
        }
    }
}

/// As JSON: what the failure's message carries.
impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let json = serde_json::to_string(self).map_err(|_| fmt::Error)?;
        f.write_str(&json)
    }
}

impl std::error::Error for Refusal {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refusal_comes_back_as_the_error_it_was() {
        let errors = [
            A2aError::TaskNotFound {
                task_id: "t".into(),
            },
            A2aError::RoleRefused {
                role: "watcher".into(),
                message: "a watcher cannot send messages".into(),
            },
            A2aError::invalid_field("message.parts", "bad"),
            A2aError::UnsupportedOperation("task t is completed".into()),
        ];
        for error in errors {
            let message = Refusal::from(error.clone()).to_string();
            let back = A2aError::from(Refusal::from_failure_message(&message));
            assert_eq!(back, error, "{message}");
        }
    }

    #[test]
    fn a_failure_that_is_no_refusal_is_reported_as_it_is() {
        let back = A2aError::from(Refusal::from_failure_message("Workflow task timed out"));
        assert_eq!(
            back,
            A2aError::UnsupportedOperation("Workflow task timed out".into())
        );
    }
}
