//! A task's running work (a model turn, a command, a completion decision) as
//! a separate Tokio task its actor can cut at any moment.
//!
//! The work never touches the task: it reports progress and its result as
//! [`Step`]s over a channel, and the actor applies them. Dropping the [`Job`]
//! aborts the work at its next `.await`, and with it anything it was waiting
//! on (a model stream, a Wasm call); its partial output is never applied
//! because nobody reads the channel any more.

use std::future::Future;

use tokio::sync::mpsc;
use tokio::task::AbortHandle;

use super::completion::Verdict;
use crate::commands::{CommandFailure, Outcome};

/// Steps buffered between the work and the actor. Progress is at most a few
/// events a second, so this only absorbs bursts.
const STEPS: usize = 32;

/// What the work reports.
#[derive(Debug)]
pub(crate) enum Step {
    /// Progress text, shown as a `WORKING` status update.
    Progress(String),
    /// The result; the last step.
    Done(TurnOutput),
}

/// The result of a job.
#[derive(Debug)]
pub(crate) enum TurnOutput {
    /// The model answered.
    Reply { text: String, asks_question: bool },
    /// The model or one of its hooks failed; the text says why.
    Failed(String),
    /// A command ran (or failed); its effects are not applied yet.
    Command(Result<Outcome, CommandFailure>),
    /// A completion request was decided.
    Completion(Verdict),
}

/// The work's side of the channel.
#[derive(Clone)]
pub(crate) struct Progress(mpsc::Sender<Step>);

impl Progress {
    pub(crate) async fn report(&self, text: String) {
        // A closed channel means the job was cut; the abort follows.
        let _ = self.0.send(Step::Progress(text)).await;
    }
}

/// Running work. Dropping it aborts the work.
pub(crate) struct Job {
    steps: mpsc::Receiver<Step>,
    work: AbortHandle,
}

impl Job {
    /// Start `work` on its own Tokio task.
    pub(crate) fn spawn<F>(work: impl FnOnce(Progress) -> F) -> Job
    where
        F: Future<Output = TurnOutput> + Send + 'static,
    {
        let (sender, steps) = mpsc::channel(STEPS);
        let work = work(Progress(sender.clone()));
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
