//! One configured MCP server: its session (opened at start, reopened after
//! a crash, with backoff, a bounded number of times in a row), the tools it
//! offers, and its calls (at most `max_concurrent_calls` at once, each
//! within `timeout_secs`, progress relayed, cancelled when dropped).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use rmcp::ServiceError;
use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CancelledNotificationParam, ClientRequest,
    ProgressToken, RequestId, ServerResult,
};
use rmcp::service::{Peer, PeerRequestOptions, RoleClient};
use serde_json::Value;
use tokio::sync::{Semaphore, mpsc, watch};
use tokio::time::{Instant, sleep_until, timeout_at};

use super::connect::{self, Handler, ProgressRoutes, Session};
use super::result::{description, offered_name, tool_result};
use super::settings::{McpServerSettings, Transport};
use crate::domain::ToolResult;
use crate::hooks::Progress;
use crate::tools::ToolDeclaration;
use crate::tools::settings::declared_timeout_ms;

/// How long a call that lost its session waits for a stdio server's process
/// to exit, to say how it ended.
const EXIT_WAIT: Duration = Duration::from_secs(2);

/// An allowlisted tool the server listed, as the model is offered it.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct OfferedTool {
    /// The server's name for it.
    pub(crate) remote: String,
    pub(crate) declaration: ToolDeclaration,
}

/// A configured server. Shared by every registry generation.
pub struct McpServer {
    settings: McpServerSettings,
    client: reqwest::Client,
    session: tokio::sync::Mutex<Sessions>,
    tools: RwLock<Vec<OfferedTool>>,
    calls: Semaphore,
    progress: ProgressRoutes,
    /// Bumped when any source's offered tools change.
    changed: watch::Sender<u64>,
}

/// The current session and the restart policy's memory.
#[derive(Default)]
struct Sessions {
    current: Option<Arc<Session>>,
    /// Sessions lost (crashes, failed starts) since the last call that
    /// worked.
    failures: u32,
    /// No start before this (backoff).
    not_before: Option<Instant>,
    last_failure: Option<String>,
}

impl McpServer {
    pub(crate) fn new(
        settings: McpServerSettings,
        client: reqwest::Client,
        changed: watch::Sender<u64>,
    ) -> Arc<Self> {
        Arc::new(McpServer {
            calls: Semaphore::new(settings.max_concurrent_calls),
            settings,
            client,
            session: tokio::sync::Mutex::new(Sessions::default()),
            tools: RwLock::new(Vec::new()),
            progress: Arc::new(Mutex::new(HashMap::new())),
            changed,
        })
    }

    pub fn name(&self) -> &str {
        &self.settings.name
    }

    /// The tools it offers now (from its last tool list).
    pub(crate) fn offered(&self) -> Vec<OfferedTool> {
        self.tools
            .read()
            .map(|tools| tools.clone())
            .unwrap_or_default()
    }

    /// Where calls go, for traces: the command or the URL.
    pub(crate) fn source(&self) -> String {
        match &self.settings.transport {
            Transport::Stdio { command, .. } => format!("mcp stdio: {command}"),
            Transport::Http { url, .. } => format!("mcp {url}"),
        }
    }

    /// Open the first session (at start): `Err` says why it could not be.
    pub(crate) async fn start(self: &Arc<Self>) -> Result<(), String> {
        let deadline = Instant::now() + self.settings.connect_timeout;
        self.session(deadline).await.map(drop)
    }

    /// Go on trying to start a server that failed at start, with the same
    /// backoff and bound as restarts, until it serves its tools.
    pub(crate) async fn keep_starting(self: Arc<Self>) {
        loop {
            let deadline = Instant::now() + self.settings.connect_timeout;
            match self.session(deadline).await {
                Ok(_) => return,
                Err(reason) if self.given_up().await => {
                    tracing::error!(mcp = %self.name(), %reason, "giving up on the MCP server");
                    return;
                }
                Err(reason) => {
                    tracing::warn!(mcp = %self.name(), %reason, "the MCP server is not available; trying again")
                }
            }
        }
    }

    /// End the session (a stdio server's process group is killed once the
    /// calls still holding it end).
    pub(crate) async fn shutdown(&self) {
        let mut sessions = self.session.lock().await;
        sessions.current = None;
        // No restart after this.
        sessions.failures = u32::MAX;
    }

    async fn given_up(&self) -> bool {
        self.session.lock().await.failures > self.settings.max_restarts
    }

    /// Call the server's tool `remote` with `arguments`.
    pub(crate) async fn call(
        self: &Arc<Self>,
        remote: &str,
        arguments: &Value,
        progress: Option<&dyn Progress>,
    ) -> ToolResult {
        let name = self.name();
        let limit = self.settings.timeout;
        let deadline = Instant::now() + limit;
        let arguments = match arguments {
            Value::Object(fields) => fields.clone(),
            Value::Null => Default::default(),
            _ => {
                return ToolResult::Error(format!(
                    "the arguments of `{remote}` must be a JSON object"
                ));
            }
        };
        let Ok(Ok(_permit)) = timeout_at(deadline, self.calls.acquire()).await else {
            return ToolResult::Error(format!(
                "the MCP server `{name}` is busy: all {} calls it may take at once ([mcp.{name}] \
                 max_concurrent_calls) ran for the whole {} s the call may take",
                self.settings.max_concurrent_calls,
                limit.as_secs()
            ));
        };
        let session = match self.session(deadline).await {
            Ok(session) => session,
            Err(reason) => return ToolResult::Error(reason),
        };
        let params = CallToolRequestParams::new(remote.to_owned()).with_arguments(arguments);
        let request = ClientRequest::CallToolRequest(CallToolRequest::new(params));
        let peer = session.service.peer().clone();
        // The SDK gives every request a progress token of its own; the
        // handle says which, so the server's progress finds this call.
        let handle = match timeout_at(
            deadline,
            peer.send_request_with_option(request, PeerRequestOptions::no_options()),
        )
        .await
        {
            Ok(Ok(handle)) => handle,
            Ok(Err(error)) => return self.stopped(remote, session, &error).await,
            Err(_elapsed) => return self.too_slow(remote),
        };
        let (sender, mut reports) = mpsc::channel(16);
        let _route = Route::add(&self.progress, handle.progress_token.clone(), sender);
        let mut abandoned = Abandoned {
            peer: peer.clone(),
            id: Some(handle.id.clone()),
        };
        let call = handle.await_response();
        tokio::pin!(call);
        let answer = loop {
            tokio::select! {
                answer = timeout_at(deadline, &mut call) => break answer,
                Some(text) = reports.recv() => {
                    if let Some(progress) = progress {
                        progress.report(format!("{remote}: {text}"));
                    }
                }
            }
        };
        if answer.is_ok() {
            abandoned.disarm();
        }
        let answer = answer.map(|answer| {
            answer.and_then(|result| match result {
                ServerResult::CallToolResult(result) => Ok(result),
                _ => Err(ServiceError::UnexpectedResponse),
            })
        });
        match answer {
            Err(_elapsed) => self.too_slow(remote),
            Ok(Ok(result)) => {
                self.worked().await;
                tool_result(name, remote, &result)
            }
            Ok(Err(ServiceError::McpError(error))) => {
                self.worked().await;
                ToolResult::Error(format!(
                    "the MCP server `{name}` refused the call to `{remote}`: {}",
                    error.message
                ))
            }
            Ok(Err(error)) => self.stopped(remote, session, &error).await,
        }
    }

    /// The answer to a call past its time (it was cancelled).
    fn too_slow(&self, remote: &str) -> ToolResult {
        let name = self.name();
        ToolResult::Error(format!(
            "`{remote}` of the MCP server `{name}` did not answer within {} s ([mcp.{name}] \
             timeout_secs); the call was cancelled",
            self.settings.timeout.as_secs()
        ))
    }

    /// The answer to a call whose session broke.
    async fn stopped(
        &self,
        remote: &str,
        session: Arc<Session>,
        error: &ServiceError,
    ) -> ToolResult {
        let why = self.lost(session, error).await;
        ToolResult::Error(format!(
            "the MCP server `{}` stopped during the call to `{remote}` ({why}); whether the call \
             took effect is unknown. The server is restarted for the next call.",
            self.name()
        ))
    }

    /// The session to call through: the current one, or a new one (after
    /// the backoff, within `deadline`, while restarts are left).
    async fn session(self: &Arc<Self>, deadline: Instant) -> Result<Arc<Session>, String> {
        let name = self.name();
        let mut sessions = match timeout_at(deadline, self.session.lock()).await {
            Ok(sessions) => sessions,
            Err(_) => return Err(format!("the MCP server `{name}` is still starting")),
        };
        if let Some(current) = sessions.current.take() {
            if !current.is_closed() {
                sessions.current = Some(current.clone());
                return Ok(current);
            }
            let why = current.why_closed();
            tracing::warn!(mcp = %name, %why, "the MCP server's session ended");
            self.failed(&mut sessions, why);
        }
        if sessions.failures > self.settings.max_restarts {
            return Err(format!(
                "the MCP server `{name}` is given up on after {} failed starts in a row ([mcp.{name}] \
                 max_restarts); the last: {}",
                sessions.failures,
                sessions.last_failure.as_deref().unwrap_or("unknown")
            ));
        }
        if let Some(not_before) = sessions.not_before {
            if not_before > deadline {
                return Err(format!(
                    "the MCP server `{name}` is down ({}); it is restarted in {} ms, after this \
                     call's time",
                    sessions.last_failure.as_deref().unwrap_or("unknown"),
                    not_before
                        .saturating_duration_since(Instant::now())
                        .as_millis()
                ));
            }
            sleep_until(not_before).await;
        }
        let connect_by = deadline.min(Instant::now() + self.settings.connect_timeout);
        let opened = timeout_at(connect_by, self.open()).await;
        let opened = opened.unwrap_or_else(|_| {
            Err(format!(
                "it did not finish starting within {} s",
                connect_by
                    .saturating_duration_since(Instant::now())
                    .as_secs()
            ))
        });
        match opened {
            Ok(session) => {
                let session = Arc::new(session);
                if sessions.failures > 0 {
                    tracing::info!(mcp = %name, restarts = sessions.failures, "the MCP server is serving again");
                }
                sessions.current = Some(session.clone());
                Ok(session)
            }
            Err(reason) => {
                tracing::warn!(mcp = %name, %reason, "the MCP server cannot be started");
                let message = format!("the MCP server `{name}` cannot be started: {reason}");
                self.failed(&mut sessions, reason);
                Err(message)
            }
        }
    }

    /// Open a session and read the server's tool list.
    async fn open(self: &Arc<Self>) -> Result<Session, String> {
        let (tools_changed, mut changes) = mpsc::channel(1);
        let handler = Handler {
            progress: self.progress.clone(),
            tools_changed,
        };
        let session = connect::open(
            self.name(),
            &self.settings.transport,
            &self.client,
            handler,
            self.settings.max_result_bytes,
        )
        .await?;
        let listed = session
            .service
            .peer()
            .list_all_tools()
            .await
            .map_err(|error| format!("it cannot list its tools: {error}"))?;
        self.set_tools(&listed);
        // Read the list again whenever the server says it changed.
        let peer = session.service.peer().clone();
        let server = Arc::downgrade(self);
        tokio::spawn(async move {
            while changes.recv().await.is_some() {
                let Ok(listed) = peer.list_all_tools().await else {
                    break;
                };
                let Some(server) = server.upgrade() else {
                    break;
                };
                server.set_tools(&listed);
            }
        });
        Ok(session)
    }

    /// Keep the allowlisted tools of `listed`; say when the offer changed.
    fn set_tools(&self, listed: &[rmcp::model::Tool]) {
        let offered = self.allowlisted(listed);
        let changed = match self.tools.write() {
            Ok(mut tools) if *tools != offered => {
                *tools = offered;
                true
            }
            _ => false,
        };
        if changed {
            self.changed.send_modify(|generation| *generation += 1);
        }
    }

    fn allowlisted(&self, listed: &[rmcp::model::Tool]) -> Vec<OfferedTool> {
        let name = self.name();
        let mut offered = Vec::new();
        for wanted in &self.settings.tools {
            let Some(tool) = listed.iter().find(|tool| tool.name == wanted.as_str()) else {
                let known: Vec<&str> = listed.iter().map(|tool| tool.name.as_ref()).collect();
                tracing::warn!(mcp = %name, tool = %wanted, known = %known.join(", "), "the MCP server has no such tool; it is not offered");
                continue;
            };
            let Some(offered_as) = offered_name(name, wanted) else {
                tracing::warn!(mcp = %name, tool = %wanted, "`{name}__{wanted}` is longer than a tool name may be; it is not offered");
                continue;
            };
            let declaration = ToolDeclaration {
                name: offered_as,
                description: description(name, wanted, tool.description.as_deref()),
                input_schema: Value::Object((*tool.input_schema).clone()),
                timeout_ms: declared_timeout_ms(self.settings.timeout),
                roles: self.settings.roles.clone(),
                approval: self.settings.approval,
            };
            if let Err(error) = declaration.validate() {
                tracing::warn!(mcp = %name, tool = %wanted, %error, "the MCP tool is not offered");
                continue;
            }
            offered.push(OfferedTool {
                remote: wanted.clone(),
                declaration,
            });
        }
        offered
    }

    /// A call got an answer: the server works, restarts start over.
    async fn worked(&self) {
        let mut sessions = self.session.lock().await;
        sessions.failures = 0;
        sessions.not_before = None;
    }

    /// A call lost its session: unless another call already replaced it,
    /// it is closed and counted. Returns why it was lost.
    async fn lost(&self, session: Arc<Session>, error: &ServiceError) -> String {
        let mut sessions = self.session.lock().await;
        let current = sessions
            .current
            .as_ref()
            .is_some_and(|current| Arc::ptr_eq(current, &session));
        if current {
            sessions.current = None;
        }
        let why = if session.is_closed() || matches!(error, ServiceError::TransportClosed) {
            session.why_ended(EXIT_WAIT).await
        } else {
            error.to_string()
        };
        if current {
            tracing::warn!(mcp = %self.name(), %why, "the MCP server stopped during a call");
            self.failed(&mut sessions, why.clone());
        }
        why
    }

    /// Count a lost session and set the backoff before the next start.
    fn failed(&self, sessions: &mut Sessions, why: String) {
        sessions.failures = sessions.failures.saturating_add(1);
        let doublings = sessions.failures.saturating_sub(1).min(16);
        let backoff = self
            .settings
            .restart_backoff
            .saturating_mul(1 << doublings)
            .min(self.settings.max_restart_backoff);
        sessions.not_before = Some(Instant::now() + backoff);
        sessions.last_failure = Some(why);
    }
}

/// Tells the server a call is abandoned (`notifications/cancelled`) when
/// dropped while armed: the turn was cancelled, or the call timed out.
struct Abandoned {
    peer: Peer<RoleClient>,
    id: Option<RequestId>,
}

impl Abandoned {
    fn disarm(&mut self) {
        self.id = None;
    }
}

impl Drop for Abandoned {
    fn drop(&mut self) {
        let Some(id) = self.id.take() else { return };
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let peer = self.peer.clone();
        runtime.spawn(async move {
            let cancelled = CancelledNotificationParam::new(
                Some(id),
                Some("the call was abandoned by the harness".to_owned()),
            );
            let _ = peer.notify_cancelled(cancelled).await;
        });
    }
}

/// A call's progress route, removed when the call ends.
struct Route<'a> {
    routes: &'a ProgressRoutes,
    token: ProgressToken,
}

impl<'a> Route<'a> {
    fn add(routes: &'a ProgressRoutes, token: ProgressToken, sender: mpsc::Sender<String>) -> Self {
        if let Ok(mut map) = routes.lock() {
            map.insert(token.clone(), sender);
        }
        Route { routes, token }
    }
}

impl Drop for Route<'_> {
    fn drop(&mut self) {
        if let Ok(mut map) = self.routes.lock() {
            map.remove(&self.token);
        }
    }
}
