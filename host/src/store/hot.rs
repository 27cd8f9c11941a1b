//! The SQLite store's cache of hot tasks: the head, history and artifacts of
//! the conversations being read, kept in step with every commit, so that a
//! busy conversation's turns and answers read memory instead of pages.
//!
//! Why: in WAL mode SQLite empties a connection's page cache whenever
//! another connection has written since its last read, so on a server that
//! commits thousands of times a second every read of the store read its
//! pages again (`readDbPage`, and `malloc` for their buffers). A profile of
//! follow-ups on SQLite had the store's reads at about a fifth of the
//! server.
//!
//! What is cached: a task enters when a read found all of it in the
//! database (every message: an answer without `historyLength`, or a turn's
//! window over a short conversation) and it has gone on past its first
//! exchange ([`MIN_MESSAGES`]). It leaves when it is the least recently
//! used and the cache is over its bound (`[store] cache_mib`), when a
//! commit does not continue what is cached, when it is purged, and when the
//! server goes idle ([`HotTasks::clear`]). Conversations that end with
//! their first exchange (most of a busy server's new ones) cost nothing
//! here.
//!
//! Why it is never stale: the writer applies a commit here after SQLite
//! committed it and before it answers the committing task, so a read after
//! a commit's answer sees it. A read that fills the cache from the database
//! first leaves a marker ([`HotTasks::reading`]); a commit to the task
//! before the read is done spoils the marker, and a spoilt or evicted
//! marker keeps what was read out of the cache. A commit that lands between
//! the read's snapshot and the marker's check therefore always spoils it.
//! The cache is only for a store this process alone writes: on a shared
//! store (the Temporal engine) other processes commit without it.

use std::sync::{Mutex, MutexGuard, PoisonError};

use lru::LruCache;

use super::{StoredTask, TaskWrite};

/// The cache's bound in MiB unless configured (`[store] cache_mib`).
pub const DEFAULT_CACHE_MIB: u32 = 32;

/// The fewest messages a task has when a read puts it in the cache: past a
/// first message and its reply, a conversation is one someone came back to.
const MIN_MESSAGES: u64 = 3;

/// What an entry costs beyond its documents: its key, the map's slot, the
/// vectors' headers (an estimate; the bound is on the documents).
const ENTRY_OVERHEAD: usize = 160;
/// What a cached message costs beyond its text.
const DOCUMENT_OVERHEAD: usize = 24;

pub(super) struct HotTasks {
    state: Mutex<State>,
    capacity: usize,
}

struct State {
    entries: LruCache<String, Entry>,
    /// What the entries hold, by [`Entry::bytes`].
    bytes: usize,
}

enum Entry {
    /// A task's whole state as of its newest commit.
    Task(Box<Hot>),
    /// A read of the task from the database is under way; `spoilt` once a
    /// commit to it landed meanwhile.
    Reading { spoilt: bool },
}

struct Hot {
    head: String,
    status_rev: u64,
    history: Vec<String>,
    artifacts: Vec<String>,
}

impl Hot {
    fn of(task: &StoredTask) -> Self {
        Hot {
            head: task.head.clone(),
            status_rev: task.revision,
            history: task.history.clone(),
            artifacts: task.artifacts.clone(),
        }
    }

    fn bytes(&self) -> usize {
        let documents = |all: &[String]| {
            all.iter()
                .map(|document| document.len() + DOCUMENT_OVERHEAD)
                .sum::<usize>()
        };
        ENTRY_OVERHEAD + self.head.len() + documents(&self.history) + documents(&self.artifacts)
    }

    /// The task as a read asks for it: the newest `history` messages.
    fn stored(&self, history: Option<usize>) -> StoredTask {
        let from = history.map_or(0, |newest| self.history.len().saturating_sub(newest));
        StoredTask {
            head: self.head.clone(),
            history: self.history[from..].to_vec(),
            artifacts: self.artifacts.clone(),
            revision: self.status_rev,
            history_len: self.history.len() as u64,
        }
    }

    /// `write`, committed at `revision`, applied; false (and nothing
    /// changed) if it does not continue this state.
    fn apply(&mut self, write: &TaskWrite, revision: u64) -> bool {
        let continues = write
            .messages
            .iter()
            .zip(self.history.len() as u64..)
            .all(|(message, at)| message.position == at)
            && write
                .artifacts
                .iter()
                .zip(self.artifacts.len() as u64..)
                .all(|(artifact, at)| artifact.position == at);
        if !continues || write.created.is_some() {
            return false;
        }
        self.head.clone_from(&write.head.document);
        if write.head.status_changed {
            self.status_rev = revision;
        }
        let documents = write.messages.iter().map(|m| m.document.clone());
        self.history.extend(documents);
        let artifacts = write.artifacts.iter().map(|a| a.document.clone());
        self.artifacts.extend(artifacts);
        true
    }
}

impl Entry {
    fn bytes(&self) -> usize {
        match self {
            Entry::Task(hot) => hot.bytes(),
            Entry::Reading { .. } => ENTRY_OVERHEAD,
        }
    }
}

impl HotTasks {
    /// A cache holding about `capacity` bytes of documents.
    pub(super) fn new(capacity: usize) -> Self {
        HotTasks {
            state: Mutex::new(State {
                entries: LruCache::unbounded(),
                bytes: 0,
            }),
            capacity,
        }
    }

    /// The task, with its newest `history` messages, if it is cached.
    pub(super) fn load(&self, task_id: &str, history: Option<usize>) -> Option<StoredTask> {
        match self.state().entries.get(task_id)? {
            Entry::Task(hot) => Some(hot.stored(history)),
            Entry::Reading { .. } => None,
        }
    }

    /// The task's head, if it is cached.
    pub(super) fn head(&self, task_id: &str) -> Option<String> {
        match self.state().entries.get(task_id)? {
            Entry::Task(hot) => Some(hot.head.clone()),
            Entry::Reading { .. } => None,
        }
    }

    /// A read of `task_id` from the database is about to start: leave the
    /// marker [`HotTasks::read`] needs to keep what it finds.
    pub(super) fn reading(&self, task_id: &str) {
        let mut state = self.state();
        if state.entries.contains(task_id) {
            // Cached meanwhile, or another read's marker: that one decides.
            return;
        }
        state.insert(task_id.to_owned(), Entry::Reading { spoilt: false });
        state.shrink_to(self.capacity);
    }

    /// A read of `task_id` found `task` (None: nothing, or it failed):
    /// cache it if it is all of the task, worth keeping, and no commit to
    /// the task landed since [`HotTasks::reading`].
    pub(super) fn read(&self, task_id: &str, task: Option<&StoredTask>) {
        let task = task.filter(|task| {
            task.history.len() as u64 == task.history_len && task.history_len >= MIN_MESSAGES
        });
        let mut state = self.state();
        let Some(&Entry::Reading { spoilt }) = state.entries.peek(task_id) else {
            // Evicted (a commit may have gone unseen), or already cached.
            return;
        };
        match (spoilt, task) {
            (false, Some(task)) => {
                state.insert(task_id.to_owned(), Entry::Task(Box::new(Hot::of(task))));
                state.shrink_to(self.capacity);
            }
            _ => state.remove(task_id),
        }
    }

    /// `write` was committed at `revision` (by the writer, before it
    /// answers): keep a cached task in step, spoil a read under way.
    pub(super) fn committed(&self, write: &TaskWrite, revision: u64) {
        let mut state = self.state();
        let Some(entry) = state.entries.get_mut(&write.task_id) else {
            return;
        };
        let before = entry.bytes();
        let kept = match entry {
            Entry::Task(hot) => hot.apply(write, revision),
            Entry::Reading { spoilt } => {
                *spoilt = true;
                true
            }
        };
        let after = entry.bytes();
        if kept {
            state.bytes = state.bytes - before + after;
            state.shrink_to(self.capacity);
        } else {
            state.remove(&write.task_id);
        }
    }

    /// `task_id` is gone from the database.
    pub(super) fn forget(&self, task_id: &str) {
        self.state().remove(task_id);
    }

    /// Empty the cache (an idle server keeps no caches). A read under way
    /// loses its marker, so it caches nothing.
    pub(super) fn clear(&self) {
        let mut state = self.state();
        state.entries = LruCache::unbounded();
        state.bytes = 0;
    }

    /// What the cache holds, by its own estimate.
    #[cfg(test)]
    pub(super) fn bytes(&self) -> usize {
        self.state().bytes
    }

    fn state(&self) -> MutexGuard<'_, State> {
        // Every change keeps `State` whole before anything can panic.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl State {
    fn insert(&mut self, task_id: String, entry: Entry) {
        self.bytes += entry.bytes();
        if let Some((_, old)) = self.entries.push(task_id, entry) {
            self.bytes -= old.bytes();
        }
    }

    fn remove(&mut self, task_id: &str) {
        if let Some(old) = self.entries.pop(task_id) {
            self.bytes -= old.bytes();
        }
    }

    /// Evict the least recently used entries until at most `capacity`.
    fn shrink_to(&mut self, capacity: usize) {
        while self.bytes > capacity {
            let Some((_, old)) = self.entries.pop_lru() else {
                break;
            };
            self.bytes -= old.bytes();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::tests::create;
    use crate::store::{StoredArtifact, StoredMessage};

    fn task(messages: usize) -> StoredTask {
        StoredTask {
            head: "{\"state\":\"working\"}".into(),
            history: (0..messages).map(|n| format!("{{\"n\":{n}}}")).collect(),
            artifacts: Vec::new(),
            revision: 1,
            history_len: messages as u64,
        }
    }

    /// A commit of one message at `position`, changing the status or not.
    fn follow_up(id: &str, position: u64, status_changed: bool) -> TaskWrite {
        let mut write = create(id, "alice", "m");
        write.created = None;
        write.head.document = format!("{{\"after\":{position}}}");
        write.head.status_changed = status_changed;
        write.messages = vec![StoredMessage {
            position,
            message_id: format!("m{position}"),
            document: format!("{{\"n\":{position}}}"),
        }];
        write
    }

    fn cached(hot: &HotTasks, id: &str, found: &StoredTask) {
        hot.reading(id);
        hot.read(id, Some(found));
    }

    #[test]
    fn a_task_read_whole_is_kept_in_step_with_its_commits() {
        let hot = HotTasks::new(1 << 20);
        cached(&hot, "t", &task(3));
        hot.committed(&follow_up("t", 3, true), 7);
        let mut quiet = follow_up("t", 4, false);
        quiet.artifacts = vec![StoredArtifact {
            position: 0,
            document: "{\"artifactId\":\"a\"}".into(),
        }];
        hot.committed(&quiet, 8);

        let whole = hot.load("t", None).expect("cached");
        let history: Vec<String> = (0..5).map(|n| format!("{{\"n\":{n}}}")).collect();
        assert_eq!(whole.history, history);
        assert_eq!(whole.history_len, 5);
        assert_eq!(whole.artifacts, ["{\"artifactId\":\"a\"}"]);
        assert_eq!(whole.head, "{\"after\":4}");
        // The status changed at revision 7, not with the quiet write.
        assert_eq!(whole.revision, 7);
        let newest = hot.load("t", Some(1)).expect("cached");
        assert_eq!(
            (newest.history, newest.history_len),
            (vec!["{\"n\":4}".to_owned()], 5)
        );
        assert_eq!(hot.head("t").as_deref(), Some("{\"after\":4}"));
        assert_eq!(
            hot.bytes(),
            hot.state().entries.peek("t").map_or(0, Entry::bytes)
        );
    }

    #[test]
    fn a_commit_during_the_read_keeps_what_was_read_out() {
        let hot = HotTasks::new(1 << 20);
        hot.reading("t");
        // Committed after the read's snapshot: what it found lacks message 3.
        hot.committed(&follow_up("t", 3, true), 7);
        hot.read("t", Some(&task(3)));
        assert!(hot.load("t", None).is_none());
        assert_eq!(hot.bytes(), 0);
        // The next read fills it.
        cached(&hot, "t", &task(4));
        assert_eq!(hot.load("t", None).map(|t| t.history_len), Some(4));
    }

    #[test]
    fn a_read_whose_marker_was_evicted_or_cleared_caches_nothing() {
        let hot = HotTasks::new(ENTRY_OVERHEAD);
        hot.reading("t");
        hot.reading("u");
        hot.read("t", Some(&task(3)));
        assert!(hot.load("t", None).is_none());
        hot.clear();
        hot.read("u", Some(&task(3)));
        assert!(hot.load("u", None).is_none());
    }

    #[test]
    fn a_commit_that_does_not_continue_the_cached_task_drops_it() {
        let hot = HotTasks::new(1 << 20);
        cached(&hot, "t", &task(3));
        // Message 5 where 3 comes next: the cache missed something.
        hot.committed(&follow_up("t", 5, true), 7);
        assert!(hot.load("t", None).is_none());
        assert!(hot.head("t").is_none());
        assert_eq!(hot.bytes(), 0);
    }

    #[test]
    fn past_its_bound_the_least_recently_used_task_goes_first() {
        let one = Hot::of(&task(10)).bytes();
        let hot = HotTasks::new(3 * one);
        for id in ["a", "b", "c"] {
            cached(&hot, id, &task(10));
        }
        assert!(hot.load("a", None).is_some());
        cached(&hot, "d", &task(10));
        assert!(
            hot.load("b", None).is_none(),
            "b was the least recently used"
        );
        for id in ["a", "c", "d"] {
            assert!(hot.load(id, None).is_some(), "{id}");
        }
        assert!(hot.bytes() <= 3 * one);
        // A commit that grows a task past the bound evicts the others.
        for position in 10..40 {
            hot.committed(&follow_up("a", position, false), 100 + position);
        }
        assert!(hot.bytes() <= 3 * one);
        assert!(hot.load("c", None).is_none());
    }

    #[test]
    fn only_all_of_a_task_past_its_first_exchange_is_cached() {
        let hot = HotTasks::new(1 << 20);
        cached(&hot, "first", &task(2));
        let mut newest = task(5);
        newest.history.drain(..3);
        cached(&hot, "part", &newest);
        cached(&hot, "whole", &task(3));
        assert!(hot.load("first", None).is_none());
        assert!(hot.load("part", None).is_none());
        assert!(hot.load("whole", None).is_some());
        // The markers of the reads not kept are gone with them.
        assert_eq!(hot.bytes(), Hot::of(&task(3)).bytes());
    }

    #[test]
    fn a_forgotten_task_is_read_from_the_database_again() {
        let hot = HotTasks::new(1 << 20);
        cached(&hot, "t", &task(3));
        assert!(hot.load("t", None).is_some());
        hot.forget("t");
        assert!(hot.load("t", None).is_none());
        assert_eq!(hot.bytes(), 0);
    }
}
