//! The offline model: deterministic, no network, no keys. It is the default
//! provider, so it answers to any model name.
//!
//! It reads the text of the last user message in the history (its text parts
//! joined by newlines) and, checking the rules in this order:
//!
//! 1. `work for N seconds` (any case, N from 0 to 60): emits a progress event
//!    every 100 ms for N seconds (`Working: 1.3 of 2 seconds`), then replies
//!    `Worked for N seconds.`
//! 2. text containing `ask me` (any case): replies with the question
//!    `What should I do next?` and marks the reply as asking a question.
//! 3. text ending with `?`: answers without asking back,
//!    `You asked: <text>` and then `My answer: <answer>`, where the answer is
//!    picked from a fixed list by a stable hash of the question, so the same
//!    question always gets the same answer.
//! 4. anything else: `You said: <text>` (`You sent no text.` when the message
//!    had no text part).
//!
//! Every reply ends with a line naming the model and effort it was asked
//! for, e.g. `(model offline-echo, effort medium)`, so a conversation shows
//! `/model` and `/effort` taking effect.

use std::time::Duration;

use tokio::time::{Instant, MissedTickBehavior};
use tokio_stream::StreamExt as _;
use tokio_stream::wrappers::IntervalStream;

use super::{Model, ModelEvent, ModelRequest, ModelStream};
use crate::a2a::types::{Message, Role};

/// How often a long task reports progress.
const PROGRESS_INTERVAL: Duration = Duration::from_millis(100);

/// The longest `work for N seconds` the offline model accepts.
pub const MAX_WORK_SECONDS: u32 = 60;

/// The answers a question can get; which one is a pure function of the text.
const ANSWERS: [&str; 5] = ["Yes.", "No.", "Probably.", "Not yet.", "It depends."];

/// The deterministic offline model (see the module documentation).
#[derive(Clone, Copy, Debug, Default)]
pub struct OfflineModel;

impl OfflineModel {
    pub fn new() -> Self {
        OfflineModel
    }
}

impl Model for OfflineModel {
    fn respond(&self, request: ModelRequest) -> ModelStream {
        let text = last_user_text(&request.history);
        let footer = format!("(model {}, effort {})", request.model, request.effort);
        let reply = |answer: String, asks_question: bool| ModelEvent::Reply {
            text: format!("{answer}\n{footer}"),
            asks_question,
        };
        match Behaviour::of(&text) {
            Behaviour::Work { seconds } => work(
                seconds,
                reply(format!("Worked for {seconds} seconds."), false),
            ),
            Behaviour::AskMe => once(reply("What should I do next?".into(), true)),
            Behaviour::Question => once(reply(
                format!("You asked: {text}\nMy answer: {}", answer_to(&text)),
                false,
            )),
            Behaviour::Echo if text.is_empty() => once(reply("You sent no text.".into(), false)),
            Behaviour::Echo => once(reply(format!("You said: {text}"), false)),
        }
    }
}

/// Which rule a text falls under.
#[derive(Debug, PartialEq, Eq)]
enum Behaviour {
    Work { seconds: u32 },
    AskMe,
    Question,
    Echo,
}

impl Behaviour {
    fn of(text: &str) -> Self {
        let lower = text.to_lowercase();
        if let Some(seconds) = work_seconds(&lower) {
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

/// The text of the last user message, its text parts joined by newlines.
fn last_user_text(history: &[Message]) -> String {
    history
        .iter()
        .rev()
        .find(|message| message.role == Role::User)
        .map(|message| {
            let texts: Vec<&str> = message.parts.iter().filter_map(|p| p.as_text()).collect();
            texts.join("\n").trim().to_owned()
        })
        .unwrap_or_default()
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

fn once(event: ModelEvent) -> ModelStream {
    Box::pin(tokio_stream::once(Ok(event)))
}

/// Progress every [`PROGRESS_INTERVAL`] for `seconds`, then `reply`. Built on
/// Tokio's clock, so dropping the stream stops the work at once and tests
/// may pause time.
fn work(seconds: u32, reply: ModelEvent) -> ModelStream {
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
    Box::pin(progress.chain(tokio_stream::once(Ok(reply))))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::a2a::types::Part;

    fn request(text: &str) -> ModelRequest {
        ModelRequest {
            model: "offline-echo".into(),
            effort: "medium".into(),
            history: vec![Message::new(Role::User, "m1", vec![Part::text(text)])],
        }
    }

    async fn events(text: &str) -> Vec<ModelEvent> {
        let stream = OfflineModel::new().respond(request(text));
        stream
            .collect::<Vec<_>>()
            .await
            .into_iter()
            .map(|event| event.expect("the offline model never fails"))
            .collect()
    }

    fn reply(text: &str, asks_question: bool) -> ModelEvent {
        ModelEvent::Reply {
            text: format!("{text}\n(model offline-echo, effort medium)"),
            asks_question,
        }
    }

    #[tokio::test]
    async fn echoes_ordinary_text() {
        assert_eq!(events("hello").await, vec![reply("You said: hello", false)]);
    }

    #[tokio::test]
    async fn asks_when_told_to() {
        assert_eq!(
            events("please Ask me something?").await,
            vec![reply("What should I do next?", true)]
        );
    }

    #[tokio::test]
    async fn answers_questions_the_same_way_every_time() {
        let first = events("Is it raining?").await;
        assert_eq!(first, events("Is it raining?").await);
        let ModelEvent::Reply {
            text,
            asks_question,
        } = &first[0]
        else {
            panic!("expected a reply, got {first:?}");
        };
        assert!(!asks_question);
        assert!(
            text.starts_with("You asked: Is it raining?\nMy answer: "),
            "{text}"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn works_with_progress_every_100_ms() {
        let started = Instant::now();
        let events = events("Work for 2 seconds please").await;
        assert_eq!(started.elapsed(), Duration::from_secs(2));
        assert_eq!(events.len(), 21);
        assert_eq!(
            events[0],
            ModelEvent::Progress("Working: 0.1 of 2 seconds".into())
        );
        assert_eq!(
            events[19],
            ModelEvent::Progress("Working: 2.0 of 2 seconds".into())
        );
        assert_eq!(events[20], reply("Worked for 2 seconds.", false));
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
