//! Executors written in Rust by a program that embeds the harness.

use serde_json::Value;

use super::{BoxFuture, Decision, Executor, ExecutorFault, HookCall};

/// A synchronous Rust closure as an executor.
///
/// ```
/// use tiny_harness::hooks::{Decision, NativeExecutor};
/// let audit = NativeExecutor::new(|call, context| {
///     tracing::info!(point = %call.point, task = ?call.task_id, %context, "audit");
///     Ok(Decision::Pass)
/// });
/// # let _ = audit;
/// ```
pub struct NativeExecutor<F> {
    handler: F,
}

impl<F> NativeExecutor<F>
where
    F: Fn(HookCall<'_>, &Value) -> Result<Decision, ExecutorFault> + Send + Sync + 'static,
{
    pub fn new(handler: F) -> Self {
        NativeExecutor { handler }
    }
}

impl<F> Executor for NativeExecutor<F>
where
    F: Fn(HookCall<'_>, &Value) -> Result<Decision, ExecutorFault> + Send + Sync + 'static,
{
    fn execute<'a>(
        &'a self,
        call: HookCall<'a>,
        context: &'a Value,
    ) -> BoxFuture<'a, Result<Decision, ExecutorFault>> {
        let decision = (self.handler)(call, context);
        Box::pin(std::future::ready(decision))
    }
}
