//! Command bodies: the typed `in` executors of `command.invoked`.
//!
//! A body sees an [`Invocation`] and returns an [`Outcome`] or a
//! [`CommandError`]. [`BodyExecutor`] adapts a body to the generic hook
//! chain: it reads the invocation from the JSON context, yields when an
//! earlier (lower-priority) body already set a result, and writes its own.

use std::sync::Arc;

use serde::Deserialize;
use serde_json::Value;

use super::{CommandContext, CommandError, CommandResult, Invocation, Outcome};
use crate::hooks::{Abort, AbortReason, BoxFuture, Decision, Executor, ExecutorFault, HookCall};

/// The result of running a body: its answer, or a fault (trap, timeout, ...).
pub type BodyResult = Result<Result<Outcome, CommandError>, ExecutorFault>;

/// A command's body.
pub trait CommandBody: Send + Sync + 'static {
    fn run(&self, invocation: Invocation) -> BoxFuture<'_, BodyResult>;
}

/// A synchronous Rust function as a body, for commands registered by code.
pub struct NativeBody<F>(pub F);

impl<F> CommandBody for NativeBody<F>
where
    F: Fn(&Invocation) -> Result<Outcome, CommandError> + Send + Sync + 'static,
{
    fn run(&self, invocation: Invocation) -> BoxFuture<'_, BodyResult> {
        Box::pin(std::future::ready(Ok((self.0)(&invocation))))
    }
}

/// A body as an executor on `command.invoked.in`.
pub struct BodyExecutor {
    body: Arc<dyn CommandBody>,
}

impl BodyExecutor {
    pub fn new(body: Arc<dyn CommandBody>) -> Self {
        BodyExecutor { body }
    }

    async fn execute_body(
        &self,
        call: HookCall<'_>,
        context: &Value,
    ) -> Result<Decision, ExecutorFault> {
        // Yield to the body an earlier (lower-priority) executor provided.
        if context
            .get("result")
            .is_some_and(|result| !result.is_null())
        {
            return Ok(Decision::Pass);
        }
        // The context is the harness's own, but an earlier executor may have
        // replaced it: a context of the wrong shape is that executor's bug,
        // reported as an invalid input rather than a crash.
        let mut invocation = match CommandContext::deserialize(context) {
            Ok(parsed) => parsed.into_invocation(),
            Err(err) => {
                return Ok(Decision::Abort(Abort {
                    reason: AbortReason::Invalid,
                    message: format!("command.invoked context is out of shape: {err}"),
                }));
            }
        };
        // The body sees the task the harness runs it for, whatever an earlier
        // executor wrote into the context: warm-instance reuse is keyed on it.
        if let Some(task_id) = call.task_id {
            task_id.clone_into(&mut invocation.task.id);
        }
        let result = CommandResult::from(self.body.run(invocation).await?);
        let result = serde_json::to_value(&result)
            .map_err(|err| ExecutorFault::Failed(format!("cannot encode the result: {err}")))?;
        let mut next = context.clone();
        next["result"] = result;
        Ok(Decision::Replace(next))
    }
}

impl Executor for BodyExecutor {
    fn execute<'a>(
        &'a self,
        call: HookCall<'a>,
        context: &'a Value,
    ) -> BoxFuture<'a, Result<Decision, ExecutorFault>> {
        Box::pin(self.execute_body(call, context))
    }
}
