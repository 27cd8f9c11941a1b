//! Fuzz targets. Plain `cargo test` replays the committed corpus in
//! `tests/fuzz/corpus/<target>/`, each entry also cut, flipped and repeated
//! a fixed number of ways (a deterministic mutation pass); `cargo fuzz`
//! runs the same targets under libFuzzer, coverage-guided (`tests/fuzz`,
//! `tests/fuzz/run.sh`). A target may refuse its input; it must never
//! panic, hang or allocate without bound.
//!
//! Targets: the JSON-RPC request parser (and every method's parameters),
//! the HTTP+JSON bodies and query strings, the message classifier (`/name
//! args`, control and task envelopes), the plugin manifests (`plugin.json`,
//! `commands.json`, `hooks.json`), and the providers' stream decoders
//! (OpenAI chat completions and Anthropic messages, over SSE).

use std::sync::Arc;

use std::task::{Context, Waker};

use bytes::Bytes;
use serde_json::{Map, Value};

use crate::a2a::jsonrpc;
use crate::a2a::types::{
    self, CancelTaskRequest, GetTaskRequest, ListTasksRequest, Message, SendMessageRequest,
    SubscribeToTaskRequest,
};
use crate::commands::CommandRegistry;
use crate::model::anthropic::AnthropicWire;
use crate::model::http::{Decode, MAX_ANSWER_BYTES, Wire as _, decode_answer};
use crate::model::openai::OpenAiWire;
use crate::plugins::manifest::{PluginManifest, parse_commands, parse_hooks};

/// A fuzz target: refuses or accepts `input`, never panics.
pub type Target = fn(&[u8]);

/// Every target, by the name its corpus folder and `cargo fuzz` binary have.
pub const TARGETS: [(&str, Target); 6] = [
    ("jsonrpc", jsonrpc_request),
    ("http_json", http_json),
    ("classifier", classifier),
    ("plugin_manifest", plugin_manifest),
    ("declarations", declarations),
    ("provider_stream", provider_stream),
];

pub fn jsonrpc_request(input: &[u8]) {
    let Ok(request) = jsonrpc::parse_request(input) else {
        return;
    };
    // Every method's parameters, whatever the method named.
    let _ = request.params::<SendMessageRequest>().map(|r| r.validate());
    let _ = request.params::<GetTaskRequest>().map(|r| r.validate());
    let _ = request.params::<ListTasksRequest>().map(|r| r.validate());
    let _ = request.params::<CancelTaskRequest>().map(|r| r.validate());
    let _ = request
        .params::<SubscribeToTaskRequest>()
        .map(|r| r.validate());
}

pub fn http_json(input: &[u8]) {
    let text = String::from_utf8_lossy(input);
    // A body, as the routes decode it.
    if let Ok(body) = serde_json::from_slice::<Value>(input) {
        let _ = types::decode::<SendMessageRequest>(&body).map(|r| r.validate());
        let _ = types::decode::<CancelTaskRequest>(&body).map(|r| r.validate());
    }
    // A query string, as `GET /tasks` and `GET /tasks/{id}` decode it.
    let query: Map<String, Value> = text
        .split('&')
        .filter_map(|pair| pair.split_once('='))
        .map(|(name, value)| (name.to_owned(), Value::String(value.to_owned())))
        .collect();
    let query = Value::Object(query);
    let _ = types::decode::<ListTasksRequest>(&query).map(|r| r.validate());
    let _ = types::decode::<GetTaskRequest>(&query).map(|r| r.validate());
}

pub fn classifier(input: &[u8]) {
    static REGISTRY: std::sync::OnceLock<Arc<CommandRegistry>> = std::sync::OnceLock::new();
    let registry = REGISTRY.get_or_init(|| Arc::new(CommandRegistry::builder().freeze().0));
    let Ok(message) = serde_json::from_slice::<Message>(input) else {
        return;
    };
    let _ = message.validate_from_client("message");
    let _ = crate::task::classify::classify(&message, registry);
    let _ = crate::task::classify::command_text(&message);
}

pub fn plugin_manifest(input: &[u8]) {
    let _ = PluginManifest::parse(&String::from_utf8_lossy(input));
}

pub fn declarations(input: &[u8]) {
    let text = String::from_utf8_lossy(input);
    let _ = parse_commands(&text);
    let _ = parse_hooks(&text);
}

/// A provider's streamed answer: the first byte picks the protocol (even:
/// OpenAI, odd: Anthropic) and the size of the chunks the body arrives in,
/// as a network would cut it; the rest is the SSE body.
pub fn provider_stream(input: &[u8]) {
    let Some((&selector, body)) = input.split_first() else {
        return;
    };
    let chunk = usize::from(selector >> 1).max(1);
    if selector % 2 == 0 {
        decode_stream(OpenAiWire.decoder(), body, chunk);
    } else {
        decode_stream(AnthropicWire.decoder(), body, chunk);
    }
}

/// Decode `body` as an answer is read (`model::http`), at most the bytes
/// an answer may have.
fn decode_stream(decoder: impl Decode, body: &[u8], chunk: usize) {
    let body = &body[..body.len().min(MAX_ANSWER_BYTES)];
    let chunks: Vec<_> = body
        .chunks(chunk)
        .map(|piece| Ok(Bytes::copy_from_slice(piece)))
        .collect();
    let answer = decode_answer(Box::pin(futures_util::stream::iter(chunks)), decoder);
    // An iterator's stream is always ready: one poll reads it all.
    let mut context = Context::from_waker(Waker::noop());
    let read = std::pin::pin!(answer).poll(&mut context);
    assert!(read.is_ready(), "an answer from memory never waits");
}

#[cfg(test)]
mod tests {
    use std::path::{Path, PathBuf};

    use super::TARGETS;

    fn corpus_dir(target: &str) -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../tests/fuzz/corpus")
            .join(target)
    }

    /// `input` and what a fixed set of mutations makes of it: cut at many
    /// points, bytes flipped to others (structural ones included), and the
    /// whole repeated (amplification).
    fn mutations(input: &[u8]) -> Vec<Vec<u8>> {
        const SPECIAL: &[u8] = b"{}[]\",:\\0-e.\xff\x00";
        let mut out = vec![input.to_vec()];
        let len = input.len();
        let step = (len / 64).max(1);
        for cut in (0..len).step_by(step) {
            out.push(input[..cut].to_vec());
        }
        // xorshift: the same mutations on every run.
        let mut state = 0x9e37_79b9_7f4a_7c15_u64 ^ len as u64;
        let mut next = || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        for _ in 0..64.min(len * 4) {
            let mut flipped = input.to_vec();
            let at = (next() % len as u64) as usize;
            flipped[at] = SPECIAL[(next() % SPECIAL.len() as u64) as usize];
            out.push(flipped);
        }
        out.push(input.repeat(8));
        out
    }

    #[test]
    fn the_corpus_and_its_mutations_never_panic() {
        let mut replayed = 0;
        for (name, target) in TARGETS {
            let dir = corpus_dir(name);
            let mut entries: Vec<PathBuf> = std::fs::read_dir(&dir)
                .unwrap_or_else(|error| panic!("{}: {error}", dir.display()))
                .map(|entry| entry.expect("a corpus entry").path())
                .collect();
            entries.sort();
            assert!(!entries.is_empty(), "{} has no corpus", dir.display());
            for path in entries {
                let input = std::fs::read(&path).expect("a readable corpus entry");
                for (n, mutated) in mutations(&input).iter().enumerate() {
                    let outcome = std::panic::catch_unwind(|| target(mutated));
                    assert!(
                        outcome.is_ok(),
                        "{name} panicked on mutation {n} of {}: {:?}",
                        path.display(),
                        String::from_utf8_lossy(mutated)
                    );
                    replayed += 1;
                }
            }
        }
        assert!(replayed > 100, "only {replayed} inputs replayed");
    }

    #[test]
    fn deep_nesting_is_refused_not_a_stack_overflow() {
        let deep = "[".repeat(100_000);
        for (_, target) in TARGETS {
            target(deep.as_bytes());
        }
        let deep_object = format!("{}1{}", "{\"a\":".repeat(50_000), "}".repeat(50_000));
        for (_, target) in TARGETS {
            target(deep_object.as_bytes());
        }
    }
}
