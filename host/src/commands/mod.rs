//! Commands: `/<name> <arguments>` messages that run on the harness, never
//! the model.
//!
//! A command is declared (name, usage, arguments, roles, timeout) and its
//! body is an `in` executor on the `command.invoked` hook point filtered to
//! its name. Declarations come from plugins' commands.json or from code
//! ([`RegistryBuilder::register`]); the registry is frozen before tasks run.

mod body;
mod completion;
mod generation;
mod registry;
mod spec;

pub use crate::domain::{
    Argument, CommandContext, CommandError, CommandResult, Effect, Invocation, InvokedCommand,
    Outcome, Reply,
};
pub use body::{BodyExecutor, BodyResult, CommandBody, NativeBody};
pub use completion::{Completer, Suggestion};
pub use generation::Registries;
pub use registry::{
    CommandCall, CommandFailure, CommandRegistry, RegisteredCommand, RegisteredTool,
    RegistryBuilder, RegistryError,
};
pub use spec::{
    ArgumentSpec, ArgumentType, CommandSpec, DEFAULT_TIMEOUT, InvalidSpec, MAX_TIMEOUT, UsageError,
    is_valid_command_name,
};
