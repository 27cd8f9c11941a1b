//! The values a command body receives and returns, and the JSON context of
//! the `command.invoked` operation that carries them through the hook chain.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::participant::{Participant, Role};
use super::view::TaskView;

/// One parsed, validated argument.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Argument {
    pub name: String,
    pub value: String,
}

/// Everything a command body is told.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Invocation {
    /// The command name, without the slash.
    pub command: String,
    /// Everything after `/<name> `, as sent.
    pub raw_arguments: String,
    /// Validated arguments, in declaration order.
    pub arguments: Vec<Argument>,
    pub sender: Participant,
    pub task: TaskView,
}

impl Invocation {
    /// The value of the argument called `name`, if it was given.
    pub fn argument(&self, name: &str) -> Option<&str> {
        self.arguments
            .iter()
            .find(|argument| argument.name == name)
            .map(|argument| argument.value.as_str())
    }
}

/// A change a command asks the task to make; the task validates and applies it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Effect {
    SetModel(String),
    SetEffort(String),
    SpawnSubtask(String),
}

/// The agent's reply for the turn.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Reply {
    pub text: String,
    /// Structured data for clients that read it.
    #[serde(default)]
    pub data: Option<Value>,
}

/// A command body's successful result.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Outcome {
    pub reply: Reply,
    #[serde(default)]
    pub effects: Vec<Effect>,
}

impl Outcome {
    /// A plain text reply with no effects.
    pub fn text(text: impl Into<String>) -> Self {
        Outcome {
            reply: Reply {
                text: text.into(),
                data: None,
            },
            effects: Vec::new(),
        }
    }
}

/// A command body's typed refusal.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
#[serde(tag = "kind", content = "message", rename_all = "lowercase")]
pub enum CommandError {
    /// The arguments do not fit; the message says how to call it.
    #[error("{0}")]
    Usage(String),
    /// The sender may not do this.
    #[error("{0}")]
    Refused(String),
    /// The command tried and failed.
    #[error("{0}")]
    Failed(String),
}

/// What a body put in the context.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CommandResult {
    Outcome(Outcome),
    Error(CommandError),
}

impl From<Result<Outcome, CommandError>> for CommandResult {
    fn from(result: Result<Outcome, CommandError>) -> Self {
        match result {
            Ok(outcome) => CommandResult::Outcome(outcome),
            Err(error) => CommandResult::Error(error),
        }
    }
}

/// The command as the `command.invoked` context describes it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct InvokedCommand {
    pub name: String,
    pub raw_arguments: String,
    pub arguments: Vec<Argument>,
    pub usage: String,
    /// Who may run it (the built-in role policy enforces this).
    pub roles: Vec<Role>,
}

/// The JSON context of `command.invoked.{pre,in,post}`: the contract with
/// every executor at those points (see docs/contracts.md).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CommandContext {
    pub command: InvokedCommand,
    pub sender: Participant,
    pub task: TaskView,
    /// Set by the first body that runs; later bodies yield.
    #[serde(default)]
    pub result: Option<CommandResult>,
}

impl CommandContext {
    /// The invocation a body receives.
    pub fn into_invocation(self) -> Invocation {
        Invocation {
            command: self.command.name,
            raw_arguments: self.command.raw_arguments,
            arguments: self.command.arguments,
            sender: self.sender,
            task: self.task,
        }
    }
}
