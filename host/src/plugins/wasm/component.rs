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
use wasmtime::component::{Component, InstancePre};
use wasmtime::{Store, Trap};

use super::bindings::latest::{decision_from_guest, outcome_from_guest};
use super::bindings::{ContractVersion, Exports, PACKAGE, VersionError, latest};
use super::capacity::{ComponentQuota, Cost, Room};
use super::engine::{MAX_MEMORIES_PER_COMPONENT, MAX_TABLES_PER_COMPONENT, WasmRuntime};
use super::pool::{InstancePool, LiveInstance, PoolKey};
use super::store::{PluginIdentity, StoreState, new_store};
use crate::commands::{BodyResult, Invocation, Suggestion};
use crate::domain::{TaskView, ToolCall, ToolResult};
use crate::hooks::{Decision, ExecutorFault, HookCall};

/// Why a component cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ComponentError {
    #[error("not a valid WebAssembly component: {0}")]
    Invalid(String),
    #[error(
        "built against {PACKAGE}@{found}, but this harness speaks {expected}; rebuild the plugin against wit/ of this harness"
    )]
    WrongVersion { expected: String, found: String },
    #[error(
        "names two versions of the contract, {PACKAGE}@{first} and @{second}; build it against one"
    )]
    MixedVersions { first: String, second: String },
    #[error("exports none of {PACKAGE}/command, /tool, /hook or /completion")]
    NoExports,
    #[error(
        "imports wasi:http (outgoing HTTP requests), which plugin `{plugin}` is not granted: \
         declare the hosts it calls in plugin.json (`\"capabilities\": {{\"network\": [...]}}`) \
         and grant them with [plugins.grants.{plugin}] network = [...]"
    )]
    NetworkNotGranted { plugin: String },
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
    /// Its exports, in the bindings of the contract version it was built
    /// against.
    exports: Exports,
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
        let version =
            ContractVersion::of(&component, &runtime.engine).map_err(|err| match err {
                VersionError::Unspoken { found } => ComponentError::WrongVersion {
                    expected: ContractVersion::spoken(),
                    found,
                },
                VersionError::Mixed { first, second } => {
                    ComponentError::MixedVersions { first, second }
                }
            })?;
        // wasi:http is linked only for a plugin granted network hosts; any
        // other plugin whose component imports it is told why it cannot load.
        let linker = if identity.network.is_some() {
            &runtime.http_linker
        } else {
            if imports_http(runtime, &component) {
                return Err(ComponentError::NetworkNotGranted {
                    plugin: identity.name.clone(),
                });
            }
            &runtime.linker
        };
        let pre = linker
            .instantiate_pre(&component)
            .map_err(|err| ComponentError::Link(format!("{err:#}")))?;
        let exports = Exports::new(version, &pre);
        if !exports.any() {
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
        self.exports.command()
    }

    pub fn exports_hook(&self) -> bool {
        self.exports.hook()
    }

    /// Tools came with contract 0.2.0.
    pub fn exports_tool(&self) -> bool {
        self.exports.tool()
    }

    /// The contract version it was built against, e.g. `0.1.0`.
    pub fn contract_version(&self) -> &'static str {
        self.exports.version().as_str()
    }

    /// Run the component's command body, in an instance the invocation's
    /// task may use.
    pub async fn run_command(&self, invocation: Invocation, timeout: Duration) -> BodyResult {
        if !self.exports.command() {
            return Err(ExecutorFault::Failed(format!(
                "plugin {} does not export a command body",
                self.identity.name
            )));
        }
        let key = self.pool.key_for(Some(&invocation.task.id));
        let invocation = latest::wit::Invocation::from(invocation);
        self.call(key, timeout, async |live: &mut LiveInstance| {
            let answer = self
                .exports
                .run_command(&mut live.store, &live.instance, &invocation)
                .await;
            match answer {
                Ok(Ok(outcome)) => outcome_from_guest(outcome).map(Ok),
                // The guest answered with an error value: a normal return,
                // the instance is sound.
                Ok(Err(error)) => Ok(Err(error.into())),
                Err(err) => Err(fault(&live.store, err, timeout)),
            }
        })
        .await
    }

    /// Run the component's tool body for `call`, in an instance `task` may
    /// use. The result is the guest's JSON, or its typed error as the
    /// message the model reads.
    pub async fn call_tool(
        &self,
        call: &ToolCall,
        task: &TaskView,
        timeout: Duration,
    ) -> Result<ToolResult, ExecutorFault> {
        if !self.exports.tool() {
            return Err(ExecutorFault::Failed(format!(
                "plugin {} does not export a tool body",
                self.identity.name
            )));
        }
        let key = self.pool.key_for(Some(&task.id));
        let call = latest::wit::ToolCall {
            name: call.name.clone(),
            id: call.id.clone(),
            arguments: call.arguments.to_string(),
            task: task.clone().into(),
        };
        self.call(key, timeout, async |live: &mut LiveInstance| {
            let answer = self
                .exports
                .call_tool(&mut live.store, &live.instance, &call)
                .await;
            match answer {
                Ok(Ok(json)) => {
                    serde_json::from_str(&json)
                        .map(ToolResult::Output)
                        .map_err(|err| {
                            ExecutorFault::BadAnswer(format!(
                                "the tool's result is not JSON: {err}"
                            ))
                        })
                }
                Ok(Err(error)) => Ok(ToolResult::Error(tool_error(error))),
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
        if !self.exports.hook() {
            return Err(ExecutorFault::Failed(format!(
                "plugin {} does not export a hook executor",
                self.identity.name
            )));
        }
        let key = self.pool.key_for(call.task_id);
        let context = context.to_string();
        let point = call.point.to_string();
        self.call(key, timeout, async |live: &mut LiveInstance| {
            let answer = self
                .exports
                .handle_hook(&mut live.store, &live.instance, &point, &context)
                .await;
            match answer {
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
        if !self.exports.completion() {
            return Ok(Vec::new());
        }
        let key = self.pool.key_for(None);
        self.call(key, timeout, async |live: &mut LiveInstance| {
            let answer = self
                .exports
                .complete(&mut live.store, &live.instance, command, partial_arguments)
                .await;
            match answer {
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
        self.exports.completion()
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

/// What the model reads for a tool's typed error: the kind first, so it
/// knows whether to change its arguments or give up.
fn tool_error(error: latest::wit::ToolError) -> String {
    match error {
        latest::wit::ToolError::InvalidArguments(message) => {
            format!("invalid arguments: {message}")
        }
        latest::wit::ToolError::Refused(message) => format!("refused: {message}"),
        latest::wit::ToolError::Failed(message) => format!("failed: {message}"),
    }
}

/// Whether `component` imports any `wasi:http` interface.
fn imports_http(runtime: &WasmRuntime, component: &Component) -> bool {
    component
        .component_type()
        .imports(&runtime.engine)
        .any(|(name, _)| name.starts_with("wasi:http/"))
}
