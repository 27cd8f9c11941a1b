//! One plugin component: compiled once, pre-instantiated once, and run in a
//! fresh instance per call or, as its plugin.json allows, in a warm one from
//! its pool.

use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use wasmtime::component::{Component, InstancePre, types::ComponentItem};
use wasmtime::{Store, Trap};

use super::bindings::{
    ExportIndices, PACKAGE, PACKAGE_VERSION, decision_from_guest, exports, outcome_from_guest,
};
use super::engine::WasmRuntime;
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
}

/// A compiled, linked component ready to run.
pub struct PluginComponent {
    runtime: WasmRuntime,
    identity: Arc<PluginIdentity>,
    pre: InstancePre<StoreState>,
    exports: ExportIndices,
    /// Warm instances, shared by every export of this component.
    pool: InstancePool,
}

impl PluginComponent {
    /// Compile (or fetch from the cache), check the contract version, link
    /// and pre-instantiate `bytes` for `identity`.
    pub fn load(
        runtime: &WasmRuntime,
        identity: Arc<PluginIdentity>,
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
        Ok(PluginComponent {
            runtime: runtime.clone(),
            pool: InstancePool::new(identity.instances),
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
        let mut live = self.checkout(key.as_ref(), timeout).await?;
        let result = async {
            let guest = indices.load(&mut live.store, &live.instance)?;
            guest.call_run(&mut live.store, &invocation.into()).await
        }
        .await;
        let answer = match result {
            Ok(Ok(outcome)) => outcome_from_guest(outcome).map(Ok),
            // The guest answered with an error value: a normal return, the
            // instance is sound.
            Ok(Err(error)) => Ok(Err(error.into())),
            Err(err) => Err(fault(&live.store, err, timeout)),
        };
        self.check_in(key, live, answer.is_ok());
        answer
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
        let mut live = self.checkout(key.as_ref(), timeout).await?;
        let result = async {
            let guest = indices.load(&mut live.store, &live.instance)?;
            guest.call_handle(&mut live.store, &point, &context).await
        }
        .await;
        let answer = match result {
            Ok(decision) => decision_from_guest(decision),
            Err(err) => Err(fault(&live.store, err, timeout)),
        };
        self.check_in(key, live, answer.is_ok());
        answer
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
        let mut live = self.checkout(key.as_ref(), timeout).await?;
        let result = async {
            let guest = indices.load(&mut live.store, &live.instance)?;
            guest
                .call_complete(&mut live.store, command, partial_arguments)
                .await
        }
        .await;
        let answer = match result {
            Ok(suggestions) => Ok(suggestions
                .into_iter()
                .map(|suggestion| Suggestion {
                    value: suggestion.value,
                    description: suggestion.description,
                })
                .collect()),
            Err(err) => Err(fault(&live.store, err, timeout)),
        };
        self.check_in(key, live, answer.is_ok());
        answer
    }

    pub fn exports_completion(&self) -> bool {
        self.exports.completion.is_some()
    }

    /// An instance for one call of at most `timeout`: a warm one from the
    /// pool when `key` allows and one is idle, else a fresh one.
    async fn checkout(
        &self,
        key: Option<&PoolKey>,
        timeout: Duration,
    ) -> Result<LiveInstance, ExecutorFault> {
        if let Some(live) = key.and_then(|key| self.pool.take(key, timeout)) {
            return Ok(live);
        }
        let mut store = new_store(&self.runtime.engine, self.identity.clone(), timeout);
        match self.pre.instantiate_async(&mut store).await {
            Ok(instance) => Ok(LiveInstance::new(store, instance)),
            Err(err) => Err(fault(&store, err, timeout)),
        }
    }

    /// After a call: keep the instance for `key` if the call ended cleanly,
    /// else drop it. A trapped, timed-out or out-of-memory instance is
    /// poisoned, and one that gave a malformed answer is not trusted again.
    fn check_in(&self, key: Option<PoolKey>, live: LiveInstance, clean: bool) {
        match key {
            Some(key) if clean => self.pool.give_back(key, live),
            _ => drop(live),
        }
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
