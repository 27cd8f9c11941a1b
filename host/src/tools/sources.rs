//! The tool sources that live outside the registry: MCP servers (their
//! sessions and processes) and delegate agents (their clients). They are
//! started once, before the first registry generation, and shared by every
//! generation: [`ToolSources::register`] is what the embedding program's
//! native registrations call for each one.

use std::sync::Arc;

use tokio::sync::watch;

use super::delegate::Delegate;
use super::delegate::settings::DelegateSettings;
use super::mcp::settings::McpServerSettings;
use super::mcp::{self, McpServer};
use crate::commands::RegistryBuilder;
use crate::outbound::{self, ExtraRoots};

/// What `[mcp.*]` and `[agents.*]` configure.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ToolSourceSettings {
    pub mcp: Vec<McpServerSettings>,
    pub delegates: Vec<DelegateSettings>,
}

/// The started sources. Cheap to clone.
#[derive(Clone)]
pub struct ToolSources {
    mcp: Vec<Arc<McpServer>>,
    delegates: Vec<Arc<Delegate>>,
    changes: watch::Sender<u64>,
}

impl ToolSources {
    /// Start every source: each MCP server's first session is opened (all
    /// at once, each within its `connect_timeout_secs`) and its tool list
    /// read. A server that cannot start is logged and tried again in the
    /// background, with backoff; its tools are offered once it serves
    /// (a change on [`ToolSources::changes`]).
    pub async fn start(settings: ToolSourceSettings, roots: &ExtraRoots) -> Result<Self, String> {
        let (changes, _) = watch::channel(0);
        let http = outbound::client_builder(roots)
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(outbound::describe)?;
        let mcp: Vec<Arc<McpServer>> = settings
            .mcp
            .into_iter()
            .map(|server| McpServer::new(server, http.clone(), changes.clone()))
            .collect();
        let started = futures_util::future::join_all(mcp.iter().map(|server| server.start())).await;
        for (server, started) in mcp.iter().zip(started) {
            match started {
                Ok(()) => {
                    let tools: Vec<String> = server
                        .offered()
                        .into_iter()
                        .map(|tool| tool.declaration.name)
                        .collect();
                    tracing::info!(mcp = %server.name(), tools = %tools.join(", "), "MCP server serving");
                }
                Err(reason) => {
                    tracing::error!(mcp = %server.name(), %reason, "the MCP server cannot be started; trying again in the background");
                    tokio::spawn(server.clone().keep_starting());
                }
            }
        }
        let delegates = settings
            .delegates
            .into_iter()
            .map(|delegate| {
                let name = delegate.name.clone();
                Delegate::new(delegate, roots)
                    .map_err(|reason| format!("`[agents.{name}]`: {reason}"))
            })
            .collect::<Result<Vec<_>, _>>()?;
        for delegate in &delegates {
            tracing::info!(agent = %delegate.name(), "delegate agent offered as {}{}", super::delegate::settings::TOOL_PREFIX, delegate.name());
        }
        Ok(ToolSources {
            mcp,
            delegates,
            changes,
        })
    }

    /// No source is configured.
    pub fn is_empty(&self) -> bool {
        self.mcp.is_empty() && self.delegates.is_empty()
    }

    /// Declare every source's tools, with their bodies, in `builder`.
    pub fn register(&self, builder: &mut RegistryBuilder) {
        for server in &self.mcp {
            mcp::register(server, builder);
        }
        for delegate in &self.delegates {
            delegate.register(builder);
        }
    }

    /// Changes when the tools the sources offer change (an MCP server
    /// started late, or listed other tools on a restart): build a new
    /// registry generation then.
    pub fn changes(&self) -> watch::Receiver<u64> {
        self.changes.subscribe()
    }

    /// End every MCP session (killing stdio servers' processes).
    pub async fn shutdown(&self) {
        for server in &self.mcp {
            server.shutdown().await;
        }
    }
}
