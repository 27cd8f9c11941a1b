//! The running task actors, and how to reach a task whether its actor runs
//! or not.
//!
//! Most tasks have no actor: a parked conversation's actor stops after an
//! idle period, and tasks stored before a restart have none until someone
//! touches them. Reaching a task ([`Directory::deliver`],
//! [`Directory::subscribe_started`]) starts its actor from the store when it
//! is not running.
//!
//! Sending and subscribing happen under the directory's lock, and an actor
//! retires under the same lock only if its inbox is empty and nobody is
//! subscribed ([`Directory::retire`]). So a message is never handed to an
//! actor that is going away, and a subscriber is never left on a dead one.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use tokio::sync::{broadcast, mpsc, oneshot};

use super::access;
use super::env::Env;
use super::events::{Broadcaster, Sequenced};
use super::inbox::{Command, Reply, stopped};
use super::state::TaskRecord;
use crate::a2a::error::A2aError;

/// Starts the actor of a task read back from the store. The directory is
/// given it rather than naming the actor itself, so that the actor (which
/// reaches other tasks through the directory) and the directory do not
/// depend on each other.
pub(crate) type Starter = fn(&Arc<Directory>, TaskRecord) -> Result<(), A2aError>;

/// How often reaching a task retries when its actor stops in between (it
/// retired, or failed a write).
const ATTEMPTS: usize = 3;

/// How many of its newest messages an actor started from the store reads:
/// enough to find where its latest turn started and whether the model's
/// question is open (the whole history only when these do not show it).
const ACTOR_HISTORY: usize = 32;

/// Loads of different tasks run at once; two loads of one task never do.
/// Tasks share a lock only when their ids hash alike.
const LOAD_STRIPES: usize = 64;

/// What an actor's inbox carries: boxed, so the channel's preallocated
/// block is small (32 slots of a pointer, not of a whole message).
pub(crate) type Inbox = mpsc::UnboundedSender<Box<Command>>;

/// The running actors by task id.
pub(crate) struct Directory {
    env: Arc<Env>,
    start: Starter,
    running: Mutex<HashMap<String, Running>>,
    /// One is held while a task is read from the store and its actor
    /// started, so a task is never started twice; other tasks load at the
    /// same time (a store read is never behind a global lock).
    loading: [tokio::sync::Mutex<()>; LOAD_STRIPES],
    generations: AtomicU64,
}

/// Below this many slots a map is left as it is: shrinking it saves little
/// and would only make it grow again.
const KEEP_SLOTS: usize = 1024;

/// Shrink `map` to twice its entries once it is less than a quarter full,
/// so a map that empties and fills again is not rehashed every sweep.
fn shrink_if_mostly_empty<K: Eq + std::hash::Hash, V>(map: &mut HashMap<K, V>) {
    if map.capacity() > KEEP_SLOTS.max(4 * map.len()) {
        map.shrink_to(2 * map.len());
    }
}

/// One running actor's channels.
struct Running {
    inbox: Inbox,
    events: Arc<Broadcaster>,
    /// Tells this actor apart from an earlier or later one of the same task.
    generation: u64,
}

impl Directory {
    pub(crate) fn new(env: Arc<Env>, start: Starter) -> Self {
        Directory {
            env,
            start,
            running: Mutex::default(),
            loading: std::array::from_fn(|_| tokio::sync::Mutex::default()),
            generations: AtomicU64::default(),
        }
    }

    /// What every actor shares.
    pub(crate) fn env(&self) -> &Arc<Env> {
        &self.env
    }

    /// Record a newly started actor; returns its generation.
    pub(crate) fn register(&self, id: &str, inbox: Inbox, events: Arc<Broadcaster>) -> u64 {
        let generation = self.generations.fetch_add(1, Ordering::Relaxed) + 1;
        let running = Running {
            inbox,
            events,
            generation,
        };
        self.lock().insert(id.to_owned(), running);
        generation
    }

    /// Hand `command` to task `id`'s actor; gives it back if none runs.
    fn send(&self, id: &str, command: Box<Command>) -> Result<(), Box<Command>> {
        match self.lock().get(id) {
            Some(running) => running.inbox.send(command).map_err(|failed| failed.0),
            None => Err(command),
        }
    }

    /// Subscribe to task `id`'s events, if its actor runs.
    fn subscribe(&self, id: &str) -> Option<broadcast::Receiver<Sequenced>> {
        self.lock()
            .get(id)
            .map(|running| running.events.subscribe())
    }

    /// Let actor `generation` of task `id` stop if nothing is waiting for it:
    /// an empty inbox and no subscribers. `true` if it was removed.
    pub(crate) fn retire(
        &self,
        id: &str,
        generation: u64,
        inbox: &mpsc::UnboundedReceiver<Box<Command>>,
    ) -> bool {
        let mut running = self.lock();
        let idle = running.get(id).is_some_and(|entry| {
            entry.generation == generation && inbox.is_empty() && entry.events.receiver_count() == 0
        });
        if idle {
            running.remove(id);
        }
        idle
    }

    /// Forget actor `generation` of task `id` whatever it holds (it failed).
    pub(crate) fn remove(&self, id: &str, generation: u64) {
        let mut running = self.lock();
        if running
            .get(id)
            .is_some_and(|entry| entry.generation == generation)
        {
            running.remove(id);
        }
    }

    /// How many actors run now.
    pub(crate) fn len(&self) -> usize {
        self.lock().len()
    }

    /// Give back the room of actors that stopped: a map keeps its capacity,
    /// so after 50,000 conversations went idle it held 3 MB of empty slots
    /// for good. The maintenance sweep calls this once a minute.
    pub(crate) fn shrink(&self) {
        shrink_if_mostly_empty(&mut self.lock());
    }

    fn contains(&self, id: &str) -> bool {
        self.lock().contains_key(id)
    }

    // The lock guards plain map operations, which cannot panic halfway.
    fn lock(&self) -> MutexGuard<'_, HashMap<String, Running>> {
        self.running.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Start task `id`'s actor from the store unless it runs.
    pub(crate) async fn ensure(self: &Arc<Self>, id: &str) -> Result<(), A2aError> {
        if self.contains(id) {
            return Ok(());
        }
        let _loading = self.load_lock(id).lock().await;
        if self.contains(id) {
            return Ok(());
        }
        let mut record = self.read(id, Some(ACTOR_HISTORY)).await?;
        if !record.knows_its_turn() {
            record = self.read(id, None).await?;
        }
        // Everything read is stored: a parked task's actor holds none of it
        // (one a restart interrupted keeps it for the turn it resumes).
        if !record.is_active() {
            record.forget_history();
        }
        (self.start)(self, record)
    }

    async fn read(&self, id: &str, history: Option<usize>) -> Result<TaskRecord, A2aError> {
        let stored = self
            .env
            .store
            .load(id.to_owned(), history)
            .await
            .map_err(A2aError::from)?
            .ok_or_else(|| access::not_found(id))?;
        TaskRecord::from_stored(&stored).map_err(A2aError::Internal)
    }

    fn load_lock(&self, id: &str) -> &tokio::sync::Mutex<()> {
        use std::hash::{BuildHasher, BuildHasherDefault, DefaultHasher};
        let hash = BuildHasherDefault::<DefaultHasher>::default().hash_one(id);
        &self.loading[(hash % LOAD_STRIPES as u64) as usize]
    }

    /// Hand `command` to task `id`, starting its actor if needed.
    pub(crate) async fn deliver(
        self: &Arc<Self>,
        id: &str,
        command: Command,
    ) -> Result<(), A2aError> {
        let mut command = Box::new(command);
        for _ in 0..ATTEMPTS {
            match self.send(id, command) {
                Ok(()) => return Ok(()),
                Err(returned) => command = returned,
            }
            self.ensure(id).await?;
        }
        Err(stopped())
    }

    /// Ask task `id` something and wait for the answer.
    pub(crate) async fn ask<T>(
        self: &Arc<Self>,
        id: &str,
        command: impl FnOnce(Reply<T>) -> Command,
    ) -> Result<T, A2aError> {
        let (reply, answer) = oneshot::channel();
        self.deliver(id, command(reply)).await?;
        answer.await.map_err(|_| stopped())?
    }

    /// Subscribe to task `id`'s events from now on, starting its actor if
    /// needed.
    pub(crate) async fn subscribe_started(
        self: &Arc<Self>,
        id: &str,
    ) -> Result<broadcast::Receiver<Sequenced>, A2aError> {
        for _ in 0..ATTEMPTS {
            if let Some(events) = self.subscribe(id) {
                return Ok(events);
            }
            self.ensure(id).await?;
        }
        Err(stopped())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_map_whose_actors_stopped_gives_back_its_room_and_a_small_one_is_left_alone() {
        let mut map: HashMap<u32, u64> = (0..50_000).map(|n| (n, 0)).collect();
        shrink_if_mostly_empty(&mut map);
        assert!(map.capacity() >= 50_000, "a full map keeps its room");
        map.retain(|&n, _| n < 100);
        shrink_if_mostly_empty(&mut map);
        assert_eq!(map.len(), 100);
        assert!(
            map.capacity() < KEEP_SLOTS,
            "{} slots for 100",
            map.capacity()
        );
        let mut small: HashMap<u32, u64> = (0..KEEP_SLOTS as u32 / 2).map(|n| (n, 0)).collect();
        small.retain(|&n, _| n < 10);
        let before = small.capacity();
        shrink_if_mostly_empty(&mut small);
        assert_eq!(
            small.capacity(),
            before,
            "a small map is not worth shrinking"
        );
    }
}
