//! The conversation as a model sees it, read from the task's history.
//!
//! The history is the one record of a conversation: participants' messages,
//! the agent's replies, and the agent loop's tool calls and results (each
//! journaled as it happens). A model request is built from it, newest first,
//! as far as the model's context window allows:
//!
//! * a participant's ordinary message is a `user` message;
//! * a reply of the model is an `assistant` message; a message recording
//!   tool calls (`metadata.stream = "tool-call"`) is an `assistant` message
//!   with those calls, and one recording a result (`"tool-result"`) is that
//!   tool's output;
//! * what the harness itself said or handled (commands and their replies,
//!   controls, participant changes, completion verdicts, notices such as a
//!   failed turn) carries `metadata.harness` and is left out: commands run
//!   on the harness, never the model (decision 007);
//! * a participant's message that follows an unanswered `ask_participant`
//!   call is that call's result.
//!
//! **Fitting the window.** Messages are taken from the newest back while
//! their estimated size (4 bytes a token) fits the budget, and the cut is
//! always made just before a participant's message, so a tool call is never
//! separated from its result; the current turn is always kept whole, even
//! when it alone exceeds the budget (the provider then says the
//! conversation is too long, and the participants read that).

use std::borrow::Cow;
use std::cell::Cell;

use serde::Deserialize;
use serde::de::IgnoredAny;
use serde_json::{Map, Value, json};

use super::state::TaskRecord;
use crate::a2a::types::{
    Message, Part, Role as MessageRole, StreamResponse, TaskState, TaskStatus,
    TaskStatusUpdateEvent, Timestamp,
};
use crate::domain::{ChatMessage, ToolCall, ToolOutput};
use crate::store::TaskStore;

/// Messages the model does not see carry this key, saying what they are.
pub(crate) const HARNESS_KEY: &str = "harness";
/// Messages recording tool activity carry this key (also in the status
/// update that streams them).
pub(crate) const STREAM_KEY: &str = "stream";
/// The `stream` value of a message recording the model's tool calls.
pub(crate) const TOOL_CALL: &str = "tool-call";
/// The `stream` value of a message recording one tool's result.
pub(crate) const TOOL_RESULT: &str = "tool-result";
/// The `stream` value of a live-only text delta.
pub(crate) const TEXT_DELTA: &str = "text-delta";

/// The intrinsic tool whose result is the participants' next message.
pub(crate) const ASK_PARTICIPANT: &str = "ask_participant";

/// What `harness` says a message is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum HarnessMark {
    /// A participant's command, or its reply.
    Command,
    /// A control envelope or a participants event.
    Envelope,
    /// The harness's own message: a verdict, a failure, a notice.
    Notice,
    /// The question of an `ask_participant` call, shown to participants;
    /// the model has it as the call's arguments.
    Question,
}

impl HarnessMark {
    fn as_str(self) -> &'static str {
        match self {
            HarnessMark::Command => "command",
            HarnessMark::Envelope => "envelope",
            HarnessMark::Notice => "notice",
            HarnessMark::Question => "question",
        }
    }
}

/// Mark `message` as one the model does not see.
pub(crate) fn mark(message: &mut Message, mark: HarnessMark) {
    message
        .metadata
        .insert(HARNESS_KEY.into(), json!(mark.as_str()));
}

/// The agent message recording the model's `calls` (and the text it wrote
/// before them).
pub(crate) fn tool_calls_parts(text: &str, calls: &[ToolCall]) -> (Vec<Part>, Map<String, Value>) {
    let mut parts = Vec::new();
    if !text.is_empty() {
        parts.push(Part::text(text));
    }
    parts.extend(calls.iter().map(|call| {
        Part::data(json!({ "id": call.id, "name": call.name, "arguments": call.arguments }))
    }));
    (parts, stream_metadata(TOOL_CALL))
}

/// The agent message recording one tool's output.
pub(crate) fn tool_result_parts(output: &ToolOutput) -> (Vec<Part>, Map<String, Value>) {
    let outcome = if output.is_error { "error" } else { "result" };
    let part = Part::data(json!({
        "id": output.call_id,
        "name": output.name,
        outcome: output.content,
    }));
    (vec![part], stream_metadata(TOOL_RESULT))
}

pub(crate) fn stream_metadata(kind: &str) -> Map<String, Value> {
    let mut metadata = Map::new();
    metadata.insert(STREAM_KEY.into(), json!(kind));
    metadata
}

/// Whether the model's last question (`ask_participant`) still waits for
/// the participants' answer: nothing but harness messages (commands, their
/// replies, notices) came after the question. Reads back only over those.
pub(crate) fn awaits_answer(history: &[Message]) -> bool {
    history
        .iter()
        .rev()
        .find(|message| !message.metadata.contains_key(HARNESS_KEY))
        .is_some_and(asks_participant)
}

/// Whether `message` records the model asking the participants a question
/// (an `ask_participant` call).
pub(crate) fn asks_participant(message: &Message) -> bool {
    match Seen::of(message) {
        Some(Seen::Calls { calls, .. }) => calls.iter().any(|call| call.name == ASK_PARTICIPANT),
        _ => false,
    }
}

/// The model's view of a conversation: the messages that fit, and the tool
/// calls of the last round still waiting for a result (a restart cut them
/// off).
#[derive(Debug, Default, PartialEq)]
pub(crate) struct Transcript {
    pub(crate) messages: Vec<ChatMessage>,
    pub(crate) unanswered: Vec<ToolCall>,
}

/// The conversation in `history` as a model sees it, fitted to
/// `budget_tokens` (see the module documentation). Reads only as far back
/// as the budget reaches.
#[cfg(test)]
pub(crate) fn transcript(history: &[Message], budget_tokens: u64) -> Transcript {
    let whole = fit(history.iter().rev().map(Seen::of), budget_tokens).transcript;
    // Read back from the store's JSON, it is the same transcript.
    let documents: Vec<String> = history
        .iter()
        .map(|message| serde_json::to_string(message).expect("a message is JSON"))
        .collect();
    let parsed = documents
        .iter()
        .rev()
        .map(|document| Seen::parse(document).expect("readable"));
    assert_eq!(
        fit(parsed, budget_tokens).transcript,
        whole,
        "parsed from JSON"
    );
    whole
}

/// The newest messages of a conversation, which the store does not have yet.
#[derive(Debug, Default)]
pub(crate) struct Unstored {
    pub(crate) messages: Vec<Message>,
    /// They are the whole history (a new task's): nothing to read.
    pub(crate) whole_history: bool,
}

/// How many of the newest messages a transcript read from the store starts
/// with when nothing says how many the window takes; while the window has
/// room for more, it reads as many as should fill it ([`next_read`]).
const FIRST_READ: usize = 64;

/// A transcript read from the store, and how many stored messages it went
/// through: about as many as the conversation's next read needs, since the
/// window moves on by a turn at a time.
#[derive(Debug)]
pub(crate) struct Read {
    pub(crate) transcript: Transcript,
    pub(crate) span: usize,
}

/// The conversation of task `task_id` as a model with a window of
/// `budget_tokens` sees it, read from `store`: only as many of the newest
/// messages as the window reaches (never the whole of a long history),
/// then `unstored`, the newest, which the store does not have yet.
///
/// `last_span` is the span of the conversation's previous read, if this
/// worker made one. The first read asks for that many and a margin, so a
/// window that reaches further back than [`FIRST_READ`] is read once per
/// turn, not twice.
pub(crate) async fn read(
    store: &dyn TaskStore,
    task_id: &str,
    budget_tokens: u64,
    unstored: Unstored,
    last_span: Option<usize>,
) -> Result<Read, String> {
    let Unstored {
        messages: unstored,
        whole_history,
    } = unstored;
    if whole_history {
        let fitted = fit(unstored.iter().rev().map(Seen::of), budget_tokens);
        return Ok(Read {
            transcript: fitted.transcript,
            span: 0,
        });
    }
    // The margin covers newer messages longer than the ones that fell out.
    let mut limit = last_span.map_or(FIRST_READ, |span| span.saturating_add(span / 8 + 4));
    loop {
        let stored = store
            .load(task_id.to_owned(), Some(limit))
            .await
            .map_err(|error| error.to_string())?;
        let stored = stored.ok_or_else(|| format!("task {task_id} is not in the store"))?;
        let documents = stored.history.as_slice();
        let whole = documents.len() as u64 >= stored.history_len;
        // Newest first, each read only once the window still has room for
        // it: a full window never parses what it leaves out.
        let mut unreadable = None;
        let span = Cell::new(0);
        let stored_newest_first = documents.iter().rev().map(|document| {
            span.set(span.get() + 1);
            Seen::parse(document)
        });
        let newest_first = unstored
            .iter()
            .rev()
            .map(|message| Ok(Seen::of(message)))
            .chain(stored_newest_first)
            .map_while(|seen| seen.map_err(|error| unreadable = Some(error)).ok());
        let fitted = fit(newest_first, budget_tokens);
        if let Some(error) = unreadable {
            return Err(format!("a stored message is unreadable: {error}"));
        }
        if fitted.filled || whole {
            return Ok(Read {
                transcript: fitted.transcript,
                span: span.get(),
            });
        }
        limit = next_read(limit, fitted.used_tokens, budget_tokens);
    }
}

/// The conversation of `newest_first` (the newest message first; `None`
/// for one the model does not see) fitted to `budget_tokens`, and whether
/// the window filled up before the oldest of them (so older messages would
/// not fit either).
fn fit(newest_first: impl Iterator<Item = Option<Seen>>, budget_tokens: u64) -> Fitted {
    // Read newest first, one turn (a participant's message and everything
    // after it) at a time; keep whole turns while they fit.
    let mut turns: Vec<Vec<Seen>> = Vec::new();
    let mut current: Vec<Seen> = Vec::new();
    let mut used = 0u64;
    let mut filled = false;
    for entry in newest_first {
        let Some(entry) = entry else {
            continue;
        };
        used = used.saturating_add(entry.estimated_tokens());
        let starts_turn = entry.starts_turn();
        current.push(entry);
        if starts_turn {
            let first_turn = turns.is_empty();
            if !first_turn && used > budget_tokens {
                filled = true;
                break;
            }
            turns.push(std::mem::take(&mut current));
        }
    }
    let whole_turns = !turns.is_empty();
    if !filled && !current.is_empty() && (turns.is_empty() || used <= budget_tokens) {
        // Messages older than any participant's (a sub-task's goal turn).
        turns.push(current);
    }
    // Over budget with a whole turn kept: older turns cannot fit either. (A
    // slice that holds no turn's start yet cuts the current turn: read on.)
    filled |= used > budget_tokens && whole_turns;
    let ordered = turns
        .into_iter()
        .rev()
        .flat_map(|turn| turn.into_iter().rev());
    Fitted {
        transcript: assemble(ordered),
        filled,
        used_tokens: used,
    }
}

/// What [`fit`] made of the messages it was given.
struct Fitted {
    transcript: Transcript,
    /// The window filled before the oldest of them.
    filled: bool,
    /// The tokens of the messages it went through.
    used_tokens: u64,
}

/// How many of the newest messages to read next, when `read` of them took
/// `used_tokens` of a window of `budget_tokens` and left room: as many as
/// messages of their size would fill it, with a quarter more, so that one
/// more read mostly does (between 1.25 and 16 times as many).
fn next_read(read: usize, used_tokens: u64, budget_tokens: u64) -> usize {
    let least = read.saturating_add(read / 4).max(read + 1);
    let most = read.saturating_mul(16);
    if used_tokens == 0 {
        return most;
    }
    let wanted = u128::from(budget_tokens) * 5 / 4 * read as u128 / u128::from(used_tokens) + 1;
    usize::try_from(wanted).unwrap_or(most).clamp(least, most)
}

/// Turn the kept messages, oldest first, into chat messages.
fn assemble(messages: impl Iterator<Item = Seen>) -> Transcript {
    let mut out = Vec::new();
    // Calls of the latest tool-call message still waiting for results.
    let mut waiting: Vec<ToolCall> = Vec::new();
    for seen in messages {
        match seen {
            Seen::User(text) => {
                match waiting.iter().position(|call| call.name == ASK_PARTICIPANT) {
                    Some(at) => {
                        let call = waiting.remove(at);
                        out.push(ChatMessage::Tool(ToolOutput {
                            call_id: call.id,
                            name: call.name,
                            content: text,
                            is_error: false,
                        }));
                    }
                    None => out.push(ChatMessage::User { content: text }),
                }
                // Any other call left waiting was cut off by a restart
                // before the participant's message; it stays unanswered in
                // the transcript, which providers accept as history.
                waiting.clear();
            }
            Seen::Reply(text) => out.push(ChatMessage::Assistant {
                content: text,
                tool_calls: Vec::new(),
                reasoning: None,
            }),
            Seen::Calls { text, calls } => {
                waiting = calls.clone();
                out.push(ChatMessage::Assistant {
                    content: text,
                    tool_calls: calls,
                    reasoning: None,
                });
            }
            Seen::Result(output) => {
                waiting.retain(|call| call.id != output.call_id);
                out.push(ChatMessage::Tool(output));
            }
        }
    }
    Transcript {
        messages: out,
        unanswered: waiting,
    }
}

/// A history message as the model sees it, or `None` for one it does not.
enum Seen {
    User(String),
    Reply(String),
    Calls { text: String, calls: Vec<ToolCall> },
    Result(ToolOutput),
}

impl Seen {
    fn of(message: &Message) -> Option<Seen> {
        Seen::from_view(MessageView {
            role: message.role,
            harness: message.metadata.contains_key(HARNESS_KEY),
            stream: message.metadata.get(STREAM_KEY),
            parts: &message.parts,
        })
    }

    /// A stored message's JSON, read only as far as the model needs it.
    fn parse(document: &str) -> Result<Option<Seen>, serde_json::Error> {
        let stored: StoredView<'_> = serde_json::from_str(document)?;
        Ok(Seen::from_view(MessageView {
            role: stored.role,
            harness: stored.metadata.harness.is_some(),
            stream: stored.metadata.stream.as_ref(),
            parts: &stored.parts,
        }))
    }

    fn from_view<P: PartRead>(message: MessageView<'_, P>) -> Option<Seen> {
        if message.harness {
            return None;
        }
        let text = text_of(&message);
        match (message.role, message.stream.and_then(Value::as_str)) {
            (MessageRole::Agent, Some(TOOL_CALL)) => Some(Seen::Calls {
                text,
                calls: message
                    .parts
                    .iter()
                    .filter_map(PartRead::data)
                    .filter_map(|data| serde_json::from_value(data.clone()).ok())
                    .collect(),
            }),
            (MessageRole::Agent, Some(TOOL_RESULT)) => {
                let data = message.parts.iter().find_map(PartRead::data)?;
                let (content, is_error) = match (data.get("result"), data.get("error")) {
                    (Some(result), _) => (content_text(result), false),
                    (None, Some(error)) => (content_text(error), true),
                    (None, None) => return None,
                };
                Some(Seen::Result(ToolOutput {
                    call_id: data.get("id")?.as_str()?.to_owned(),
                    name: data.get("name")?.as_str()?.to_owned(),
                    content,
                    is_error,
                }))
            }
            (MessageRole::Agent, _) => Some(Seen::Reply(text)),
            _ => Some(Seen::User(text)),
        }
    }

    fn starts_turn(&self) -> bool {
        matches!(self, Seen::User(_))
    }

    fn estimated_tokens(&self) -> u64 {
        let bytes = match self {
            Seen::User(text) | Seen::Reply(text) => text.len(),
            Seen::Calls { text, calls } => {
                text.len()
                    + calls
                        .iter()
                        .map(|call| call.name.len() + call.arguments.to_string().len())
                        .sum::<usize>()
            }
            Seen::Result(output) => output.content.len(),
        };
        (bytes as u64).div_ceil(4) + 4
    }
}

/// A tool result's JSON as the model reads it: a string as it is, anything
/// else as JSON text.
fn content_text(value: &Value) -> String {
    match value {
        Value::String(text) => text.clone(),
        other => other.to_string(),
    }
}

/// The text parts of a message, joined by newlines; its data parts as JSON
/// (a participant may send structured content).
fn text_of<P: PartRead>(message: &MessageView<'_, P>) -> String {
    let mut text = String::new();
    let mut first = true;
    for part in message.parts {
        let data;
        let piece = if let Some(piece) = part.text() {
            piece
        } else if let Some(value) = part.data()
            && message.stream.is_none()
        {
            data = value.to_string();
            &data
        } else {
            continue;
        };
        if !std::mem::take(&mut first) {
            text.push('\n');
        }
        text.push_str(piece);
    }
    text
}

/// What [`Seen`] reads of a message, whole or stored.
struct MessageView<'a, P> {
    role: MessageRole,
    /// Whether it carries the `harness` key.
    harness: bool,
    /// Its `stream` value, if it has the key.
    stream: Option<&'a Value>,
    parts: &'a [P],
}

/// What [`Seen`] reads of a part: its text or its data, if it is either.
trait PartRead {
    fn text(&self) -> Option<&str>;
    fn data(&self) -> Option<&Value>;
}

impl PartRead for Part {
    fn text(&self) -> Option<&str> {
        self.as_text()
    }

    fn data(&self) -> Option<&Value> {
        self.as_data()
    }
}

/// A stored message as far as a transcript reads it: the rest of its
/// metadata (a reply's trace above all, a tree the model never sees) is
/// skipped, not built, and so is all of a part but its text or data.
#[derive(Deserialize)]
struct StoredView<'a> {
    role: MessageRole,
    #[serde(default, borrow)]
    parts: Vec<StoredPart<'a>>,
    #[serde(default)]
    metadata: StoredMarks,
}

/// A stored part's text (borrowed from the document unless it has escapes)
/// or data. The store holds what the harness accepted and wrote, so the
/// rules a part obeys on the wire (exactly one kind of content) are not
/// checked again here; a part with neither is one the model does not read.
#[derive(Deserialize)]
struct StoredPart<'a> {
    #[serde(default, borrow)]
    text: Option<Cow<'a, str>>,
    #[serde(default, deserialize_with = "present")]
    data: Option<Value>,
}

impl PartRead for StoredPart<'_> {
    fn text(&self) -> Option<&str> {
        self.text.as_deref()
    }

    fn data(&self) -> Option<&Value> {
        self.data.as_ref()
    }
}

#[derive(Default, Deserialize)]
struct StoredMarks {
    #[serde(default, deserialize_with = "present")]
    harness: Option<IgnoredAny>,
    #[serde(default, deserialize_with = "present")]
    stream: Option<Value>,
}

/// A key that is there, whatever its value (`null` included).
fn present<'de, D, T>(deserializer: D) -> Result<Option<T>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Deserialize<'de>,
{
    T::deserialize(deserializer).map(Some)
}

/// A live-only `WORKING` update of `record` saying `text` (a text delta, or
/// a progress note on the Temporal engine): never stored, the turn's final
/// status holds what it said.
pub(crate) fn live_update(
    record: &TaskRecord,
    text: String,
    metadata: Map<String, Value>,
) -> StreamResponse {
    let mut message = record.agent_message(text, None);
    message.metadata.clone_from(&metadata);
    StreamResponse::StatusUpdate(TaskStatusUpdateEvent {
        task_id: record.id.clone(),
        context_id: record.context_id.clone(),
        status: TaskStatus {
            state: TaskState::Working,
            message: Some(message),
            timestamp: Some(Timestamp::now()),
        },
        metadata,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn user(text: &str) -> Message {
        Message::new(
            MessageRole::User,
            crate::task::state::new_id(),
            vec![Part::text(text)],
        )
    }

    fn agent(parts: Vec<Part>, metadata: Map<String, Value>) -> Message {
        Message {
            metadata,
            ..Message::new(MessageRole::Agent, crate::task::state::new_id(), parts)
        }
    }

    fn reply(text: &str) -> Message {
        agent(vec![Part::text(text)], Map::new())
    }

    fn call(id: &str, name: &str) -> ToolCall {
        ToolCall {
            id: id.into(),
            name: name.into(),
            arguments: json!({"n": 1}),
        }
    }

    fn calls(text: &str, calls: &[ToolCall]) -> Message {
        let (parts, metadata) = tool_calls_parts(text, calls);
        agent(parts, metadata)
    }

    fn result(id: &str, name: &str, content: &str) -> Message {
        let (parts, metadata) = tool_result_parts(&ToolOutput {
            call_id: id.into(),
            name: name.into(),
            content: content.into(),
            is_error: false,
        });
        agent(parts, metadata)
    }

    fn roles(transcript: &Transcript) -> Vec<&'static str> {
        transcript
            .messages
            .iter()
            .map(|message| match message {
                ChatMessage::User { .. } => "user",
                ChatMessage::Assistant { tool_calls, .. } if tool_calls.is_empty() => "assistant",
                ChatMessage::Assistant { .. } => "calls",
                ChatMessage::Tool(_) => "tool",
            })
            .collect()
    }

    /// A stored part is read for its text or data alone: escapes, file
    /// parts and part metadata read back as from the whole message.
    #[test]
    fn a_stored_message_reads_as_its_parts_text_and_data() {
        let mut quoted = Part::text("line one\n\"two\" \u{e9}");
        quoted.metadata.insert("lang".into(), json!("en"));
        let mut file = Part::url("https://example.com/a.pdf");
        file.filename = Some("a.pdf".into());
        let message = Message::new(
            MessageRole::User,
            crate::task::state::new_id(),
            vec![
                quoted,
                file,
                Part::raw(vec![1, 2]),
                Part::data(json!({"n": 1})),
            ],
        );
        let read = transcript(&[message], u64::MAX);
        assert_eq!(
            read.messages,
            vec![ChatMessage::User {
                content: "line one\n\"two\" \u{e9}\n{\"n\":1}".into()
            }]
        );
    }

    #[test]
    fn tool_rounds_read_back_as_calls_and_results_and_harness_messages_are_left_out() {
        let mut command = user("/status");
        mark(&mut command, HarnessMark::Command);
        let mut status = reply("model offline-echo");
        mark(&mut status, HarnessMark::Command);
        let history = vec![
            user("roll two dice"),
            calls("rolling", &[call("c1", "dice"), call("c2", "dice")]),
            result("c1", "dice", "4"),
            result("c2", "dice", "6"),
            reply("4 and 6"),
            command,
            status,
        ];
        let transcript = transcript(&history, u64::MAX);
        assert_eq!(
            roles(&transcript),
            ["user", "calls", "tool", "tool", "assistant"]
        );
        assert!(transcript.unanswered.is_empty());
        let ChatMessage::Assistant {
            content,
            tool_calls,
            ..
        } = &transcript.messages[1]
        else {
            panic!("calls");
        };
        assert_eq!((content.as_str(), tool_calls.len()), ("rolling", 2));
        assert_eq!(
            transcript.messages[3],
            ChatMessage::Tool(ToolOutput {
                call_id: "c2".into(),
                name: "dice".into(),
                content: "6".into(),
                is_error: false
            })
        );
    }

    #[test]
    fn an_answer_to_ask_participant_is_the_calls_result() {
        let mut question = reply("What next?");
        mark(&mut question, HarnessMark::Question);
        let history = vec![
            user("ask me"),
            calls("", &[call("a1", ASK_PARTICIPANT)]),
            question,
            user("go on"),
        ];
        let transcript = transcript(&history, u64::MAX);
        assert_eq!(roles(&transcript), ["user", "calls", "tool"]);
        assert!(
            matches!(&transcript.messages[2], ChatMessage::Tool(output) if output.content == "go on" && output.call_id == "a1")
        );
    }

    #[test]
    fn calls_a_restart_cut_off_are_reported_unanswered() {
        let history = vec![
            user("roll"),
            calls("", &[call("c1", "dice"), call("c2", "dice")]),
            result("c1", "dice", "4"),
        ];
        let transcript = transcript(&history, u64::MAX);
        assert_eq!(transcript.unanswered, vec![call("c2", "dice")]);
    }

    #[test]
    fn old_turns_are_left_out_whole_and_the_current_turn_always_stays() {
        let long = "x".repeat(400); // ~104 tokens a message
        let history = vec![
            user(&long),
            calls("", &[call("c1", "dice")]),
            result("c1", "dice", &long),
            reply(&long),
            user(&long),
            reply(&long),
            user("now"),
        ];
        // Room for the last turn and the one before, not the first.
        let transcript = transcript(&history, 300);
        assert_eq!(roles(&transcript), ["user", "assistant", "user"]);
        // A budget smaller than the current turn still keeps it.
        assert_eq!(roles(&super::transcript(&history, 1)), ["user"]);
        // Everything fits: nothing is left out, and no call is split from
        // its result at any budget.
        assert_eq!(super::transcript(&history, u64::MAX).messages.len(), 7);
        for budget in 0..1000 {
            let kept = super::transcript(&history, budget);
            let calls = kept
                .messages
                .iter()
                .filter(|m| matches!(m, ChatMessage::Assistant { tool_calls, .. } if !tool_calls.is_empty()))
                .count();
            let results = kept
                .messages
                .iter()
                .filter(|m| matches!(m, ChatMessage::Tool(_)))
                .count();
            assert_eq!(calls, results, "budget {budget}");
        }
    }

    /// A read parses the newest messages only as far as the window takes
    /// them: an older message is never parsed (here it could not be).
    #[tokio::test]
    async fn a_read_parses_only_what_the_window_takes() {
        use crate::store::{Created, Head, MemoryStore, StoredMessage, TaskWrite};
        let mut messages: Vec<StoredMessage> = (0..40u64)
            .map(|position| {
                let message = if position % 2 == 0 {
                    user(&format!("question {position}"))
                } else {
                    reply(&format!("answer {position}"))
                };
                StoredMessage {
                    position,
                    message_id: message.message_id.clone(),
                    document: serde_json::to_string(&message).expect("JSON"),
                }
            })
            .collect();
        messages[0].document = "{ not a message".into();
        let store = MemoryStore::new();
        let write = TaskWrite {
            task_id: "t".into(),
            created: Some(Created {
                created_by: None,
                parent_id: None,
            }),
            head: Head {
                context_id: "c".into(),
                state: "TASK_STATE_INPUT_REQUIRED".into(),
                terminal: false,
                active: false,
                status_at_ms: 0,
                status_changed: true,
                document: "{}".into(),
            },
            entries: Vec::new(),
            messages,
            artifacts: Vec::new(),
            participants: Some(Vec::new()),
        };
        store.commit(vec![write]).await.expect("stored");

        let newest = user("and now?");
        let unstored = Unstored {
            messages: vec![newest],
            whole_history: false,
        };
        let read_back = read(&store, "t", 60, unstored, None).await.expect("read");
        let read_back = read_back.transcript;
        let texts: Vec<&str> = read_back
            .messages
            .iter()
            .filter_map(|message| match message {
                ChatMessage::User { content } => Some(content.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(texts.last(), Some(&"and now?"), "the unstored message last");
        assert!(texts.len() < 20, "only what fits: {texts:?}");

        let everything = read(&store, "t", u64::MAX, Unstored::default(), None).await;
        assert!(
            everything
                .as_ref()
                .is_err_and(|error| error.contains("unreadable")),
            "{everything:?}"
        );
    }

    #[test]
    fn a_window_with_room_reads_about_what_fills_it_next() {
        // 64 messages took 870 tokens of 1,024: about 75 would fill it.
        let next = next_read(64, 870, 1024);
        assert!((76..=100).contains(&next), "{next}");
        // Messages that took nothing, or a window without end: the most.
        assert_eq!(next_read(64, 0, 1024), 1024);
        assert_eq!(next_read(64, 10, u64::MAX), 1024);
        // Never fewer than a quarter more.
        assert_eq!(next_read(64, 2000, 1024), 80);
    }
}
