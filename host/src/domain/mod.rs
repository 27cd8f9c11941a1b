//! The vocabulary every layer shares: participants and their roles, the
//! read-only view of a task that executors see, and the typed contexts of
//! the hook operations.
//!
//! This module is a leaf: it imports nothing of the harness but the A2A
//! protocol's types, so the task lifecycle, the command registry, the hook
//! chains and the plugin runtime can all depend on it without depending on
//! each other. JSON appears only where a context crosses to an executor
//! (a Wasm component or a remote endpoint).

mod answer;
mod command;
mod contexts;
mod model;
mod participant;
mod view;

pub use answer::{ArtifactPiece, Disposition, MAX_ARTIFACT_PIECES, check_pieces};
pub use command::{
    Argument, CommandContext, CommandError, CommandResult, Effect, Invocation, InvokedCommand,
    Outcome, Reply,
};
pub use contexts::{
    CompletionContext, CompletionDecision, LlmContext, ModelResponse, RequestContext,
    StateChangedContext, SubtaskSpawnedContext, TaskCreatedContext, TaskRef, ToolContext,
    ToolResult,
};
pub use model::{
    ChatMessage, Effort, ModelError, ModelEvent, ModelRequest, Reasoning, StopReason, ToolCall,
    ToolOutput, ToolSpec, Usage,
};
pub use participant::{MAX_PARTICIPANT_ID_CHARS, Participant, Role, check_participant_id};
pub use view::{SubtaskView, TaskView};
