//! A task's events on the Temporal engine, for the streams a server serves
//! (`SendStreamingMessage`, `SubscribeToTask`, `returnImmediately`), kept
//! out of the workflow's history.
//!
//! The stored events (status and artifact updates, numbered by the task's
//! sequence) are the ones the workflow projects into the task store, so a
//! stream tails the store: it reads what follows the last event it sent
//! whenever this process's worker projected a step, and every
//! [`TemporalOptions::poll_store_every`] for the steps other processes'
//! workers project. The live-only events of a model turn (its text deltas
//! and progress notes) never reach the workflow: the worker running the
//! turn publishes them here, to the streams of its own process, which is
//! every stream of a server whose worker runs the turn. A stream on another
//! server misses them and loses nothing: the turn's final status holds
//! everything it said.
//!
//! [`TemporalOptions::poll_store_every`]: super::TemporalOptions::poll_store_every

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use serde_json::{Map, Value};
use tokio::sync::{broadcast, watch};
use tokio::time::MissedTickBehavior;

use crate::a2a::types::StreamResponse;
use crate::store::TaskStore;
use crate::task::events::{BUFFER, Sequenced, ends_turn};
use crate::task::state::TaskRecord;
use crate::task::transcript;

/// What one process's worker tells the streams of the same process.
#[derive(Default)]
pub(crate) struct SideChannel {
    /// Bumped after every step this process's worker projected.
    projected: watch::Sender<u64>,
    /// The live-only events of the turns this process runs, per task, for
    /// as long as a stream of the task listens.
    live: Mutex<HashMap<String, broadcast::Sender<Sequenced>>>,
}

impl SideChannel {
    /// A step of some task is in the store now.
    pub(crate) fn projected(&self) {
        self.projected
            .send_modify(|count| *count = count.wrapping_add(1));
    }

    /// Publish a live-only event of task `task_id` to its streams here.
    fn publish(&self, task_id: &str, event: Sequenced) {
        let mut live = self.lock();
        if let Some(sender) = live.get(task_id)
            && sender.send(event).is_err()
        {
            // Its last stream is gone.
            live.remove(task_id);
        }
    }

    fn listen(&self, task_id: &str) -> broadcast::Receiver<Sequenced> {
        self.lock()
            .entry(task_id.to_owned())
            .or_insert_with(|| broadcast::channel(BUFFER).0)
            .subscribe()
    }

    /// Forget task `task_id`'s channel if no stream listens any more.
    fn release(&self, task_id: &str) {
        let mut live = self.lock();
        if live
            .get(task_id)
            .is_some_and(|sender| sender.receiver_count() == 0)
        {
            live.remove(task_id);
        }
    }

    /// A receiver that changes whenever this process's worker projected a
    /// step.
    pub(crate) fn changes(&self) -> watch::Receiver<u64> {
        self.projected.subscribe()
    }

    // Plain map operations: nothing can panic halfway.
    fn lock(&self) -> MutexGuard<'_, HashMap<String, broadcast::Sender<Sequenced>>> {
        self.live.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// What a model turn running on this process's worker says as it goes.
pub(crate) struct LiveTurn {
    channel: Arc<SideChannel>,
    record: TaskRecord,
}

impl LiveTurn {
    /// `record` is the task as its turn starts: the workflow projected it
    /// before it ran the turn, so its sequence number is the last stored
    /// event's, the one a live event follows.
    pub(crate) fn new(channel: Arc<SideChannel>, record: TaskRecord) -> Self {
        LiveTurn { channel, record }
    }

    /// A piece of the answer's text.
    pub(crate) fn delta(&self, text: String) {
        self.send(text, transcript::stream_metadata(transcript::TEXT_DELTA));
    }

    /// A progress note (stored by the embedded engine; on this one the
    /// turn's activity cannot write between the workflow's steps).
    pub(crate) fn progress(&self, text: String) {
        self.send(text, Map::new());
    }

    fn send(&self, text: String, metadata: Map<String, Value>) {
        let event = transcript::live_update(&self.record, text, metadata);
        self.channel
            .publish(&self.record.id, Sequenced::live(self.record.seq, event));
    }
}

/// Task `task_id`'s events after stored event `after`, as a receiver that
/// `TaskEvents` reads: the stored ones tailed from `store`, the live ones
/// from `channel`. The tail stops once nobody reads it, or the task ended.
pub(crate) fn follow(
    store: Arc<dyn TaskStore>,
    channel: Arc<SideChannel>,
    task_id: String,
    after: u64,
    poll: Duration,
) -> broadcast::Receiver<Sequenced> {
    let (events, receiver) = broadcast::channel(BUFFER);
    let live = channel.listen(&task_id);
    tokio::spawn(async move {
        let tail = Tail {
            store,
            task_id,
            seen: after,
            events,
        };
        tail.run(&channel, live, poll).await;
    });
    receiver
}

struct Tail {
    store: Arc<dyn TaskStore>,
    task_id: String,
    seen: u64,
    events: broadcast::Sender<Sequenced>,
}

impl Tail {
    async fn run(
        mut self,
        channel: &SideChannel,
        mut live: broadcast::Receiver<Sequenced>,
        poll: Duration,
    ) {
        let mut changes = channel.changes();
        // The first tick is at once: a step may have landed since `after`.
        let mut tick = tokio::time::interval(poll);
        tick.set_missed_tick_behavior(MissedTickBehavior::Delay);
        while self.events.receiver_count() > 0 {
            tokio::select! {
                event = live.recv() => {
                    match event {
                        Ok(event) => {
                            let _ = self.events.send(event);
                        }
                        // A missed delta is only a missed delta.
                        Err(broadcast::error::RecvError::Lagged(_)) => {}
                        Err(broadcast::error::RecvError::Closed) => {
                            live = channel.listen(&self.task_id);
                        }
                    }
                    continue;
                }
                _ = tick.tick() => {}
                _ = changes.changed() => {}
            }
            if !self.read_stored().await {
                break;
            }
        }
        drop(live);
        channel.release(&self.task_id);
    }

    /// Send the stored events after the last one sent; `false` once the
    /// task ended (or the store cannot say, which ends the stream: the
    /// client can resubscribe).
    async fn read_stored(&mut self) -> bool {
        let Ok(stored) = self
            .store
            .events_after(self.task_id.clone(), self.seen)
            .await
        else {
            return false;
        };
        for event in stored {
            let Ok(parsed) = serde_json::from_str::<StreamResponse>(&event.document) else {
                return false;
            };
            self.seen = event.seq;
            let ends_task = ends_turn(&parsed) && is_terminal(&parsed);
            let _ = self.events.send(Sequenced::stored(event.seq, parsed));
            if ends_task {
                return false;
            }
        }
        true
    }
}

fn is_terminal(event: &StreamResponse) -> bool {
    matches!(event, StreamResponse::StatusUpdate(update) if update.status.state.is_terminal())
}
