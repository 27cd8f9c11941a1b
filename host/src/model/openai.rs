//! OpenAI Chat Completions, streamed: the adapter for OpenAI and for the
//! servers that speak its protocol (Ollama, vLLM, llama.cpp's server), which
//! differ only in `base_url` and in small deviations decoded leniently here.
//!
//! Request: `POST <base_url>/chat/completions` with `stream: true` and
//! `stream_options.include_usage`, the system prompt as the first
//! `system` message, tools as `{type: "function", function: {name,
//! description, parameters}}`, and `reasoning_effort` when the effort level
//! maps to one.
//!
//! Answer: `data:` chunks of `choices[0].delta` (text in `content`, tool
//! calls in `tool_calls`, their arguments in pieces assembled by `index`),
//! a `finish_reason`, a last chunk carrying `usage`, then `data: [DONE]`.
//! Tolerated: unknown fields, a missing or empty `choices`, `delta` or
//! `finish_reason`, an empty `usage` object, no `[DONE]` after a
//! `finish_reason`, tool calls without an `index` (one call per id) or with
//! a `finish_reason` of `stop` (Ollama), keep-alive comments, CRLF.

use std::collections::VecDeque;
use std::sync::Arc;

use eventsource_stream::Event;
use reqwest::StatusCode;
use reqwest::header::{AUTHORIZATION, HeaderMap, HeaderValue};
use serde_json::{Map, Value, json};

use super::history::answered;
use super::http::{
    Decode, Endpoint, Fault, Kind, ProviderError, Wire, arguments_of, streamed_error,
};
use super::settings::{MaxTokensField, OpenAiSettings, PerEffort};
use super::{
    ChatMessage, Model, ModelEvent, ModelRequest, ModelStream, StopReason, ToolCall, Usage,
};

/// A model served over OpenAI Chat Completions.
pub struct OpenAiModel {
    endpoint: Arc<Endpoint<OpenAiWire>>,
    model: String,
    reasoning_effort: PerEffort<String>,
    max_tokens_field: MaxTokensField,
    max_output_tokens: Option<u32>,
}

impl OpenAiModel {
    /// The model `name` of the configuration, answering within
    /// `max_output_tokens` when a request does not say.
    pub fn new(
        name: &str,
        settings: &OpenAiSettings,
        max_output_tokens: Option<u32>,
    ) -> Result<Self, String> {
        let mut url = settings.base_url.clone();
        url.set_path(&format!(
            "{}/chat/completions",
            url.path().trim_end_matches('/')
        ));
        let mut headers = HeaderMap::new();
        if let Some(key) = &settings.api_key {
            let mut value = HeaderValue::try_from(format!("Bearer {}", key.expose()))
                .map_err(|_| "the API key holds characters a header cannot carry".to_owned())?;
            value.set_sensitive(true);
            headers.insert(AUTHORIZATION, value);
        }
        let endpoint = Endpoint::new(
            name,
            "openai",
            url,
            headers,
            settings.api_key.clone(),
            &settings.http,
            OpenAiWire,
        )?;
        Ok(OpenAiModel {
            endpoint: Arc::new(endpoint),
            model: settings.model.clone(),
            reasoning_effort: settings.reasoning_effort.clone(),
            max_tokens_field: settings.max_tokens_field,
            max_output_tokens,
        })
    }

    #[cfg(test)]
    pub(crate) fn with_pause(self, pause: super::retry::Pause) -> Self {
        let endpoint = Arc::try_unwrap(self.endpoint)
            .ok()
            .expect("not shared yet")
            .with_pause(pause);
        OpenAiModel {
            endpoint: Arc::new(endpoint),
            ..self
        }
    }

    /// The Chat Completions request for `request`.
    fn body(&self, request: &ModelRequest) -> Value {
        let mut messages = Vec::with_capacity(request.messages.len() + 1);
        if let Some(system) = request.system.as_deref().filter(|text| !text.is_empty()) {
            messages.push(json!({"role": "system", "content": system}));
        }
        messages.extend(answered(&request.messages).iter().map(message));
        let mut body = Map::new();
        body.insert("model".into(), json!(self.model));
        body.insert("messages".into(), Value::Array(messages));
        body.insert("stream".into(), json!(true));
        body.insert("stream_options".into(), json!({"include_usage": true}));
        if !request.tools.is_empty() {
            let tools = request
                .tools
                .iter()
                .map(|tool| {
                    json!({
                        "type": "function",
                        "function": {
                            "name": tool.name,
                            "description": tool.description,
                            "parameters": tool.input_schema,
                        },
                    })
                })
                .collect();
            body.insert("tools".into(), Value::Array(tools));
        }
        if let Some(effort) = self.reasoning_effort.get(request.effort) {
            body.insert("reasoning_effort".into(), json!(effort));
        }
        if let Some(max) = request.max_output_tokens.or(self.max_output_tokens) {
            body.insert(self.max_tokens_field.as_str().into(), json!(max));
        }
        Value::Object(body)
    }
}

impl Model for OpenAiModel {
    fn stream(&self, request: ModelRequest) -> ModelStream {
        self.endpoint.stream(&self.body(&request))
    }
}

/// One conversation message on the wire.
fn message(message: &ChatMessage) -> Value {
    match message {
        ChatMessage::User { content } => json!({"role": "user", "content": content}),
        ChatMessage::Assistant {
            content,
            tool_calls,
            ..
        } => {
            if tool_calls.is_empty() {
                return json!({"role": "assistant", "content": content});
            }
            let calls: Vec<Value> = tool_calls
                .iter()
                .map(|call| {
                    json!({
                        "id": call.id,
                        "type": "function",
                        "function": {"name": call.name, "arguments": arguments_text(&call.arguments)},
                    })
                })
                .collect();
            // With tool calls and no text, OpenAI expects `null` content.
            let content = if content.is_empty() {
                Value::Null
            } else {
                json!(content)
            };
            json!({"role": "assistant", "content": content, "tool_calls": calls})
        }
        ChatMessage::Tool(output) => {
            // The protocol has no error flag: say so in the text.
            let content = if output.is_error {
                format!("Error: {}", output.content)
            } else {
                output.content.clone()
            };
            json!({"role": "tool", "tool_call_id": output.call_id, "content": content})
        }
    }
}

/// A call's arguments as the JSON text the protocol carries. Arguments that
/// were not valid JSON are kept as the text the model wrote (see
/// `arguments_of`) and go back as that text.
fn arguments_text(arguments: &Value) -> String {
    match arguments {
        Value::String(raw) => raw.clone(),
        other => other.to_string(),
    }
}

/// The wire protocol's error codes.
pub(crate) struct OpenAiWire;

impl Wire for OpenAiWire {
    type Decoder = Decoder;

    fn decoder(&self) -> Decoder {
        Decoder::default()
    }

    fn refine(status: Option<StatusCode>, error: &ProviderError) -> Option<Kind> {
        let client_error = status.is_none_or(|status| status.is_client_error());
        if error.mentions("insufficient_quota")
            || error.mentions("exceeded your current quota")
            || error.mentions("billing_hard_limit")
        {
            return Some(Kind::QuotaExhausted);
        }
        // OpenAI's code, llama.cpp's type, vLLM's and OpenAI's wording.
        if client_error
            && (error.mentions("context_length_exceeded")
                || error.mentions("exceed_context_size")
                || error.mentions("maximum context length")
                || error.mentions("context window"))
        {
            return Some(Kind::ContextTooLong);
        }
        if status.is_none()
            && (error.mentions("server_error")
                || error.mentions("rate_limit")
                || error.mentions("overloaded"))
        {
            return Some(Kind::Retryable);
        }
        None
    }
}

/// A tool call being assembled from its deltas.
#[derive(Debug, Default)]
struct PartialCall {
    index: u64,
    id: String,
    name: String,
    arguments: String,
}

/// Decoding one streamed completion.
#[derive(Debug, Default)]
pub(crate) struct Decoder {
    /// Calls still being assembled.
    calls: Vec<PartialCall>,
    /// Whether any call was sent on.
    had_calls: bool,
    finish_reason: Option<String>,
    usage: Option<Usage>,
    done: bool,
}

impl Decoder {
    fn chunk(&mut self, chunk: &Value, out: &mut VecDeque<ModelEvent>) -> Result<(), Fault> {
        if let Some(error) = chunk
            .get("error")
            .filter(|error| !error.is_null())
            .and_then(|_| ProviderError::from_json(chunk))
        {
            return Err(streamed_error::<OpenAiWire>(&error));
        }
        if let Some(usage) = chunk.get("usage").and_then(usage_of) {
            self.usage = Some(usage);
        }
        // `n` is 1: only the first choice is ours.
        let Some(choice) = chunk
            .get("choices")
            .and_then(Value::as_array)
            .and_then(|choices| choices.first())
        else {
            return Ok(());
        };
        if let Some(delta) = choice.get("delta") {
            if let Some(text) = delta.get("content").and_then(Value::as_str)
                && !text.is_empty()
            {
                out.push_back(ModelEvent::TextDelta(text.to_owned()));
            }
            if let Some(calls) = delta.get("tool_calls").and_then(Value::as_array) {
                for call in calls {
                    self.merge_call(call);
                }
            }
        }
        if let Some(reason) = choice.get("finish_reason").and_then(Value::as_str)
            && !reason.is_empty()
        {
            self.finish_reason = Some(reason.to_owned());
            self.send_calls(out);
        }
        Ok(())
    }

    /// Add a tool-call delta to the call it continues (by `index`; without
    /// one, by id, else the last call).
    fn merge_call(&mut self, delta: &Value) {
        let id = delta.get("id").and_then(Value::as_str).unwrap_or_default();
        let index = match delta.get("index").and_then(Value::as_u64) {
            Some(index) => index,
            None => match self.calls.last() {
                Some(last) if id.is_empty() || last.id == id => last.index,
                Some(last) => last.index + 1,
                None => 0,
            },
        };
        let position = match self.calls.iter().position(|call| call.index == index) {
            Some(position) => position,
            None => {
                self.calls.push(PartialCall {
                    index,
                    ..PartialCall::default()
                });
                self.calls.len() - 1
            }
        };
        let call = &mut self.calls[position];
        if call.id.is_empty() {
            call.id = id.to_owned();
        }
        let function = delta.get("function");
        let text = |key: &str| function.and_then(|f| f.get(key)).and_then(Value::as_str);
        if let Some(name) = text("name")
            && call.name.is_empty()
        {
            call.name = name.to_owned();
        }
        if let Some(arguments) = text("arguments") {
            call.arguments.push_str(arguments);
        }
    }

    fn send_calls(&mut self, out: &mut VecDeque<ModelEvent>) {
        let mut calls = std::mem::take(&mut self.calls);
        calls.sort_by_key(|call| call.index);
        for call in calls {
            self.had_calls = true;
            let id = if call.id.is_empty() {
                // Some servers send none; a result must name its call.
                format!("call_{}", uuid::Uuid::new_v4().simple())
            } else {
                call.id
            };
            out.push_back(ModelEvent::ToolCall(ToolCall {
                id,
                name: call.name,
                arguments: arguments_of(&call.arguments),
            }));
        }
    }

    /// The answer is whole: the calls not sent yet, the usage, the stop.
    fn finish(&mut self, out: &mut VecDeque<ModelEvent>) {
        self.send_calls(out);
        if let Some(usage) = self.usage.take() {
            out.push_back(ModelEvent::Usage(usage));
        }
        let reason = match self.finish_reason.as_deref() {
            Some("length") => StopReason::MaxTokens,
            Some("content_filter") => StopReason::Refused,
            // Ollama finishes tool calls with `stop`.
            _ if self.had_calls => StopReason::ToolUse,
            None | Some("stop") => StopReason::EndTurn,
            Some("tool_calls" | "function_call") => StopReason::ToolUse,
            Some(other) => StopReason::Other(other.to_owned()),
        };
        out.push_back(ModelEvent::Stop(reason));
        self.done = true;
    }
}

impl Decode for Decoder {
    fn event(&mut self, event: &Event, out: &mut VecDeque<ModelEvent>) -> Result<(), Fault> {
        let data = event.data.trim();
        if data == "[DONE]" {
            self.finish(out);
            return Ok(());
        }
        if data.is_empty() {
            return Ok(());
        }
        let chunk: Value = serde_json::from_str(data)
            .map_err(|error| Fault::protocol(format!("a chunk is not JSON ({error}): {data}")))?;
        self.chunk(&chunk, out)
    }

    fn is_done(&self) -> bool {
        self.done
    }

    fn end(&mut self, out: &mut VecDeque<ModelEvent>) -> Result<(), Fault> {
        if self.done {
            return Ok(());
        }
        if self.finish_reason.is_none() {
            return Err(Fault::new(
                Kind::Retryable,
                "the answer broke off before it finished",
            ));
        }
        // A finish_reason and then the end, without [DONE]: whole enough.
        self.finish(out);
        Ok(())
    }
}

/// The usage a chunk reports, if it reports any (`{}` and `null` do not).
fn usage_of(usage: &Value) -> Option<Usage> {
    let input = usage.get("prompt_tokens").and_then(Value::as_u64);
    let output = usage.get("completion_tokens").and_then(Value::as_u64);
    if input.is_none() && output.is_none() {
        return None;
    }
    Some(Usage {
        input_tokens: input.unwrap_or(0),
        output_tokens: output.unwrap_or(0),
    })
}

#[cfg(test)]
mod tests;
