//! One plugin component: compiled once, pre-instantiated once, and run in a
//! fresh instance per call or, as its plugin.json allows, in a warm one from
//! its pool.
//!
//! A call has two bounds. Finding an instance (the plugin's and the
//! component's call quotas, room in the engine) may take up to
//! `[plugins.instances] wait_ms`, then the call is busy. From then on,
//! instantiation and the call itself run under the call's deadline as a
//! whole: a timer, not only the engine's epoch, so a guest blocked in a
//! host call (a WASI sleep, say) is cut on time too. Cutting a call drops
//! its future, and with it the instance: nothing of it runs again.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use wasmtime::component::{Component, InstancePre, types::ComponentItem};
use wasmtime::{Store, Trap};

use super::bindings::{
    ExportIndices, PACKAGE, PACKAGE_VERSION, decision_from_guest, exports, outcome_from_guest,
};
use super::capacity::{ComponentQuota, Cost, Room};
use super::engine::{MAX_MEMORIES_PER_COMPONENT, MAX_TABLES_PER_COMPONENT, WasmRuntime};
use super::pool::{InstancePool, LiveInstance, PoolKey};
use super::store::{PluginIdentity, StoreState, new_store};
use crate::commands::{BodyResult, Invocation, Suggestion};
use crate::hooks::{Decision, ExecutorFault, HookCall};

/// Why a component cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ComponentError {
    #[error("not a valid WebAssembly component: {0}")]
    Invalid(String),
    #[error(
        "built against {PACKAGE}@{found}, but this harness speaks {PACKAGE}@{expected}; rebuild the plugin against wit/ of this harness"
    )]
    WrongVersion { expected: String, found: String },
    #[error("exports none of {PACKAGE}/command, /hook or /completion")]
    NoExports,
    #[error("cannot be linked: {0}")]
    Link(String),
    #[error("cannot be given instances: {0}")]
    TooBig(String),
}

/// A compiled, linked component ready to run.
pub struct PluginComponent {
    runtime: WasmRuntime,
    identity: Arc<PluginIdentity>,
    pre: InstancePre<StoreState>,
    exports: ExportIndices,
    /// Warm instances, shared by every export of this component.
    pool: Arc<InstancePool>,
    /// Its own call quota within its plugin's share.
    quota: ComponentQuota,
    /// What each of its instances takes from the engine's room.
    cost: Cost,
}

impl PluginComponent {
    /// Compile (or fetch from the cache), check the contract version, link
    /// and pre-instantiate `bytes` for `identity`.
    pub fn load(
        runtime: &WasmRuntime,
        identity: Arc<PluginIdentity>,
        file: &str,
        bytes: &[u8],
    ) -> Result<Self, ComponentError> {
        let component = runtime
            .cache
            .load(&runtime.engine, bytes)
            .map_err(|err| ComponentError::Invalid(format!("{err:#}")))?;
        check_contract_version(runtime, &component)?;
        let pre = runtime
            .linker
            .instantiate_pre(&component)
            .map_err(|err| ComponentError::Link(format!("{err:#}")))?;
        let exports = ExportIndices {
            command: exports::tiny_harness::plugin::command::GuestIndices::new(&pre).ok(),
            hook: exports::tiny_harness::plugin::hook::GuestIndices::new(&pre).ok(),
            completion: exports::tiny_harness::plugin::completion::GuestIndices::new(&pre).ok(),
        };
        if exports.command.is_none() && exports.hook.is_none() && exports.completion.is_none() {
            return Err(ComponentError::NoExports);
        }
        let cost = cost_of(&component);
        tracing::debug!(
            plugin = %identity.name,
            file,
            memories = cost.memories,
            tables = cost.tables,
            "each instance takes one slot, and memories and tables of its budget"
        );
        let budget = identity.share.budget().clone();
        budget.fits(cost).map_err(ComponentError::TooBig)?;
        Ok(PluginComponent {
            runtime: runtime.clone(),
            pool: InstancePool::new(identity.instances, budget),
            quota: identity.share.component_quota(file),
            cost,
            identity,
            pre,
            exports,
        })
    }

    pub fn plugin_name(&self) -> &str {
        &self.identity.name
    }

    pub fn exports_command(&self) -> bool {
        self.exports.command.is_some()
    }

    pub fn exports_hook(&self) -> bool {
        self.exports.hook.is_some()
    }

    /// Run the component's command body, in an instance the invocation's
    /// task may use.
    pub async fn run_command(&self, invocation: Invocation, timeout: Duration) -> BodyResult {
        let Some(indices) = &self.exports.command else {
            return Err(ExecutorFault::Failed(format!(
                "plugin {} does not export a command body",
                self.identity.name
            )));
        };
        let key = self.pool.key_for(Some(&invocation.task.id));
        self.call(key, timeout, async |live: &mut LiveInstance| {
            let result = async {
                let guest = indices.load(&mut live.store, &live.instance)?;
                guest.call_run(&mut live.store, &invocation.into()).await
            }
            .await;
            match result {
                Ok(Ok(outcome)) => outcome_from_guest(outcome).map(Ok),
                // The guest answered with an error value: a normal return,
                // the instance is sound.
                Ok(Err(error)) => Ok(Err(error.into())),
                Err(err) => Err(fault(&live.store, err, timeout)),
            }
        })
        .await
    }

    /// Run the component's generic hook executor, in an instance the call's
    /// task (as the harness names it, never as the context claims) may use.
    pub async fn handle_hook(
        &self,
        call: HookCall<'_>,
        context: &Value,
        timeout: Duration,
    ) -> Result<Decision, ExecutorFault> {
        let Some(indices) = &self.exports.hook else {
            return Err(ExecutorFault::Failed(format!(
                "plugin {} does not export a hook executor",
                self.identity.name
            )));
        };
        let key = self.pool.key_for(call.task_id);
        let context = context.to_string();
        let point = call.point.to_string();
        self.call(key, timeout, async |live: &mut LiveInstance| {
            let result = async {
                let guest = indices.load(&mut live.store, &live.instance)?;
                guest.call_handle(&mut live.store, &point, &context).await
            }
            .await;
            match result {
                Ok(decision) => decision_from_guest(decision),
                Err(err) => Err(fault(&live.store, err, timeout)),
            }
        })
        .await
    }

    /// Ask the component's completion export for suggestions. Completion is
    /// advisory and runs outside any task, so it gets a fresh instance (or a
    /// pooled one when the plugin is stateless).
    pub async fn complete(
        &self,
        command: &str,
        partial_arguments: &str,
        timeout: Duration,
    ) -> Result<Vec<Suggestion>, ExecutorFault> {
        let Some(indices) = &self.exports.completion else {
            return Ok(Vec::new());
        };
        let key = self.pool.key_for(None);
        self.call(key, timeout, async |live: &mut LiveInstance| {
            let result = async {
                let guest = indices.load(&mut live.store, &live.instance)?;
                guest
                    .call_complete(&mut live.store, command, partial_arguments)
                    .await
            }
            .await;
            match result {
                Ok(suggestions) => Ok(suggestions
                    .into_iter()
                    .map(|suggestion| Suggestion {
                        value: suggestion.value,
                        description: suggestion.description,
                    })
                    .collect()),
                Err(err) => Err(fault(&live.store, err, timeout)),
            }
        })
        .await
    }

    pub fn exports_completion(&self) -> bool {
        self.exports.completion.is_some()
    }

    /// Run `body` in an instance `key` may use, within the quotas, and
    /// under a deadline of `timeout` for instantiation and the call
    /// together; then keep the instance if the call ended cleanly.
    async fn call<T>(
        &self,
        key: Option<PoolKey>,
        timeout: Duration,
        body: impl AsyncFnOnce(&mut LiveInstance) -> Result<T, ExecutorFault>,
    ) -> Result<T, ExecutorFault> {
        let share = &self.identity.share;
        let wait_until = share.wait_deadline();
        let _permit = share.admit(&self.quota, wait_until).await?;
        let slot = match key.as_ref().and_then(|key| self.pool.take(key, timeout)) {
            Some(live) => Slot::Warm(live),
            None => Slot::Fresh(share.room(self.cost, wait_until).await?),
        };
        within(timeout, async {
            let mut live = match slot {
                Slot::Warm(live) => live,
                Slot::Fresh(room) => self.instantiate(room, timeout).await?,
            };
            let answer = body(&mut live).await;
            self.check_in(key, live, answer.is_ok());
            answer
        })
        .await
    }

    /// A fresh instance in `room`, its store armed for a call of at most
    /// `timeout`.
    async fn instantiate(
        &self,
        room: Room,
        timeout: Duration,
    ) -> Result<LiveInstance, ExecutorFault> {
        let mut store = new_store(
            &self.runtime.engine,
            self.identity.clone(),
            self.runtime.random_request_bytes,
            timeout,
        );
        match self.pre.instantiate_async(&mut store).await {
            Ok(instance) => Ok(LiveInstance::new(store, instance, room)),
            Err(err) => Err(fault(&store, err, timeout)),
        }
    }

    /// After a call: keep the instance for `key` if the call ended cleanly,
    /// else drop it. A trapped, timed-out or out-of-memory instance is
    /// poisoned, and one that gave a malformed answer is not trusted again.
    /// Either way the call's log budget ends here.
    fn check_in(&self, key: Option<PoolKey>, mut live: LiveInstance, clean: bool) {
        live.store.data_mut().finish_call_log();
        match key {
            Some(key) if clean => self.pool.give_back(key, live),
            _ => drop(live),
        }
    }
}

/// Where a call's instance comes from.
enum Slot {
    /// An idle instance from the pool, already armed for the call.
    Warm(LiveInstance),
    /// Room for a fresh one, to be instantiated under the call's deadline.
    Fresh(Room),
}

/// `call` cut at `timeout`, whatever it is doing: running guest code (the
/// epoch callback would stop it too) or waiting in a host call (nothing
/// else would). Dropping the future drops the instance it owns.
async fn within<T>(
    timeout: Duration,
    call: impl Future<Output = Result<T, ExecutorFault>>,
) -> Result<T, ExecutorFault> {
    tokio::time::timeout(timeout, call)
        .await
        .unwrap_or(Err(ExecutorFault::Timeout(timeout)))
}

/// What one instance of `component` takes from its budget: the memories and
/// tables its core modules define, or the most a component may have when
/// that cannot be known ahead (it instantiates an imported module).
fn cost_of(component: &Component) -> Cost {
    match component.resources_required() {
        Some(required) => Cost {
            memories: required.num_memories,
            tables: required.num_tables,
        },
        None => Cost {
            memories: MAX_MEMORIES_PER_COMPONENT,
            tables: MAX_TABLES_PER_COMPONENT,
        },
    }
}

/// Turn a failed call into the fault the sender is told about. The instance
/// is dropped by the caller afterwards: a trapped instance is never reused.
fn fault(store: &Store<StoreState>, err: wasmtime::Error, timeout: Duration) -> ExecutorFault {
    let state = store.data();
    if state.limits.exhausted {
        return ExecutorFault::OutOfMemory {
            limit_bytes: state.plugin.memory_bytes,
        };
    }
    if let Some(exit) = err.downcast_ref::<wasmtime_wasi::I32Exit>() {
        // `wasi:cli/exit`: the guest ended itself; say so, not the backtrace.
        return ExecutorFault::Failed(format!(
            "the plugin called exit (status {}) instead of answering",
            exit.0
        ));
    }
    match err.downcast_ref::<Trap>() {
        Some(Trap::Interrupt) => ExecutorFault::Timeout(timeout),
        Some(trap) => {
            let mut message = trap.to_string();
            if let Some(said) = state.stderr_explanation() {
                message.push_str(&format!(" (the plugin wrote: {said})"));
            }
            ExecutorFault::Trap(message)
        }
        None => ExecutorFault::Failed(format!("{err:#}")),
    }
}

/// Refuse components built against another version of the contract, naming
/// both versions, before anything tries to link them.
fn check_contract_version(
    runtime: &WasmRuntime,
    component: &Component,
) -> Result<(), ComponentError> {
    let expected = semver::Version::parse(PACKAGE_VERSION)
        .map_err(|err| ComponentError::Invalid(format!("bad built-in contract version: {err}")))?;
    let ty = component.component_type();
    let names = ty
        .imports(&runtime.engine)
        .chain(ty.exports(&runtime.engine))
        .filter(|(_, item)| matches!(item.ty, ComponentItem::ComponentInstance(_)))
        .map(|(name, _)| name.to_owned())
        .collect::<Vec<_>>();
    for name in names {
        let Some(rest) = name.strip_prefix(PACKAGE).and_then(|r| r.strip_prefix('/')) else {
            continue;
        };
        let found = rest
            .split_once('@')
            .map(|(_, version)| version)
            .unwrap_or("");
        let compatible = semver::Version::parse(found)
            .map(|found| is_compatible(&expected, &found))
            .unwrap_or(false);
        if !compatible {
            return Err(ComponentError::WrongVersion {
                expected: PACKAGE_VERSION.to_owned(),
                found: if found.is_empty() {
                    "(unversioned)".into()
                } else {
                    found.to_owned()
                },
            });
        }
    }
    Ok(())
}

/// Semver compatibility as the component model applies it: same major, and
/// for 0.x the same minor.
fn is_compatible(expected: &semver::Version, found: &semver::Version) -> bool {
    expected.major == found.major && (expected.major != 0 || expected.minor == found.minor)
}
