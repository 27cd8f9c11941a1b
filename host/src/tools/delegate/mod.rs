//! Other A2A agents as delegates (`[agents.<name>]`): the tool
//! `delegate_<name>` (`{"task": "..."}`) sends the task to the agent as a
//! new A2A task over JSON-RPC with SSE, relays its progress into the
//! parent's stream, and returns its answer as the tool's result.
//!
//! Decision 007 says delegated tasks complete on their own, so the harness
//! finishes what it started:
//! * A remote turn that ends in `INPUT_REQUIRED` (another tiny-harness's
//!   conversation parks every turn) counts as answered; when the agent's
//!   card declares the status extension, the harness then completes the
//!   remote task with the control envelope (and cancels it if the agent
//!   refuses to complete).
//! * A delegation that does not finish (the parent's turn is cut by a
//!   complete control or CancelTask, the call times out, the stream breaks
//!   off) cancels the remote task with `CancelTask`, from a guard that
//!   runs when the call's future is dropped.

mod address;
mod client;
pub mod settings;

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::sync::Semaphore;
use tokio::time::{Instant, timeout_at};

use self::client::RemoteAgent;
use self::settings::{DelegateSettings, TOOL_PREFIX};
use super::settings::declared_timeout_ms;
use super::{ToolBody, ToolBodyExecutor, ToolBodyResult, ToolDeclaration};
use crate::a2a::types::{Message, Part, PartContent, Role as A2aRole, StreamResponse, TaskState};
use crate::commands::RegistryBuilder;
use crate::domain::{TaskView, ToolCall, ToolResult};
use crate::hooks::{
    BoxFuture, DEFAULT_PRIORITY, ExecutorKind, HookEntry, HookPoint, Operation, Phase, Progress,
};
use crate::outbound::ExtraRoots;
use crate::server::STATUS_EXTENSION_URI;

/// How long the harness waits for the agent to take a cancel or a complete
/// sent after the call itself is over.
const AFTERWORD_TIMEOUT: Duration = Duration::from_secs(10);

/// A configured delegate. Shared by every registry generation.
pub struct Delegate {
    settings: DelegateSettings,
    agent: Arc<RemoteAgent>,
    running: Semaphore,
}

impl Delegate {
    pub(crate) fn new(settings: DelegateSettings, roots: &ExtraRoots) -> Result<Arc<Self>, String> {
        let agent = RemoteAgent::new(&settings, roots)?;
        Ok(Arc::new(Delegate {
            running: Semaphore::new(settings.max_concurrent),
            agent: Arc::new(agent),
            settings,
        }))
    }

    pub fn name(&self) -> &str {
        &self.settings.name
    }

    /// The tool the model is offered.
    pub(crate) fn declaration(&self) -> ToolDeclaration {
        ToolDeclaration {
            name: format!("{TOOL_PREFIX}{}", self.settings.name),
            description: self.settings.description.clone(),
            input_schema: json!({
                "type": "object",
                "properties": { "task": {
                    "type": "string",
                    "description": "The task for the agent, stated completely: it sees nothing of this conversation."
                } },
                "required": ["task"],
                "additionalProperties": false,
            }),
            timeout_ms: declared_timeout_ms(self.settings.timeout),
            roles: self.settings.roles.clone(),
            approval: self.settings.approval,
        }
    }

    /// Declare the delegate's tool, and its body, in `builder`.
    pub(crate) fn register(self: &Arc<Self>, builder: &mut RegistryBuilder) {
        let declaration = self.declaration();
        let name = declaration.name.clone();
        let origin = format!("agent:{}", self.name());
        if let Err(error) = builder.declare_tool(declaration, &origin) {
            tracing::warn!(agent = %self.name(), %error, "the delegate is not offered");
            return;
        }
        let entry = HookEntry {
            name: name.clone(),
            origin,
            point: HookPoint::new(Operation::ToolInvoked, Phase::In),
            command: Some(name),
            priority: DEFAULT_PRIORITY,
            kind: ExecutorKind::Native,
            source: format!("a2a {}", self.settings.url),
            executor: Arc::new(ToolBodyExecutor::new(self.clone())),
        };
        if let Err(error) = builder.add_hook(entry) {
            tracing::warn!(agent = %self.name(), %error, "the delegate's body cannot be registered");
        }
    }

    /// Delegate `task`, within the timeout and the concurrency bound.
    async fn delegate(&self, task: String, progress: Option<&dyn Progress>) -> ToolResult {
        let name = self.name();
        let limit = self.settings.timeout;
        let deadline = Instant::now() + limit;
        let Ok(Ok(_permit)) = timeout_at(deadline, self.running.acquire()).await else {
            return ToolResult::Error(format!(
                "the agent `{name}` is busy: all {} delegations it may take at once \
                 ([agents.{name}] max_concurrent) ran for the whole {} s the call may take",
                self.settings.max_concurrent,
                limit.as_secs()
            ));
        };
        let mut guard = CancelGuard {
            agent: self.agent.clone(),
            remote: None,
        };
        match timeout_at(deadline, self.run(task, progress, &mut guard)).await {
            Ok(Ok(answer)) => ToolResult::Output(answer),
            Ok(Err(reason)) => ToolResult::Error(format!("the agent `{name}` {reason}")),
            Err(_) => ToolResult::Error(format!(
                "the agent `{name}` did not answer within {} s ([agents.{name}] timeout_secs); \
                 its task is cancelled",
                limit.as_secs()
            )),
        }
    }

    /// Send `task` and follow the remote task to the end of its turn.
    async fn run(
        &self,
        task: String,
        progress: Option<&dyn Progress>,
        guard: &mut CancelGuard,
    ) -> Result<Value, String> {
        let card = self.agent.card().await?;
        let endpoint = self.agent.endpoint(&card).await?;
        let completes = card
            .capabilities
            .extensions
            .iter()
            .any(|extension| extension.uri == STATUS_EXTENSION_URI);
        let message = Message::new(
            A2aRole::User,
            uuid::Uuid::new_v4().to_string(),
            vec![Part::text(task)],
        );
        let mut events = self
            .agent
            .stream(&endpoint, json!({ "message": message }))
            .await?;
        let mut artifacts = Vec::new();
        let end = loop {
            let Some(event) = futures_util::StreamExt::next(&mut events).await else {
                return Err("ended its stream before its task's turn ended".into());
            };
            match event? {
                StreamResponse::Message(message) => {
                    return Ok(json!({
                        "agent": self.name(),
                        "answer": text_of(&message.parts),
                    }));
                }
                StreamResponse::Task(task) => {
                    guard.remote = Some((endpoint.clone(), task.id.clone()));
                    if task.status.state.ends_turn() {
                        break Ended {
                            id: task.id,
                            state: task.status.state,
                            message: task.status.message,
                            sub_state: task.metadata.get("sub_state").cloned(),
                        };
                    }
                }
                StreamResponse::StatusUpdate(update) => {
                    guard.remote = Some((endpoint.clone(), update.task_id.clone()));
                    if update.status.state.ends_turn() {
                        break Ended {
                            id: update.task_id,
                            state: update.status.state,
                            message: update.status.message,
                            sub_state: update.metadata.get("sub_state").cloned(),
                        };
                    }
                    if let (Some(progress), Some(message)) = (progress, &update.status.message)
                        && let Some(text) = progress_text(message, &update.metadata)
                    {
                        progress.report(format!("{}: {text}", self.name()));
                    }
                }
                StreamResponse::ArtifactUpdate(update) => {
                    artifacts.push(text_of(&update.artifact.parts));
                }
            }
        };
        let answer = end
            .message
            .as_ref()
            .map(|message| text_of(&message.parts))
            .filter(|text| !text.is_empty())
            .unwrap_or_else(|| artifacts.join("\n"));
        match end.state {
            TaskState::Completed => guard.disarm(),
            TaskState::InputRequired => {
                if completes {
                    guard.disarm();
                    tokio::spawn(complete(self.agent.clone(), endpoint, end.id.clone()));
                } else {
                    // An agent without the status extension is asking for
                    // more: leave its task as it is (nothing would answer).
                    guard.disarm();
                }
            }
            TaskState::AuthRequired => {
                return Err(format!(
                    "asks for authentication (TASK_STATE_AUTH_REQUIRED): {answer}"
                ));
            }
            state => {
                guard.disarm();
                return Err(format!("ended its task {}: {answer}", state.as_str()));
            }
        }
        let mut result = json!({
            "agent": self.name(),
            "task_id": end.id,
            "state": end.state.as_str(),
            "answer": answer,
        });
        if let Some(sub_state) = end.sub_state {
            result["sub_state"] = sub_state;
        }
        Ok(result)
    }
}

impl ToolBody for Delegate {
    fn call<'a>(
        &'a self,
        call: &'a ToolCall,
        _task: &'a TaskView,
        progress: Option<&'a dyn Progress>,
    ) -> BoxFuture<'a, ToolBodyResult> {
        Box::pin(async move {
            let task = call
                .arguments
                .get("task")
                .and_then(Value::as_str)
                .map(str::trim)
                .filter(|task| !task.is_empty());
            Ok(match task {
                Some(task) => self.delegate(task.to_owned(), progress).await,
                None => ToolResult::Error(format!(
                    "{} takes {{\"task\": \"...\"}}: a non-empty string",
                    call.name
                )),
            })
        })
    }
}

/// Where the remote task's turn ended.
struct Ended {
    id: String,
    state: TaskState,
    message: Option<Message>,
    sub_state: Option<Value>,
}

/// Cancels the remote task when dropped while armed: the delegation did not
/// finish (its future was dropped, it timed out, the stream broke off).
struct CancelGuard {
    agent: Arc<RemoteAgent>,
    /// The endpoint and the remote task, once the agent named it.
    remote: Option<(reqwest::Url, String)>,
}

impl CancelGuard {
    fn disarm(&mut self) {
        self.remote = None;
    }
}

impl Drop for CancelGuard {
    fn drop(&mut self) {
        let Some((endpoint, task)) = self.remote.take() else {
            return;
        };
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let agent = self.agent.clone();
        runtime.spawn(async move {
            let cancelled = tokio::time::timeout(
                AFTERWORD_TIMEOUT,
                agent.call(&endpoint, "CancelTask", json!({ "id": task })),
            )
            .await;
            match cancelled {
                Ok(Ok(_)) => tracing::info!(agent = %agent.name, %task, "cancelled the delegated task"),
                Ok(Err(reason)) => tracing::warn!(agent = %agent.name, %task, %reason, "cannot cancel the delegated task"),
                Err(_) => tracing::warn!(agent = %agent.name, %task, "the agent did not take the cancel in time"),
            }
        });
    }
}

/// Complete a remote conversation with the control envelope; cancel it if
/// the agent refuses (the harness is done with it either way).
async fn complete(agent: Arc<RemoteAgent>, endpoint: reqwest::Url, task: String) {
    let envelope = Message {
        task_id: Some(task.clone()),
        ..Message::new(
            A2aRole::User,
            uuid::Uuid::new_v4().to_string(),
            vec![Part::data(
                json!({ "kind": "control", "action": "complete" }),
            )],
        )
    };
    let sent = tokio::time::timeout(
        AFTERWORD_TIMEOUT,
        agent.call(&endpoint, "SendMessage", json!({ "message": envelope })),
    )
    .await;
    let state = match &sent {
        Ok(Ok(result)) => result["task"]["status"]["state"]
            .as_str()
            .unwrap_or_default()
            .to_owned(),
        _ => String::new(),
    };
    if state == TaskState::Completed.as_str() {
        tracing::info!(agent = %agent.name, %task, "completed the delegated conversation");
        return;
    }
    tracing::warn!(agent = %agent.name, %task, ?sent, "the agent did not complete the delegated conversation; cancelling it");
    let _ = tokio::time::timeout(
        AFTERWORD_TIMEOUT,
        agent.call(&endpoint, "CancelTask", json!({ "id": task })),
    )
    .await;
}

/// What a status update tells the parent's subscribers, if anything: the
/// agent's progress text, or the tools it calls. Reply pieces
/// (`text-delta`) and tool results are left out: the answer carries them.
fn progress_text(message: &Message, metadata: &crate::a2a::types::Metadata) -> Option<String> {
    match metadata.get("stream").and_then(Value::as_str) {
        Some("text-delta" | "tool-result") => None,
        Some("tool-call") => {
            let names: Vec<&str> = message
                .parts
                .iter()
                .filter_map(|part| part.as_data()?.get("name")?.as_str())
                .collect();
            (!names.is_empty()).then(|| format!("calls {}", names.join(", ")))
        }
        _ => Some(text_of(&message.parts)).filter(|text| !text.is_empty()),
    }
}

/// The parts as text: text parts as they are, data parts as JSON, files by
/// name or URL.
fn text_of(parts: &[Part]) -> String {
    let pieces: Vec<String> = parts
        .iter()
        .map(|part| match &part.content {
            PartContent::Text(text) => text.clone(),
            PartContent::Data(data) => data.to_string(),
            PartContent::Url(url) => url.clone(),
            PartContent::Raw(bytes) => format!(
                "[{} bytes{}]",
                bytes.len(),
                part.filename
                    .as_deref()
                    .map(|name| format!(": {name}"))
                    .unwrap_or_default()
            ),
        })
        .collect();
    pieces.join("\n")
}
