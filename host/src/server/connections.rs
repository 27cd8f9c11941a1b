//! The open connections: a cap on how many, which of them are idle, and the
//! one idle the longest, closed to make room.
//!
//! Each connection holds a file descriptor and some memory from accept until
//! it closes, whether or not it ever sends a request: a flood of idle
//! sockets once kept the server from accepting anyone for twenty seconds.
//! So at most `[limits] max_connections` are open at once (TLS handshakes
//! included). A connection beyond the cap closes the connection that has
//! been idle (no request in flight, no response streaming) the longest; the
//! newcomer takes its place. Only when every connection is busy is the
//! newcomer refused (a 503, then closed). A normal client therefore gets
//! served during a flood of idle sockets: its connection is the newest idle
//! one, and it stops being idle as soon as its request's headers arrive.
//!
//! Idleness is tracked per request: a request is in flight from the moment
//! the router gets it until its response body is dropped (so an SSE stream
//! keeps its connection busy for as long as it runs).

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use tokio::sync::{Notify, OwnedSemaphorePermit, Semaphore};

/// How long a newcomer waits for the connection it displaced to close. An
/// idle connection closes at once; one whose request began in between
/// finishes it first, and then the newcomer is refused instead.
const DISPLACE_WAIT: Duration = Duration::from_secs(1);

/// How often, at most, the log hears that the cap (or an accept error) was
/// hit; the occurrences in between are counted in the next line.
pub(crate) const NOTICE_INTERVAL: Duration = Duration::from_secs(10);

/// The open connections of one server.
pub(crate) struct Connections {
    max: usize,
    slots: Arc<Semaphore>,
    registry: Mutex<Registry>,
    cap_notice: Notice,
}

#[derive(Default)]
struct Registry {
    next_id: u64,
    /// Ticks order the idle connections: each becoming idle takes the next.
    clock: u64,
    /// Idle connections by the tick they became idle: the first is idle the longest.
    idle: BTreeMap<u64, u64>,
    entries: HashMap<u64, Entry>,
}

struct Entry {
    in_flight: u32,
    idle_since: Option<u64>,
    close: Arc<Notify>,
}

/// An admitted connection's place under the cap; dropping it frees the place.
pub(crate) struct Admission {
    id: u64,
    connections: Arc<Connections>,
    /// Notified when the connection is to close (displaced by a newcomer).
    pub(crate) close: Arc<Notify>,
    _slot: OwnedSemaphorePermit,
}

/// Marks requests of one connection as in flight.
#[derive(Clone)]
pub(crate) struct Activity {
    id: u64,
    connections: Arc<Connections>,
}

/// One request in flight; dropping it ends the request.
pub(crate) struct InFlight {
    activity: Activity,
}

impl Connections {
    pub(crate) fn new(max: usize) -> Arc<Self> {
        let max = max.max(1);
        Arc::new(Connections {
            max,
            slots: Arc::new(Semaphore::new(max)),
            registry: Mutex::default(),
            cap_notice: Notice::default(),
        })
    }

    /// A place for a new connection: a free one, or the place of the
    /// connection idle the longest, closed for it. `None`: every connection
    /// is busy, refuse this one.
    pub(crate) async fn admit(self: &Arc<Self>) -> Option<Admission> {
        if let Ok(slot) = Arc::clone(&self.slots).try_acquire_owned() {
            return Some(self.register(slot));
        }
        let max = self.max;
        if !self.close_longest_idle() {
            self.cap_notice.note(|more| {
                tracing::warn!(
                    "connection cap reached (limits.max_connections = {max}) and every \
                     connection is busy: refusing new connections with 503{}",
                    since_last(more)
                );
            });
            return None;
        }
        self.cap_notice.note(|more| {
            tracing::warn!(
                "connection cap reached (limits.max_connections = {max}): closing the \
                 connection idle the longest to make room for each new one{}",
                since_last(more)
            );
        });
        match tokio::time::timeout(DISPLACE_WAIT, Arc::clone(&self.slots).acquire_owned()).await {
            Ok(Ok(slot)) => Some(self.register(slot)),
            _ => None,
        }
    }

    /// Ask the connection idle the longest to close; false if none is idle.
    pub(crate) fn close_longest_idle(&self) -> bool {
        let mut registry = self.registry();
        let Some((_, id)) = registry.idle.pop_first() else {
            return false;
        };
        match registry.entries.get_mut(&id) {
            Some(entry) => {
                entry.idle_since = None;
                entry.close.notify_one();
                true
            }
            None => false,
        }
    }

    /// Resolves once every connection has closed.
    pub(crate) async fn drained(&self) {
        let all = u32::try_from(self.max).unwrap_or(u32::MAX);
        let _all = self.slots.acquire_many(all).await;
    }

    fn register(self: &Arc<Self>, slot: OwnedSemaphorePermit) -> Admission {
        let close = Arc::new(Notify::new());
        let mut registry = self.registry();
        let id = registry.next_id;
        registry.next_id += 1;
        let since = registry.tick();
        registry.idle.insert(since, id);
        registry.entries.insert(
            id,
            Entry {
                in_flight: 0,
                idle_since: Some(since),
                close: Arc::clone(&close),
            },
        );
        Admission {
            id,
            connections: Arc::clone(self),
            close,
            _slot: slot,
        }
    }

    // The registry's operations are plain map updates that cannot panic halfway.
    fn registry(&self) -> MutexGuard<'_, Registry> {
        self.registry.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Registry {
    fn tick(&mut self) -> u64 {
        self.clock += 1;
        self.clock
    }
}

impl Admission {
    /// The handle that marks this connection's requests.
    pub(crate) fn activity(&self) -> Activity {
        Activity {
            id: self.id,
            connections: Arc::clone(&self.connections),
        }
    }
}

impl Drop for Admission {
    fn drop(&mut self) {
        let mut registry = self.connections.registry();
        if let Some(entry) = registry.entries.remove(&self.id)
            && let Some(since) = entry.idle_since
        {
            registry.idle.remove(&since);
        }
    }
}

impl Activity {
    /// A request begins: the connection is busy until the guard drops.
    pub(crate) fn begin(&self) -> InFlight {
        let mut registry = self.connections.registry();
        let Registry { idle, entries, .. } = &mut *registry;
        if let Some(entry) = entries.get_mut(&self.id) {
            entry.in_flight += 1;
            if let Some(since) = entry.idle_since.take() {
                idle.remove(&since);
            }
        }
        InFlight {
            activity: self.clone(),
        }
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        let mut registry = self.activity.connections.registry();
        let since = registry.tick();
        let Registry { idle, entries, .. } = &mut *registry;
        if let Some(entry) = entries.get_mut(&self.activity.id) {
            entry.in_flight = entry.in_flight.saturating_sub(1);
            if entry.in_flight == 0 && entry.idle_since.is_none() {
                entry.idle_since = Some(since);
                idle.insert(since, self.activity.id);
            }
        }
    }
}

/// A log line at most every [`NOTICE_INTERVAL`], counting the occurrences
/// it did not report.
#[derive(Default)]
pub(crate) struct Notice {
    state: Mutex<NoticeState>,
}

#[derive(Default)]
struct NoticeState {
    last: Option<Instant>,
    unreported: u64,
}

impl Notice {
    /// Report through `log` (given the count of unreported occurrences) if
    /// the last report is old enough, else count this one.
    pub(crate) fn note(&self, log: impl FnOnce(u64)) {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        let now = Instant::now();
        if state
            .last
            .is_some_and(|last| now.duration_since(last) < NOTICE_INTERVAL)
        {
            state.unreported += 1;
            return;
        }
        let more = std::mem::take(&mut state.unreported);
        state.last = Some(now);
        drop(state);
        log(more);
    }
}

/// ` (N more since the last notice)`, or nothing.
pub(crate) fn since_last(more: u64) -> String {
    if more == 0 {
        String::new()
    } else {
        format!(" ({more} more since the last notice)")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn beyond_the_cap_the_connection_idle_the_longest_makes_room() {
        let connections = Connections::new(2);
        let first = connections.admit().await.expect("room");
        let second = connections.admit().await.expect("room");
        // The first becomes busy, then idle again: now the second is idle the longest.
        drop(first.activity().begin());
        let waiting = {
            let connections = Arc::clone(&connections);
            tokio::spawn(async move { connections.admit().await.is_some() })
        };
        second.close.notified().await;
        drop(second);
        assert!(waiting.await.expect("joined"), "the newcomer got its place");
        drop(first);
    }

    #[tokio::test]
    async fn with_every_connection_busy_a_newcomer_is_refused() {
        let connections = Connections::new(1);
        let only = connections.admit().await.expect("room");
        let request = only.activity().begin();
        assert!(connections.admit().await.is_none());
        drop(request);
        // Idle again: it would be displaced.
        assert!(connections.close_longest_idle());
        assert!(!connections.close_longest_idle(), "asked once only");
        drop(only);
        assert!(connections.admit().await.is_some());
    }

    #[test]
    fn notices_are_rate_limited_and_count_what_they_skipped() {
        let notice = Notice::default();
        let mut reports = Vec::new();
        for _ in 0..5 {
            notice.note(|more| reports.push(more));
        }
        assert_eq!(reports, [0]);
        assert_eq!(since_last(0), "");
        assert_eq!(since_last(4), " (4 more since the last notice)");
    }
}
