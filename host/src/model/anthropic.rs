//! The Anthropic Messages API, streamed.
//!
//! Request: `POST <base_url>/v1/messages` with `x-api-key` and
//! `anthropic-version`, `stream: true`, the system prompt as the top-level
//! `system`, `max_tokens` (required), tools as `{name, description,
//! input_schema}`, and extended thinking (`thinking: {type: "enabled",
//! budget_tokens}`) when the effort level maps to a budget. Conversation
//! messages alternate user and assistant: an assistant's tool calls are
//! `tool_use` blocks, their results `tool_result` blocks of the next user
//! message; consecutive messages of one role are merged.
//!
//! Answer: `message_start` (input tokens), per content block a
//! `content_block_start`, `content_block_delta`s (`text_delta`,
//! `input_json_delta` pieces of a tool call's input, `thinking_delta`,
//! `signature_delta`) and a `content_block_stop`, then `message_delta` (stop
//! reason, output tokens) and `message_stop`. `ping`s, unknown events,
//! unknown block and delta types and unknown fields are skipped; an `error`
//! event fails the answer.
//!
//! Thinking blocks come back as one [`ModelEvent::Reasoning`], and go back
//! first in their assistant message: Anthropic refuses a tool round whose
//! assistant message lost them. When a tool round's assistant message has
//! none (it was made without thinking), this request is sent without
//! thinking too, which Anthropic accepts.

use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;

use eventsource_stream::Event;
use reqwest::StatusCode;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use serde_json::{Map, Value, json};

use super::history::answered;
use super::http::{
    Decode, Endpoint, Fault, Kind, ProviderError, Wire, arguments_of, streamed_error,
};
use super::settings::{AnthropicSettings, PerEffort, defaults};
use super::{
    ChatMessage, Model, ModelEvent, ModelRequest, ModelStream, Reasoning, StopReason, ToolCall,
    Usage,
};

/// The API version this adapter speaks.
pub const ANTHROPIC_VERSION: &str = "2023-06-01";

/// What [`Reasoning::provider`] says for Anthropic's blocks.
const PROVIDER: &str = "anthropic";

/// A model served over the Anthropic Messages API.
pub struct AnthropicModel {
    endpoint: Arc<Endpoint<AnthropicWire>>,
    model: String,
    thinking_budget: PerEffort<u32>,
    max_output_tokens: u32,
}

impl AnthropicModel {
    /// The model `name` of the configuration, answering within
    /// `max_output_tokens` when a request does not say.
    pub fn new(
        name: &str,
        settings: &AnthropicSettings,
        max_output_tokens: Option<u32>,
    ) -> Result<Self, String> {
        let mut url = settings.base_url.clone();
        url.set_path(&format!("{}/v1/messages", url.path().trim_end_matches('/')));
        let mut key = HeaderValue::try_from(settings.api_key.expose())
            .map_err(|_| "the API key holds characters a header cannot carry".to_owned())?;
        key.set_sensitive(true);
        let mut headers = HeaderMap::new();
        headers.insert(HeaderName::from_static("x-api-key"), key);
        headers.insert(
            HeaderName::from_static("anthropic-version"),
            HeaderValue::from_static(ANTHROPIC_VERSION),
        );
        let endpoint = Endpoint::new(
            name,
            PROVIDER,
            url,
            headers,
            Some(settings.api_key.clone()),
            &settings.http,
            AnthropicWire,
        )?;
        Ok(AnthropicModel {
            endpoint: Arc::new(endpoint),
            model: settings.model.clone(),
            thinking_budget: settings.thinking_budget.clone(),
            max_output_tokens: max_output_tokens.unwrap_or(defaults::ANTHROPIC_MAX_OUTPUT_TOKENS),
        })
    }

    #[cfg(test)]
    pub(crate) fn with_pause(self, pause: super::retry::Pause) -> Self {
        let endpoint = Arc::try_unwrap(self.endpoint)
            .ok()
            .expect("not shared yet")
            .with_pause(pause);
        AnthropicModel {
            endpoint: Arc::new(endpoint),
            ..self
        }
    }

    /// The Messages request for `request`.
    fn body(&self, request: &ModelRequest) -> Value {
        let max_tokens = request.max_output_tokens.unwrap_or(self.max_output_tokens);
        let mut body = Map::new();
        body.insert("model".into(), json!(self.model));
        body.insert("max_tokens".into(), json!(max_tokens));
        body.insert("stream".into(), json!(true));
        if let Some(system) = request.system.as_deref().filter(|text| !text.is_empty()) {
            body.insert("system".into(), json!(system));
        }
        body.insert(
            "messages".into(),
            Value::Array(messages(&answered(&request.messages))),
        );
        if !request.tools.is_empty() {
            let tools = request
                .tools
                .iter()
                .map(|tool| {
                    json!({
                        "name": tool.name,
                        "description": tool.description,
                        "input_schema": tool.input_schema,
                    })
                })
                .collect();
            body.insert("tools".into(), Value::Array(tools));
        }
        if let Some(budget) = self.thinking(request, max_tokens) {
            body.insert(
                "thinking".into(),
                json!({"type": "enabled", "budget_tokens": budget}),
            );
        }
        Value::Object(body)
    }

    /// The thinking budget for `request`, if it thinks: the effort level's
    /// budget, below `max_tokens` as Anthropic requires (none if that
    /// leaves less than its minimum), and none in a tool round whose
    /// assistant message carries no thinking.
    fn thinking(&self, request: &ModelRequest, max_tokens: u32) -> Option<u32> {
        let budget = (*self.thinking_budget.get(request.effort)?).min(max_tokens.saturating_sub(1));
        if budget < defaults::MIN_THINKING_BUDGET {
            return None;
        }
        let in_tool_round = matches!(request.messages.last(), Some(ChatMessage::Tool(_)));
        if in_tool_round {
            let thought = request
                .messages
                .iter()
                .rev()
                .find_map(|message| match message {
                    ChatMessage::Assistant { reasoning, .. } => Some(
                        reasoning
                            .as_ref()
                            .is_some_and(|r| r.provider == PROVIDER && !r.blocks.is_empty()),
                    ),
                    _ => None,
                });
            if thought == Some(false) {
                return None;
            }
        }
        Some(budget)
    }
}

impl Model for AnthropicModel {
    fn stream(&self, request: ModelRequest) -> ModelStream {
        self.endpoint.stream(&self.body(&request))
    }
}

/// The conversation as alternating user and assistant messages of blocks.
fn messages(conversation: &[ChatMessage]) -> Vec<Value> {
    let mut messages: Vec<(&'static str, Vec<Value>)> = Vec::new();
    for message in conversation {
        let (role, blocks) = match message {
            ChatMessage::User { content } => ("user", text_block(content).into_iter().collect()),
            ChatMessage::Assistant {
                content,
                tool_calls,
                reasoning,
            } => {
                let mut blocks: Vec<Value> = reasoning
                    .iter()
                    .filter(|reasoning| reasoning.provider == PROVIDER)
                    .flat_map(|reasoning| reasoning.blocks.iter().cloned())
                    .collect();
                blocks.extend(text_block(content));
                blocks.extend(tool_calls.iter().map(|call| {
                    json!({"type": "tool_use", "id": call.id, "name": call.name, "input": input_of(call)})
                }));
                ("assistant", blocks)
            }
            ChatMessage::Tool(output) => {
                let mut block = json!({"type": "tool_result", "tool_use_id": output.call_id});
                if !output.content.is_empty() {
                    block["content"] = json!(output.content);
                }
                if output.is_error {
                    block["is_error"] = json!(true);
                }
                ("user", vec![block])
            }
        };
        // Anthropic refuses empty messages and empty text blocks.
        if blocks.is_empty() {
            continue;
        }
        match messages.last_mut() {
            Some((last, existing)) if *last == role => existing.extend(blocks),
            _ => messages.push((role, blocks)),
        }
    }
    messages
        .into_iter()
        .map(|(role, content)| json!({"role": role, "content": content}))
        .collect()
}

fn text_block(text: &str) -> Option<Value> {
    (!text.is_empty()).then(|| json!({"type": "text", "text": text}))
}

/// A call's input: an object, as `tool_use` requires. Arguments the model
/// wrote that were not an object (kept as text by the adapter that read
/// them) go back as `{}`; the tool's error result says what was wrong.
fn input_of(call: &ToolCall) -> Value {
    if call.arguments.is_object() {
        call.arguments.clone()
    } else {
        json!({})
    }
}

/// The protocol's error types.
pub(crate) struct AnthropicWire;

impl Wire for AnthropicWire {
    type Decoder = Decoder;

    fn decoder(&self) -> Decoder {
        Decoder::default()
    }

    fn refine(status: Option<StatusCode>, error: &ProviderError) -> Option<Kind> {
        if status == Some(StatusCode::PAYMENT_REQUIRED)
            || error.mentions("billing_error")
            || error.mentions("credit balance")
        {
            return Some(Kind::QuotaExhausted);
        }
        if error.mentions("prompt is too long")
            || error.mentions("exceed context limit")
            || status == Some(StatusCode::PAYLOAD_TOO_LARGE)
        {
            return Some(Kind::ContextTooLong);
        }
        if status.is_none()
            && (error.mentions("overloaded_error")
                || error.mentions("api_error")
                || error.mentions("rate_limit_error"))
        {
            return Some(Kind::Retryable);
        }
        None
    }
}

/// A content block being streamed.
#[derive(Debug)]
enum Block {
    Text,
    ToolUse {
        id: String,
        name: String,
        /// The input the start carried (the deltas usually replace it).
        start_input: Value,
        json: String,
    },
    /// Thinking, kept whole to go back verbatim.
    Thinking(Value),
    /// A block this adapter does not act on.
    Other,
}

/// Decoding one streamed message.
#[derive(Debug, Default)]
pub(crate) struct Decoder {
    blocks: BTreeMap<u64, Block>,
    reasoning: Vec<Value>,
    usage: Usage,
    saw_usage: bool,
    stop_reason: Option<String>,
    done: bool,
}

impl Decoder {
    fn on(&mut self, data: &Value, out: &mut VecDeque<ModelEvent>) -> Result<(), Fault> {
        let index = data.get("index").and_then(Value::as_u64).unwrap_or(0);
        match data.get("type").and_then(Value::as_str).unwrap_or_default() {
            "message_start" => {
                if let Some(usage) = data.pointer("/message/usage") {
                    self.read_usage(usage);
                }
            }
            "content_block_start" => {
                let block = data.get("content_block").unwrap_or(&Value::Null);
                self.start(index, block, out);
            }
            "content_block_delta" => {
                let delta = data.get("delta").unwrap_or(&Value::Null);
                self.delta(index, delta, out);
            }
            "content_block_stop" => self.stop(index, out),
            "message_delta" => {
                if let Some(reason) = data.pointer("/delta/stop_reason").and_then(Value::as_str) {
                    self.stop_reason = Some(reason.to_owned());
                }
                if let Some(usage) = data.get("usage") {
                    self.read_usage(usage);
                }
            }
            "message_stop" => self.finish(out),
            "error" => {
                let error = ProviderError::from_json(data).unwrap_or_default();
                return Err(streamed_error::<AnthropicWire>(&error));
            }
            // `ping`, and whatever a later API version adds.
            _ => {}
        }
        Ok(())
    }

    fn start(&mut self, index: u64, block: &Value, out: &mut VecDeque<ModelEvent>) {
        let text = |key: &str| {
            block
                .get(key)
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned()
        };
        let block = match block.get("type").and_then(Value::as_str) {
            Some("text") => {
                let start = text("text");
                if !start.is_empty() {
                    out.push_back(ModelEvent::TextDelta(start));
                }
                Block::Text
            }
            Some("tool_use") => Block::ToolUse {
                id: text("id"),
                name: text("name"),
                start_input: block.get("input").cloned().unwrap_or_else(|| json!({})),
                json: String::new(),
            },
            Some("thinking" | "redacted_thinking") => Block::Thinking(block.clone()),
            _ => Block::Other,
        };
        self.blocks.insert(index, block);
    }

    fn delta(&mut self, index: u64, delta: &Value, out: &mut VecDeque<ModelEvent>) {
        let text = |key: &str| delta.get(key).and_then(Value::as_str).unwrap_or_default();
        match (
            delta.get("type").and_then(Value::as_str),
            self.blocks.get_mut(&index),
        ) {
            (Some("text_delta"), _) => {
                let piece = text("text");
                if !piece.is_empty() {
                    out.push_back(ModelEvent::TextDelta(piece.to_owned()));
                }
            }
            (Some("input_json_delta"), Some(Block::ToolUse { json, .. })) => {
                json.push_str(text("partial_json"));
            }
            (Some(kind @ ("thinking_delta" | "signature_delta")), Some(Block::Thinking(block))) => {
                let key = if kind == "thinking_delta" {
                    "thinking"
                } else {
                    "signature"
                };
                if let Some(object) = block.as_object_mut() {
                    let mut value = object
                        .get(key)
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_owned();
                    value.push_str(text(key));
                    object.insert(key.to_owned(), Value::String(value));
                }
            }
            _ => {}
        }
    }

    fn stop(&mut self, index: u64, out: &mut VecDeque<ModelEvent>) {
        match self.blocks.remove(&index) {
            Some(Block::ToolUse {
                id,
                name,
                start_input,
                json,
            }) => {
                let arguments = if json.trim().is_empty() {
                    start_input
                } else {
                    arguments_of(&json)
                };
                out.push_back(ModelEvent::ToolCall(ToolCall {
                    id,
                    name,
                    arguments,
                }));
            }
            Some(Block::Thinking(block)) => self.reasoning.push(block),
            Some(Block::Text | Block::Other) | None => {}
        }
    }

    /// `usage` of `message_start` or `message_delta`: input tokens (cache
    /// reads and writes included) and output tokens so far.
    fn read_usage(&mut self, usage: &Value) {
        let count = |key: &str| usage.get(key).and_then(Value::as_u64);
        let input: Option<u64> = [
            "input_tokens",
            "cache_creation_input_tokens",
            "cache_read_input_tokens",
        ]
        .into_iter()
        .filter_map(count)
        .reduce(u64::saturating_add);
        if let Some(input) = input {
            self.usage.input_tokens = input;
            self.saw_usage = true;
        }
        if let Some(output) = count("output_tokens") {
            self.usage.output_tokens = output;
            self.saw_usage = true;
        }
    }

    /// The message is whole: blocks left open, thinking, usage, the stop.
    fn finish(&mut self, out: &mut VecDeque<ModelEvent>) {
        let open: Vec<u64> = self.blocks.keys().copied().collect();
        for index in open {
            self.stop(index, out);
        }
        if !self.reasoning.is_empty() {
            out.push_back(ModelEvent::Reasoning(Reasoning {
                provider: PROVIDER.to_owned(),
                blocks: std::mem::take(&mut self.reasoning),
            }));
        }
        if self.saw_usage {
            out.push_back(ModelEvent::Usage(self.usage));
        }
        let reason = match self.stop_reason.as_deref() {
            None | Some("end_turn" | "stop_sequence") => StopReason::EndTurn,
            Some("tool_use") => StopReason::ToolUse,
            Some("max_tokens") => StopReason::MaxTokens,
            Some("refusal") => StopReason::Refused,
            Some(other) => StopReason::Other(other.to_owned()),
        };
        out.push_back(ModelEvent::Stop(reason));
        self.done = true;
    }
}

impl Decode for Decoder {
    fn event(&mut self, event: &Event, out: &mut VecDeque<ModelEvent>) -> Result<(), Fault> {
        let data = event.data.trim();
        if data.is_empty() {
            return Ok(());
        }
        let mut data: Value = serde_json::from_str(data)
            .map_err(|error| Fault::protocol(format!("an event is not JSON ({error}): {data}")))?;
        // The type is in the data; the event's name says the same.
        if data.get("type").is_none()
            && let Some(object) = data.as_object_mut()
        {
            object.insert("type".into(), json!(event.event));
        }
        self.on(&data, out)
    }

    fn is_done(&self) -> bool {
        self.done
    }

    fn end(&mut self, out: &mut VecDeque<ModelEvent>) -> Result<(), Fault> {
        if self.done {
            return Ok(());
        }
        if self.stop_reason.is_none() {
            return Err(Fault::new(
                Kind::Retryable,
                "the answer broke off before it finished",
            ));
        }
        // A stop reason and then the end, without message_stop.
        self.finish(out);
        Ok(())
    }
}

#[cfg(test)]
mod tests;
