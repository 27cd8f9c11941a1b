//! Model providers. The embedded default is a deterministic offline model,
//! so the harness converses on a fresh machine with no network or keys.
//!
//! The trait is the contract with the task lifecycle: a request (model,
//! effort, the conversation so far) in, a stream of progress and one reply
//! out. Dropping the stream must stop the work: that is how a turn is cut.

mod offline;

use std::pin::Pin;

use futures_core::Stream;
use serde::{Deserialize, Serialize};

use crate::a2a::types::Message;

pub use offline::{MAX_WORK_SECONDS, OfflineModel};

/// What the lifecycle asks a model. It is also the `request` of the
/// `llm.invoked` hook context, so executors may read and replace it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ModelRequest {
    pub model: String,
    pub effort: String,
    /// The conversation so far, oldest first, ending with the new message.
    pub history: Vec<Message>,
}

/// One step of a model's answer.
#[derive(Clone, Debug, PartialEq)]
pub enum ModelEvent {
    /// Progress to show while the turn runs (streamed as a status update).
    Progress(String),
    /// The reply; `asks_question` parks the task as `awaiting-answer`.
    Reply { text: String, asks_question: bool },
}

pub type ModelStream = Pin<Box<dyn Stream<Item = Result<ModelEvent, String>> + Send>>;

/// A model provider.
pub trait Model: Send + Sync + 'static {
    /// Answer `request`; the stream ends after one `Reply` (or an error).
    fn respond(&self, request: ModelRequest) -> ModelStream;
}
