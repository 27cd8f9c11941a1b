//! The OpenAI adapter against a fake server speaking Chat Completions.

use std::time::Duration;

use serde_json::{Value, json};
use tokio_stream::StreamExt as _;

use super::*;
use crate::domain::Effort;
use crate::model::fake::{Answer, FakeProvider, Piece, Reply};
use crate::model::settings::HttpSettings;
use crate::model::testing::{KEY, ask, calls, drain, http, recorder, text, tool_round};
use crate::model::{ModelError, Usage};
use crate::secret::Secret;

fn settings(fake: &FakeProvider, http: HttpSettings) -> OpenAiSettings {
    OpenAiSettings {
        base_url: reqwest::Url::parse(&format!("{}/v1", fake.url())).expect("a URL"),
        model: "gpt-test".into(),
        api_key: Some(Secret::new(KEY)),
        reasoning_effort: PerEffort {
            low: None,
            medium: Some("medium".into()),
            high: Some("high".into()),
        },
        max_tokens_field: MaxTokensField::MaxCompletionTokens,
        http,
    }
}

fn model(
    fake: &FakeProvider,
    attempts: u32,
) -> (OpenAiModel, std::sync::Arc<std::sync::Mutex<Vec<Duration>>>) {
    let (pause, waits) = recorder();
    let model = OpenAiModel::new("gpt", &settings(fake, http(attempts)), Some(512))
        .expect("a model")
        .with_pause(pause);
    (model, waits)
}

fn error_body(message: &str, kind: &str, code: &str) -> Value {
    json!({"error": {"message": message, "type": kind, "param": null, "code": code}})
}

#[tokio::test]
async fn the_request_carries_the_conversation_tools_effort_and_stream_options() {
    let fake = FakeProvider::start(|_| Answer::text(["ok"]).openai()).await;
    let (model, _) = model(&fake, 1);
    drain(model.stream(tool_round(Effort::High))).await;
    drain(model.stream(ask("hi", Effort::Low))).await;

    let requests = fake.requests();
    let first = &requests[0];
    assert_eq!(first.method, "POST");
    assert_eq!(first.path, "/v1/chat/completions");
    assert_eq!(
        first.header("authorization"),
        Some(format!("Bearer {KEY}").as_str())
    );
    assert_eq!(first.header("content-type"), Some("application/json"));
    assert_eq!(first.header("accept"), Some("text/event-stream"));
    let body = &first.body;
    assert_eq!(body["model"], "gpt-test");
    assert_eq!(body["stream"], true);
    assert_eq!(body["stream_options"], json!({"include_usage": true}));
    assert_eq!(body["reasoning_effort"], "high");
    assert_eq!(body["max_completion_tokens"], 512);
    assert_eq!(
        body["tools"],
        json!([{"type": "function", "function": {
            "name": "weather",
            "description": "The weather in a city",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
        }}])
    );
    assert_eq!(
        body["messages"],
        json!([
            {"role": "system", "content": "You are terse."},
            {"role": "user", "content": "Weather in Paris and Oslo?"},
            {"role": "assistant", "content": "Checking both.", "tool_calls": [
                {"id": "call_1", "type": "function", "function": {"name": "weather", "arguments": "{\"city\":\"Paris\"}"}},
                {"id": "call_2", "type": "function", "function": {"name": "weather", "arguments": "{\"city\":\"Oslo\"}"}},
            ]},
            {"role": "tool", "tool_call_id": "call_1", "content": "sunny"},
            {"role": "tool", "tool_call_id": "call_2", "content": "Error: no such city"},
        ])
    );
    // Low maps to no reasoning_effort at all.
    let second = &requests[1].body;
    assert!(second.get("reasoning_effort").is_none(), "{second}");
    assert_eq!(
        second["messages"][1],
        json!({"role": "user", "content": "hi"})
    );
}

#[tokio::test]
async fn local_servers_get_max_tokens_and_no_key() {
    let fake = FakeProvider::start(|_| Answer::text(["ok"]).openai()).await;
    let settings = OpenAiSettings {
        api_key: None,
        max_tokens_field: MaxTokensField::MaxTokens,
        reasoning_effort: PerEffort::default(),
        ..settings(&fake, http(1))
    };
    let model = OpenAiModel::new("local", &settings, Some(100)).expect("a model");
    let (events, error) = drain(model.stream(ask("hi", Effort::High))).await;
    assert_eq!(error, None);
    assert_eq!(text(&events), "ok");
    let request = &fake.requests()[0];
    assert_eq!(request.header("authorization"), None);
    assert_eq!(request.body["max_tokens"], 100);
    assert!(request.body.get("max_completion_tokens").is_none());
    assert!(request.body.get("reasoning_effort").is_none());
}

#[tokio::test]
async fn tool_call_arguments_split_across_deltas_are_assembled_by_index() {
    let answer = Answer::text(["Let me ", "check."])
        .call("call_a", "weather", ["{\"ci", "ty\": \"Pa", "ris\"}"])
        .call("call_b", "weather", ["{\"city\"", ": \"Os", "lo\"}"])
        .usage(42, 17);
    let fake = FakeProvider::start(move |_| answer.openai()).await;
    let (model, _) = model(&fake, 1);
    let (events, error) = drain(model.stream(ask("weather?", Effort::Medium))).await;
    assert_eq!(error, None);
    assert_eq!(text(&events), "Let me check.");
    let calls = calls(&events);
    assert_eq!(calls.len(), 2);
    assert_eq!(
        (calls[0].id.as_str(), calls[0].name.as_str()),
        ("call_a", "weather")
    );
    assert_eq!(calls[0].arguments, json!({"city": "Paris"}));
    assert_eq!(calls[1].arguments, json!({"city": "Oslo"}));
    let tail = &events[events.len() - 2..];
    assert_eq!(
        tail,
        [
            ModelEvent::Usage(Usage {
                input_tokens: 42,
                output_tokens: 17
            }),
            ModelEvent::Stop(StopReason::ToolUse)
        ]
    );
}

/// Deviations of OpenAI-compatible servers, in one answer cut into awkward
/// pieces: CRLF line ends, keep-alive comments, unknown fields, an empty
/// `finish_reason`, an empty `usage`, a chunk without choices, tool calls
/// without `index` finished with `stop` (Ollama), a split UTF-8 character.
#[tokio::test]
async fn compatible_servers_deviations_do_not_fail_the_answer() {
    let stream = concat!(
        ": keep-alive\r\n\r\n",
        "data: {\"id\":\"x\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"Gr\\u00fc\"},\"finish_reason\":\"\",\"logprobs\":null}],\"usage\":{},\"system_fingerprint\":\"fp\"}\r\n\r\n",
        "data: {\"choices\":[{\"delta\":{\"content\":\"\u{df} dich \u{1f600}\"},\"finish_reason\":null}],\"usage\":null}\r\n\r\n",
        "data: {\"object\":\"chat.completion.chunk\"}\r\n\r\n",
        "data: {\"choices\":[]}\n\n",
        "data: {\"choices\":[{\"delta\":{\"reasoning_content\":\"hmm\",\"tool_calls\":[{\"id\":\"call_x\",\"function\":{\"name\":\"weather\",\"arguments\":\"{\\\"city\\\"\"}}]}}]}\n\n",
        "data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"function\":{\"arguments\":\":\\\"Rome\\\"}\"}}]}}]}\n\n",
        "data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"id\":\"call_y\",\"function\":{\"name\":\"weather\",\"arguments\":\"{}\"}}]}}]}\n\n",
        "data: {\"choices\":[{\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n",
        "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":9,\"completion_tokens\":3,\"total_tokens\":12}}\n\n",
        "data: [DONE]\n\n",
    );
    // Cut every 7 bytes: lines, CRLFs and a multi-byte character straddle pieces.
    let bytes = stream.as_bytes();
    let pieces: Vec<Piece> = bytes
        .chunks(7)
        .map(|piece| Piece::Bytes(bytes::Bytes::copy_from_slice(piece)))
        .collect();
    let reply = Reply {
        body: pieces,
        ..Reply::sse([])
    };
    let fake = FakeProvider::start(move |_| reply.clone()).await;
    let (model, _) = model(&fake, 1);
    let (events, error) = drain(model.stream(ask("hi", Effort::Medium))).await;
    assert_eq!(error, None, "{events:?}");
    assert_eq!(text(&events), "Grüß dich \u{1f600}");
    let calls = calls(&events);
    assert_eq!(calls.len(), 2, "{events:?}");
    assert_eq!(calls[0].id, "call_x");
    assert_eq!(calls[0].arguments, json!({"city": "Rome"}));
    assert_eq!(calls[1].id, "call_y");
    assert_eq!(
        events.last(),
        Some(&ModelEvent::Stop(StopReason::ToolUse)),
        "tool calls finished with `stop` are still tool use"
    );
    assert!(events.contains(&ModelEvent::Usage(Usage {
        input_tokens: 9,
        output_tokens: 3
    })));
}

#[tokio::test]
async fn a_finish_without_done_is_whole_and_invalid_arguments_stay_text() {
    let stream = [
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"name\":\"weather\",\"arguments\":\"{city: Rome\"}}]}}]}\n\n",
        "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"tool_calls\"}]}\n\n",
    ];
    let fake = FakeProvider::start(move |_| Reply::sse(stream.map(str::to_owned))).await;
    let (model, _) = model(&fake, 1);
    let (events, error) = drain(model.stream(ask("hi", Effort::Medium))).await;
    assert_eq!(error, None);
    let calls = calls(&events);
    // No id from the server: one is made up, so a result can name it.
    assert!(calls[0].id.starts_with("call_"), "{}", calls[0].id);
    assert_eq!(calls[0].arguments, json!("{city: Rome"));
    assert_eq!(events.last(), Some(&ModelEvent::Stop(StopReason::ToolUse)));
}

#[tokio::test]
async fn a_429_with_retry_after_is_retried_after_that_wait() {
    let fake = FakeProvider::scripted().await;
    fake.script([
        Reply::json(
            429,
            &error_body(
                "Rate limit reached for requests",
                "requests",
                "rate_limit_exceeded",
            ),
        )
        .header("retry-after", "2"),
        Answer::text(["after ", "the wait"]).openai(),
    ]);
    let (model, waits) = model(&fake, 3);
    let (events, error) = drain(model.stream(ask("hi", Effort::Medium))).await;
    assert_eq!(error, None);
    assert_eq!(text(&events), "after the wait");
    assert_eq!(fake.requests().len(), 2);
    assert_eq!(*waits.lock().expect("waits"), [Duration::from_secs(2)]);
}

#[tokio::test]
async fn an_exhausted_quota_is_not_retried() {
    let fake = FakeProvider::start(|_| {
        Reply::json(
            429,
            &error_body(
                "You exceeded your current quota, please check your plan and billing details.",
                "insufficient_quota",
                "insufficient_quota",
            ),
        )
        .header("retry-after", "1")
    })
    .await;
    let (model, waits) = model(&fake, 4);
    let (events, error) = drain(model.stream(ask("hi", Effort::Medium))).await;
    assert!(events.is_empty());
    let error = error.expect("an error");
    assert!(
        matches!(error, ModelError::QuotaExhausted { .. }),
        "{error:?}"
    );
    assert!(
        error
            .to_string()
            .contains("You exceeded your current quota"),
        "{error}"
    );
    assert_eq!(fake.requests().len(), 1);
    assert!(waits.lock().expect("waits").is_empty());
}

#[tokio::test]
async fn a_persistent_500_ends_in_an_error_naming_the_provider_and_its_answer() {
    let fake = FakeProvider::start(|_| {
        Reply::json(
            500,
            &error_body("The upstream exploded", "server_error", ""),
        )
    })
    .await;
    let (model, waits) = model(&fake, 3);
    let (_, error) = drain(model.stream(ask("hi", Effort::Medium))).await;
    let error = error.expect("an error");
    assert!(error.is_retryable());
    let message = error.to_string();
    let host = fake.url().trim_start_matches("http://").to_owned();
    assert_eq!(
        message,
        format!(
            "model `gpt` (openai at {host}) is unavailable: HTTP 500 Internal Server Error: \
             The upstream exploded (server_error) (gave up after 3 attempts)"
        )
    );
    assert_eq!(fake.requests().len(), 3);
    assert_eq!(waits.lock().expect("waits").len(), 2);
}

#[tokio::test]
async fn other_client_errors_are_typed_and_never_show_the_key() {
    let cases = [
        (
            400,
            error_body(
                "This model's maximum context length is 128000 tokens.",
                "invalid_request_error",
                "context_length_exceeded",
            ),
            "context",
        ),
        (
            401,
            error_body(
                &format!("Incorrect API key provided: {KEY}."),
                "invalid_request_error",
                "invalid_api_key",
            ),
            "auth",
        ),
        (
            404,
            error_body(
                "The model `gpt-test` does not exist",
                "invalid_request_error",
                "model_not_found",
            ),
            "invalid",
        ),
        // llama.cpp's server.
        (
            400,
            json!({"error": {"code": 400, "message": "the request exceeds the available context size", "type": "exceed_context_size_error"}}),
            "context",
        ),
    ];
    for (status, body, expected) in cases {
        let fake = FakeProvider::start(move |_| Reply::json(status, &body)).await;
        let (model, _) = model(&fake, 4);
        let (_, error) = drain(model.stream(ask("hi", Effort::Medium))).await;
        let error = error.expect("an error");
        let kind = match &error {
            ModelError::ContextTooLong { .. } => "context",
            ModelError::Authentication { .. } => "auth",
            ModelError::InvalidRequest { .. } => "invalid",
            other => panic!("{status}: unexpected {other:?}"),
        };
        assert_eq!(kind, expected, "{error}");
        assert_eq!(fake.requests().len(), 1, "{status} is not retried");
        let shown = format!("{error} {error:?}");
        assert!(!shown.contains(KEY), "{shown}");
        assert!(shown.contains(&format!("HTTP {status}")), "{shown}");
    }
}

#[tokio::test]
async fn failures_before_the_first_event_are_retried_but_not_after_it() {
    let fake = FakeProvider::scripted().await;
    let partial: Vec<String> = Answer::text(["partial"])
        .openai_events()
        .into_iter()
        .take(2)
        .collect();
    fake.script([
        // An error reported in the stream, before any of the answer.
        Reply::sse(["data: {\"error\": {\"message\": \"The server had an error\", \"type\": \"server_error\"}}\n\n".to_owned()]),
        // A connection broken before any of the answer.
        Reply {
            body: vec![Piece::Break],
            ..Reply::sse([])
        },
        // Text, then the stream ends with no finish_reason.
        Reply::sse(partial),
    ]);
    let (model, waits) = model(&fake, 4);
    let (events, error) = drain(model.stream(ask("hi", Effort::Medium))).await;
    assert_eq!(text(&events), "partial");
    let error = error.expect("the answer broke off");
    assert!(error.is_retryable(), "{error:?}");
    assert!(
        error.to_string().contains("broke off before it finished"),
        "{error}"
    );
    // Retried twice (nothing had streamed), not after the text streamed.
    assert_eq!(fake.requests().len(), 3);
    assert_eq!(waits.lock().expect("waits").len(), 2);
}

#[tokio::test]
async fn json_instead_of_an_event_stream_is_a_protocol_error() {
    let fake = FakeProvider::start(|_| {
        Reply::json(
            200,
            &json!({"id": "x", "choices": [{"message": {"content": "hi"}}]}),
        )
    })
    .await;
    let (model, _) = model(&fake, 3);
    let (_, error) = drain(model.stream(ask("hi", Effort::Medium))).await;
    let error = error.expect("an error");
    assert!(matches!(error, ModelError::Protocol { .. }), "{error:?}");
    assert!(
        error.to_string().contains("instead of an event stream"),
        "{error}"
    );
}

#[tokio::test]
async fn dropping_the_stream_closes_the_connection() {
    let fake = FakeProvider::start(|_| {
        Reply::sse(Answer::text(["first"]).openai_events().into_iter().take(2)).then_hold()
    })
    .await;
    let (model, _) = model(&fake, 1);
    let mut stream = model.stream(ask("hi", Effort::Medium));
    let first = stream
        .next()
        .await
        .expect("an event")
        .expect("not an error");
    assert_eq!(first, ModelEvent::TextDelta("first".into()));
    assert_eq!(fake.dropped(), 0);
    drop(stream);
    fake.wait_for_dropped(1).await;
}

#[tokio::test]
async fn nothing_is_sent_until_the_stream_is_polled() {
    let fake = FakeProvider::start(|_| Answer::text(["ok"]).openai()).await;
    let (model, _) = model(&fake, 1);
    drop(model.stream(ask("hi", Effort::Medium)));
    let (events, _) = drain(model.stream(ask("hi", Effort::Medium))).await;
    assert_eq!(text(&events), "ok");
    assert_eq!(fake.requests().len(), 1);
}

/// The benchmarks' answer: tokens that say when the fake sent them.
#[tokio::test]
async fn stamped_tokens_say_when_they_were_sent() {
    let fake = FakeProvider::start(|_| Answer::openai_stamped(5, Duration::from_millis(2))).await;
    let (model, _) = model(&fake, 1);
    let started = fake.epoch().elapsed();
    let (events, error) = drain(model.stream(ask("hi", Effort::Medium))).await;
    assert_eq!(error, None);
    let sent: Vec<Duration> = events
        .iter()
        .filter_map(|event| match event {
            ModelEvent::TextDelta(text) => crate::model::fake::sent_at(text),
            _ => None,
        })
        .collect();
    assert_eq!(sent.len(), 5, "{events:?}");
    assert!(sent[0] >= started, "{sent:?}");
    // In order, at least the interval apart, and none in the future.
    assert!(
        sent.windows(2)
            .all(|pair| pair[1] >= pair[0] + Duration::from_millis(2)),
        "{sent:?}"
    );
    assert!(sent[4] <= fake.epoch().elapsed());
    assert_eq!(events.last(), Some(&ModelEvent::Stop(StopReason::EndTurn)));
}

/// A call a restart cut off before its result: OpenAI refuses a request
/// where it stays unanswered, so it goes with an error result.
#[tokio::test]
async fn an_unanswered_call_goes_with_an_error_result() {
    let fake = FakeProvider::start(|_| Answer::text(["ok"]).openai()).await;
    let (model, _) = model(&fake, 1);
    let mut request = tool_round(Effort::Medium);
    request.messages.truncate(3);
    request
        .messages
        .push(crate::model::testing::user("still there?"));
    let (_, error) = drain(model.stream(request)).await;
    assert_eq!(error, None);
    let messages = &fake.requests()[0].body["messages"];
    let roles: Vec<&str> = messages
        .as_array()
        .expect("messages")
        .iter()
        .filter_map(|message| message["role"].as_str())
        .collect();
    assert_eq!(
        roles,
        ["system", "user", "assistant", "tool", "tool", "user"]
    );
    assert_eq!(messages[4]["tool_call_id"], "call_2");
    assert_eq!(
        messages[4]["content"],
        format!("Error: {}", crate::model::history::NO_RESULT)
    );
}

/// A redirect would carry the key to wherever it points: not followed.
#[tokio::test]
async fn a_redirect_is_not_followed() {
    let elsewhere = FakeProvider::start(|_| Answer::text(["stolen"]).openai()).await;
    let target = format!("{}/v1/chat/completions", elsewhere.url());
    let fake = FakeProvider::start(move |_| Reply {
        status: 307,
        headers: vec![("location".into(), target.clone())],
        body: Vec::new(),
    })
    .await;
    let (model, _) = model(&fake, 3);
    let (_, error) = drain(model.stream(ask("hi", Effort::Medium))).await;
    let error = error.expect("an error");
    assert!(matches!(error, ModelError::Protocol { .. }), "{error:?}");
    assert!(error.to_string().contains("HTTP 307"), "{error}");
    assert_eq!(fake.requests().len(), 1);
    assert!(elsewhere.requests().is_empty(), "the key went elsewhere");
}
