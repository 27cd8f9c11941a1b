//! The Anthropic adapter against a fake server speaking the Messages API.

use std::time::Duration;

use serde_json::{Value, json};
use tokio_stream::StreamExt as _;

use super::*;
use crate::domain::Effort;
use crate::model::fake::{Answer, FakeProvider, Piece, Reply};
use crate::model::testing::{KEY, ask, calls, drain, http, recorder, text, tool_round};
use crate::model::{ModelError, Usage};
use crate::secret::Secret;

fn settings(fake: &FakeProvider, attempts: u32) -> AnthropicSettings {
    AnthropicSettings {
        base_url: reqwest::Url::parse(&fake.url()).expect("a URL"),
        model: "claude-test".into(),
        api_key: Secret::new(KEY),
        thinking_budget: PerEffort {
            low: None,
            medium: Some(2048),
            high: Some(6000),
        },
        http: http(attempts),
    }
}

fn model(
    fake: &FakeProvider,
    attempts: u32,
) -> (
    AnthropicModel,
    std::sync::Arc<std::sync::Mutex<Vec<Duration>>>,
) {
    let (pause, waits) = recorder();
    let model = AnthropicModel::new("claude", &settings(fake, attempts), Some(8000))
        .expect("a model")
        .with_pause(pause);
    (model, waits)
}

fn error_body(kind: &str, message: &str) -> Value {
    json!({"type": "error", "error": {"type": kind, "message": message}})
}

fn thought() -> Reasoning {
    Reasoning {
        provider: "anthropic".into(),
        blocks: vec![json!({"type": "thinking", "thinking": "Two cities.", "signature": "sig-1"})],
    }
}

#[tokio::test]
async fn the_request_has_headers_system_merged_messages_tools_and_thinking() {
    let fake = FakeProvider::start(|_| Answer::text(["ok"]).anthropic()).await;
    let (model, _) = model(&fake, 1);
    let mut round = tool_round(Effort::High);
    if let ChatMessage::Assistant { reasoning, .. } = &mut round.messages[1] {
        *reasoning = Some(thought());
    }
    drain(model.stream(round)).await;

    let request = &fake.requests()[0];
    assert_eq!(request.path, "/v1/messages");
    assert_eq!(request.header("x-api-key"), Some(KEY));
    assert_eq!(request.header("anthropic-version"), Some(ANTHROPIC_VERSION));
    assert_eq!(request.header("authorization"), None);
    let body = &request.body;
    assert_eq!(body["model"], "claude-test");
    assert_eq!(body["max_tokens"], 8000);
    assert_eq!(body["stream"], true);
    assert_eq!(body["system"], "You are terse.");
    assert_eq!(
        body["thinking"],
        json!({"type": "enabled", "budget_tokens": 6000})
    );
    assert_eq!(
        body["tools"],
        json!([{"name": "weather", "description": "The weather in a city",
            "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}])
    );
    assert_eq!(
        body["messages"],
        json!([
            {"role": "user", "content": [{"type": "text", "text": "Weather in Paris and Oslo?"}]},
            {"role": "assistant", "content": [
                {"type": "thinking", "thinking": "Two cities.", "signature": "sig-1"},
                {"type": "text", "text": "Checking both."},
                {"type": "tool_use", "id": "call_1", "name": "weather", "input": {"city": "Paris"}},
                {"type": "tool_use", "id": "call_2", "name": "weather", "input": {"city": "Oslo"}},
            ]},
            // Both results in one user message, the failed one flagged.
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "call_1", "content": "sunny"},
                {"type": "tool_result", "tool_use_id": "call_2", "content": "no such city", "is_error": true},
            ]},
        ])
    );
}

#[tokio::test]
async fn thinking_follows_the_effort_and_stays_off_where_it_cannot_apply() {
    let fake = FakeProvider::start(|_| Answer::text(["ok"]).anthropic()).await;
    let (model, _) = model(&fake, 1);
    // Medium thinks with its budget; low does not think.
    drain(model.stream(ask("hi", Effort::Medium))).await;
    drain(model.stream(ask("hi", Effort::Low))).await;
    // A tool round whose assistant message did not think cannot think now.
    drain(model.stream(tool_round(Effort::High))).await;
    // A request capping the answer below the budget: the budget shrinks.
    let capped = ModelRequest {
        max_output_tokens: Some(3000),
        ..ask("hi", Effort::High)
    };
    drain(model.stream(capped)).await;
    let too_small = ModelRequest {
        max_output_tokens: Some(1000),
        ..ask("hi", Effort::High)
    };
    drain(model.stream(too_small)).await;

    let thinking: Vec<Value> = fake
        .requests()
        .iter()
        .map(|request| request.body.get("thinking").cloned().unwrap_or(Value::Null))
        .collect();
    assert_eq!(
        thinking,
        [
            json!({"type": "enabled", "budget_tokens": 2048}),
            Value::Null,
            Value::Null,
            json!({"type": "enabled", "budget_tokens": 2999}),
            Value::Null,
        ]
    );
}

#[tokio::test]
async fn a_streamed_answer_gives_text_calls_thinking_and_usage() {
    let answer = Answer::text(["It is ", "sunny."])
        .call("toolu_1", "weather", ["{\"ci", "ty\": ", "\"Paris\"}"])
        .call("toolu_2", "weather", Vec::<String>::new())
        .thinking("Look it up.", "sig-xyz")
        .usage(120, 33);
    let fake = FakeProvider::start(move |_| answer.anthropic()).await;
    let (model, _) = model(&fake, 1);
    let (events, error) = drain(model.stream(ask("weather?", Effort::High))).await;
    assert_eq!(error, None);
    assert_eq!(text(&events), "It is sunny.");
    let calls = calls(&events);
    assert_eq!(calls.len(), 2);
    assert_eq!(calls[0].id, "toolu_1");
    assert_eq!(calls[0].arguments, json!({"city": "Paris"}));
    // No input deltas: the start's `input` ({}) is the input.
    assert_eq!(calls[1].arguments, json!({}));
    let tail = &events[events.len() - 3..];
    assert_eq!(
        tail,
        [
            ModelEvent::Reasoning(Reasoning {
                provider: "anthropic".into(),
                blocks: vec![
                    json!({"type": "thinking", "thinking": "Look it up.", "signature": "sig-xyz"})
                ],
            }),
            ModelEvent::Usage(Usage {
                input_tokens: 120,
                output_tokens: 33
            }),
            ModelEvent::Stop(StopReason::ToolUse),
        ]
    );
}

#[tokio::test]
async fn unknown_events_blocks_and_deltas_are_skipped_and_crlf_is_read() {
    let stream = concat!(
        "event: message_start\r\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":5,\"cache_read_input_tokens\":100,\"output_tokens\":1},\"future_field\":1}}\r\n\r\n",
        ": a comment\r\n\r\n",
        "event: ping\r\ndata: {\"type\": \"ping\"}\r\n\r\n",
        "event: brand_new_event\r\ndata: {\"type\":\"brand_new_event\"}\r\n\r\n",
        "event: content_block_start\r\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"server_tool_use\",\"id\":\"s\"}}\r\n\r\n",
        "event: content_block_delta\r\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"mystery_delta\",\"x\":1}}\r\n\r\n",
        "event: content_block_stop\r\ndata: {\"type\":\"content_block_stop\",\"index\":0}\r\n\r\n",
        "event: content_block_start\r\ndata: {\"type\":\"content_block_start\",\"index\":1,\"content_block\":{\"type\":\"text\",\"text\":\"Hel\"}}\r\n\r\n",
        "event: content_block_delta\r\ndata: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"citations_delta\",\"citation\":{}}}\r\n\r\n",
        "event: content_block_delta\r\ndata: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"text_delta\",\"text\":\"lo\"}}\r\n\r\n",
        // Without `type` in the data: the event's name says it.
        "event: message_delta\r\ndata: {\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":7}}\r\n\r\n",
        // The stream ends without message_stop.
    );
    let bytes = stream.as_bytes();
    let reply = Reply {
        body: bytes
            .chunks(11)
            .map(|piece| Piece::Bytes(bytes::Bytes::copy_from_slice(piece)))
            .collect(),
        ..Reply::sse([])
    };
    let fake = FakeProvider::start(move |_| reply.clone()).await;
    let (model, _) = model(&fake, 1);
    let (events, error) = drain(model.stream(ask("hi", Effort::Low))).await;
    assert_eq!(error, None, "{events:?}");
    assert_eq!(
        events,
        [
            ModelEvent::TextDelta("Hel".into()),
            ModelEvent::TextDelta("lo".into()),
            ModelEvent::Usage(Usage {
                input_tokens: 105,
                output_tokens: 7
            }),
            ModelEvent::Stop(StopReason::EndTurn),
        ]
    );
}

#[tokio::test]
async fn an_overloaded_error_event_before_any_text_is_retried() {
    let fake = FakeProvider::scripted().await;
    fake.script([
        Reply::sse([
            Answer::text(["x"]).anthropic_events()[0].clone(),
            "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n".to_owned(),
        ]),
        Reply::json(529, &error_body("overloaded_error", "Overloaded")).header("retry-after", "3"),
        Answer::text(["fine now"]).anthropic(),
    ]);
    let (model, waits) = model(&fake, 4);
    let (events, error) = drain(model.stream(ask("hi", Effort::Low))).await;
    assert_eq!(error, None);
    assert_eq!(text(&events), "fine now");
    assert_eq!(fake.requests().len(), 3);
    let waits = waits.lock().expect("waits").clone();
    assert_eq!(waits.len(), 2);
    assert_eq!(waits[1], Duration::from_secs(3));
}

#[tokio::test]
async fn billing_and_prompt_length_errors_are_typed_and_not_retried() {
    let cases = [
        (
            400,
            error_body(
                "invalid_request_error",
                "Your credit balance is too low to access the Anthropic API. Please go to Plans & Billing to upgrade or purchase credits.",
            ),
            "quota",
        ),
        (
            402,
            error_body("billing_error", "Payment required"),
            "quota",
        ),
        (
            400,
            error_body(
                "invalid_request_error",
                "prompt is too long: 210034 tokens > 200000 maximum",
            ),
            "context",
        ),
        (
            401,
            error_body("authentication_error", &format!("invalid x-api-key {KEY}")),
            "auth",
        ),
        (403, error_body("permission_error", "not allowed"), "auth"),
    ];
    for (status, body, expected) in cases {
        let fake = FakeProvider::start(move |_| Reply::json(status, &body)).await;
        let (model, _) = model(&fake, 4);
        let (_, error) = drain(model.stream(ask("hi", Effort::Low))).await;
        let error = error.expect("an error");
        let kind = match &error {
            ModelError::QuotaExhausted { .. } => "quota",
            ModelError::ContextTooLong { .. } => "context",
            ModelError::Authentication { .. } => "auth",
            other => panic!("{status}: unexpected {other:?}"),
        };
        assert_eq!(kind, expected, "{error}");
        assert_eq!(fake.requests().len(), 1, "{status} is not retried");
        assert!(!format!("{error} {error:?}").contains(KEY), "{error}");
    }
}

#[tokio::test]
async fn dropping_the_stream_closes_the_connection() {
    let fake = FakeProvider::start(|_| {
        let events = Answer::text(["first"]).anthropic_events();
        // message_start, ping, block start, the first delta; then hold.
        Reply::sse(events.into_iter().take(4)).then_hold()
    })
    .await;
    let (model, _) = model(&fake, 1);
    let mut stream = model.stream(ask("hi", Effort::Low));
    let first = stream
        .next()
        .await
        .expect("an event")
        .expect("not an error");
    assert_eq!(first, ModelEvent::TextDelta("first".into()));
    drop(stream);
    fake.wait_for_dropped(1).await;
}

#[tokio::test]
async fn an_answer_cut_before_its_stop_fails_as_retryable() {
    let fake = FakeProvider::scripted().await;
    let events = Answer::text(["half"]).anthropic_events();
    fake.script([Reply::sse(events.into_iter().take(4))]);
    let (model, _) = model(&fake, 3);
    let (got, error) = drain(model.stream(ask("hi", Effort::Low))).await;
    assert_eq!(text(&got), "half");
    let error = error.expect("cut");
    assert!(error.is_retryable(), "{error:?}");
    assert_eq!(
        fake.requests().len(),
        1,
        "not restarted after text streamed"
    );
}
