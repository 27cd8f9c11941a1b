//! Argument completion: what a participant may type next.
//!
//! Command names complete from the registry itself; arguments complete
//! through the component that serves the command's body, when it exports
//! `completion` (the contract's optional third interface).

use serde::{Deserialize, Serialize};

use crate::hooks::{BoxFuture, ExecutorFault};

/// One completion candidate.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Suggestion {
    /// The text to insert: a command line for names, an argument otherwise.
    pub value: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
}

/// Completes the arguments of the commands it serves.
pub trait Completer: Send + Sync + 'static {
    fn complete<'a>(
        &'a self,
        command: &'a str,
        partial_arguments: &'a str,
    ) -> BoxFuture<'a, Result<Vec<Suggestion>, ExecutorFault>>;
}
