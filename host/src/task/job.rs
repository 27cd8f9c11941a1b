//! A task's running work (a model turn, a command, a completion decision) as
//! a separate Tokio task its actor can cut at any moment.
//!
//! The work never touches the task: it tells the actor what happened as
//! [`Step`]s over a channel, and the actor applies them. Some steps wait for
//! the actor's answer (a tool call is journaled before the tool runs; a
//! sub-task exists before anyone waits for it). Dropping the [`Job`] aborts
//! the work at its next `.await`, and with it anything it was waiting on (a
//! model's HTTP stream, whose connection closes; a Wasm call; a tool); its
//! partial output is never applied because nobody reads the channel any
//! more.

use std::future::Future;

use serde::{Deserialize, Serialize};
use tokio::sync::{mpsc, oneshot};
use tokio::task::AbortHandle;

use super::completion::Verdict;
use crate::commands::{CommandFailure, Outcome};
use crate::domain::{
    ArtifactPiece, Disposition, ModelResponse, SubtaskView, ToolCall, ToolOutput, Usage,
};
use crate::hooks::{Progress, TraceRecord};

/// Steps buffered between the work and the actor. Progress and deltas come
/// at most a few hundred a second, so this only absorbs bursts; a full
/// buffer makes the work wait for the actor (backpressure), never drops.
const STEPS: usize = 64;

/// What the work reports.
#[derive(Debug)]
pub(crate) enum Step {
    /// Progress text, shown as a `WORKING` status update.
    Progress(String),
    /// The next piece of the reply, streamed to subscribers and not stored.
    Delta(String),
    /// Something to journal before the work goes on (see [`Record`]); the
    /// actor answers once it is committed.
    Record(Record, oneshot::Sender<()>),
    /// Delegate `goal` to a new sub-task; the actor answers with the
    /// sub-task and how to learn its end, or why it cannot.
    Spawn {
        goal: String,
        answer: oneshot::Sender<Result<Spawned, String>>,
    },
    /// The result; the last step.
    Done(TurnOutput),
}

/// Tool activity the agent loop journals as it happens, so a restart knows
/// what already ran.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) enum Record {
    /// The model called tools (after writing `text`).
    ToolCalls { text: String, calls: Vec<ToolCall> },
    /// One tool answered.
    ToolResult(ToolOutput),
}

/// A sub-task a tool call delegated to.
#[derive(Debug)]
pub(crate) struct Spawned {
    pub(crate) subtask: SubtaskView,
    /// The sub-task's final state and text, when it ends.
    pub(crate) ended: oneshot::Receiver<SubtaskEnd>,
}

/// How a delegated sub-task ended.
#[derive(Clone, Debug)]
pub(crate) struct SubtaskEnd {
    pub(crate) state: String,
    pub(crate) text: String,
}

/// The result of a job, with what ran to produce it.
/// Serializable: on the Temporal engine a turn runs as an activity, and
/// this is its result.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct TurnOutput {
    pub(crate) end: TurnEnd,
    pub(crate) trace: TraceRecord,
    /// Tokens the model reported over the whole turn, if it reported any.
    pub(crate) usage: Option<Usage>,
    /// How many stored messages a model turn's transcript went through:
    /// the worker's next turn reads about as many first.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) transcript_span: Option<u32>,
}

impl TurnOutput {
    pub(crate) fn untraced(end: TurnEnd) -> Self {
        TurnOutput {
            end,
            trace: TraceRecord::default(),
            usage: None,
            transcript_span: None,
        }
    }
}

/// How a job ended.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) enum TurnEnd {
    /// The model answered.
    Reply(Answer),
    /// The model asked the participants a question (`ask_participant`);
    /// their next message answers it.
    Asked(String),
    /// The model called tools that need a participant's approval first.
    AwaitingApproval(Vec<ToolCall>),
    /// The model or one of its hooks failed; the text says why.
    Failed(String),
    /// The loop stopped before the model's final answer (its tool rounds ran
    /// out); the text says so.
    Stopped(String),
    /// A command ran (or failed); its effects are not applied yet.
    Command(Result<Outcome, CommandFailure>),
    /// A completion request was decided.
    Completion(Verdict),
}

/// The model's final answer of a turn: its text, and what an `llm.invoked`
/// executor asked beyond it (checked by the actor, which has the limits).
#[derive(Debug, Default, Serialize, Deserialize)]
pub(crate) struct Answer {
    pub(crate) text: String,
    pub(crate) artifacts: Vec<ArtifactPiece>,
    pub(crate) disposition: Option<Disposition>,
}

impl From<ModelResponse> for Answer {
    fn from(response: ModelResponse) -> Self {
        Answer {
            text: response.text,
            artifacts: response.artifacts,
            disposition: response.disposition,
        }
    }
}

/// The work's side of the channel.
#[derive(Clone, Debug)]
pub(crate) struct Link(mpsc::Sender<Step>);

/// Executors (a tool's body) report progress through the turn's link.
impl Progress for Link {
    fn report(&self, text: String) {
        // Never blocks an executor: a full buffer drops this update.
        let _ = self.0.try_send(Step::Progress(text));
    }
}

impl Link {
    pub(crate) async fn progress(&self, text: String) {
        // A closed channel means the job was cut; the abort follows.
        let _ = self.0.send(Step::Progress(text)).await;
    }

    pub(crate) async fn delta(&self, text: String) {
        let _ = self.0.send(Step::Delta(text)).await;
    }

    /// Journal `record`; returns once it is committed. `false` if the task
    /// could not take it (the job is being cut, or the store failed).
    pub(crate) async fn record(&self, record: Record) -> bool {
        let (done, committed) = oneshot::channel();
        if self.0.send(Step::Record(record, done)).await.is_err() {
            return false;
        }
        committed.await.is_ok()
    }

    /// Ask the task to delegate `goal`.
    pub(crate) async fn spawn(&self, goal: String) -> Result<Spawned, String> {
        let (answer, spawned) = oneshot::channel();
        let step = Step::Spawn { goal, answer };
        if self.0.send(step).await.is_err() {
            return Err("the turn was cut".into());
        }
        spawned
            .await
            .unwrap_or_else(|_| Err("the task could not start the sub-task".into()))
    }
}

/// Running work. Dropping it aborts the work.
pub(crate) struct Job {
    steps: mpsc::Receiver<Step>,
    work: AbortHandle,
}

impl Job {
    /// Start `work` on its own Tokio task.
    pub(crate) fn spawn<F>(work: impl FnOnce(Link) -> F) -> Job
    where
        F: Future<Output = TurnOutput> + Send + 'static,
    {
        let (sender, steps) = mpsc::channel(STEPS);
        let work = work(Link(sender.clone()));
        let handle = tokio::spawn(async move {
            let output = work.await;
            let _ = sender.send(Step::Done(output)).await;
        });
        Job {
            steps,
            work: handle.abort_handle(),
        }
    }

    /// The next step; `None` if the work ended without a result (it panicked).
    pub(crate) async fn next(&mut self) -> Option<Step> {
        self.steps.recv().await
    }
}

impl Drop for Job {
    fn drop(&mut self) {
        self.work.abort();
    }
}
