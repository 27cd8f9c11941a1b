//! A task's events as the streams bindings forward.
//!
//! Each task's actor publishes its events, numbered by the task's sequence
//! number, on a broadcast channel: every subscriber sees the same events in
//! the same order, and a slow subscriber never holds up the actor. A stream
//! is a snapshot of the task followed by live events; it subscribes before
//! taking the snapshot and drops the events the snapshot already reflects,
//! so nothing falls in between.

use std::pin::Pin;
use std::task::{Context, Poll, ready};

use futures_core::Stream;
use tokio::sync::broadcast;
use tokio_stream::wrappers::BroadcastStream;
use tokio_stream::wrappers::errors::BroadcastStreamRecvError;

use crate::a2a::types::{StreamResponse, Task};

/// How many events a subscriber may fall behind before it is resynchronised.
pub(crate) const BUFFER: usize = 256;

/// An event and its place in its task's sequence.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Sequenced {
    pub(crate) seq: u64,
    pub(crate) event: StreamResponse,
}

/// A fresh snapshot of the task and its sequence number, for resynchronising.
pub(crate) type Snapshot = Box<dyn FnMut() -> Option<(u64, Task)> + Send>;

/// The stream one client reads: the Task, then live events until a status
/// update ends the turn (terminal, `INPUT_REQUIRED` or `AUTH_REQUIRED`).
///
/// The first item never ends the stream, even when it shows a parked task:
/// a subscription to a parked conversation stays open for the next turn.
///
/// A subscriber that falls more than [`BUFFER`] events behind has missed
/// some; it gets a fresh Task snapshot in their place (a Task is a valid
/// stream item) and goes on from there, or ends if that snapshot shows the
/// turn over.
pub(crate) struct TaskEvents {
    first: Option<StreamResponse>,
    live: BroadcastStream<Sequenced>,
    /// Events up to this number are already reflected in what was sent.
    seen: u64,
    finished: bool,
    snapshot: Snapshot,
}

impl TaskEvents {
    /// `live` must have been subscribed before `task` (at `seq`) was read.
    pub(crate) fn new(
        task: Task,
        seq: u64,
        live: broadcast::Receiver<Sequenced>,
        snapshot: Snapshot,
    ) -> Self {
        TaskEvents {
            first: Some(StreamResponse::Task(task)),
            live: BroadcastStream::new(live),
            seen: seq,
            finished: false,
            snapshot,
        }
    }

    fn resync(&mut self) -> Option<StreamResponse> {
        let (seq, task) = (self.snapshot)()?;
        self.seen = seq;
        self.finished = task.status.state.ends_turn();
        Some(StreamResponse::Task(task))
    }
}

impl Stream for TaskEvents {
    type Item = StreamResponse;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<StreamResponse>> {
        let this = self.get_mut();
        if let Some(first) = this.first.take() {
            return Poll::Ready(Some(first));
        }
        while !this.finished {
            match ready!(Pin::new(&mut this.live).poll_next(cx)) {
                Some(Ok(event)) if event.seq <= this.seen => continue,
                Some(Ok(Sequenced { seq, event })) => {
                    this.seen = seq;
                    this.finished = ends_turn(&event);
                    return Poll::Ready(Some(event));
                }
                Some(Err(BroadcastStreamRecvError::Lagged(missed))) => {
                    tracing::debug!(missed, "a task subscriber lagged; resynchronising");
                    match this.resync() {
                        Some(task) => return Poll::Ready(Some(task)),
                        None => this.finished = true,
                    }
                }
                // The task's actor is gone (the server is shutting down).
                None => this.finished = true,
            }
        }
        Poll::Ready(None)
    }
}

fn ends_turn(event: &StreamResponse) -> bool {
    matches!(event, StreamResponse::StatusUpdate(update) if update.status.state.ends_turn())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::a2a::types::{TaskState, TaskStatus, TaskStatusUpdateEvent};
    use tokio_stream::StreamExt as _;

    fn task(state: TaskState) -> Task {
        Task {
            id: "t".into(),
            status: TaskStatus::new(state),
            ..Task::default()
        }
    }

    fn update(seq: u64, state: TaskState) -> Sequenced {
        Sequenced {
            seq,
            event: StreamResponse::StatusUpdate(TaskStatusUpdateEvent {
                task_id: "t".into(),
                status: TaskStatus::new(state),
                ..TaskStatusUpdateEvent::default()
            }),
        }
    }

    fn states(items: &[StreamResponse]) -> Vec<(&'static str, TaskState)> {
        items
            .iter()
            .map(|item| match item {
                StreamResponse::Task(task) => ("task", task.status.state),
                StreamResponse::StatusUpdate(update) => ("update", update.status.state),
                other => panic!("unexpected {other:?}"),
            })
            .collect()
    }

    #[tokio::test]
    async fn a_parked_snapshot_stays_open_and_seen_events_are_dropped() {
        let (sender, live) = broadcast::channel(BUFFER);
        // Subscribed before the snapshot at seq 2: events 1 and 2 are in it.
        for event in [
            update(1, TaskState::Working),
            update(2, TaskState::InputRequired),
            update(3, TaskState::Working),
            update(4, TaskState::InputRequired),
            update(5, TaskState::Working),
        ] {
            sender.send(event).expect("a subscriber");
        }
        let events = TaskEvents::new(task(TaskState::InputRequired), 2, live, Box::new(|| None));
        let items: Vec<_> = events.collect().await;
        assert_eq!(
            states(&items),
            [
                ("task", TaskState::InputRequired),
                ("update", TaskState::Working),
                ("update", TaskState::InputRequired),
            ]
        );
    }

    #[tokio::test]
    async fn a_lagging_subscriber_is_resynchronised_with_a_snapshot() {
        let (sender, live) = broadcast::channel(2);
        for seq in 1..=5 {
            sender
                .send(update(seq, TaskState::Working))
                .expect("a subscriber");
        }
        sender
            .send(update(6, TaskState::InputRequired))
            .expect("a subscriber");
        let snapshot = Box::new(|| Some((6, task(TaskState::InputRequired))));
        let events = TaskEvents::new(task(TaskState::Working), 0, live, snapshot);
        let items: Vec<_> = events.collect().await;
        // The snapshot replaces what was missed and shows the turn over.
        assert_eq!(
            states(&items),
            [
                ("task", TaskState::Working),
                ("task", TaskState::InputRequired),
            ]
        );
    }
}
