//! The model contract's data: what the agent loop asks a model, and the
//! typed events and errors it gets back. Provider adapters (`crate::model`)
//! translate these to and from each provider's wire protocol; the agent loop
//! (`crate::task`) builds requests from a task's history and acts on the
//! events. Nothing here is an A2A type: the protocol stays at the bindings.
//!
//! Every type is also part of the `llm.invoked` hook context, so it
//! serializes to plain JSON (see docs/contracts.md).

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// How hard a model should think: each adapter maps it to its provider's
/// control (OpenAI `reasoning_effort`, an Anthropic thinking budget).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Effort {
    Low,
    #[default]
    Medium,
    High,
}

impl Effort {
    pub const ALL: [Effort; 3] = [Effort::Low, Effort::Medium, Effort::High];

    pub fn as_str(self) -> &'static str {
        match self {
            Effort::Low => "low",
            Effort::Medium => "medium",
            Effort::High => "high",
        }
    }
}

impl fmt::Display for Effort {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Effort {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Effort::ALL
            .into_iter()
            .find(|effort| effort.as_str() == s)
            .ok_or_else(|| format!("unknown effort `{s}`: use low, medium or high"))
    }
}

/// A tool the model may call: its name, what it does, and a JSON Schema for
/// its input (an object schema).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ToolSpec {
    pub name: String,
    pub description: String,
    pub input_schema: Value,
}

/// A tool call the model made. `arguments` is the JSON the model produced,
/// assembled from the provider's deltas; it is checked against the tool's
/// schema before the tool runs.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    /// The provider's id for the call; a tool result names it.
    pub id: String,
    pub name: String,
    pub arguments: Value,
}

/// What a tool answered, as the model will read it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ToolOutput {
    /// The call this answers.
    pub call_id: String,
    pub name: String,
    /// The result (or the error's text), as the model reads it.
    pub content: String,
    /// Whether the tool failed; the model may correct its call.
    #[serde(default)]
    pub is_error: bool,
}

/// One message of the conversation as a model sees it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "role", rename_all = "snake_case")]
pub enum ChatMessage {
    /// A participant's message.
    User { content: String },
    /// The model's earlier answer: its text and the tools it called.
    Assistant {
        #[serde(default)]
        content: String,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        tool_calls: Vec<ToolCall>,
    },
    /// A tool's answer to one of the assistant's calls.
    Tool(ToolOutput),
}

impl ChatMessage {
    /// A rough size in tokens (4 bytes a token), for fitting a request into
    /// a model's context window without a provider-specific tokenizer.
    pub fn estimated_tokens(&self) -> u64 {
        let bytes = match self {
            ChatMessage::User { content } => content.len(),
            ChatMessage::Assistant {
                content,
                tool_calls,
            } => {
                content.len()
                    + tool_calls
                        .iter()
                        .map(|call| call.name.len() + call.arguments.to_string().len())
                        .sum::<usize>()
            }
            ChatMessage::Tool(output) => output.content.len() + output.name.len(),
        };
        // Every message costs a few tokens of framing.
        (bytes as u64).div_ceil(4) + 4
    }
}

/// What the agent loop asks a model for one step of a turn.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ModelRequest {
    /// The configured model name (a `[models.<name>]` entry), not the
    /// provider's own model id.
    pub model: String,
    pub effort: Effort,
    /// Instructions from the configuration, sent before the conversation.
    #[serde(default)]
    pub system: Option<String>,
    /// The conversation, oldest first, cut to fit the context window.
    pub messages: Vec<ChatMessage>,
    /// The tools offered for this step.
    #[serde(default)]
    pub tools: Vec<ToolSpec>,
    /// The most tokens the answer may take.
    #[serde(default)]
    pub max_output_tokens: Option<u32>,
}

/// Tokens a provider reported for one request.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    pub input_tokens: u64,
    pub output_tokens: u64,
}

impl Usage {
    pub fn add(&mut self, other: Usage) {
        self.input_tokens = self.input_tokens.saturating_add(other.input_tokens);
        self.output_tokens = self.output_tokens.saturating_add(other.output_tokens);
    }
}

/// Why a model stopped answering.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    /// It finished its answer.
    EndTurn,
    /// It called tools and waits for their results.
    ToolUse,
    /// It hit `max_output_tokens`.
    MaxTokens,
    /// The provider refused to go on (content filter, safety).
    Refused,
    /// A reason this harness does not know, as the provider named it.
    Other(String),
}

/// One event of a model's streamed answer.
#[derive(Clone, Debug, PartialEq)]
pub enum ModelEvent {
    /// The next piece of the answer's text.
    TextDelta(String),
    /// A whole tool call (the adapter assembles the provider's deltas).
    ToolCall(ToolCall),
    /// Tokens used; may come more than once (the last one counts).
    Usage(Usage),
    /// Progress to show that is not part of the answer (the offline model's
    /// `work for N seconds`).
    Progress(String),
    /// The answer is complete; the last event.
    Stop(StopReason),
}

/// Why a model request failed, typed so the loop knows what to do next.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ModelError {
    /// Worth retrying: a connection error, a timeout, 408, 429 (not a quota),
    /// 5xx. `retry_after` is the provider's `Retry-After`, when it sent one.
    #[error("{provider} is unavailable: {message}")]
    Retryable {
        provider: String,
        message: String,
        retry_after: Option<Duration>,
    },
    /// The account's quota or credit is used up: retrying will not help.
    #[error("{provider} refused: quota exhausted: {message}")]
    QuotaExhausted { provider: String, message: String },
    /// The request does not fit the model's context window.
    #[error("{provider} refused: the conversation is too long for the model: {message}")]
    ContextTooLong { provider: String, message: String },
    /// The provider rejected the request as malformed (a 4xx).
    #[error("{provider} rejected the request: {message}")]
    InvalidRequest { provider: String, message: String },
    /// The key is missing, wrong or not allowed to use the model.
    #[error("{provider} refused the credentials: {message}")]
    Authentication { provider: String, message: String },
    /// The answer could not be understood (a broken stream).
    #[error("{provider} answered out of shape: {message}")]
    Protocol { provider: String, message: String },
}

impl ModelError {
    /// Whether the request may be sent again.
    pub fn is_retryable(&self) -> bool {
        matches!(self, ModelError::Retryable { .. })
    }
}
