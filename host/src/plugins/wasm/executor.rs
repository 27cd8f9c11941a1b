//! Components as hook executors, command bodies and tool bodies.

use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;

use super::component::PluginComponent;
use crate::commands::{BodyResult, CommandBody, Completer, Invocation, Suggestion};
use crate::domain::{TaskView, ToolCall};
use crate::hooks::{BoxFuture, Decision, Executor, ExecutorFault, HookCall, Progress};
use crate::tools::{ToolBody, ToolBodyResult};

/// A component's typed `command.run` export as a command body.
pub struct WasmCommandBody {
    component: Arc<PluginComponent>,
    timeout: Duration,
}

impl WasmCommandBody {
    pub fn new(component: Arc<PluginComponent>, timeout: Duration) -> Self {
        WasmCommandBody { component, timeout }
    }
}

impl CommandBody for WasmCommandBody {
    fn run(&self, invocation: Invocation) -> BoxFuture<'_, BodyResult> {
        Box::pin(self.component.run_command(invocation, self.timeout))
    }
}

/// A component's typed `tool.call` export as a tool body.
pub struct WasmToolBody {
    component: Arc<PluginComponent>,
    timeout: Duration,
}

impl WasmToolBody {
    pub fn new(component: Arc<PluginComponent>, timeout: Duration) -> Self {
        WasmToolBody { component, timeout }
    }
}

impl ToolBody for WasmToolBody {
    fn call<'a>(
        &'a self,
        call: &'a ToolCall,
        task: &'a TaskView,
        _progress: Option<&'a dyn Progress>,
    ) -> BoxFuture<'a, ToolBodyResult> {
        // A component reports nothing while it runs: its calls are short and
        // bounded by the tool's timeout.
        Box::pin(self.component.call_tool(call, task, self.timeout))
    }
}

/// A component's `hook.handle` export as an executor for any hook point.
pub struct WasmHookExecutor {
    component: Arc<PluginComponent>,
    timeout: Duration,
}

impl WasmHookExecutor {
    pub fn new(component: Arc<PluginComponent>, timeout: Duration) -> Self {
        WasmHookExecutor { component, timeout }
    }
}

impl Executor for WasmHookExecutor {
    fn execute<'a>(
        &'a self,
        call: HookCall<'a>,
        context: &'a Value,
    ) -> BoxFuture<'a, Result<Decision, ExecutorFault>> {
        Box::pin(self.component.handle_hook(call, context, self.timeout))
    }
}

/// A component's `completion` export as the completer of the commands its
/// body serves.
pub struct WasmCompleter {
    component: Arc<PluginComponent>,
    timeout: Duration,
}

impl WasmCompleter {
    pub fn new(component: Arc<PluginComponent>, timeout: Duration) -> Self {
        WasmCompleter { component, timeout }
    }
}

impl Completer for WasmCompleter {
    fn complete<'a>(
        &'a self,
        command: &'a str,
        partial_arguments: &'a str,
    ) -> BoxFuture<'a, Result<Vec<Suggestion>, ExecutorFault>> {
        Box::pin(
            self.component
                .complete(command, partial_arguments, self.timeout),
        )
    }
}
