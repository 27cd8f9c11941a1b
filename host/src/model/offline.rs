//! The offline model: deterministic, no network, no keys. It is the default
//! provider, so a fresh machine converses with nothing configured.
//!
//! It answers the last message of the conversation. After a tool result (the
//! last message is a tool's output) it reports what the tools of that round
//! answered: `Tool <name> answered: <content>` per tool. After a
//! participant's message (or a participant's answer to its question) it
//! checks these rules in order:
//!
//! 1. `use tool <name> with <json>` lines (the JSON an object; several such
//!    lines make parallel calls): calls each tool `<name>` with those
//!    arguments, when it is offered. This is how the whole agent loop, tool
//!    rounds included, runs on a fresh machine.
//! 2. `work for N seconds` (any case, N from 0 to 60): emits a progress event
//!    every 100 ms for N seconds (`Working: 1.3 of 2 seconds`), then replies
//!    `Worked for N seconds.`
//! 3. text containing `ask me` (any case): asks the participants `What
//!    should I do next?` through the `ask_participant` tool when it is
//!    offered (else as a plain reply).
//! 4. text ending with `?`: answers without asking back,
//!    `You asked: <text>` and then `My answer: <answer>`, where the answer is
//!    picked from a fixed list by a stable hash of the question, so the same
//!    question always gets the same answer.
//! 5. anything else: `You said: <text>` (`You sent no text.` when the message
//!    had no text).
//!
//! Every text reply ends with a line naming the model and effort it was asked
//! for, e.g. `(model offline-echo, effort medium)`, so a conversation shows
//! `/model` and `/effort` taking effect. Replies stream word by word, and
//! every answer reports a usage of one token per 4 bytes in and out.

use std::time::Duration;

use serde_json::{Value, json};
use tokio::time::{Instant, MissedTickBehavior};
use tokio_stream::StreamExt as _;
use tokio_stream::wrappers::IntervalStream;

use super::{
    ChatMessage, Model, ModelError, ModelEvent, ModelRequest, ModelStream, StopReason, ToolCall,
    Usage,
};

/// How often a long task reports progress.
const PROGRESS_INTERVAL: Duration = Duration::from_millis(100);

/// The longest `work for N seconds` the offline model accepts.
pub const MAX_WORK_SECONDS: u32 = 60;

/// The answers a question can get; which one is a pure function of the text.
const ANSWERS: [&str; 5] = ["Yes.", "No.", "Probably.", "Not yet.", "It depends."];

/// The tool the offline model asks its questions with, when offered.
const ASK_TOOL: &str = "ask_participant";

/// The deterministic offline model (see the module documentation).
#[derive(Clone, Copy, Debug, Default)]
pub struct OfflineModel;

impl OfflineModel {
    pub fn new() -> Self {
        OfflineModel
    }
}

impl Model for OfflineModel {
    fn stream(&self, request: ModelRequest) -> ModelStream {
        let usage = usage_of(&request);
        let footer = format!("(model {}, effort {})", request.model, request.effort);
        let reply = |answer: String| Answer::Text(format!("{answer}\n{footer}"));
        let offered = |name: &str| request.tools.iter().any(|tool| tool.name == name);
        let text = match request.messages.last() {
            // An answer to its question is a participant's message like any.
            Some(ChatMessage::Tool(output)) if output.name == ASK_TOOL => output.content.trim(),
            Some(ChatMessage::Tool(_)) => {
                let answer = reply(tool_report(&request.messages));
                return Box::pin(tokio_stream::iter(answer.events(usage)));
            }
            Some(ChatMessage::User { content }) => content.trim(),
            _ => "",
        };
        let answer = match Behaviour::of(text) {
            Behaviour::Work { seconds } => {
                let answer = reply(format!("Worked for {seconds} seconds."));
                return work(seconds, answer, usage);
            }
            Behaviour::UseTools(calls) => match calls.iter().find(|call| !offered(&call.name)) {
                Some(call) => reply(format!(
                    "There is no tool `{}` here. Tools: {}.",
                    call.name,
                    tool_names(&request)
                )),
                None => Answer::Calls(calls),
            },
            Behaviour::AskMe if offered(ASK_TOOL) => Answer::Calls(vec![ToolCall {
                id: "offline-ask-1".into(),
                name: ASK_TOOL.into(),
                arguments: json!({ "question": "What should I do next?" }),
            }]),
            Behaviour::AskMe => reply("What should I do next?".into()),
            Behaviour::Question => {
                reply(format!("You asked: {text}\nMy answer: {}", answer_to(text)))
            }
            Behaviour::Echo if text.is_empty() => reply("You sent no text.".into()),
            Behaviour::Echo => reply(format!("You said: {text}")),
        };
        Box::pin(tokio_stream::iter(answer.events(usage)))
    }
}

/// What the offline model answers with.
enum Answer {
    Text(String),
    Calls(Vec<ToolCall>),
}

impl Answer {
    /// The answer's events: text in word-sized deltas, or the calls; then
    /// usage and the stop.
    fn events(self, mut usage: Usage) -> Vec<Result<ModelEvent, ModelError>> {
        let mut events = Vec::new();
        let stop = match self {
            Answer::Text(text) => {
                usage.output_tokens = tokens(text.len());
                events.extend(
                    text.split_inclusive(' ')
                        .map(|piece| ModelEvent::TextDelta(piece.to_owned())),
                );
                StopReason::EndTurn
            }
            Answer::Calls(calls) => {
                usage.output_tokens = calls
                    .iter()
                    .map(|call| tokens(call.arguments.to_string().len()))
                    .sum();
                events.extend(calls.into_iter().map(ModelEvent::ToolCall));
                StopReason::ToolUse
            }
        };
        events.push(ModelEvent::Usage(usage));
        events.push(ModelEvent::Stop(stop));
        events.into_iter().map(Ok).collect()
    }
}

/// One token per 4 bytes, as the estimate everywhere else.
fn tokens(bytes: usize) -> u64 {
    (bytes as u64).div_ceil(4)
}

fn usage_of(request: &ModelRequest) -> Usage {
    let system = request.system.as_deref().map_or(0, str::len);
    Usage {
        input_tokens: tokens(system)
            + request
                .messages
                .iter()
                .map(ChatMessage::estimated_tokens)
                .sum::<u64>(),
        output_tokens: 0,
    }
}

fn tool_names(request: &ModelRequest) -> String {
    let names: Vec<&str> = request
        .tools
        .iter()
        .map(|tool| tool.name.as_str())
        .collect();
    if names.is_empty() {
        "none".into()
    } else {
        names.join(", ")
    }
}

/// What the tools of the last round answered, in call order.
fn tool_report(messages: &[ChatMessage]) -> String {
    let outputs: Vec<String> = messages
        .iter()
        .rev()
        .map_while(|message| match message {
            ChatMessage::Tool(output) => Some(output),
            _ => None,
        })
        .map(|output| {
            let verb = if output.is_error {
                "failed"
            } else {
                "answered"
            };
            format!("Tool {} {verb}: {}", output.name, output.content)
        })
        .collect();
    outputs.into_iter().rev().collect::<Vec<_>>().join("\n")
}

/// Which rule a text falls under.
#[derive(Debug, PartialEq)]
enum Behaviour {
    Work { seconds: u32 },
    UseTools(Vec<ToolCall>),
    AskMe,
    Question,
    Echo,
}

impl Behaviour {
    fn of(text: &str) -> Self {
        let lower = text.to_lowercase();
        if let Some(calls) = tool_calls(text) {
            Behaviour::UseTools(calls)
        } else if let Some(seconds) = work_seconds(&lower) {
            Behaviour::Work { seconds }
        } else if lower.contains("ask me") {
            Behaviour::AskMe
        } else if text.trim_end().ends_with('?') {
            Behaviour::Question
        } else {
            Behaviour::Echo
        }
    }
}

/// N in the first `work for N second(s)` of `lower`, if N is at most
/// [`MAX_WORK_SECONDS`].
fn work_seconds(lower: &str) -> Option<u32> {
    lower.match_indices("work for ").find_map(|(at, phrase)| {
        let rest = &lower[at + phrase.len()..];
        let digits = rest
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(rest.len());
        let seconds: u32 = rest[..digits].parse().ok()?;
        let unit = rest[digits..].trim_start();
        (unit.starts_with("second") && seconds <= MAX_WORK_SECONDS).then_some(seconds)
    })
}

/// The calls of every `use tool <name> with <json>` line of `text`, if
/// there is at least one and each one's JSON is an object. Ids are
/// `offline-call-1`, `-2`, ... in order.
fn tool_calls(text: &str) -> Option<Vec<ToolCall>> {
    let calls: Vec<ToolCall> = text
        .lines()
        .filter_map(|line| {
            let rest = line.trim().strip_prefix("use tool ")?;
            let (name, arguments) = rest.split_once(" with ")?;
            let arguments: Value = serde_json::from_str(arguments.trim()).ok()?;
            arguments
                .is_object()
                .then(|| (name.trim().to_owned(), arguments))
        })
        .enumerate()
        .map(|(index, (name, arguments))| ToolCall {
            id: format!("offline-call-{}", index + 1),
            name,
            arguments,
        })
        .collect();
    (!calls.is_empty()).then_some(calls)
}

/// A stable answer: FNV-1a of the question picks one of [`ANSWERS`]. (The
/// standard library's hasher is randomly seeded per process.)
fn answer_to(question: &str) -> &'static str {
    let hash = question
        .trim()
        .to_lowercase()
        .bytes()
        .fold(0xcbf2_9ce4_8422_2325_u64, |hash, byte| {
            (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3)
        });
    // The remainder is below ANSWERS.len(), so it fits a usize.
    ANSWERS[usize::try_from(hash % ANSWERS.len() as u64).unwrap_or(0)]
}

/// Progress every [`PROGRESS_INTERVAL`] for `seconds`, then `reply`. Built on
/// Tokio's clock, so dropping the stream stops the work at once and tests
/// may pause time.
fn work(seconds: u32, reply: Answer, usage: Usage) -> ModelStream {
    let mut ticks = tokio::time::interval_at(Instant::now() + PROGRESS_INTERVAL, PROGRESS_INTERVAL);
    ticks.set_missed_tick_behavior(MissedTickBehavior::Burst);
    let per_second = (Duration::from_secs(1).as_millis() / PROGRESS_INTERVAL.as_millis()) as u32;
    let mut tick = 0;
    let progress = IntervalStream::new(ticks)
        .take((seconds * per_second) as usize)
        .map(move |_| {
            tick += 1;
            Ok(ModelEvent::Progress(format!(
                "Working: {}.{} of {seconds} seconds",
                tick / per_second,
                tick % per_second
            )))
        });
    Box::pin(progress.chain(tokio_stream::iter(reply.events(usage))))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::{Effort, ToolOutput, ToolSpec};

    fn request(messages: Vec<ChatMessage>, tools: &[&str]) -> ModelRequest {
        ModelRequest {
            model: "offline-echo".into(),
            effort: Effort::Medium,
            system: None,
            messages,
            tools: tools
                .iter()
                .map(|name| ToolSpec {
                    name: (*name).into(),
                    description: String::new(),
                    input_schema: json!({"type": "object"}),
                })
                .collect(),
            max_output_tokens: None,
        }
    }

    fn user(text: &str) -> ChatMessage {
        ChatMessage::User {
            content: text.into(),
        }
    }

    async fn events_of(request: ModelRequest) -> Vec<ModelEvent> {
        OfflineModel::new()
            .stream(request)
            .collect::<Vec<_>>()
            .await
            .into_iter()
            .map(|event| event.expect("the offline model never fails"))
            .collect()
    }

    async fn events(text: &str) -> Vec<ModelEvent> {
        events_of(request(vec![user(text)], &[ASK_TOOL])).await
    }

    /// The text the deltas add up to.
    fn text(events: &[ModelEvent]) -> String {
        events
            .iter()
            .filter_map(|event| match event {
                ModelEvent::TextDelta(delta) => Some(delta.as_str()),
                _ => None,
            })
            .collect()
    }

    fn stop(events: &[ModelEvent]) -> &ModelEvent {
        events.last().expect("at least the stop")
    }

    #[tokio::test]
    async fn echoes_ordinary_text_in_word_deltas_then_usage_and_stop() {
        let events = events("hello there").await;
        assert_eq!(
            text(&events),
            "You said: hello there\n(model offline-echo, effort medium)"
        );
        assert_eq!(events[0], ModelEvent::TextDelta("You ".into()));
        assert!(
            matches!(&events[events.len() - 2], ModelEvent::Usage(usage) if usage.output_tokens > 0)
        );
        assert_eq!(stop(&events), &ModelEvent::Stop(StopReason::EndTurn));
    }

    #[tokio::test]
    async fn asks_through_the_ask_tool_when_it_is_offered() {
        let events = events("please Ask me something?").await;
        let ModelEvent::ToolCall(call) = &events[0] else {
            panic!("expected a tool call, got {events:?}");
        };
        assert_eq!(call.name, ASK_TOOL);
        assert_eq!(call.arguments["question"], "What should I do next?");
        assert_eq!(stop(&events), &ModelEvent::Stop(StopReason::ToolUse));

        let plain = events_of(request(vec![user("ask me")], &[])).await;
        assert!(text(&plain).starts_with("What should I do next?"));
    }

    #[tokio::test]
    async fn calls_offered_tools_in_parallel_and_reports_their_answers() {
        let text_in = "use tool dice with {\"sides\": 6}\nuse tool echo with {\"text\": \"hi\"}";
        let events = events_of(request(vec![user(text_in)], &["dice", "echo"])).await;
        let calls: Vec<&ToolCall> = events
            .iter()
            .filter_map(|event| match event {
                ModelEvent::ToolCall(call) => Some(call),
                _ => None,
            })
            .collect();
        assert_eq!(calls.len(), 2);
        assert_eq!(
            (calls[0].id.as_str(), calls[0].name.as_str()),
            ("offline-call-1", "dice")
        );
        assert_eq!(calls[1].arguments, json!({"text": "hi"}));

        let output = |id: &str, name: &str, content: &str| {
            ChatMessage::Tool(ToolOutput {
                call_id: id.into(),
                name: name.into(),
                content: content.into(),
                is_error: false,
            })
        };
        let after = events_of(request(
            vec![
                user(text_in),
                ChatMessage::Assistant {
                    content: String::new(),
                    tool_calls: calls.into_iter().cloned().collect(),
                },
                output("offline-call-1", "dice", "4"),
                output("offline-call-2", "echo", "hi"),
            ],
            &["dice", "echo"],
        ))
        .await;
        assert!(
            text(&after).starts_with("Tool dice answered: 4\nTool echo answered: hi\n"),
            "{}",
            text(&after)
        );

        let unknown = events_of(request(vec![user("use tool nope with {}")], &["dice"])).await;
        assert!(text(&unknown).starts_with("There is no tool `nope` here. Tools: dice."));
    }

    #[tokio::test]
    async fn answers_questions_the_same_way_every_time() {
        let first = events("Is it raining?").await;
        assert_eq!(first, events("Is it raining?").await);
        assert!(
            text(&first).starts_with("You asked: Is it raining?\nMy answer: "),
            "{}",
            text(&first)
        );
    }

    #[tokio::test(start_paused = true)]
    async fn works_with_progress_every_100_ms() {
        let started = Instant::now();
        let events = events("Work for 2 seconds please").await;
        assert_eq!(started.elapsed(), Duration::from_secs(2));
        assert_eq!(
            events[0],
            ModelEvent::Progress("Working: 0.1 of 2 seconds".into())
        );
        assert_eq!(
            events[19],
            ModelEvent::Progress("Working: 2.0 of 2 seconds".into())
        );
        assert!(text(&events).starts_with("Worked for 2 seconds."));
    }

    #[test]
    fn work_is_bounded_to_a_minute() {
        assert_eq!(
            Behaviour::of("work for 60 seconds"),
            Behaviour::Work { seconds: 60 }
        );
        assert_eq!(Behaviour::of("work for 61 seconds"), Behaviour::Echo);
        assert_eq!(
            Behaviour::of("work for 1 second"),
            Behaviour::Work { seconds: 1 }
        );
        assert_eq!(Behaviour::of("work for x seconds"), Behaviour::Echo);
    }
}
