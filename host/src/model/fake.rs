//! A fake model provider, for tests and benchmarks: a local HTTP server that
//! speaks OpenAI's or Anthropic's streaming wire protocol, records every
//! request it gets, and answers from a script (then from a responder).
//!
//! It is deliberately dumb: answers are bytes the test chose ([`Reply`]),
//! written with [`Answer`] in either protocol or by hand for the deviations
//! a real server makes. What a test can observe: the requests (headers and
//! JSON body, [`FakeProvider::requests`]) and the answers whose client went
//! away before the answer was over ([`FakeProvider::wait_for_dropped`]).
//! Never used by the harness itself.

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::body::Body;
use axum::extract::Request;
use axum::response::Response;
use bytes::Bytes;
use serde_json::{Value, json};
use tokio::sync::watch;

use super::RetryPolicy;
use super::settings::{
    AnthropicSettings, HttpSettings, MaxTokensField, ModelSettings, OpenAiSettings, PerEffort,
    ProviderSettings,
};
use crate::secret::Secret;

/// How long [`FakeProvider`]'s waits wait before failing the test.
const WAIT_LIMIT: Duration = Duration::from_secs(30);

/// The keep-alive a [`Piece::Hold`] sends, and how often.
const HOLD_PING: &str = ": keep-alive\n\n";
const HOLD_INTERVAL: Duration = Duration::from_millis(20);

/// A request the fake received.
#[derive(Clone, Debug)]
pub struct Recorded {
    pub method: String,
    /// The path and query: `/v1/chat/completions`.
    pub path: String,
    /// Header names in lower case, with their values.
    pub headers: Vec<(String, String)>,
    /// The body as JSON (`Null` if it was not JSON).
    pub body: Value,
    /// When it arrived.
    pub at: Instant,
}

impl Recorded {
    pub fn header(&self, name: &str) -> Option<&str> {
        let name = name.to_ascii_lowercase();
        self.headers
            .iter()
            .find(|(key, _)| *key == name)
            .map(|(_, value)| value.as_str())
    }

    /// The text of the last user message (OpenAI's string content, or
    /// Anthropic's text blocks).
    pub fn last_user_text(&self) -> String {
        let messages = self.body["messages"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        let Some(last) = messages.iter().rev().find(|m| m["role"] == "user") else {
            return String::new();
        };
        match &last["content"] {
            Value::String(text) => text.clone(),
            Value::Array(blocks) => blocks
                .iter()
                .filter_map(|block| block["text"].as_str())
                .collect::<Vec<_>>()
                .join(""),
            _ => String::new(),
        }
    }
}

/// One part of an answer's body.
#[derive(Clone, Debug)]
pub enum Piece {
    /// These bytes.
    Bytes(Bytes),
    /// Nothing for this long.
    Pause(Duration),
    /// Keep-alive comments every 20 ms until the client goes away: a slow
    /// answer that never ends.
    Hold,
    /// Fail the body here: the connection is broken off (bytes sent just
    /// before may not reach the client).
    Break,
    /// An OpenAI text delta `t<µs> `, the microseconds since the fake
    /// started when it was sent ([`sent_at`] reads it back): for measuring
    /// the delay from a provider's token to whoever receives it.
    StampedOpenAiToken,
}

/// When a [`Piece::StampedOpenAiToken`] was sent, after the fake's
/// [`FakeProvider::epoch`], read from the text it carried (other text: `None`).
pub fn sent_at(token: &str) -> Option<Duration> {
    let micros = token.trim().strip_prefix('t')?.parse().ok()?;
    Some(Duration::from_micros(micros))
}

/// What the fake answers one request with.
#[derive(Clone, Debug)]
pub struct Reply {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<Piece>,
}

impl Reply {
    /// A 200 event stream of `events`, each already framed (`data: ...\n\n`).
    pub fn sse(events: impl IntoIterator<Item = String>) -> Self {
        Reply {
            status: 200,
            headers: vec![("content-type".into(), "text/event-stream".into())],
            body: events
                .into_iter()
                .map(|event| Piece::Bytes(Bytes::from(event)))
                .collect(),
        }
    }

    /// A JSON answer (an error, usually).
    pub fn json(status: u16, body: &Value) -> Self {
        Reply {
            status,
            headers: vec![("content-type".into(), "application/json".into())],
            body: vec![Piece::Bytes(Bytes::from(body.to_string()))],
        }
    }

    pub fn header(mut self, name: &str, value: &str) -> Self {
        self.headers
            .push((name.to_ascii_lowercase(), value.to_owned()));
        self
    }

    /// The same answer, then held open until the client goes away.
    pub fn then_hold(mut self) -> Self {
        self.body.push(Piece::Hold);
        self
    }
}

/// Decides the answer to a request the script does not cover.
pub type Responder = Arc<dyn Fn(&Recorded) -> Reply + Send + Sync>;

struct Shared {
    requests: Mutex<Vec<Recorded>>,
    script: Mutex<VecDeque<Reply>>,
    responder: Responder,
    /// Answers whose client went away before they were over.
    dropped: Mutex<usize>,
    /// Bumped on every request and every dropped answer.
    changed: watch::Sender<u64>,
    /// When the fake started: what stamped tokens count from.
    epoch: Instant,
}

impl Shared {
    fn bump(&self) {
        self.changed.send_modify(|generation| *generation += 1);
    }
}

/// A running fake provider; it stops when dropped.
pub struct FakeProvider {
    addr: SocketAddr,
    shared: Arc<Shared>,
    server: tokio::task::JoinHandle<()>,
}

impl FakeProvider {
    /// Serve on a free loopback port, answering with `responder` whatever
    /// the script does not.
    pub async fn start(responder: impl Fn(&Recorded) -> Reply + Send + Sync + 'static) -> Self {
        let (changed, _) = watch::channel(0);
        let shared = Arc::new(Shared {
            requests: Mutex::new(Vec::new()),
            script: Mutex::new(VecDeque::new()),
            responder: Arc::new(responder),
            dropped: Mutex::new(0),
            changed,
            epoch: Instant::now(),
        });
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0))
            .await
            .expect("a loopback port for the fake provider");
        let addr = listener.local_addr().expect("its address");
        let state = Arc::clone(&shared);
        let router = axum::Router::new().fallback(move |request: Request| {
            let state = Arc::clone(&state);
            async move { answer(state, request).await }
        });
        // Without TCP_NODELAY, small writes wait on the client's delayed
        // ACK (tens of milliseconds), which no real provider's answer does.
        let listener = axum::serve::ListenerExt::tap_io(listener, |tcp| {
            let _ = tcp.set_nodelay(true);
        });
        let server = tokio::spawn(async move {
            let _ = axum::serve(listener, router).await;
        });
        FakeProvider {
            addr,
            shared,
            server,
        }
    }

    /// A fake that answers every request with an error naming it, until
    /// something is scripted.
    pub async fn scripted() -> Self {
        Self::start(|request| {
            Reply::json(
                500,
                &json!({"error": {"message": format!("nothing scripted for {}", request.path)}}),
            )
        })
        .await
    }

    /// `http://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// When the fake started; [`sent_at`] durations are after it.
    pub fn epoch(&self) -> Instant {
        self.shared.epoch
    }

    /// Settings for a model `name` served by this fake over OpenAI's
    /// protocol (key `fake-key`, no retries): for building
    /// [`Models`](super::Models) in tests and benchmarks.
    pub fn openai_model(&self, name: &str) -> ModelSettings {
        ModelSettings {
            name: name.to_owned(),
            provider: ProviderSettings::OpenAi(OpenAiSettings {
                base_url: self.base_url("/v1"),
                model: format!("{name}-fake"),
                api_key: Some(Secret::new("fake-key")),
                reasoning_effort: PerEffort::default(),
                max_tokens_field: MaxTokensField::default(),
                http: no_retries(),
            }),
            context_window: 128_000,
            max_output_tokens: None,
        }
    }

    /// Settings for a model `name` served by this fake over Anthropic's
    /// protocol.
    pub fn anthropic_model(&self, name: &str) -> ModelSettings {
        ModelSettings {
            name: name.to_owned(),
            provider: ProviderSettings::Anthropic(AnthropicSettings {
                base_url: self.base_url(""),
                model: format!("{name}-fake"),
                api_key: Secret::new("fake-key"),
                thinking_budget: PerEffort::default(),
                http: no_retries(),
            }),
            context_window: 200_000,
            max_output_tokens: Some(4096),
        }
    }

    fn base_url(&self, path: &str) -> reqwest::Url {
        reqwest::Url::parse(&format!("{}{path}", self.url())).expect("a loopback URL")
    }

    /// Answer the next requests with `replies`, in order, before the
    /// responder.
    pub fn script(&self, replies: impl IntoIterator<Item = Reply>) {
        lock(&self.shared.script).extend(replies);
    }

    /// Every request so far, oldest first.
    pub fn requests(&self) -> Vec<Recorded> {
        lock(&self.shared.requests).clone()
    }

    /// Answers cut by their client so far.
    pub fn dropped(&self) -> usize {
        *lock(&self.shared.dropped)
    }

    /// Wait until at least `count` requests have arrived; panics after 30 s.
    pub async fn wait_for_requests(&self, count: usize) -> Vec<Recorded> {
        self.wait(|| self.requests().len() >= count, "requests")
            .await;
        self.requests()
    }

    /// Wait until at least `count` answers were cut by their client going
    /// away (its connection closed); panics after 30 s.
    pub async fn wait_for_dropped(&self, count: usize) {
        self.wait(|| self.dropped() >= count, "dropped answers")
            .await;
    }

    async fn wait(&self, done: impl Fn() -> bool, what: &str) {
        let mut changed = self.shared.changed.subscribe();
        let waited = tokio::time::timeout(WAIT_LIMIT, async {
            while !done() {
                if changed.changed().await.is_err() {
                    return;
                }
            }
        })
        .await;
        assert!(
            waited.is_ok() && done(),
            "the fake provider waited {WAIT_LIMIT:?} for {what}; requests: {}, dropped: {}",
            self.requests().len(),
            self.dropped()
        );
    }
}

impl Drop for FakeProvider {
    fn drop(&mut self) {
        self.server.abort();
    }
}

fn no_retries() -> HttpSettings {
    HttpSettings {
        retry: RetryPolicy {
            max_attempts: 1,
            ..RetryPolicy::default()
        },
        ..HttpSettings::default()
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

async fn answer(shared: Arc<Shared>, request: Request) -> Response {
    let (parts, body) = request.into_parts();
    let bytes = axum::body::to_bytes(body, 64 * 1024 * 1024)
        .await
        .unwrap_or_default();
    let recorded = Recorded {
        method: parts.method.to_string(),
        path: parts
            .uri
            .path_and_query()
            .map_or_else(|| parts.uri.path().to_owned(), |p| p.as_str().to_owned()),
        headers: parts
            .headers
            .iter()
            .map(|(name, value)| {
                (
                    name.as_str().to_owned(),
                    String::from_utf8_lossy(value.as_bytes()).into_owned(),
                )
            })
            .collect(),
        body: serde_json::from_slice(&bytes).unwrap_or(Value::Null),
        at: Instant::now(),
    };
    let scripted = lock(&shared.script).pop_front();
    let reply = scripted.unwrap_or_else(|| (shared.responder)(&recorded));
    lock(&shared.requests).push(recorded);
    shared.bump();

    let mut response = Response::builder().status(reply.status);
    for (name, value) in &reply.headers {
        response = response.header(name, value);
    }
    let body = Body::from_stream(body_stream(reply.body, Arc::clone(&shared)));
    response
        .body(body)
        .unwrap_or_else(|_| Response::new(Body::from("the fake's reply is not a valid response")))
}

/// Counts the answer as dropped unless it was sent to its end.
struct Sending {
    shared: Arc<Shared>,
    over: bool,
}

impl Sending {
    fn finished(&mut self) {
        self.over = true;
    }
}

impl Drop for Sending {
    fn drop(&mut self) {
        if !self.over {
            *lock(&self.shared.dropped) += 1;
            self.shared.bump();
        }
    }
}

fn body_stream(
    pieces: Vec<Piece>,
    shared: Arc<Shared>,
) -> impl futures_core::Stream<Item = Result<Bytes, std::io::Error>> + Send {
    let sending = Sending {
        shared,
        over: false,
    };
    futures_util::stream::unfold(
        (VecDeque::from(pieces), sending),
        |(mut pieces, mut sending)| async move {
            loop {
                match pieces.front() {
                    None => {
                        sending.finished();
                        return None;
                    }
                    Some(Piece::Bytes(_)) => {
                        let Some(Piece::Bytes(bytes)) = pieces.pop_front() else {
                            unreachable!("just looked");
                        };
                        return Some((Ok(bytes), (pieces, sending)));
                    }
                    Some(Piece::Pause(wait)) => {
                        tokio::time::sleep(*wait).await;
                        pieces.pop_front();
                    }
                    Some(Piece::Break) => {
                        // Counted as sent: the fake chose to end it.
                        sending.finished();
                        let error = std::io::Error::other("the fake breaks the connection");
                        return Some((Err(error), (VecDeque::new(), sending)));
                    }
                    Some(Piece::StampedOpenAiToken) => {
                        pieces.pop_front();
                        let micros = sending.shared.epoch.elapsed().as_micros();
                        let chunk = json!({"choices": [{"index": 0,
                            "delta": {"content": format!("t{micros} ")}, "finish_reason": null}]});
                        let bytes = Bytes::from(format!("data: {chunk}\n\n"));
                        return Some((Ok(bytes), (pieces, sending)));
                    }
                    Some(Piece::Hold) => {
                        tokio::time::sleep(HOLD_INTERVAL).await;
                        return Some((
                            Ok(Bytes::from_static(HOLD_PING.as_bytes())),
                            (pieces, sending),
                        ));
                    }
                }
            }
        },
    )
}

/// A model's answer, to be written in either protocol: text in pieces,
/// tool calls whose arguments arrive in pieces, usage.
#[derive(Clone, Debug, Default)]
pub struct Answer {
    pub text: Vec<String>,
    pub calls: Vec<AnswerCall>,
    pub input_tokens: u64,
    pub output_tokens: u64,
    /// Anthropic only: a thinking block (its text, its signature) first.
    pub thinking: Option<(String, String)>,
}

/// A tool call of an [`Answer`].
#[derive(Clone, Debug)]
pub struct AnswerCall {
    pub id: String,
    pub name: String,
    /// The arguments' JSON text, in the pieces it is streamed in.
    pub arguments: Vec<String>,
}

impl Answer {
    /// Text streamed in `pieces`.
    pub fn text<S: Into<String>>(pieces: impl IntoIterator<Item = S>) -> Self {
        Answer {
            text: pieces.into_iter().map(Into::into).collect(),
            input_tokens: 10,
            output_tokens: 5,
            ..Answer::default()
        }
    }

    /// `count` text deltas of one token each (`tok `), as a provider that
    /// answers at once: the benchmarks' provider.
    pub fn tokens(count: usize) -> Self {
        Answer {
            output_tokens: count as u64,
            ..Answer::text(std::iter::repeat_n("tok ", count))
        }
    }

    /// Add a tool call whose JSON arguments are streamed in `pieces`.
    pub fn call<S: Into<String>>(
        mut self,
        id: &str,
        name: &str,
        pieces: impl IntoIterator<Item = S>,
    ) -> Self {
        self.calls.push(AnswerCall {
            id: id.to_owned(),
            name: name.to_owned(),
            arguments: pieces.into_iter().map(Into::into).collect(),
        });
        self
    }

    pub fn usage(mut self, input_tokens: u64, output_tokens: u64) -> Self {
        self.input_tokens = input_tokens;
        self.output_tokens = output_tokens;
        self
    }

    pub fn thinking(mut self, text: &str, signature: &str) -> Self {
        self.thinking = Some((text.to_owned(), signature.to_owned()));
        self
    }

    /// The answer as OpenAI Chat Completions chunks, `[DONE]` last.
    pub fn openai_events(&self) -> Vec<String> {
        let chunk = |choices: Value| {
            let chunk = json!({
                "id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": 0,
                "model": "fake", "choices": choices,
            });
            format!("data: {chunk}\n\n")
        };
        let delta = |delta: Value, finish: Value| {
            chunk(json!([{"index": 0, "delta": delta, "finish_reason": finish}]))
        };
        let mut events = vec![delta(
            json!({"role": "assistant", "content": ""}),
            Value::Null,
        )];
        events.extend(
            self.text
                .iter()
                .map(|piece| delta(json!({"content": piece}), Value::Null)),
        );
        for (index, call) in self.calls.iter().enumerate() {
            events.push(delta(
                json!({"tool_calls": [{"index": index, "id": call.id, "type": "function",
                    "function": {"name": call.name, "arguments": ""}}]}),
                Value::Null,
            ));
            events.extend(call.arguments.iter().map(|piece| {
                delta(
                    json!({"tool_calls": [{"index": index, "function": {"arguments": piece}}]}),
                    Value::Null,
                )
            }));
        }
        let finish = if self.calls.is_empty() {
            "stop"
        } else {
            "tool_calls"
        };
        events.push(delta(json!({}), json!(finish)));
        let usage = json!({
            "id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": 0,
            "model": "fake", "choices": [],
            "usage": {"prompt_tokens": self.input_tokens, "completion_tokens": self.output_tokens,
                "total_tokens": self.input_tokens + self.output_tokens},
        });
        events.push(format!("data: {usage}\n\n"));
        events.push("data: [DONE]\n\n".to_owned());
        events
    }

    /// The answer as Anthropic Messages events, `message_stop` last.
    pub fn anthropic_events(&self) -> Vec<String> {
        let event = |data: Value| {
            let name = data["type"].as_str().unwrap_or("message").to_owned();
            format!("event: {name}\ndata: {data}\n\n")
        };
        let mut events = vec![
            event(json!({"type": "message_start", "message": {
                "id": "msg_fake", "type": "message", "role": "assistant", "model": "fake",
                "content": [], "stop_reason": null, "stop_sequence": null,
                "usage": {"input_tokens": self.input_tokens, "output_tokens": 1}}})),
            event(json!({"type": "ping"})),
        ];
        let mut index = 0;
        if let Some((thinking, signature)) = &self.thinking {
            events.push(event(json!({"type": "content_block_start", "index": index,
                "content_block": {"type": "thinking", "thinking": ""}})));
            events.push(event(json!({"type": "content_block_delta", "index": index,
                "delta": {"type": "thinking_delta", "thinking": thinking}})));
            events.push(event(json!({"type": "content_block_delta", "index": index,
                "delta": {"type": "signature_delta", "signature": signature}})));
            events.push(event(json!({"type": "content_block_stop", "index": index})));
            index += 1;
        }
        if !self.text.is_empty() {
            events.push(event(json!({"type": "content_block_start", "index": index,
                "content_block": {"type": "text", "text": ""}})));
            events.extend(self.text.iter().map(|piece| {
                event(json!({"type": "content_block_delta", "index": index,
                    "delta": {"type": "text_delta", "text": piece}}))
            }));
            events.push(event(json!({"type": "content_block_stop", "index": index})));
            index += 1;
        }
        for call in &self.calls {
            events.push(event(json!({"type": "content_block_start", "index": index,
                "content_block": {"type": "tool_use", "id": call.id, "name": call.name, "input": {}}})));
            events.extend(call.arguments.iter().map(|piece| {
                event(json!({"type": "content_block_delta", "index": index,
                    "delta": {"type": "input_json_delta", "partial_json": piece}}))
            }));
            events.push(event(json!({"type": "content_block_stop", "index": index})));
            index += 1;
        }
        let stop = if self.calls.is_empty() {
            "end_turn"
        } else {
            "tool_use"
        };
        events.push(event(json!({"type": "message_delta",
            "delta": {"stop_reason": stop, "stop_sequence": null},
            "usage": {"output_tokens": self.output_tokens}})));
        events.push(event(json!({"type": "message_stop"})));
        events
    }

    pub fn openai(&self) -> Reply {
        Reply::sse(self.openai_events())
    }

    /// An OpenAI answer of `count` stamped tokens ([`sent_at`]), `interval`
    /// apart (zero: at once), then the finish, usage and `[DONE]`.
    pub fn openai_stamped(count: usize, interval: Duration) -> Reply {
        let mut body = Vec::with_capacity(count * 2 + 3);
        for index in 0..count {
            if index > 0 && !interval.is_zero() {
                body.push(Piece::Pause(interval));
            }
            body.push(Piece::StampedOpenAiToken);
        }
        let tail = Answer::tokens(count).openai_events();
        // The finish, the usage and [DONE]: the last three.
        body.extend(
            tail[tail.len() - 3..]
                .iter()
                .map(|event| Piece::Bytes(Bytes::from(event.clone()))),
        );
        Reply {
            body,
            ..Reply::sse([])
        }
    }

    pub fn anthropic(&self) -> Reply {
        Reply::sse(self.anthropic_events())
    }
}
