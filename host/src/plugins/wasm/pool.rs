//! Warm instances: a small pool per component, so that runtimes which are
//! slow to instantiate (Go ~0.5 ms, JS ~0.6 ms, Python ~1 ms per fresh
//! instance, against ~2-16 us for a call into a warm one) pay that cost once
//! per instance rather than once per call.
//!
//! Reuse is a trade: whatever a guest leaves in its memory (globals, caches,
//! a half-built data structure) is there for the next call. The plugin
//! declares what it can take (plugin.json `instances.reuse`), and the pool
//! makes sure state never crosses tasks unless the plugin said its bodies are
//! stateless:
//!
//! * an instance serves one call at a time: a call takes it out of the pool
//!   and only a call that ended cleanly puts it back;
//! * a trap, a timeout, running out of memory (or coming close: a refused
//!   `memory.grow`), a host error or a malformed answer discards it, as does
//!   a call that is cancelled mid-way (the instance is owned by the call's
//!   future);
//! * after `max_invocations` calls it is discarded, so slow leaks and drift
//!   are bounded;
//! * at most `pool_size` idle instances are kept; the least recently used
//!   one is dropped first. A `per-task` instance outlives its task until it
//!   is the least recently used; what idle instances pin is bounded by
//!   `pool_size` x the plugin's memory cap;
//! * idle instances hold engine slots (see `capacity.rs`) only while nobody
//!   needs them: a call that finds no free slot evicts the least recently
//!   used idle instance of some pool, and while calls wait for a slot, a
//!   returning call drops its instance instead of keeping it.
//!
//! `stateless` is itself a capability: a plugin gets it only when the
//! operator grants `reuse_across_tasks`; otherwise it runs `per-task`.
//!
//! Where the task id comes from: the harness's [`HookCall`], never the JSON
//! context. The context travels through the chain and any executor ahead of
//! this one (a `pre` hook, a lower-priority `in` executor) may replace it;
//! the call's task id is set by the harness for the operation and no
//! executor can change it. A command body's invocation carries that same id.
//!
//! [`HookCall`]: crate::hooks::HookCall

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use serde::Deserialize;
use wasmtime::Store;
use wasmtime::component::Instance;

use super::capacity::{Budget, Room};
use super::store::{StoreState, begin_call};

/// When one component instance may serve more than one call.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Reuse {
    /// A fresh instance for every call: nothing a call leaves behind is ever
    /// seen again. The slowest mode for heavy runtimes.
    Never,
    /// A task's calls reuse an instance that only that task's calls have
    /// used; a call without a task gets a fresh instance. State survives
    /// between the calls of one conversation, never across conversations.
    ///
    /// The default: the same isolation between tasks as `Never` (tasks are
    /// the boundary between users and conversations; the participants of
    /// one task already share everything in it), and warm dispatch for a
    /// conversation's follow-up calls. A plugin that relies on a fresh
    /// instance per call says `never`.
    #[default]
    PerTask,
    /// Any call may reuse any idle instance, whatever its task. Only for
    /// plugins that declare their bodies keep no state between calls; the
    /// fastest mode, since every call but the first is warm.
    Stateless,
}

/// How a plugin's component instances are reused (plugin.json `instances`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct InstancePolicy {
    pub reuse: Reuse,
    /// Idle instances kept per component; the least recently used beyond
    /// this are dropped.
    pub pool_size: u32,
    /// Calls one instance serves before it is discarded.
    pub max_invocations: u32,
}

/// Idle instances per component when plugin.json does not say. Enough for
/// the concurrent calls of a small server (calls run on Tokio workers, one
/// per core) under `stateless`, or the eight most recently active tasks
/// under `per-task`; what they pin is bounded by 8 x the instance's memory
/// cap and is usually what the guest touched (~1 MiB for Rust, tens of MiB
/// for Python).
pub const DEFAULT_POOL_SIZE: u32 = 8;

/// The most idle instances one component may keep. Idle instances hold
/// slots of the engine's pooling allocator (`[plugins.instances] total`
/// across all plugins, shared with calls in flight; evicted when a call
/// needs the room); 64 keeps one component to a small share of them.
pub const MAX_POOL_SIZE: u32 = 64;

/// Calls per instance when plugin.json does not say. A fresh Python
/// instance costs ~1 ms, so recycling every 1000 calls adds ~1 us per call
/// on average, while bounding how long leaked memory (which also counts
/// against the memory cap) and accumulated state live.
pub const DEFAULT_MAX_INVOCATIONS: u32 = 1000;

impl Default for InstancePolicy {
    fn default() -> Self {
        InstancePolicy {
            reuse: Reuse::default(),
            pool_size: DEFAULT_POOL_SIZE,
            max_invocations: DEFAULT_MAX_INVOCATIONS,
        }
    }
}

/// Which idle instances a call may take.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum PoolKey {
    /// Only one that served this task before (`per-task`).
    Task(String),
    /// Any (`stateless`).
    Any,
}

/// A component instance in its own store, serving one call at a time.
///
/// Fields drop in order: the store (which frees the engine's slot) before
/// the room that accounts for it, so the room is never handed to another
/// instance while the slot is still taken.
pub(crate) struct LiveInstance {
    pub(crate) store: Store<StoreState>,
    pub(crate) instance: Instance,
    /// Calls started in this instance, the current one included.
    calls: u32,
    _room: Room,
}

impl LiveInstance {
    /// A just-instantiated instance, about to serve its first call (its store
    /// is already armed by `new_store`), in `room`.
    pub(crate) fn new(store: Store<StoreState>, instance: Instance, room: Room) -> Self {
        LiveInstance {
            store,
            instance,
            calls: 1,
            _room: room,
        }
    }

    /// Arm a warm instance for one more call of at most `timeout`.
    fn begin_call(&mut self, timeout: Duration) {
        begin_call(&mut self.store, timeout);
        self.calls = self.calls.saturating_add(1);
    }
}

/// The idle instances of one component.
pub(crate) struct InstancePool {
    policy: InstancePolicy,
    /// Where its instances' room comes from.
    budget: Arc<Budget>,
    /// Idle instances with the key they may be taken by, least recently
    /// returned first. A list scanned linearly: it holds at most
    /// [`MAX_POOL_SIZE`] entries, and a scan is cheaper than hashing at
    /// that size. Locked only to move an entry in or out, never across an
    /// `.await`, and never while a store is dropped (that can take a while:
    /// the allocator resets the instance's memory).
    idle: Mutex<VecDeque<(PoolKey, LiveInstance)>>,
}

impl InstancePool {
    /// A pool for instances whose room comes from `budget`, registered
    /// there so its idle instances can be evicted when room runs short.
    pub(crate) fn new(policy: InstancePolicy, budget: Arc<Budget>) -> Arc<Self> {
        let pool = Arc::new(InstancePool {
            policy,
            budget,
            idle: Mutex::new(VecDeque::new()),
        });
        pool.budget.register(&pool);
        pool
    }

    /// The key a call for `task` (if it has one) may reuse an instance under,
    /// or `None` when it must get a fresh instance that is not kept.
    pub(crate) fn key_for(&self, task: Option<&str>) -> Option<PoolKey> {
        match self.policy.reuse {
            Reuse::Never => None,
            Reuse::PerTask => task
                .filter(|id| !id.is_empty())
                .map(|id| PoolKey::Task(id.to_owned())),
            Reuse::Stateless => Some(PoolKey::Any),
        }
    }

    /// Take an idle instance `key` may use (the most recently returned one,
    /// whose memory is likeliest still in cache) and arm it for a call of at
    /// most `timeout`.
    pub(crate) fn take(&self, key: &PoolKey, timeout: Duration) -> Option<LiveInstance> {
        let mut live = {
            let mut idle = self.idle();
            let at = idle.iter().rposition(|(idle_key, _)| idle_key == key)?;
            idle.remove(at)?.1
        };
        live.begin_call(timeout);
        Some(live)
    }

    /// Keep `live` for later calls under `key`, after a call that ended
    /// cleanly; drop it instead when the policy says it is used up. Under
    /// `per-task` a task keeps one instance: if two of its calls overlapped,
    /// the one returned last wins.
    pub(crate) fn give_back(&self, key: PoolKey, live: LiveInstance) {
        if live.calls >= self.policy.max_invocations
            || live.store.data().limits.exhausted
            || self.budget.is_contended()
        {
            return;
        }
        // At most one entry leaves per return, so the list never exceeds the
        // bound: a task's older instance is replaced, or the oldest overflows.
        let dropped = {
            let mut idle = self.idle();
            let replaced = match key {
                PoolKey::Task(_) => idle
                    .iter()
                    .position(|(idle_key, _)| *idle_key == key)
                    .and_then(|at| idle.remove(at)),
                PoolKey::Any => None,
            };
            idle.push_back((key, live));
            let pool_size = usize::try_from(self.policy.pool_size).unwrap_or(usize::MAX);
            replaced.or_else(|| {
                if idle.len() > pool_size {
                    idle.pop_front()
                } else {
                    None
                }
            })
        };
        // Outside the lock: dropping a store resets its memory.
        drop(dropped);
    }

    /// Drop the least recently used idle instance, to free its room for a
    /// call that needs one. Whether there was one.
    pub(crate) fn evict_oldest(&self) -> bool {
        let oldest = self.idle().pop_front();
        // Outside the lock: dropping a store resets its memory.
        oldest.is_some()
    }

    /// How many idle instances are kept, for tests and diagnostics.
    #[cfg(test)]
    fn idle_count(&self) -> usize {
        self.idle().len()
    }

    fn idle(&self) -> MutexGuard<'_, VecDeque<(PoolKey, LiveInstance)>> {
        // Entries are only pushed and popped under the lock; a panic cannot
        // leave the list half-updated in a way that matters.
        self.idle.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pool(reuse: Reuse) -> Arc<InstancePool> {
        let capacity =
            super::super::capacity::Capacity::new(Default::default(), Default::default());
        InstancePool::new(
            InstancePolicy {
                reuse,
                ..InstancePolicy::default()
            },
            capacity.share("p").budget().clone(),
        )
    }

    #[test]
    fn keys_follow_the_reuse_mode() {
        assert_eq!(pool(Reuse::Never).key_for(Some("t1")), None);
        assert_eq!(pool(Reuse::Never).key_for(None), None);
        assert_eq!(
            pool(Reuse::PerTask).key_for(Some("t1")),
            Some(PoolKey::Task("t1".into()))
        );
        assert_eq!(pool(Reuse::PerTask).key_for(None), None, "no task: fresh");
        assert_eq!(
            pool(Reuse::PerTask).key_for(Some("")),
            None,
            "no task: fresh"
        );
        assert_eq!(pool(Reuse::Stateless).key_for(None), Some(PoolKey::Any));
        assert_eq!(
            pool(Reuse::Stateless).key_for(Some("t1")),
            Some(PoolKey::Any)
        );
        assert_eq!(pool(Reuse::Stateless).idle_count(), 0);
    }

    #[test]
    fn the_default_is_per_task() {
        let policy = InstancePolicy::default();
        assert_eq!(policy.reuse, Reuse::PerTask);
        assert!((1..=MAX_POOL_SIZE).contains(&policy.pool_size));
        assert!(policy.max_invocations >= 1);
    }
}
