//! What the rest of the harness asks of a task's actor, and how it answers.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use tokio::sync::{broadcast, oneshot};

use super::classify::Class;
use super::events::Sequenced;
use super::subtasks::Report;
use crate::a2a::error::A2aError;
use crate::a2a::types::{Message, Task};

/// A message on its way into a task.
pub(crate) struct Submission {
    pub(crate) sender: String,
    pub(crate) message: Message,
    pub(crate) class: Class,
    /// How much history the sender wants back (A2A `historyLength`): the
    /// task is rendered with only that, not copied whole and trimmed.
    pub(crate) history_length: Option<i32>,
    /// The task's change count when the service looked for this message's
    /// id in the store and did not find it: unchanged since, the actor need
    /// not look again. `None`: the actor looks.
    pub(crate) checked_at: Option<u64>,
    /// When the sender is answered (and so whether it needs the events).
    pub(crate) answering: Answering,
}

/// When a message's sender is answered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Answering {
    /// Once the message's turn ends (`SendMessage`).
    AtTurnEnd,
    /// Once the message is accepted, the turn under way
    /// (`SendMessage` with `returnImmediately`).
    AtAcceptance,
    /// With the turn's events as they come (`SendStreamingMessage`).
    Streamed,
}

/// A task as its actor answers with it: with at most the running turn's
/// messages as history (the actor holds no more between turns); the
/// service reads more from the store when the sender asked for more.
#[derive(Clone)]
pub(crate) struct Rendered {
    pub(crate) task: Task,
    /// Messages the whole history has.
    pub(crate) history_len: usize,
}

/// A message the task accepted (or had accepted before): the task right
/// after acceptance (at `seq`), a subscription to its events taken before,
/// and the task as it is when the turn ends.
pub(crate) struct Admitted {
    pub(crate) task: Rendered,
    pub(crate) seq: u64,
    /// Taken only for a sender that streams.
    pub(crate) events: Option<broadcast::Receiver<Sequenced>>,
    pub(crate) done: oneshot::Receiver<Result<TurnReply, A2aError>>,
    /// The message was accepted before and its turn is over: `task` is
    /// already the answer.
    pub(crate) finished: bool,
    /// The message starts a one-shot task for a sender that streams: its
    /// answer may be a message alone (`reply_stream`), which this tells.
    pub(crate) answer_watch: Option<AnswerWatch>,
}

/// Whether a turn's answer is a message alone: set by the task's actor
/// when the turn ends, before any event of the answer is sent, so whoever
/// reads one of those events also reads this.
///
/// On the Temporal engine the turn ends in a workflow, which says so only
/// in the Update's result, after the events: a watch made
/// [`AnswerWatch::at_turn_end`] has the stream ask the turn's result when
/// the event that ends the turn comes.
#[derive(Clone, Debug, Default)]
pub(crate) struct AnswerWatch {
    message: Arc<AtomicBool>,
    at_turn_end: bool,
}

impl AnswerWatch {
    /// A watch that is never set: the turn's result tells.
    #[cfg_attr(not(feature = "temporal"), allow(dead_code))]
    pub(crate) fn at_turn_end() -> Self {
        AnswerWatch {
            at_turn_end: true,
            ..AnswerWatch::default()
        }
    }

    pub(crate) fn answered_with_message(&self) {
        self.message.store(true, Ordering::Release);
    }

    pub(crate) fn is_message(&self) -> bool {
        self.message.load(Ordering::Acquire)
    }

    /// Whether only the turn's result says if the answer is a message.
    pub(crate) fn told_at_turn_end(&self) -> bool {
        self.at_turn_end
    }
}

/// What a blocking sender gets when its turn ends: the task, or the agent's
/// message alone when the answer asked for a message-only reply.
pub(crate) enum TurnReply {
    Task(Rendered),
    Message(Message),
}

pub(crate) type Reply<T> = oneshot::Sender<Result<T, A2aError>>;

/// What the rest of the harness asks of a task.
pub(crate) enum Command {
    Submit {
        submission: Submission,
        reply: Reply<Admitted>,
    },
    Cancel {
        by: Canceller,
        reply: Reply<Rendered>,
    },
    Report(Report),
}

pub(crate) enum Canceller {
    Participant(String),
    /// The parent task was canceled.
    Parent,
}

/// The error a caller gets when a task's actor is gone mid-request.
pub(crate) fn stopped() -> A2aError {
    A2aError::Internal("the task stopped before answering: the server is shutting down".into())
}
