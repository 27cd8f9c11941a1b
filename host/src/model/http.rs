//! What both provider adapters share: posting a JSON request to a
//! provider, reading its answer back as server-sent events, and typing its
//! failures.
//!
//! An adapter supplies a [`Wire`]: how to decode one answer's events
//! ([`Decode`]) and what the provider's own error codes mean. This module
//! does the rest: the HTTP client (built by [`crate::outbound`], so
//! `[tls] extra_ca_files` applies), retries until the answer's first event
//! ([`super::retry`]), a bound on the answer's size, and errors that name
//! the provider and what it answered, never its key.
//!
//! The answer is read only as it is consumed, and dropping the stream drops
//! the response: its connection is closed, not returned to the pool (hyper
//! cannot reuse a connection whose body was not read to its end).

use std::collections::VecDeque;
use std::pin::Pin;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use bytes::Bytes;
use eventsource_stream::{Event, EventStream, EventStreamError};
use futures_core::Stream;
use futures_util::StreamExt as _;
use reqwest::StatusCode;
use reqwest::header::{ACCEPT, CONTENT_TYPE, HeaderMap, RETRY_AFTER};
use serde_json::{Value, json};

use super::retry::{Pause, RetryPolicy, retrying};
use super::{ModelError, ModelEvent, ModelStream};
use crate::outbound::{ExtraRoots, client_builder, describe};
use crate::secret::Secret;

/// The most bytes one answer may stream; beyond it the answer fails (a
/// provider that never ends a line or an answer cannot grow memory).
pub const MAX_ANSWER_BYTES: usize = 32 * 1024 * 1024;

/// The most bytes of one line of a streamed answer (one SSE field).
pub(crate) const MAX_LINE_BYTES: usize = 1024 * 1024;

/// The most bytes of an error answer read for its message.
const MAX_ERROR_BYTES: usize = 64 * 1024;

/// The most characters of a provider's message quoted in an error.
const MAX_QUOTED_CHARS: usize = 500;

/// How a model's provider is reached over HTTP.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HttpSettings {
    /// To open a connection.
    pub connect_timeout: Duration,
    /// The longest silence while waiting for the answer's headers or its
    /// next bytes.
    pub read_timeout: Duration,
    pub retry: RetryPolicy,
    /// Roots trusted on top of the system's (`[tls] extra_ca_files`).
    pub extra_roots: ExtraRoots,
}

impl Default for HttpSettings {
    fn default() -> Self {
        HttpSettings {
            connect_timeout: super::settings::defaults::CONNECT_TIMEOUT,
            read_timeout: super::settings::defaults::READ_TIMEOUT,
            retry: RetryPolicy::default(),
            extra_roots: ExtraRoots::default(),
        }
    }
}

/// What a failure means, before it is told with the provider's name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    Retryable,
    QuotaExhausted,
    ContextTooLong,
    InvalidRequest,
    Authentication,
    Protocol,
}

/// A failure an adapter found: its kind, what the provider said, and the
/// provider's `Retry-After`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Fault {
    pub(crate) kind: Kind,
    pub(crate) message: String,
    pub(crate) retry_after: Option<Duration>,
}

impl Fault {
    pub(crate) fn new(kind: Kind, message: impl Into<String>) -> Self {
        Fault {
            kind,
            message: message.into(),
            retry_after: None,
        }
    }

    pub(crate) fn protocol(message: impl Into<String>) -> Self {
        Fault::new(Kind::Protocol, message)
    }
}

/// An error a provider reported, in the shape OpenAI, Anthropic and most
/// compatible servers share: `{"error": {"message", "type", "code"}}` (or
/// those keys at the top level, or `{"error": "text"}`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct ProviderError {
    pub(crate) message: String,
    /// `error.type`: `invalid_request_error`, `rate_limit_error`, ...
    pub(crate) kind: Option<String>,
    /// `error.code`: `insufficient_quota`, `context_length_exceeded`, ...
    pub(crate) code: Option<String>,
}

impl ProviderError {
    /// Read `body` leniently; a body that is not such JSON is the message.
    pub(crate) fn parse(body: &str) -> Self {
        let Ok(json) = serde_json::from_str::<Value>(body) else {
            return ProviderError {
                message: body.trim().to_owned(),
                ..ProviderError::default()
            };
        };
        Self::from_json(&json).unwrap_or_else(|| ProviderError {
            message: body.trim().to_owned(),
            ..ProviderError::default()
        })
    }

    /// The error `json` describes, if it describes one.
    pub(crate) fn from_json(json: &Value) -> Option<Self> {
        let text = |value: Option<&Value>| match value? {
            Value::String(text) if !text.is_empty() => Some(text.clone()),
            Value::Number(number) => Some(number.to_string()),
            _ => None,
        };
        let error = match json.get("error") {
            Some(Value::String(message)) => {
                return Some(ProviderError {
                    message: message.clone(),
                    ..ProviderError::default()
                });
            }
            Some(error @ Value::Object(_)) => error,
            _ if json.get("message").is_some() => json,
            _ => return None,
        };
        Some(ProviderError {
            message: text(error.get("message")).unwrap_or_default(),
            kind: text(error.get("type")),
            code: text(error.get("code")),
        })
    }

    /// "message (type, code)", quoted briefly.
    fn describe(&self) -> String {
        let mut text = quote(&self.message);
        let tags: Vec<&str> = [self.kind.as_deref(), self.code.as_deref()]
            .into_iter()
            .flatten()
            .collect();
        if !tags.is_empty() {
            if !text.is_empty() {
                text.push(' ');
            }
            text.push_str(&format!("({})", tags.join(", ")));
        }
        text
    }

    /// Whether the message, type or code mentions `needle` (lower case).
    pub(crate) fn mentions(&self, needle: &str) -> bool {
        [
            Some(self.message.as_str()),
            self.kind.as_deref(),
            self.code.as_deref(),
        ]
        .into_iter()
        .flatten()
        .any(|text| text.to_lowercase().contains(needle))
    }
}

/// At most [`MAX_QUOTED_CHARS`] of `text`, on one line.
fn quote(text: &str) -> String {
    let one_line: String = text
        .trim()
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    match one_line.char_indices().nth(MAX_QUOTED_CHARS) {
        Some((at, _)) => format!("{}...", &one_line[..at]),
        None => one_line,
    }
}

/// A provider's wire protocol, as far as the shared code needs it.
pub(crate) trait Wire: Send + Sync + 'static {
    type Decoder: Decode + Send + 'static;

    /// A decoder for one answer.
    fn decoder(&self) -> Self::Decoder;

    /// What an error means beyond its HTTP status (an exhausted quota, a
    /// prompt too long), if the provider says more. `status` is `None` for
    /// an error reported inside a streamed answer.
    fn refine(status: Option<StatusCode>, error: &ProviderError) -> Option<Kind>;
}

/// Decoding one streamed answer.
pub(crate) trait Decode {
    /// Decode one event into `out` (maybe nothing: pings, bookkeeping).
    fn event(&mut self, event: &Event, out: &mut VecDeque<ModelEvent>) -> Result<(), Fault>;

    /// Whether the answer is whole: nothing more is read.
    fn is_done(&self) -> bool;

    /// The provider closed the stream: the last events, or why the answer
    /// is incomplete.
    fn end(&mut self, out: &mut VecDeque<ModelEvent>) -> Result<(), Fault>;
}

/// One model's provider endpoint.
pub(crate) struct Endpoint<W> {
    /// Names the model and its provider in errors and logs: ``model `gpt`
    /// (openai at api.openai.com:443)``.
    label: String,
    url: reqwest::Url,
    client: reqwest::Client,
    /// Authentication and version headers, marked sensitive.
    headers: HeaderMap,
    /// The key, redacted from anything the provider answers.
    secret: Option<Secret>,
    retry: RetryPolicy,
    pause: Pause,
    wire: W,
}

impl<W: Wire> Endpoint<W> {
    /// An endpoint of the `provider` (`openai`) behind the model `name`,
    /// posting to `url` with `headers`; fails if the client cannot be built
    /// (its TLS roots).
    pub(crate) fn new(
        name: &str,
        provider: &str,
        url: reqwest::Url,
        headers: HeaderMap,
        secret: Option<Secret>,
        http: &HttpSettings,
        wire: W,
    ) -> Result<Self, String> {
        let client = client_builder(&http.extra_roots)
            .connect_timeout(http.connect_timeout)
            .read_timeout(http.read_timeout)
            // A redirect would resend the key to wherever it points (and
            // turn the POST into a GET): a moved endpoint is a
            // configuration error to fix, not to follow.
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(describe)?;
        let host = match (url.host_str(), url.port_or_known_default()) {
            (Some(host), Some(port)) => format!("{host}:{port}"),
            (Some(host), None) => host.to_owned(),
            _ => url.as_str().to_owned(),
        };
        Ok(Endpoint {
            label: format!("model `{name}` ({provider} at {host})"),
            url,
            client,
            headers,
            secret,
            retry: http.retry.clone(),
            pause: Pause::default(),
            wire,
        })
    }

    /// Record retry waits instead of sleeping them.
    #[cfg(test)]
    pub(crate) fn with_pause(mut self, pause: Pause) -> Self {
        self.pause = pause;
        self
    }

    /// Post `body` and stream the answer's events. Nothing is sent until
    /// the stream is first polled.
    pub(crate) fn stream(self: &Arc<Self>, body: &Value) -> ModelStream {
        let start = match serde_json::to_vec(body) {
            Ok(body) => State::Start {
                endpoint: Arc::clone(self),
                body: Bytes::from(body),
            },
            Err(error) => State::Failed(self.error(Fault::new(
                Kind::InvalidRequest,
                format!("the request cannot be written as JSON: {error}"),
            ))),
        };
        Box::pin(futures_util::stream::unfold(start, State::step))
    }

    /// Open the answer and read up to its first event, retrying per the
    /// policy: nothing has reached the caller yet, so starting over is
    /// invisible.
    async fn open(&self, body: &Bytes) -> Result<Answer<W::Decoder>, ModelError> {
        retrying(&self.retry, &self.pause, &self.label, || async {
            let response = self.send(body.clone()).await.map_err(|f| self.error(f))?;
            let mut answer = Answer::new(response, self.wire.decoder());
            answer.fill().await.map_err(|f| self.error(f))?;
            Ok(answer)
        })
        .await
    }

    async fn send(&self, body: Bytes) -> Result<reqwest::Response, Fault> {
        let response = self
            .client
            .post(self.url.clone())
            .headers(self.headers.clone())
            .header(CONTENT_TYPE, "application/json")
            .header(ACCEPT, "text/event-stream")
            .body(body)
            .send()
            .await
            .map_err(|error| self.unreachable(error))?;
        let status = response.status();
        if status.is_success() {
            return self.check_streamed(response).await;
        }
        let retry_after = response
            .headers()
            .get(RETRY_AFTER)
            .and_then(|value| value.to_str().ok())
            .and_then(|value| super::retry::retry_after(value, SystemTime::now()));
        let body = read_bounded(response).await;
        let error = ProviderError::parse(&body);
        let kind = W::refine(Some(status), &error).unwrap_or_else(|| kind_of_status(status));
        let mut fault = Fault::new(
            kind,
            format!("HTTP {}: {}", status_text(status), error.describe()),
        );
        if kind == Kind::Retryable {
            fault.retry_after = retry_after;
        }
        Err(fault)
    }

    /// A 2xx answer that is JSON rather than an event stream is an error
    /// (some proxies answer errors with 200) or a server that ignored
    /// `stream: true`.
    async fn check_streamed(
        &self,
        response: reqwest::Response,
    ) -> Result<reqwest::Response, Fault> {
        let json = response
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|value| value.to_str().ok())
            .is_some_and(|value| value.trim_start().starts_with("application/json"));
        if !json {
            return Ok(response);
        }
        let body = read_bounded(response).await;
        let parsed = serde_json::from_str::<Value>(&body).ok();
        match parsed.as_ref().and_then(ProviderError::from_json) {
            Some(error) => {
                let kind = W::refine(None, &error).unwrap_or(Kind::Protocol);
                Err(Fault::new(kind, error.describe()))
            }
            None => Err(Fault::protocol(format!(
                "answered with JSON instead of an event stream: {}",
                quote(&body)
            ))),
        }
    }

    fn unreachable(&self, error: reqwest::Error) -> Fault {
        let what = if error.is_timeout() {
            "no answer in time"
        } else {
            "the request failed"
        };
        Fault::new(Kind::Retryable, format!("{what}: {}", describe(error)))
    }

    /// `fault`, told as the provider's: its label, the key redacted.
    fn error(&self, fault: Fault) -> ModelError {
        let message = match &self.secret {
            Some(secret) => secret.redact_from(&fault.message),
            None => fault.message,
        };
        let provider = self.label.clone();
        match fault.kind {
            Kind::Retryable => ModelError::Retryable {
                provider,
                message,
                retry_after: fault.retry_after,
            },
            Kind::QuotaExhausted => ModelError::QuotaExhausted { provider, message },
            Kind::ContextTooLong => ModelError::ContextTooLong { provider, message },
            Kind::InvalidRequest => ModelError::InvalidRequest { provider, message },
            Kind::Authentication => ModelError::Authentication { provider, message },
            Kind::Protocol => ModelError::Protocol { provider, message },
        }
    }
}

/// The kind of an error answer from its status alone.
fn kind_of_status(status: StatusCode) -> Kind {
    match status.as_u16() {
        401 | 403 => Kind::Authentication,
        408 | 429 | 500..=599 => Kind::Retryable,
        400..=499 => Kind::InvalidRequest,
        // A redirect (not followed) or another oddity.
        _ => Kind::Protocol,
    }
}

/// `429 Too Many Requests`.
fn status_text(status: StatusCode) -> String {
    match status.canonical_reason() {
        Some(reason) => format!("{} {reason}", status.as_u16()),
        None => status.as_u16().to_string(),
    }
}

/// The first [`MAX_ERROR_BYTES`] of an error answer's body, as text.
async fn read_bounded(mut response: reqwest::Response) -> String {
    let mut body = Vec::new();
    while body.len() < MAX_ERROR_BYTES {
        match response.chunk().await {
            Ok(Some(chunk)) => body.extend_from_slice(&chunk),
            Ok(None) | Err(_) => break,
        }
    }
    body.truncate(MAX_ERROR_BYTES);
    String::from_utf8_lossy(&body).into_owned()
}

/// Why an answer's bytes stopped coming.
#[derive(Debug)]
pub(crate) enum BodyError {
    Transport(reqwest::Error),
    TooLarge,
    LineTooLong,
}

impl std::fmt::Display for BodyError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            BodyError::Transport(_) => f.write_str("the connection failed"),
            BodyError::TooLarge => write!(f, "the answer exceeds {MAX_ANSWER_BYTES} bytes"),
            BodyError::LineTooLong => {
                write!(f, "a line of the answer exceeds {MAX_LINE_BYTES} bytes")
            }
        }
    }
}

/// An answer's body as it arrives.
pub(crate) type Chunks = Pin<Box<dyn Stream<Item = Result<Bytes, BodyError>> + Send>>;

/// Read a whole answer that arrives as `chunks` as a streamed one is read
/// (the fuzz target's way in): how many events it decoded, or the fault
/// that stopped it.
pub(crate) async fn decode_answer(chunks: Chunks, decoder: impl Decode) -> Result<usize, Fault> {
    let mut answer = Answer::from_chunks(chunks, decoder);
    let mut decoded = 0;
    loop {
        answer.fill().await?;
        if answer.pending.is_empty() {
            return Ok(decoded);
        }
        decoded += answer.pending.len();
        answer.pending.clear();
    }
}

/// The SSE events of a body that arrives as `chunks`.
fn events(chunks: Chunks) -> EventStream<Chunks> {
    EventStream::new(whole_lines(chunks))
}

/// `chunks` cut after their last line end, each line at most
/// [`MAX_LINE_BYTES`]. The SSE parser reads its unfinished line again
/// whenever more of it arrives: given whole lines, it reads each byte once,
/// however finely a provider cuts its answer.
fn whole_lines(chunks: Chunks) -> Chunks {
    let lines = futures_util::stream::unfold(Some((chunks, Vec::new())), |state| async move {
        let (mut chunks, mut partial) = state?;
        loop {
            let chunk = match chunks.next().await {
                Some(Ok(chunk)) => chunk,
                Some(Err(error)) => return Some((Err(error), None)),
                // The last line, unended: the parser decides what it is.
                None if partial.is_empty() => return None,
                None => return Some((Ok(Bytes::from(partial)), None)),
            };
            let Some(end) = chunk.iter().rposition(|&b| b == b'\n' || b == b'\r') else {
                partial.extend_from_slice(&chunk);
                if partial.len() > MAX_LINE_BYTES {
                    return Some((Err(BodyError::LineTooLong), None));
                }
                continue;
            };
            let rest = chunk.slice(end + 1..);
            let whole = if partial.is_empty() {
                chunk.slice(..=end)
            } else {
                partial.extend_from_slice(&chunk[..=end]);
                Bytes::from(std::mem::take(&mut partial))
            };
            partial.extend_from_slice(&rest);
            return Some((Ok(whole), Some((chunks, partial))));
        }
    });
    Box::pin(lines)
}

/// The body of `response` as it arrives, at most [`MAX_ANSWER_BYTES`].
fn chunks(response: reqwest::Response) -> Chunks {
    let stream = futures_util::stream::unfold(Some((response, 0_usize)), |state| async move {
        let (mut response, received) = state?;
        match response.chunk().await {
            Ok(Some(chunk)) => {
                let received = received + chunk.len();
                if received > MAX_ANSWER_BYTES {
                    Some((Err(BodyError::TooLarge), None))
                } else {
                    Some((Ok(chunk), Some((response, received))))
                }
            }
            Ok(None) => None,
            Err(error) => Some((Err(BodyError::Transport(error)), None)),
        }
    });
    Box::pin(stream)
}

/// One answer being read: its events, decoded as they are asked for.
struct Answer<D> {
    events: EventStream<Chunks>,
    decoder: D,
    pending: VecDeque<ModelEvent>,
    ended: bool,
}

impl<D: Decode> Answer<D> {
    fn new(response: reqwest::Response, decoder: D) -> Self {
        Self::from_chunks(chunks(response), decoder)
    }

    fn from_chunks(chunks: Chunks, decoder: D) -> Self {
        Answer {
            events: events(chunks),
            decoder,
            pending: VecDeque::new(),
            ended: false,
        }
    }

    /// Read until an event is pending or the answer has ended.
    async fn fill(&mut self) -> Result<(), Fault> {
        while self.pending.is_empty() && !self.ended {
            if self.decoder.is_done() {
                self.ended = true;
                break;
            }
            match self.events.next().await {
                Some(Ok(event)) => self.decoder.event(&event, &mut self.pending)?,
                None => {
                    self.ended = true;
                    self.decoder.end(&mut self.pending)?;
                }
                Some(Err(error)) => return Err(body_fault(error)),
            }
        }
        Ok(())
    }
}

fn body_fault(error: EventStreamError<BodyError>) -> Fault {
    match error {
        EventStreamError::Transport(BodyError::Transport(error)) => Fault::new(
            Kind::Retryable,
            format!("the answer broke off: {}", describe(error)),
        ),
        EventStreamError::Transport(too_large @ (BodyError::TooLarge | BodyError::LineTooLong)) => {
            Fault::protocol(too_large.to_string())
        }
        EventStreamError::Utf8(error) => {
            Fault::protocol(format!("the event stream is not UTF-8: {error}"))
        }
        EventStreamError::Parser(error) => {
            Fault::protocol(format!("the event stream cannot be read: {error:?}"))
        }
    }
}

/// Where a streamed answer is.
enum State<W: Wire> {
    Start {
        endpoint: Arc<Endpoint<W>>,
        body: Bytes,
    },
    Streaming {
        endpoint: Arc<Endpoint<W>>,
        answer: Answer<W::Decoder>,
    },
    Failed(ModelError),
    Over,
}

impl<W: Wire> State<W> {
    /// The next item of the answer, and what comes after it.
    async fn step(self) -> Option<(Result<ModelEvent, ModelError>, State<W>)> {
        let (endpoint, mut answer) = match self {
            State::Over => return None,
            State::Failed(error) => return Some((Err(error), State::Over)),
            State::Start { endpoint, body } => match endpoint.open(&body).await {
                Ok(answer) => (endpoint, answer),
                Err(error) => return Some((Err(error), State::Over)),
            },
            State::Streaming { endpoint, answer } => (endpoint, answer),
        };
        loop {
            if let Some(event) = answer.pending.pop_front() {
                return Some((Ok(event), State::Streaming { endpoint, answer }));
            }
            if answer.ended {
                return None;
            }
            if let Err(fault) = answer.fill().await {
                return Some((Err(endpoint.error(fault)), State::Over));
            }
        }
    }
}

/// The arguments a model streamed: their JSON (`{}` for none), or, when the
/// text is not JSON, the text itself as a JSON string, so the tool's schema
/// check reports it to the model instead of the turn failing.
pub(crate) fn arguments_of(text: &str) -> Value {
    if text.trim().is_empty() {
        return json!({});
    }
    serde_json::from_str(text).unwrap_or_else(|_| Value::String(text.to_owned()))
}

/// The fault an error reported inside a streamed answer means.
pub(crate) fn streamed_error<W: Wire>(error: &ProviderError) -> Fault {
    let kind = W::refine(None, error).unwrap_or(Kind::Protocol);
    Fault::new(kind, format!("failed mid-answer: {}", error.describe()))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `body` cut into pieces of `size` bytes, as a provider might send it.
    fn cut(body: &[u8], size: usize) -> Chunks {
        let pieces: Vec<_> = body
            .chunks(size)
            .map(|piece| Ok(Bytes::copy_from_slice(piece)))
            .collect();
        Box::pin(futures_util::stream::iter(pieces))
    }

    async fn collect_lines(chunks: Chunks) -> Vec<Result<Bytes, BodyError>> {
        whole_lines(chunks).collect().await
    }

    #[tokio::test]
    async fn the_sse_parser_gets_whole_lines_however_finely_an_answer_is_cut() {
        // Byte by byte, a 100 KB line reaches the parser once, not 100,000
        // times growing (its cost was quadratic in the line's length).
        let line = format!("data: {}\n\n", "x".repeat(100_000));
        let pieces = collect_lines(cut(line.as_bytes(), 1)).await;
        let pieces: Vec<Bytes> = pieces.into_iter().map(|p| p.expect("whole")).collect();
        assert_eq!(pieces.len(), 2, "the line, then the blank line");
        assert_eq!(pieces.concat(), line.as_bytes());

        // Lines ended by CR, LF or both, an unended last line, and a
        // multi-byte character cut in two all arrive as they were sent.
        let body = "data: é1\r\ndata: 2\r\rdata: 3\n\ndata: tail".as_bytes();
        for size in [1, 2, 3, 7, body.len()] {
            let pieces = collect_lines(cut(body, size)).await;
            let joined: Vec<u8> = pieces
                .into_iter()
                .flat_map(|piece| piece.expect("whole").to_vec())
                .collect();
            assert_eq!(joined, body, "cut every {size} bytes");
        }

        // Through the parser: the same events at any cut (an unended last
        // event is dropped, as SSE says).
        for size in [1, 5, body.len()] {
            let events: Vec<String> = events(cut(body, size))
                .filter_map(|event| async move { event.ok().map(|e| e.data) })
                .collect()
                .await;
            assert_eq!(events, ["é1\n2", "3"], "cut every {size} bytes");
        }
    }

    #[tokio::test]
    async fn a_line_longer_than_its_bound_fails_the_answer() {
        let long = vec![b'x'; MAX_LINE_BYTES + 1];
        let pieces = collect_lines(cut(&long, 64 * 1024)).await;
        assert!(
            matches!(pieces.last(), Some(Err(BodyError::LineTooLong))),
            "{pieces:?}"
        );
        let fault = body_fault(EventStreamError::Transport(BodyError::LineTooLong));
        assert_eq!(fault.kind, Kind::Protocol, "{fault:?}");
    }

    #[test]
    fn provider_errors_are_read_in_every_common_shape() {
        let openai = ProviderError::parse(
            r#"{"error": {"message": "You exceeded your current quota", "type": "insufficient_quota", "param": null, "code": "insufficient_quota"}}"#,
        );
        assert_eq!(openai.message, "You exceeded your current quota");
        assert_eq!(openai.code.as_deref(), Some("insufficient_quota"));
        assert!(openai.mentions("quota"));
        let anthropic = ProviderError::parse(
            r#"{"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}"#,
        );
        assert_eq!(anthropic.kind.as_deref(), Some("overloaded_error"));
        assert_eq!(anthropic.describe(), "Overloaded (overloaded_error)");
        let vllm = ProviderError::parse(
            r#"{"object": "error", "message": "maximum context length is 4096", "type": "BadRequestError", "code": 400}"#,
        );
        assert_eq!(vllm.code.as_deref(), Some("400"));
        assert_eq!(
            ProviderError::parse(r#"{"error": "model not found"}"#).message,
            "model not found"
        );
        let html = ProviderError::parse("<html>502 Bad Gateway</html>\n");
        assert_eq!(html.message, "<html>502 Bad Gateway</html>");
        assert_eq!(quote(&"x".repeat(600)).len(), MAX_QUOTED_CHARS + 3);
        assert_eq!(quote("two\nlines"), "two lines");
    }

    #[test]
    fn statuses_are_typed() {
        let kind = |code: u16| kind_of_status(StatusCode::from_u16(code).expect("status"));
        assert_eq!(kind(401), Kind::Authentication);
        assert_eq!(kind(403), Kind::Authentication);
        for retryable in [408, 429, 500, 502, 503, 529] {
            assert_eq!(kind(retryable), Kind::Retryable, "{retryable}");
        }
        for invalid in [400, 404, 413, 422] {
            assert_eq!(kind(invalid), Kind::InvalidRequest, "{invalid}");
        }
        assert_eq!(kind(302), Kind::Protocol);
    }
}
