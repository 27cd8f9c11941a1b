//! A tool body written in Rust as a `tool.invoked.in` executor: it answers a
//! call unless an executor earlier in the chain (a lower priority number, a
//! plugin replacing the body) has already set the result, exactly as the
//! built-in command bodies yield.

use std::sync::Arc;

use serde::Deserialize;
use serde_json::Value;

use crate::domain::{ToolCall, ToolResult};
use crate::hooks::{BoxFuture, Decision, Executor, ExecutorFault, HookCall, Progress};

/// What answers one tool's calls.
pub(crate) trait ToolBody: Send + Sync + 'static {
    /// Answer `call`. A failure is a [`ToolResult::Error`] the model reads;
    /// `progress`, when given, is where to report while it runs.
    fn call<'a>(
        &'a self,
        call: &'a ToolCall,
        progress: Option<&'a dyn Progress>,
    ) -> BoxFuture<'a, ToolResult>;
}

/// A [`ToolBody`] as an executor.
pub(crate) struct BodyExecutor<B: ?Sized>(pub(crate) Arc<B>);

/// The part of the `tool.invoked` context a body reads.
#[derive(Deserialize)]
struct Asked {
    call: ToolCall,
    #[serde(default)]
    result: Option<ToolResult>,
}

impl<B: ToolBody + ?Sized> Executor for BodyExecutor<B> {
    fn execute<'a>(
        &'a self,
        hook: HookCall<'a>,
        context: &'a Value,
    ) -> BoxFuture<'a, Result<Decision, ExecutorFault>> {
        Box::pin(async move {
            let asked: Asked = serde_json::from_value(context.clone()).map_err(|error| {
                ExecutorFault::BadAnswer(format!(
                    "the tool.invoked context is out of shape: {error}"
                ))
            })?;
            if asked.result.is_some() {
                return Ok(Decision::Pass);
            }
            let result = self.0.call(&asked.call, hook.progress).await;
            let mut answered = context.clone();
            let encoded = serde_json::to_value(&result).map_err(|error| {
                ExecutorFault::Failed(format!("cannot encode a result: {error}"))
            })?;
            match answered.as_object_mut() {
                Some(fields) => {
                    fields.insert("result".into(), encoded);
                    Ok(Decision::Replace(answered))
                }
                None => Err(ExecutorFault::BadAnswer(
                    "the tool.invoked context is not an object".into(),
                )),
            }
        })
    }
}
