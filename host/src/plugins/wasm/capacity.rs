//! Who may hold the engine's instances: quotas per plugin and per component,
//! and a reserve for the built-in plugin.
//!
//! The pooling allocator has a fixed number of slots (component instances,
//! linear memories, tables) for every plugin together, and an instantiation
//! that finds none fails. Left to itself, one plugin with enough sleeping
//! calls fills them and every other call fails, the built-in role policy
//! included. So every instance is accounted for here before wasmtime sees
//! it:
//!
//! * the engine's slots are split in two [`Budget`]s: one reserved for the
//!   built-in plugin (its role policy and bodies always find room), one
//!   shared by all other plugins;
//! * an instance holds [`Room`] in its budget for as long as it lives (a
//!   component instance, plus the memories and tables it defines, as the
//!   compiled component says), released only after its store is dropped;
//! * a call holds a [`CallPermit`] of its plugin and of its component for as
//!   long as it runs, so a plugin has at most `per_plugin` calls in flight,
//!   whatever they do;
//! * idle warm instances hold room but no call permit: a call that finds the
//!   budget full first evicts idle instances (any plugin's), and a call
//!   returning its instance drops it instead while others wait;
//! * a call that still finds nothing waits, at most `wait_ms` in all, then
//!   fails with a busy error that names the plugin and the limit.
//!
//! Plugins are keyed by name across reloads: a new generation of a plugin
//! shares the quota of the calls its previous generation still runs.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, Weak};
use std::time::Duration;

use tokio::sync::{Notify, OwnedSemaphorePermit, Semaphore};
use tokio::time::Instant;

use super::log_budget::LogRate;
use super::pool::InstancePool;
use crate::hooks::ExecutorFault;
use crate::plugins::embedded::BUILTIN;
use crate::plugins::settings::{InstanceLimits, LogLimits};

/// Linear memories the engine keeps room for per instance slot. A Rust or
/// C component defines one; interpreted runtimes a few. An instance that
/// defines more counts for more of its budget.
pub(crate) const MEMORIES_PER_SLOT: u32 = 2;

/// Tables the engine keeps room for per instance slot (a component's
/// adapter shims define one or two besides the main module's).
pub(crate) const TABLES_PER_SLOT: u32 = 4;

/// What one instance of a component takes from its budget, besides one
/// component instance slot.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Cost {
    pub(crate) memories: u32,
    pub(crate) tables: u32,
}

/// Room in the engine's pool: instance slots, memories and tables.
pub(crate) struct Budget {
    /// Whose room it is, as errors say it: "shared by ...", "reserved for ...".
    label: String,
    instances: Arc<Semaphore>,
    memories: Arc<Semaphore>,
    tables: Arc<Semaphore>,
    capacity: (u32, u32, u32),
    /// Signalled whenever room is given back.
    released: Notify,
    /// Calls waiting for room; while there are any, returning calls drop
    /// their instance instead of keeping it idle.
    waiting: AtomicUsize,
    /// Every pool whose idle instances hold room here, for eviction.
    pools: Mutex<Vec<Weak<InstancePool>>>,
}

impl Budget {
    fn new(label: String, instances: u32) -> Arc<Self> {
        let memories = instances.saturating_mul(MEMORIES_PER_SLOT);
        let tables = instances.saturating_mul(TABLES_PER_SLOT);
        Arc::new(Budget {
            label,
            instances: Arc::new(Semaphore::new(instances as usize)),
            memories: Arc::new(Semaphore::new(memories as usize)),
            tables: Arc::new(Semaphore::new(tables as usize)),
            capacity: (instances, memories, tables),
            released: Notify::new(),
            waiting: AtomicUsize::new(0),
            pools: Mutex::new(Vec::new()),
        })
    }

    /// Whether one instance costing `cost` can ever fit.
    pub(crate) fn fits(&self, cost: Cost) -> Result<(), String> {
        let (_, memories, tables) = self.capacity;
        if cost.memories > memories || cost.tables > tables {
            return Err(format!(
                "its instances need {} memories and {} tables, more than all the room {} ({memories} and {tables})",
                cost.memories, cost.tables, self.label
            ));
        }
        Ok(())
    }

    /// Keep `pool`'s idle instances evictable when this budget runs short.
    pub(crate) fn register(&self, pool: &Arc<InstancePool>) {
        let mut pools = self.pools();
        pools.retain(|pool| pool.strong_count() > 0);
        pools.push(Arc::downgrade(pool));
    }

    /// Whether calls are waiting for room.
    pub(crate) fn is_contended(&self) -> bool {
        self.waiting.load(Ordering::Acquire) > 0
    }

    /// Room for `cost` if there is some now, else what ran short.
    fn try_reserve(self: &Arc<Self>, cost: Cost) -> Result<Room, String> {
        let (instances, memories, tables) = self.capacity;
        let label = &self.label;
        let instance = self
            .instances
            .clone()
            .try_acquire_owned()
            .map_err(|_| format!("all {instances} instance slots {label} are in use"))?;
        let memories = self
            .memories
            .clone()
            .try_acquire_many_owned(cost.memories)
            .map_err(|_| {
                format!(
                    "fewer than the {} linear memories an instance needs are free, of the {memories} {label}",
                    cost.memories
                )
            })?;
        let tables = self
            .tables
            .clone()
            .try_acquire_many_owned(cost.tables)
            .map_err(|_| {
                format!(
                    "fewer than the {} tables an instance needs are free, of the {tables} {label}",
                    cost.tables
                )
            })?;
        Ok(Room {
            permits: Some((instance, memories, tables)),
            budget: self.clone(),
        })
    }

    /// Drop one idle instance of any pool in this budget, the least recently
    /// used of the first pool that has one. Whether one was dropped.
    fn evict_one(&self) -> bool {
        let pools: Vec<Arc<InstancePool>> = self.pools().iter().filter_map(Weak::upgrade).collect();
        pools.iter().any(|pool| pool.evict_oldest())
    }

    /// Room for one instance costing `cost`, waiting until `deadline` at
    /// most; `Err` with what was full.
    async fn reserve(self: &Arc<Self>, cost: Cost, deadline: Instant) -> Result<Room, String> {
        loop {
            if let Ok(room) = self.try_reserve(cost) {
                return Ok(room);
            }
            if self.evict_one() {
                continue;
            }
            let released = self.released.notified();
            tokio::pin!(released);
            // Registered before the second look, so a release between the
            // look and the wait is not missed.
            released.as_mut().enable();
            let short = match self.try_reserve(cost) {
                Ok(room) => return Ok(room),
                Err(short) => short,
            };
            let _waiting = Waiting::on(self);
            if tokio::time::timeout_at(deadline, released).await.is_err() {
                return Err(format!("finds no room for an instance: {short}"));
            }
        }
    }

    fn pools(&self) -> MutexGuard<'_, Vec<Weak<InstancePool>>> {
        self.pools.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Counts a waiter for as long as it waits.
struct Waiting<'a>(&'a Budget);

impl<'a> Waiting<'a> {
    fn on(budget: &'a Budget) -> Self {
        budget.waiting.fetch_add(1, Ordering::AcqRel);
        Waiting(budget)
    }
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        self.0.waiting.fetch_sub(1, Ordering::AcqRel);
    }
}

/// One instance's room in its budget. Must be dropped after the instance's
/// store, which is what frees the engine's slot: see `LiveInstance`.
pub(crate) struct Room {
    permits: Option<(
        OwnedSemaphorePermit,
        OwnedSemaphorePermit,
        OwnedSemaphorePermit,
    )>,
    budget: Arc<Budget>,
}

impl Drop for Room {
    fn drop(&mut self) {
        drop(self.permits.take());
        self.budget.released.notify_waiters();
    }
}

/// The engine-wide accounting, one per [`WasmRuntime`](super::WasmRuntime).
pub(crate) struct Capacity {
    limits: InstanceLimits,
    logs: LogLimits,
    shared: Arc<Budget>,
    reserved: Arc<Budget>,
    /// Each plugin's share by name, alive while any generation uses it.
    shares: Mutex<HashMap<String, Weak<PluginShare>>>,
}

impl Capacity {
    pub(crate) fn new(limits: InstanceLimits, logs: LogLimits) -> Self {
        Capacity {
            shared: Budget::new(
                "shared by the plugins other than the built-in one ([plugins.instances] total - builtin)"
                    .into(),
                limits.total - limits.builtin,
            ),
            reserved: Budget::new(
                "reserved for the built-in plugin ([plugins.instances] builtin)".into(),
                limits.builtin,
            ),
            limits,
            logs,
            shares: Mutex::new(HashMap::new()),
        }
    }

    /// The share of plugin `name`: the one its running generations hold, or
    /// a new one.
    pub(crate) fn share(&self, name: &str) -> Arc<PluginShare> {
        let mut shares = self.shares.lock().unwrap_or_else(PoisonError::into_inner);
        shares.retain(|_, share| share.strong_count() > 0);
        if let Some(share) = shares.get(name).and_then(Weak::upgrade) {
            return share;
        }
        let is_builtin = name == BUILTIN;
        let (budget, calls, key) = if is_builtin {
            (
                self.reserved.clone(),
                self.limits.builtin,
                "[plugins.instances] builtin",
            )
        } else {
            (
                self.shared.clone(),
                self.limits.per_plugin,
                "[plugins.instances] per_plugin",
            )
        };
        let share = Arc::new(PluginShare {
            name: name.to_owned(),
            budget,
            calls: Arc::new(Semaphore::new(calls as usize)),
            calls_limit: (calls, key),
            component_calls: if is_builtin {
                self.limits.builtin
            } else {
                self.limits.per_component
            },
            wait: self.limits.wait(),
            log_rate: LogRate::new(self.logs),
        });
        shares.insert(name.to_owned(), Arc::downgrade(&share));
        share
    }
}

/// What one plugin holds: its call quota, its budget, its log rate.
pub(crate) struct PluginShare {
    name: String,
    budget: Arc<Budget>,
    calls: Arc<Semaphore>,
    /// The quota and the key that sets it, for errors.
    calls_limit: (u32, &'static str),
    /// Each component's quota.
    component_calls: u32,
    wait: Duration,
    pub(crate) log_rate: LogRate,
}

impl std::fmt::Debug for PluginShare {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PluginShare")
            .field("name", &self.name)
            .field("calls", &self.calls_limit)
            .finish_non_exhaustive()
    }
}

impl PluginShare {
    pub(crate) fn budget(&self) -> &Arc<Budget> {
        &self.budget
    }

    /// A new component's own quota within this share.
    pub(crate) fn component_quota(&self, file: &str) -> ComponentQuota {
        ComponentQuota {
            file: file.to_owned(),
            calls: Arc::new(Semaphore::new(self.component_calls as usize)),
            limit: self.component_calls,
        }
    }

    /// When a call starting now must have found an instance by.
    pub(crate) fn wait_deadline(&self) -> Instant {
        Instant::now() + self.wait
    }

    /// The right to run one call of `component`, waiting until `deadline`
    /// at most.
    pub(crate) async fn admit(
        &self,
        component: &ComponentQuota,
        deadline: Instant,
    ) -> Result<CallPermit, ExecutorFault> {
        let component_permit = acquire(&component.calls, deadline).await.ok_or_else(|| {
            self.busy(format!(
                "already runs all {} calls its component `{}` may run at once ([plugins.instances] per_component)",
                component.limit, component.file
            ))
        })?;
        let plugin_permit = acquire(&self.calls, deadline).await.ok_or_else(|| {
            let (limit, key) = self.calls_limit;
            self.busy(format!(
                "already runs all {limit} calls it may run at once ({key})"
            ))
        })?;
        Ok(CallPermit {
            _component: component_permit,
            _plugin: plugin_permit,
        })
    }

    /// Room for one more instance costing `cost`, waiting until `deadline`
    /// at most.
    pub(crate) async fn room(&self, cost: Cost, deadline: Instant) -> Result<Room, ExecutorFault> {
        self.budget
            .reserve(cost, deadline)
            .await
            .map_err(|why| self.busy(why))
    }

    fn busy(&self, why: String) -> ExecutorFault {
        ExecutorFault::Busy(format!(
            "plugin `{}` {why}; waited {} ms",
            self.name,
            self.wait.as_millis()
        ))
    }
}

async fn acquire(semaphore: &Arc<Semaphore>, deadline: Instant) -> Option<OwnedSemaphorePermit> {
    tokio::time::timeout_at(deadline, semaphore.clone().acquire_owned())
        .await
        .ok()?
        .ok()
}

/// One component's call quota within its plugin's share.
pub(crate) struct ComponentQuota {
    file: String,
    calls: Arc<Semaphore>,
    limit: u32,
}

/// Held by a running call; dropping the call (it returned, timed out, or
/// its task cut it) gives the quota back.
pub(crate) struct CallPermit {
    _component: OwnedSemaphorePermit,
    _plugin: OwnedSemaphorePermit,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn capacity(total: u32, builtin: u32, per_plugin: u32, per_component: u32) -> Capacity {
        Capacity::new(
            InstanceLimits {
                total,
                builtin,
                per_plugin,
                per_component,
                wait_ms: 50,
            },
            LogLimits::default(),
        )
    }

    const SMALL: Cost = Cost {
        memories: 1,
        tables: 2,
    };

    #[tokio::test]
    async fn a_plugin_runs_at_most_its_quota_of_calls_then_is_busy() {
        let capacity = capacity(10, 2, 2, 5);
        let share = capacity.share("hog");
        let component = share.component_quota("hog.wasm");
        let first = share.admit(&component, share.wait_deadline()).await;
        let second = share.admit(&component, share.wait_deadline()).await;
        assert!(first.is_ok() && second.is_ok());
        let Err(ExecutorFault::Busy(message)) =
            share.admit(&component, share.wait_deadline()).await
        else {
            panic!("the third call must be busy");
        };
        assert!(
            message.starts_with("plugin `hog` already runs all 2 calls"),
            "{message}"
        );
        assert!(
            message.contains("([plugins.instances] per_plugin)"),
            "{message}"
        );
        // Another generation of the same plugin shares the quota...
        let again = capacity.share("hog");
        assert!(
            again
                .admit(&again.component_quota("hog.wasm"), again.wait_deadline())
                .await
                .is_err()
        );
        // ...and a call that ends gives its permit back.
        drop(first);
        assert!(share.admit(&component, share.wait_deadline()).await.is_ok());
    }

    #[tokio::test]
    async fn a_component_has_its_own_quota_within_its_plugin() {
        let capacity = capacity(10, 2, 5, 1);
        let share = capacity.share("p");
        let a = share.component_quota("a.wasm");
        let b = share.component_quota("b.wasm");
        let _running = share.admit(&a, share.wait_deadline()).await.expect("first");
        let Err(ExecutorFault::Busy(message)) = share.admit(&a, share.wait_deadline()).await else {
            panic!("a.wasm is at its quota");
        };
        assert!(message.contains("`a.wasm`"), "{message}");
        assert!(share.admit(&b, share.wait_deadline()).await.is_ok());
    }

    #[tokio::test]
    async fn the_builtin_plugin_keeps_its_reserve_when_the_others_fill_theirs() {
        let capacity = capacity(5, 2, 100, 100);
        let hog = capacity.share("hog");
        let mut rooms = Vec::new();
        while let Ok(room) = hog.room(SMALL, hog.wait_deadline()).await {
            rooms.push(room);
        }
        assert_eq!(rooms.len(), 3, "the shared budget is total - builtin");
        let builtin = capacity.share(BUILTIN);
        let first = builtin.room(SMALL, builtin.wait_deadline()).await;
        let second = builtin.room(SMALL, builtin.wait_deadline()).await;
        assert!(first.is_ok() && second.is_ok());
        let Err(ExecutorFault::Busy(message)) = builtin.room(SMALL, builtin.wait_deadline()).await
        else {
            panic!("the reserve is two instances");
        };
        assert!(
            message.contains("all 2 instance slots reserved for the built-in plugin ([plugins.instances] builtin) are in use"),
            "{message}"
        );
    }

    #[tokio::test]
    async fn a_waiting_call_gets_the_room_another_gives_back() {
        let capacity = capacity(3, 1, 100, 100);
        let share = capacity.share("p");
        let first = share
            .room(SMALL, share.wait_deadline())
            .await
            .expect("room");
        let _second = share
            .room(SMALL, share.wait_deadline())
            .await
            .expect("room");
        let waiter = {
            let share = share.clone();
            tokio::spawn(async move {
                share
                    .room(SMALL, Instant::now() + Duration::from_secs(30))
                    .await
                    .is_ok()
            })
        };
        while !share.budget().is_contended() {
            tokio::task::yield_now().await;
        }
        drop(first);
        assert!(waiter.await.expect("joined"), "the waiter got the room");
    }

    #[test]
    fn an_instance_too_big_for_its_budget_is_refused_at_load() {
        let capacity = capacity(3, 1, 100, 100);
        let builtin = capacity.share(BUILTIN);
        assert!(builtin.budget().fits(SMALL).is_ok());
        let huge = Cost {
            memories: 3,
            tables: 1,
        };
        let error = builtin.budget().fits(huge).expect_err("too big");
        assert!(error.contains("3 memories"), "{error}");
    }
}
