//! The conformance agent's plugin: it makes tiny-harness answer the A2A
//! conformance kit's (a2a-tck) scenario messages, which name their scenario
//! by the prefix of their `messageId` (`<prefix>-<8 hex>`).
//!
//! It is an `llm.invoked` hook executor, so every scenario runs through the
//! harness's ordinary agent loop:
//!
//! - `llm.invoked.in` answers instead of the model for a scenario message:
//!   the reply text, artifacts (A2A parts, whole or in chunks), the
//!   `reject` or `message` disposition, or an `ask_participant` tool call,
//!   which parks the task in INPUT_REQUIRED (`awaiting-answer`).
//! - `llm.invoked.pre` rewrites the resubscribe scenario's message to
//!   `work for 4 seconds`, so the offline model streams progress for four
//!   seconds before it answers.
//!
//! Any other message passes to the configured model untouched.

use serde_json::{Value, json};
use tiny_harness_plugin::{Decision, Hook};

/// The resubscribe scenario's fixed id prefix.
const RESUBSCRIBE: &str = "test-resubscribe-message-id";
/// How long the resubscribe scenario's task stays WORKING.
const RESUBSCRIBE_WORK: &str = "work for 4 seconds";
/// "Hello from TCK", base64 (A2A `raw` bytes).
const FILE_BYTES: &str = "SGVsbG8gZnJvbSBUQ0s=";

struct Conformance;

impl Hook for Conformance {
    fn handle(point: &str, context: &str) -> Decision {
        let Ok(mut context) = serde_json::from_str::<Value>(context) else {
            return Decision::invalid("conformance: malformed llm.invoked context");
        };
        let Some(id) = context["message_id"].as_str().map(str::to_owned) else {
            return Decision::Pass;
        };
        match point {
            "llm.invoked.pre" if id.starts_with(RESUBSCRIBE) => {
                rewrite_last_user_message(&mut context, RESUBSCRIBE_WORK)
            }
            "llm.invoked.in" if context["response"].is_null() => match answer(&id, &context) {
                Some(response) => {
                    context["response"] = response;
                    Decision::Replace(context.to_string())
                }
                None => Decision::Pass,
            },
            _ => Decision::Pass,
        }
    }
}

tiny_harness_plugin::export_plugin!(Conformance: Hook);

/// The scenario prefixes, longest first where one starts another.
const SCENARIOS: [&str; 16] = [
    "tck-stream-artifact-chunked",
    "tck-stream-artifact-file",
    "tck-stream-artifact-text",
    "tck-stream-ordering-001",
    "tck-stream-001",
    "tck-stream-002",
    "tck-stream-003",
    "tck-artifact-file-url",
    "tck-artifact-file",
    "tck-artifact-text",
    "tck-artifact-data",
    "tck-message-response",
    "tck-input-required",
    "tck-complete-task",
    "tck-reject-task",
    RESUBSCRIBE,
];

/// The response for message `id`, or `None` to let the model answer.
fn answer(id: &str, context: &Value) -> Option<Value> {
    let scenario = SCENARIOS.iter().find(|prefix| id.starts_with(**prefix));
    let response = match scenario.copied() {
        Some("tck-complete-task") => text("Hello from TCK"),
        Some("tck-input-required") => ask(id, context),
        Some("tck-artifact-text") => text("Generated text content"),
        Some("tck-artifact-file" | "tck-stream-artifact-file") => with_artifacts(
            "File artifact",
            [whole("file-artifact", file_part("raw", FILE_BYTES))],
        ),
        Some("tck-artifact-file-url") => with_artifacts(
            "File URL artifact",
            [whole(
                "file-url-artifact",
                file_part("url", "https://example.com/output.txt"),
            )],
        ),
        Some("tck-artifact-data") => with_artifacts(
            "Data artifact",
            [whole(
                "data-artifact",
                json!({ "data": { "key": "value", "count": 42 } }),
            )],
        ),
        Some("tck-message-response") => disposed("Direct message response", "message"),
        Some("tck-reject-task") => disposed("rejected", "reject"),
        Some("tck-stream-001") => text("Stream hello from TCK"),
        Some("tck-stream-002") => text("Stream completed"),
        Some("tck-stream-003") => text("Stream task lifecycle"),
        Some("tck-stream-ordering-001") => text("Ordered output"),
        Some("tck-stream-artifact-text") => text("Streamed text content"),
        Some("tck-stream-artifact-chunked") => with_artifacts(
            "Chunked artifact",
            [
                json!({ "artifact": { "artifactId": "chunked-artifact", "name": "chunked",
                                      "parts": [ { "text": "chunk-1 " } ] } }),
                json!({ "artifact": { "artifactId": "chunked-artifact", "name": "chunked",
                                      "parts": [ { "text": "chunk-2" } ] },
                        "append": true, "last_chunk": true }),
            ],
        ),
        // The offline model works for the seconds `pre` asked for.
        Some(_) => return None,
        None if id.starts_with("tck-") => text(&format!("Unhandled messageId prefix: {id}")),
        None => return None,
    };
    Some(response)
}

fn text(text: &str) -> Value {
    json!({ "text": text, "stop": "end_turn" })
}

fn disposed(reply: &str, disposition: &str) -> Value {
    let mut response = text(reply);
    response["disposition"] = json!(disposition);
    response
}

fn with_artifacts<const N: usize>(reply: &str, pieces: [Value; N]) -> Value {
    let mut response = text(reply);
    response["artifacts"] = Value::Array(pieces.into());
    response
}

/// A whole artifact of one part.
fn whole(artifact_id: &str, part: Value) -> Value {
    json!({ "artifact": { "artifactId": artifact_id, "name": "output", "parts": [part] } })
}

/// `output.txt` as a `raw` or `url` part.
fn file_part(member: &str, value: &str) -> Value {
    let mut part = json!({ "filename": "output.txt", "mediaType": "text/plain" });
    part[member] = json!(value);
    part
}

/// Park the task in INPUT_REQUIRED: the harness's `ask_participant` tool
/// ends the turn `awaiting-answer`, and the next message answers it.
fn ask(id: &str, context: &Value) -> Value {
    let turn = context["task"]["turn_count"].as_u64().unwrap_or(0);
    json!({
        "text": "",
        "tool_calls": [ {
            "id": format!("ask-{id}-{turn}"),
            "name": "ask_participant",
            "arguments": { "question": "Input required: send tck-complete-task to finish." }
        } ],
        "stop": "tool_use"
    })
}

/// Replace the text of the request's latest user message.
fn rewrite_last_user_message(context: &mut Value, text: &str) -> Decision {
    let Some(messages) = context["request"]["messages"].as_array_mut() else {
        return Decision::invalid("conformance: llm.invoked context without request.messages");
    };
    let last_user = messages
        .iter_mut()
        .rev()
        .find(|message| message["role"] == "user");
    match last_user {
        Some(message) => {
            message["content"] = json!(text);
            Decision::Replace(context.to_string())
        }
        None => Decision::Pass,
    }
}
