//! The hook chains: every executor registered for every hook point, in the
//! order they run, frozen before any task runs.

use std::collections::HashMap;
use std::sync::Arc;

use serde_json::Value;

use super::{Abort, Decision, Executor, ExecutorFault, ExecutorKind, HookCall, HookPoint};

/// One registered executor.
#[derive(Clone)]
pub struct HookEntry {
    /// A name unique within its origin, e.g. `status-body`.
    pub name: String,
    /// Who registered it: a plugin name, or `native` for embedding code.
    pub origin: String,
    pub point: HookPoint,
    /// For `command.invoked.*`: run only for this command.
    pub command: Option<String>,
    /// Lower runs first. Built-in bodies sit at [`DEFAULT_PRIORITY`].
    pub priority: i32,
    pub kind: ExecutorKind,
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

    /// Run the chain at `call.point`: each executor sees the context the
    /// previous one returned. The first abort or fault stops the chain.
    pub async fn run(
        &self,
        call: HookCall<'_>,
        command: Option<&str>,
        mut context: Value,
    ) -> Result<Value, ChainError> {
        for entry in self.entries(call.point, command) {
            let decision = entry
                .executor
                .execute(call, &context)
                .await
                .map_err(|fault| ChainError::Fault {
                    by: format!("{} executor {}", entry.kind, entry.qualified_name()),
                    fault,
                })?;
            match decision {
                Decision::Pass => {}
                Decision::Replace(next) => context = next,
                Decision::Abort(abort) => {
                    return Err(ChainError::Aborted {
                        by: entry.qualified_name(),
                        abort,
                    });
                }
            }
        }
        Ok(context)
    }
}
