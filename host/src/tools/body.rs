//! Tool bodies: the typed `in` executors of `tool.invoked`, exactly as
//! command bodies are `command.invoked`'s (`commands/body.rs`).
//!
//! A body sees the call (its arguments already checked against the tool's
//! schema) and the task, and answers with a [`ToolResult`]: its output, or
//! an error message the model reads. [`ToolBodyExecutor`] adapts a body to
//! the hook chain: it yields when an earlier (lower-priority) body already
//! set a result, and writes its own. Wasm components
//! (`plugins::wasm::WasmToolBody`) and native Rust ([`NativeTool`],
//! registered with [`RegistryBuilder::register_tool`]) are both bodies.

use std::sync::Arc;

use serde::Deserialize;
use serde_json::Value;

use super::ToolDeclaration;
use crate::commands::{RegistryBuilder, RegistryError};
use crate::domain::{TaskView, ToolCall, ToolContext, ToolResult};
use crate::hooks::{
    Abort, AbortReason, BoxFuture, DEFAULT_PRIORITY, Decision, Executor, ExecutorFault,
    ExecutorKind, HookCall, HookEntry, HookPoint, Operation, Phase, Progress,
};

/// What running a tool body comes to: its answer, or a fault (a trap, a
/// timeout, ...) that fails the call.
pub type ToolBodyResult = Result<ToolResult, ExecutorFault>;

/// A tool's body.
///
/// `progress`, when the call is part of a turn with subscribers, is where a
/// long-running body (an MCP server's tool, a delegate agent) reports what
/// it is doing; reporting never blocks, and a body may ignore it.
pub trait ToolBody: Send + Sync + 'static {
    fn call<'a>(
        &'a self,
        call: &'a ToolCall,
        task: &'a TaskView,
        progress: Option<&'a dyn Progress>,
    ) -> BoxFuture<'a, ToolBodyResult>;
}

/// A synchronous Rust function as a tool body, for tools registered by code.
pub struct NativeTool<F>(pub F);

impl<F> ToolBody for NativeTool<F>
where
    F: Fn(&ToolCall, &TaskView) -> ToolResult + Send + Sync + 'static,
{
    fn call<'a>(
        &'a self,
        call: &'a ToolCall,
        task: &'a TaskView,
        _progress: Option<&'a dyn Progress>,
    ) -> BoxFuture<'a, ToolBodyResult> {
        Box::pin(std::future::ready(Ok((self.0)(call, task))))
    }
}

/// A tool body as an executor on `tool.invoked.in`.
pub struct ToolBodyExecutor {
    body: Arc<dyn ToolBody>,
}

impl ToolBodyExecutor {
    pub fn new(body: Arc<dyn ToolBody>) -> Self {
        ToolBodyExecutor { body }
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
        let mut parsed = match ToolContext::deserialize(context) {
            Ok(parsed) => parsed,
            Err(err) => {
                return Ok(Decision::Abort(Abort {
                    reason: AbortReason::Invalid,
                    message: format!("tool.invoked context is out of shape: {err}"),
                }));
            }
        };
        // The body runs for the task the harness names, whatever an earlier
        // executor wrote: warm-instance reuse is keyed on it.
        if let Some(task_id) = call.task_id {
            task_id.clone_into(&mut parsed.task.id);
        }
        let result = self
            .body
            .call(&parsed.call, &parsed.task, call.progress)
            .await?;
        let result = serde_json::to_value(&result)
            .map_err(|err| ExecutorFault::Failed(format!("cannot encode the result: {err}")))?;
        let mut next = context.clone();
        next["result"] = result;
        Ok(Decision::Replace(next))
    }
}

impl Executor for ToolBodyExecutor {
    fn execute<'a>(
        &'a self,
        call: HookCall<'a>,
        context: &'a Value,
    ) -> BoxFuture<'a, Result<Decision, ExecutorFault>> {
        Box::pin(self.execute_body(call, context))
    }
}

impl RegistryBuilder {
    /// Declare a tool with a body written in Rust, at the default body
    /// priority: the programmatic form of tools.json + a hooks.json `tool`
    /// entry.
    pub fn register_tool(
        &mut self,
        declaration: ToolDeclaration,
        body: Arc<dyn ToolBody>,
    ) -> Result<(), RegistryError> {
        let name = declaration.name.clone();
        self.declare_tool(declaration, "native")?;
        self.add_hook(HookEntry {
            name: format!("{name}-body"),
            origin: "native".into(),
            point: HookPoint::new(Operation::ToolInvoked, Phase::In),
            command: Some(name),
            priority: DEFAULT_PRIORITY,
            kind: ExecutorKind::Native,
            source: "native".into(),
            executor: Arc::new(ToolBodyExecutor::new(body)),
        })
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use serde_json::json;

    use super::*;

    #[derive(Debug, Default)]
    struct Recorded(Mutex<Vec<String>>);

    impl Progress for Recorded {
        fn report(&self, text: String) {
            self.0.lock().expect("lock").push(text);
        }
    }

    /// A body that reports progress, then answers with its arguments.
    struct Reporting;

    impl ToolBody for Reporting {
        fn call<'a>(
            &'a self,
            call: &'a ToolCall,
            _task: &'a TaskView,
            progress: Option<&'a dyn Progress>,
        ) -> BoxFuture<'a, ToolBodyResult> {
            if let Some(progress) = progress {
                progress.report(format!("working on {}", call.name));
            }
            Box::pin(std::future::ready(Ok(ToolResult::Output(
                call.arguments.clone(),
            ))))
        }
    }

    fn context(result: Option<ToolResult>) -> Value {
        serde_json::to_value(ToolContext {
            task: TaskView::scratch("alice"),
            call: ToolCall {
                id: "call-1".into(),
                name: "echo".into(),
                arguments: json!({ "text": "hi" }),
            },
            result,
        })
        .expect("json")
    }

    fn point() -> HookPoint {
        HookPoint::new(Operation::ToolInvoked, Phase::In)
    }

    #[tokio::test]
    async fn a_body_writes_its_result_and_reports_progress() {
        let executor = ToolBodyExecutor::new(Arc::new(Reporting));
        let progress = Recorded::default();
        let call = HookCall::new(point(), Some("task-1")).reporting(&progress);
        let decision = executor.execute(call, &context(None)).await.expect("ran");
        let Decision::Replace(next) = decision else {
            panic!("the body replaces the context: {decision:?}");
        };
        assert_eq!(next["result"], json!({ "output": { "text": "hi" } }));
        assert_eq!(*progress.0.lock().expect("lock"), ["working on echo"]);
    }

    #[tokio::test]
    async fn a_body_yields_to_an_earlier_result() {
        let executor = ToolBodyExecutor::new(Arc::new(Reporting));
        let earlier = context(Some(ToolResult::Output(json!("first"))));
        let decision = executor
            .execute(HookCall::new(point(), Some("task-1")), &earlier)
            .await
            .expect("ran");
        assert!(matches!(decision, Decision::Pass), "{decision:?}");
    }
}
