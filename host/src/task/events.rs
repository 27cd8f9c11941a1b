//! A task's events as the streams bindings forward.
//!
//! Each task's actor publishes its events, numbered by the task's sequence
//! number, on a broadcast channel, after they are committed to the store:
//! every subscriber sees the same events in the same order, and a slow
//! subscriber never holds up the actor. A stream is a snapshot of the task
//! followed by live events; it subscribes before taking the snapshot and
//! drops the events the snapshot already reflects, so nothing falls in
//! between.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::{Context, Poll, ready};

use futures_core::Stream;
use std::collections::VecDeque;
use tokio::sync::broadcast;
use tokio_stream::wrappers::BroadcastStream;
use tokio_stream::wrappers::errors::BroadcastStreamRecvError;

use crate::a2a::types::{StreamResponse, Task};

/// How many events a subscriber may fall behind before it replays from the
/// store.
pub(crate) const BUFFER: usize = 256;

/// A task's broadcast channel, made when the first subscriber comes and let
/// go once nobody listens: most tasks are never watched (a blocking
/// `SendMessage` needs no stream), and the channel preallocates [`BUFFER`]
/// slots, about 12 KB, which would make every live conversation that much
/// larger (`cargo bench --bench parked`).
#[derive(Default)]
pub(crate) struct Broadcaster {
    sender: Mutex<Option<broadcast::Sender<Sequenced>>>,
}

impl Broadcaster {
    /// A receiver of the events sent from now on.
    pub(crate) fn subscribe(&self) -> broadcast::Receiver<Sequenced> {
        self.lock()
            .get_or_insert_with(|| broadcast::channel(BUFFER).0)
            .subscribe()
    }

    /// Send `event` to whoever listens (nobody is fine).
    pub(crate) fn send(&self, event: Sequenced) {
        if let Some(sender) = self.lock().as_ref() {
            let _ = sender.send(event);
        }
    }

    pub(crate) fn receiver_count(&self) -> usize {
        self.lock()
            .as_ref()
            .map_or(0, broadcast::Sender::receiver_count)
    }

    /// Free the channel if nobody listens any more.
    pub(crate) fn release_if_unwatched(&self) {
        let mut sender = self.lock();
        if sender
            .as_ref()
            .is_some_and(|sender| sender.receiver_count() == 0)
        {
            *sender = None;
        }
    }

    // Plain reads and writes of an `Option`: nothing can panic halfway.
    fn lock(&self) -> MutexGuard<'_, Option<broadcast::Sender<Sequenced>>> {
        self.sender.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// An event and its place in its task's sequence.
///
/// Shared, not copied: every subscriber gets the same event, and the
/// broadcast channel preallocates [`BUFFER`] slots per watched task, so a
/// slot the size of a pointer keeps it small (an inline event made each
/// channel ~110 KB; `cargo bench --bench parked`).
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Sequenced {
    pub(crate) seq: u64,
    pub(crate) event: Arc<StreamResponse>,
    /// A live-only event (a text delta): never stored, never pushed, not
    /// numbered (it carries the number of the last stored event), and
    /// not replayed to a subscriber that fell behind. The turn's final
    /// status holds everything it said.
    pub(crate) live: bool,
}

impl Sequenced {
    /// Stored event number `seq`.
    pub(crate) fn stored(seq: u64, event: StreamResponse) -> Self {
        Sequenced {
            seq,
            event: Arc::new(event),
            live: false,
        }
    }

    /// A live-only event following stored event number `seq`.
    pub(crate) fn live(seq: u64, event: StreamResponse) -> Self {
        Sequenced {
            seq,
            event: Arc::new(event),
            live: true,
        }
    }
}

/// The events numbered after `seq`, read back from the store's log.
pub(crate) type Replay = Box<dyn FnMut(u64) -> Replaying + Send>;

/// A replay in progress.
pub(crate) type Replaying = Pin<Box<dyn Future<Output = Option<Vec<Sequenced>>> + Send>>;

/// The stream one client reads: the Task, then live events until a status
/// update ends the turn (terminal, `INPUT_REQUIRED` or `AUTH_REQUIRED`).
///
/// The first item never ends the stream, even when it shows a parked task:
/// a subscription to a parked conversation stays open for the next turn
/// (unless the stream is for a resent message whose turn is already over).
///
/// A subscriber that falls more than [`BUFFER`] events behind has missed
/// some; it reads them from the store's log, in order, and goes on live. If
/// the store cannot answer, the stream ends (the client can resubscribe).
pub(crate) struct TaskEvents {
    first: Option<StreamResponse>,
    live: BroadcastStream<Sequenced>,
    /// Events up to this number are already reflected in what was sent.
    seen: u64,
    finished: bool,
    /// Whether the last item sent was a live-only event.
    last_live: bool,
    replay: Replay,
    replaying: Option<Replaying>,
    replayed: VecDeque<Sequenced>,
}

impl TaskEvents {
    /// `live` must have been subscribed before `task` (at `seq`) was read.
    pub(crate) fn new(
        task: Task,
        seq: u64,
        live: broadcast::Receiver<Sequenced>,
        replay: Replay,
    ) -> Self {
        TaskEvents {
            first: Some(StreamResponse::Task(task)),
            live: BroadcastStream::new(live),
            seen: seq,
            finished: false,
            last_live: false,
            replay,
            replaying: None,
            replayed: VecDeque::new(),
        }
    }

    /// A stream that ends after its first item.
    pub(crate) fn only(task: Task) -> Self {
        let (_, live) = broadcast::channel(1);
        let mut events = TaskEvents::new(task, 0, live, Box::new(|_| Box::pin(async { None })));
        events.finished = true;
        events
    }

    /// Whether the item last sent was a live-only event (a text delta, or
    /// a progress note on the Temporal engine).
    pub(crate) fn last_was_live(&self) -> bool {
        self.last_live
    }

    /// The next event to send, if it is new.
    fn take(&mut self, Sequenced { seq, event, live }: Sequenced) -> Option<StreamResponse> {
        self.last_live = live;
        if live {
            // Only while the stream is up to date: a live event behind what
            // was sent (or ahead, after a gap) belongs to another moment.
            return (seq == self.seen).then(|| Arc::unwrap_or_clone(event));
        }
        if seq <= self.seen {
            return None;
        }
        self.seen = seq;
        self.finished = ends_turn(&event);
        Some(Arc::unwrap_or_clone(event))
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
            if let Some(event) = this.replayed.pop_front() {
                if let Some(event) = this.take(event) {
                    return Poll::Ready(Some(event));
                }
                continue;
            }
            if let Some(replaying) = &mut this.replaying {
                let events = ready!(replaying.as_mut().poll(cx));
                this.replaying = None;
                match events {
                    Some(events) => this.replayed.extend(events),
                    None => this.finished = true,
                }
                continue;
            }
            match ready!(Pin::new(&mut this.live).poll_next(cx)) {
                Some(Ok(event)) => {
                    if let Some(event) = this.take(event) {
                        return Poll::Ready(Some(event));
                    }
                }
                Some(Err(BroadcastStreamRecvError::Lagged(missed))) => {
                    tracing::debug!(missed, "a task subscriber lagged; replaying from the store");
                    this.replaying = Some((this.replay)(this.seen));
                }
                // The task's actor is gone (the server is shutting down).
                None => this.finished = true,
            }
        }
        Poll::Ready(None)
    }
}

/// A status update that ends the turn (terminal, `INPUT_REQUIRED` or
/// `AUTH_REQUIRED`).
pub(crate) fn ends_turn(event: &StreamResponse) -> bool {
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
        Sequenced::stored(
            seq,
            StreamResponse::StatusUpdate(TaskStatusUpdateEvent {
                task_id: "t".into(),
                status: TaskStatus::new(state),
                ..TaskStatusUpdateEvent::default()
            }),
        )
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
        let events = TaskEvents::new(task(TaskState::InputRequired), 2, live, no_replay());
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

    fn no_replay() -> Replay {
        Box::new(|_| Box::pin(async { None }))
    }

    #[tokio::test]
    async fn a_lagging_subscriber_replays_what_it_missed_from_the_store() {
        let (sender, live) = broadcast::channel(2);
        for seq in 1..=5 {
            sender
                .send(update(seq, TaskState::Working))
                .expect("a subscriber");
        }
        sender
            .send(update(6, TaskState::InputRequired))
            .expect("a subscriber");
        // The log has everything; the stream asks for what follows seq 1.
        let replay: Replay = Box::new(|after| {
            Box::pin(async move {
                assert_eq!(after, 1);
                let mut log: Vec<Sequenced> =
                    (2..=5).map(|seq| update(seq, TaskState::Working)).collect();
                log.push(update(6, TaskState::InputRequired));
                Some(log)
            })
        });
        let events = TaskEvents::new(task(TaskState::Working), 1, live, replay);
        let items: Vec<_> = events.collect().await;
        // Every missed event, in order, each once, ending with the turn.
        let mut expected = vec![("task", TaskState::Working)];
        expected.extend([("update", TaskState::Working); 4]);
        expected.push(("update", TaskState::InputRequired));
        assert_eq!(states(&items), expected);
    }

    #[tokio::test]
    async fn a_stream_for_a_finished_turn_is_the_task_alone() {
        let items: Vec<_> = TaskEvents::only(task(TaskState::InputRequired))
            .collect()
            .await;
        assert_eq!(states(&items), [("task", TaskState::InputRequired)]);
    }
}
