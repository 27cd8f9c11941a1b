//! What the rest of the harness asks of a task's actor, and how it answers.

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
}

/// A message the task accepted (or had accepted before): the task right
/// after acceptance (at `seq`), a subscription to its events taken before,
/// and the task as it is when the turn ends.
pub(crate) struct Admitted {
    pub(crate) task: Task,
    pub(crate) seq: u64,
    pub(crate) events: broadcast::Receiver<Sequenced>,
    pub(crate) done: oneshot::Receiver<Result<TurnReply, A2aError>>,
    /// The message was accepted before and its turn is over: `task` is
    /// already the answer.
    pub(crate) finished: bool,
}

/// What a blocking sender gets when its turn ends: the task, or the agent's
/// message alone when the answer asked for a message-only reply.
#[derive(Debug)]
pub(crate) enum TurnReply {
    Task(Task),
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
        reply: Reply<Task>,
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
