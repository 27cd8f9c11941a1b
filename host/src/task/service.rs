//! The task service: the one entry point every A2A binding (JSON-RPC,
//! HTTP+JSON, SSE) calls. Bindings authenticate the caller and translate
//! wire formats; everything about conversations happens behind this API.
//!
//! SKELETON: the signatures are the contract between the bindings and the
//! lifecycle; the bodies are being written.

use std::pin::Pin;
use std::sync::Arc;

use futures_core::Stream;

use crate::a2a::error::A2aError;
use crate::a2a::types::{
    CancelTaskRequest, GetTaskRequest, ListTasksRequest, ListTasksResponse, SendMessageRequest,
    SendMessageResponse, StreamResponse, SubscribeToTaskRequest, Task,
};
use crate::commands::Registries;
use crate::model::Model;

/// The authenticated participant behind a request. Bindings resolve it
/// (bearer token, or on loopback the self-asserted `X-Participant-Id`
/// header / message metadata); the service decides what that id may do.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Caller {
    pub id: String,
}

/// A stream of events for one task: the first item is always the Task; it
/// ends when the turn ends (INPUT_REQUIRED) or the task ends.
pub type EventStream = Pin<Box<dyn Stream<Item = StreamResponse> + Send>>;

/// What the lifecycle needs from the configuration.
#[derive(Clone, Debug)]
pub struct TaskSettings {
    /// The model a new conversation starts on.
    pub default_model: String,
    /// Models a participant may switch to with `/model` (includes the default).
    pub selectable_models: Vec<String>,
    /// The effort a new conversation starts on: low, medium or high.
    pub default_effort: String,
    /// Participant ids that are admins on every task.
    pub admins: Vec<String>,
}

/// Conversations: create, continue, complete, cancel, read, subscribe.
#[derive(Clone)]
pub struct TaskService {
    #[allow(dead_code)]
    inner: Arc<Inner>,
}

#[allow(dead_code)]
struct Inner {
    settings: TaskSettings,
    registries: Registries,
    model: Arc<dyn Model>,
}

impl TaskService {
    pub fn new(settings: TaskSettings, registries: Registries, model: Arc<dyn Model>) -> Self {
        TaskService {
            inner: Arc::new(Inner {
                settings,
                registries,
                model,
            }),
        }
    }

    /// The registry generation the card should publish.
    pub fn registries(&self) -> &Registries {
        &self.inner.registries
    }

    /// `SendMessage`: start or continue a conversation; returns when the
    /// turn ends (or at once with `returnImmediately`).
    pub async fn send_message(
        &self,
        caller: &Caller,
        request: SendMessageRequest,
    ) -> Result<SendMessageResponse, A2aError> {
        let _ = (caller, request);
        Err(A2aError::UnsupportedOperation("not implemented yet".into()))
    }

    /// `SendStreamingMessage`: like `send_message`, streaming the turn.
    pub async fn send_streaming_message(
        &self,
        caller: &Caller,
        request: SendMessageRequest,
    ) -> Result<EventStream, A2aError> {
        let _ = (caller, request);
        Err(A2aError::UnsupportedOperation("not implemented yet".into()))
    }

    /// `GetTask`, honouring `historyLength`.
    pub async fn get_task(&self, caller: &Caller, request: GetTaskRequest) -> Result<Task, A2aError> {
        let _ = (caller, request);
        Err(A2aError::UnsupportedOperation("not implemented yet".into()))
    }

    /// `ListTasks`: the caller's tasks, filtered and paginated.
    pub async fn list_tasks(
        &self,
        caller: &Caller,
        request: ListTasksRequest,
    ) -> Result<ListTasksResponse, A2aError> {
        let _ = (caller, request);
        Err(A2aError::UnsupportedOperation("not implemented yet".into()))
    }

    /// `CancelTask`: cancel the task and its open sub-tasks.
    pub async fn cancel_task(
        &self,
        caller: &Caller,
        request: CancelTaskRequest,
    ) -> Result<Task, A2aError> {
        let _ = (caller, request);
        Err(A2aError::UnsupportedOperation("not implemented yet".into()))
    }

    /// `SubscribeToTask`: the Task, then live events until the next turn ends
    /// or the task ends.
    pub async fn subscribe(
        &self,
        caller: &Caller,
        request: SubscribeToTaskRequest,
    ) -> Result<EventStream, A2aError> {
        let _ = (caller, request);
        Err(A2aError::UnsupportedOperation("not implemented yet".into()))
    }
}
