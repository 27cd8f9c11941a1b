//! One plugin component: compiled once, pre-instantiated once, and
//! instantiated into a fresh store for every call.

use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use wasmtime::component::{Component, InstancePre, types::ComponentItem};
use wasmtime::{Store, Trap};

use super::bindings::{
    ExportIndices, PACKAGE, PACKAGE_VERSION, decision_from_guest, exports, outcome_from_guest,
};
use super::engine::WasmRuntime;
use super::store::{PluginIdentity, StoreState, new_store};
use crate::commands::{BodyResult, Invocation};
use crate::hooks::{Decision, ExecutorFault, HookPoint};

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

    /// Run the component's command body in a fresh instance.
    pub async fn run_command(&self, invocation: Invocation, timeout: Duration) -> BodyResult {
        let Some(indices) = &self.exports.command else {
            return Err(ExecutorFault::Failed(format!(
                "plugin {} does not export a command body",
                self.identity.name
            )));
        };
        let mut store = self.store(timeout);
        let result = async {
            let instance = self.pre.instantiate_async(&mut store).await?;
            let guest = indices.load(&mut store, &instance)?;
            guest.call_run(&mut store, &invocation.into()).await
        }
        .await;
        match result {
            Ok(Ok(outcome)) => Ok(Ok(outcome_from_guest(outcome)?)),
            Ok(Err(error)) => Ok(Err(error.into())),
            Err(err) => Err(fault(&store, err, timeout)),
        }
    }

    /// Run the component's generic hook executor in a fresh instance.
    pub async fn handle_hook(
        &self,
        point: HookPoint,
        context: &Value,
        timeout: Duration,
    ) -> Result<Decision, ExecutorFault> {
        let Some(indices) = &self.exports.hook else {
            return Err(ExecutorFault::Failed(format!(
                "plugin {} does not export a hook executor",
                self.identity.name
            )));
        };
        let context = context.to_string();
        let point = point.to_string();
        let mut store = self.store(timeout);
        let result = async {
            let instance = self.pre.instantiate_async(&mut store).await?;
            let guest = indices.load(&mut store, &instance)?;
            guest.call_handle(&mut store, &point, &context).await
        }
        .await;
        match result {
            Ok(decision) => decision_from_guest(decision),
            Err(err) => Err(fault(&store, err, timeout)),
        }
    }

    fn store(&self, timeout: Duration) -> Store<StoreState> {
        new_store(&self.runtime.engine, self.identity.clone(), timeout)
    }
}

/// Turn a failed call into the fault the sender is told about. The store is
/// dropped by the caller afterwards: a trapped instance is never reused.
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
