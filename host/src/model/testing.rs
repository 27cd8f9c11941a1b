//! Helpers for the adapters' tests: requests, draining a stream, recorded
//! retry waits.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::json;
use tokio_stream::StreamExt as _;

use super::retry::{Pause, RetryPolicy};
use super::settings::HttpSettings;
use super::{
    ChatMessage, Effort, ModelError, ModelEvent, ModelRequest, ModelStream, ToolCall, ToolOutput,
    ToolSpec,
};

/// The key the tests configure; it must never show.
pub(crate) const KEY: &str = "sk-test-0123456789-secret";

/// Fast retries, waits recorded rather than slept.
pub(crate) fn http(max_attempts: u32) -> HttpSettings {
    HttpSettings {
        connect_timeout: Duration::from_secs(5),
        read_timeout: Duration::from_secs(30),
        retry: RetryPolicy {
            max_attempts,
            initial_backoff: Duration::from_millis(10),
            max_backoff: Duration::from_secs(10),
            budget: Duration::from_secs(60),
        },
        extra_roots: Default::default(),
    }
}

pub(crate) fn recorder() -> (Pause, Arc<Mutex<Vec<Duration>>>) {
    let waits = Arc::new(Mutex::new(Vec::new()));
    (Pause::Record(Arc::clone(&waits)), waits)
}

pub(crate) fn user(text: &str) -> ChatMessage {
    ChatMessage::User {
        content: text.into(),
    }
}

pub(crate) fn weather_tool() -> ToolSpec {
    ToolSpec {
        name: "weather".into(),
        description: "The weather in a city".into(),
        input_schema: json!({
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
        }),
    }
}

/// One user message, the weather tool offered.
pub(crate) fn ask(text: &str, effort: Effort) -> ModelRequest {
    ModelRequest {
        model: "m".into(),
        effort,
        system: Some("You are terse.".into()),
        messages: vec![user(text)],
        tools: vec![weather_tool()],
        max_output_tokens: None,
    }
}

/// A conversation in a tool round: the question, the assistant's two
/// calls, their results (the second an error).
pub(crate) fn tool_round(effort: Effort) -> ModelRequest {
    let call = |id: &str, city: &str| ToolCall {
        id: id.into(),
        name: "weather".into(),
        arguments: json!({"city": city}),
    };
    let output = |id: &str, content: &str, is_error: bool| {
        ChatMessage::Tool(ToolOutput {
            call_id: id.into(),
            name: "weather".into(),
            content: content.into(),
            is_error,
        })
    };
    ModelRequest {
        messages: vec![
            user("Weather in Paris and Oslo?"),
            ChatMessage::Assistant {
                content: "Checking both.".into(),
                tool_calls: vec![call("call_1", "Paris"), call("call_2", "Oslo")],
                reasoning: None,
            },
            output("call_1", "sunny", false),
            output("call_2", "no such city", true),
        ],
        ..ask("", effort)
    }
}

/// Every event of `stream`, and the error that ended it, if one did.
pub(crate) async fn drain(mut stream: ModelStream) -> (Vec<ModelEvent>, Option<ModelError>) {
    let mut events = Vec::new();
    while let Some(item) = stream.next().await {
        match item {
            Ok(event) => events.push(event),
            Err(error) => {
                assert!(stream.next().await.is_none(), "nothing may follow an error");
                return (events, Some(error));
            }
        }
    }
    (events, None)
}

/// The text the deltas add up to.
pub(crate) fn text(events: &[ModelEvent]) -> String {
    events
        .iter()
        .filter_map(|event| match event {
            ModelEvent::TextDelta(delta) => Some(delta.as_str()),
            _ => None,
        })
        .collect()
}

pub(crate) fn calls(events: &[ModelEvent]) -> Vec<&ToolCall> {
    events
        .iter()
        .filter_map(|event| match event {
            ModelEvent::ToolCall(call) => Some(call),
            _ => None,
        })
        .collect()
}
