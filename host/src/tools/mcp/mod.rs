//! MCP servers as tool sources (`[mcp.<name>]`), through the official Rust
//! SDK (`rmcp`): the allowlisted tools of each server are offered to the
//! model as `<server>__<tool>`, each a declared tool whose body is a native
//! `tool.invoked.in` executor, so every call runs through `tool.invoked`
//! like a plugin's tool (policy hooks see it, a plugin may replace it).
//!
//! Sessions live here, outside the registry, and are shared by every
//! registry generation: a plugin reload does not restart a server. A
//! server's tool list is read when its session opens (at start, and on
//! every restart) and when it says the list changed; a changed offer
//! bumps [`ToolSources::changes`](super::ToolSources::changes), after which
//! the embedding program builds a new registry generation.

mod connect;
mod result;
mod server;
pub mod settings;

use std::sync::Arc;

pub use server::McpServer;

use super::{ToolBody, ToolBodyExecutor, ToolBodyResult};
use crate::commands::RegistryBuilder;
use crate::domain::{TaskView, ToolCall};
use crate::hooks::{
    BoxFuture, DEFAULT_PRIORITY, ExecutorKind, HookEntry, HookPoint, Operation, Phase, Progress,
};

/// The origin MCP tools are declared under, e.g. `mcp:files`.
pub(crate) fn origin(server: &str) -> String {
    format!("mcp:{server}")
}

/// Declare `server`'s offered tools in `builder`, each with its body.
pub(crate) fn register(server: &Arc<McpServer>, builder: &mut RegistryBuilder) {
    let origin = origin(server.name());
    for tool in server.offered() {
        let name = tool.declaration.name.clone();
        if let Err(error) = builder.declare_tool(tool.declaration, &origin) {
            tracing::warn!(mcp = %server.name(), %error, "an MCP tool is not offered");
            continue;
        }
        let body = McpToolBody {
            server: server.clone(),
            remote: tool.remote,
        };
        let entry = HookEntry {
            name: name.clone(),
            origin: origin.clone(),
            point: HookPoint::new(Operation::ToolInvoked, Phase::In),
            command: Some(name),
            priority: DEFAULT_PRIORITY,
            kind: ExecutorKind::Native,
            source: server.source(),
            executor: Arc::new(ToolBodyExecutor::new(Arc::new(body))),
        };
        if let Err(error) = builder.add_hook(entry) {
            tracing::warn!(mcp = %server.name(), %error, "an MCP tool's body cannot be registered");
        }
    }
}

/// The body of one MCP tool: a call to its server.
struct McpToolBody {
    server: Arc<McpServer>,
    remote: String,
}

impl ToolBody for McpToolBody {
    fn call<'a>(
        &'a self,
        call: &'a ToolCall,
        _task: &'a TaskView,
        progress: Option<&'a dyn Progress>,
    ) -> BoxFuture<'a, ToolBodyResult> {
        Box::pin(async move {
            Ok(self
                .server
                .call(&self.remote, &call.arguments, progress)
                .await)
        })
    }
}
