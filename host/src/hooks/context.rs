//! Which operation each typed context belongs to, so a chain run on a
//! context cannot be aimed at another operation's point by mistake.

use serde::Serialize;
use serde::de::DeserializeOwned;

use super::Operation;
use crate::domain::{
    CommandContext, CompletionContext, LlmContext, RequestContext, StateChangedContext,
    SubtaskSpawnedContext, TaskCreatedContext, ToolContext,
};

/// A hook operation's context: what its executors receive and may replace.
pub trait HookContext: Serialize + DeserializeOwned + Send + Sync {
    /// The operation whose points run on this context.
    const OPERATION: Operation;
}

macro_rules! contexts {
    ($($context:ty => $operation:ident,)*) => {
        $(impl HookContext for $context {
            const OPERATION: Operation = Operation::$operation;
        })*
    };
}

contexts! {
    RequestContext => RequestReceived,
    TaskCreatedContext => TaskCreated,
    StateChangedContext => TaskStateChanged,
    CompletionContext => TaskComplete,
    CommandContext => CommandInvoked,
    LlmContext => LlmInvoked,
    ToolContext => ToolInvoked,
    SubtaskSpawnedContext => SubtaskSpawned,
}
