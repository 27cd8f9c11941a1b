//! The hook chains: every executor registered for every hook point, in the
//! order they run, frozen before any task runs.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;

use serde_json::Value;

use super::{
    Abort, Decision, Executor, ExecutorFault, ExecutorKind, HookCall, HookContext, HookPoint,
    StepOutcome,
};

/// One registered executor.
#[derive(Clone)]
pub struct HookEntry {
    /// A name unique within its origin, e.g. `status-body`.
    pub name: String,
    /// Who registered it: a plugin name, or `native` for embedding code.
    pub origin: String,
    pub point: HookPoint,
    /// For `command.invoked.*`: run only for this command; for
    /// `tool.invoked.*`: only for this tool.
    pub command: Option<String>,
    /// Lower runs first. Built-in bodies sit at [`DEFAULT_PRIORITY`].
    pub priority: i32,
    pub kind: ExecutorKind,
    /// Where the body lives, for traces and reports: the component file, the
    /// endpoint's URL, or `native`.
    pub source: String,
    pub executor: Arc<dyn Executor>,
}

impl HookEntry {
    /// `origin/name`, how messages refer to an executor.
    pub fn qualified_name(&self) -> String {
        format!("{}/{}", self.origin, self.name)
    }

    fn applies_to(&self, command: Option<&str>) -> bool {
        match (&self.command, command) {
            (None, _) => true,
            (Some(filter), Some(command)) => filter == command,
            (Some(_), None) => false,
        }
    }
}

impl std::fmt::Debug for HookEntry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HookEntry")
            .field("name", &self.qualified_name())
            .field("point", &self.point.to_string())
            .field("command", &self.command)
            .field("priority", &self.priority)
            .field("kind", &self.kind)
            .finish()
    }
}

/// The priority of built-in bodies; a lower number replaces them.
pub const DEFAULT_PRIORITY: i32 = 1000;

/// Why a chain did not produce a context.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ChainError {
    /// An executor refused the operation.
    #[error("{by} aborted ({}): {}", abort.reason, abort.message)]
    Aborted { by: String, abort: Abort },
    /// An executor failed to answer; the operation fails.
    #[error("{by} {fault}")]
    Fault { by: String, fault: ExecutorFault },
}

/// Every executor for every hook point, sorted by priority (ties keep
/// registration order). Immutable once built: a reload builds a new one.
#[derive(Clone, Default)]
pub struct HookChains {
    by_point: HashMap<HookPoint, Vec<HookEntry>>,
}

impl HookChains {
    /// Build chains from entries given in load order.
    pub fn new(entries: impl IntoIterator<Item = HookEntry>) -> Self {
        let mut by_point: HashMap<HookPoint, Vec<HookEntry>> = HashMap::new();
        for entry in entries {
            by_point.entry(entry.point).or_default().push(entry);
        }
        for chain in by_point.values_mut() {
            // A stable sort keeps load order among equal priorities.
            chain.sort_by_key(|entry| entry.priority);
        }
        HookChains { by_point }
    }

    /// The executors that run at `point` for `command`, in order.
    pub fn entries<'a>(
        &'a self,
        point: HookPoint,
        command: Option<&'a str>,
    ) -> impl Iterator<Item = &'a HookEntry> + 'a {
        self.by_point
            .get(&point)
            .into_iter()
            .flatten()
            .filter(move |entry| entry.applies_to(command))
    }

    /// Every entry of every point, for listings.
    pub fn all(&self) -> impl Iterator<Item = &HookEntry> {
        self.by_point.values().flatten()
    }

    /// Whether any executor runs at `point` for `command`.
    pub fn has_entries(&self, point: HookPoint, command: Option<&str>) -> bool {
        self.entries(point, command).next().is_some()
    }

    /// Run the chain at `call.point` on a typed context. The context becomes
    /// JSON only when an executor runs (that is the executors' contract), and
    /// is read back into its type once the chain is done; a context an
    /// executor left out of shape is that executor's fault.
    pub async fn run_typed<C: HookContext>(
        &self,
        call: HookCall<'_>,
        command: Option<&str>,
        context: C,
    ) -> Result<C, ChainError> {
        debug_assert_eq!(
            call.point.operation,
            C::OPERATION,
            "a context run at another operation's point"
        );
        if !self.has_entries(call.point, command) {
            return Ok(context);
        }
        let json = serde_json::to_value(&context).map_err(|error| ChainError::Fault {
            by: "the harness".into(),
            fault: ExecutorFault::Failed(format!(
                "cannot encode the {} context: {error}",
                call.point
            )),
        })?;
        let (json, last_writer) = self.run_entries(call, command, json).await?;
        match last_writer {
            // Nobody replaced it: the context is the one given.
            None => Ok(context),
            Some(by) => serde_json::from_value(json).map_err(|error| ChainError::Fault {
                by,
                fault: ExecutorFault::BadAnswer(format!(
                    "left the {} context out of shape: {error}",
                    call.point
                )),
            }),
        }
    }

    /// Run the chain at `call.point`: each executor sees the context the
    /// previous one returned. The first abort or fault stops the chain.
    pub async fn run(
        &self,
        call: HookCall<'_>,
        command: Option<&str>,
        context: Value,
    ) -> Result<Value, ChainError> {
        self.run_entries(call, command, context)
            .await
            .map(|(context, _)| context)
    }

    /// The chain's result and who last replaced the context, if anyone did.
    async fn run_entries(
        &self,
        call: HookCall<'_>,
        command: Option<&str>,
        mut context: Value,
    ) -> Result<(Value, Option<String>), ChainError> {
        let mut last_writer = None;
        for entry in self.entries(call.point, command) {
            let started = Instant::now();
            let decision = entry.executor.execute(call, &context).await;
            let outcome = match &decision {
                Ok(Decision::Pass) => StepOutcome::Pass,
                Ok(Decision::Replace(_)) => StepOutcome::Replace,
                Ok(Decision::Abort(_)) => StepOutcome::Abort,
                Err(_) => StepOutcome::Fault,
            };
            if let Some(trace) = call.trace {
                trace.record(
                    call.point.to_string(),
                    entry.qualified_name(),
                    &entry.kind,
                    &entry.source,
                    started.elapsed(),
                    outcome,
                );
            }
            let by = || format!("{} executor {}", entry.kind, entry.qualified_name());
            match decision.map_err(|fault| ChainError::Fault { by: by(), fault })? {
                Decision::Pass => {}
                Decision::Replace(next) => {
                    context = next;
                    last_writer = Some(by());
                }
                Decision::Abort(abort) => {
                    return Err(ChainError::Aborted {
                        by: entry.qualified_name(),
                        abort,
                    });
                }
            }
        }
        Ok((context, last_writer))
    }
}
