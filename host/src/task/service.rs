//! The task service: the one entry point every A2A binding (JSON-RPC,
//! HTTP+JSON, SSE) calls. Bindings authenticate the caller and translate
//! wire formats; everything about conversations happens behind this API.
//!
//! A message with a `taskId` continues that task; one without starts a new
//! conversation (a new task, in the given `contextId` or a new one). The
//! service checks what it can up front (visibility, the sender's role, the
//! message's kind) and runs the `request.received` policy on ordinary
//! messages in the caller's own task; the task's actor then checks again
//! against the task as it is when the message arrives, and runs it.

use std::pin::Pin;
use std::sync::Arc;

use futures_core::Stream;

use super::access;
use super::actor::{self, Admitted, Directory, Env, Submission, TaskHandle};
use super::classify::{self, Class};
use super::events::TaskEvents;
use super::listing;
use super::screen;
use super::state::{Lifecycle, TaskRecord, new_id, trim_history};
use super::view::{Participant, Role};
use crate::a2a::error::A2aError;
use crate::a2a::types::{
    CancelTaskRequest, GetTaskRequest, ListTasksRequest, ListTasksResponse, Message,
    SendMessageRequest, SendMessageResponse, StreamResponse, SubscribeToTaskRequest, Task,
};
use crate::commands::{CommandRegistry, Registries};
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
///
/// The stream ends itself: a binding forwards every item until the stream
/// returns `None`. It must not close after the first item, even when that
/// Task shows `INPUT_REQUIRED` (a subscription to a parked conversation
/// stays open for its next turn).
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
    inner: Arc<Inner>,
}

struct Inner {
    env: Arc<Env>,
    /// The task actors. Only the service holds it strongly, so dropping the
    /// service stops them.
    directory: Arc<Directory>,
}

impl TaskService {
    pub fn new(settings: TaskSettings, registries: Registries, model: Arc<dyn Model>) -> Self {
        let env = Env {
            settings,
            registries,
            model,
            store: Default::default(),
        };
        TaskService {
            inner: Arc::new(Inner {
                env: Arc::new(env),
                directory: Arc::default(),
            }),
        }
    }

    /// The registry generation the card should publish.
    pub fn registries(&self) -> &Registries {
        &self.inner.env.registries
    }

    /// `SendMessage`: start or continue a conversation; returns when the
    /// turn ends (or at once with `returnImmediately`, the task then in
    /// `WORKING`). A completion control returns the task either completed or
    /// still `INPUT_REQUIRED` with the refusal in its status message.
    pub async fn send_message(
        &self,
        caller: &Caller,
        request: SendMessageRequest,
    ) -> Result<SendMessageResponse, A2aError> {
        request.validate()?;
        let configuration = request.configuration.unwrap_or_default();
        let admitted = self.admit(caller, request.message).await?;
        let task = if configuration.return_immediately {
            admitted.task
        } else {
            admitted.done.await.map_err(|_| actor::stopped())?
        };
        Ok(SendMessageResponse::Task(trim_history(
            task,
            configuration.history_length,
        )))
    }

    /// `SendStreamingMessage`: like `send_message`, streaming the turn. The
    /// first item is the Task once the message is accepted (`WORKING`), then
    /// this turn's status and artifact updates, ending with the update that
    /// ends the turn.
    pub async fn send_streaming_message(
        &self,
        caller: &Caller,
        request: SendMessageRequest,
    ) -> Result<EventStream, A2aError> {
        request.validate()?;
        let history_length = request
            .configuration
            .as_ref()
            .and_then(|configuration| configuration.history_length);
        let admitted = self.admit(caller, request.message).await?;
        let task_id = admitted.task.id.clone();
        let first = trim_history(admitted.task, history_length);
        Ok(Box::pin(TaskEvents::new(
            first,
            admitted.seq,
            admitted.events,
            self.resync(task_id, history_length),
        )))
    }

    /// `GetTask`, honouring `historyLength`.
    pub async fn get_task(
        &self,
        caller: &Caller,
        request: GetTaskRequest,
    ) -> Result<Task, A2aError> {
        request.validate()?;
        let admins = &self.inner.env.settings.admins;
        self.inner
            .env
            .store
            .read(&request.id, |record| {
                access::visible(record, &caller.id, admins)
                    .map(|_| record.to_task(request.history_length))
            })
            .unwrap_or_else(|| Err(access::not_found(&request.id)))
    }

    /// `ListTasks`: the caller's tasks (every task for an admin), filtered
    /// by `contextId`, `status` and `statusTimestampAfter`, most recent
    /// status change first, paginated with an opaque `pageToken`.
    pub async fn list_tasks(
        &self,
        caller: &Caller,
        request: ListTasksRequest,
    ) -> Result<ListTasksResponse, A2aError> {
        let env = &self.inner.env;
        listing::list(&env.store, &caller.id, &env.settings.admins, &request)
    }

    /// `CancelTask`: cancel the task and its open sub-tasks. Reporters,
    /// assignees and admins may; a finished task is not cancelable.
    pub async fn cancel_task(
        &self,
        caller: &Caller,
        request: CancelTaskRequest,
    ) -> Result<Task, A2aError> {
        request.validate()?;
        self.handle(&request.id)?.cancel(&caller.id).await
    }

    /// `SubscribeToTask`: the Task, then live events until the next turn ends
    /// or the task ends. A subscription to a parked conversation (in
    /// `INPUT_REQUIRED`) stays open until its next turn ends, so a watcher
    /// sees the next exchange and any sub-task results meanwhile; to a task
    /// mid-turn, until that turn ends. A finished task cannot be subscribed
    /// to (UnsupportedOperation).
    pub async fn subscribe(
        &self,
        caller: &Caller,
        request: SubscribeToTaskRequest,
    ) -> Result<EventStream, A2aError> {
        request.validate()?;
        let handle = self.handle(&request.id)?;
        // Subscribe before the snapshot: events in between are then
        // received twice rather than lost, and the sequence number drops
        // the duplicates.
        let live = handle.subscribe();
        let admins = &self.inner.env.settings.admins;
        let (seq, task) = self
            .inner
            .env
            .store
            .read(&request.id, |record| {
                access::visible(record, &caller.id, admins)?;
                if record.is_terminal() {
                    return Err(A2aError::UnsupportedOperation(format!(
                        "task {} is {}: a finished task has no more events to subscribe to",
                        record.id,
                        record.state()
                    )));
                }
                Ok((record.seq, record.to_task(None)))
            })
            .unwrap_or_else(|| Err(access::not_found(&request.id)))?;
        let resync = self.resync(request.id, None);
        Ok(Box::pin(TaskEvents::new(task, seq, live, resync)))
    }

    // --- Admission -----------------------------------------------------------------------

    /// Classify and check a message, then hand it to its task.
    async fn admit(&self, caller: &Caller, message: Message) -> Result<Admitted, A2aError> {
        let registry = self.inner.env.registries.current();
        match message.task_id.clone() {
            Some(task_id) => {
                self.continue_task(caller, &task_id, message, registry)
                    .await
            }
            None => self.start_task(caller, message, registry).await,
        }
    }

    async fn continue_task(
        &self,
        caller: &Caller,
        task_id: &str,
        message: Message,
        registry: Arc<CommandRegistry>,
    ) -> Result<Admitted, A2aError> {
        let env = &self.inner.env;
        let admins = &env.settings.admins;
        // Who the sender is comes first: a watcher is refused whatever the
        // message, and a stranger learns nothing.
        let role = env
            .store
            .read(task_id, |record| {
                access::visible(record, &caller.id, admins)
            })
            .unwrap_or_else(|| Err(access::not_found(task_id)))?;
        access::may_act(
            role,
            &caller.id,
            "send messages, run commands or complete it",
        )?;
        let class = classify::classify(&message, &registry)?;
        let view = env
            .store
            .read(task_id, |record| {
                let context_id = message.context_id.as_deref();
                access::admit_message(record, admins, &caller.id, context_id, &class)
                    .map(|_| record.view(&env.settings.selectable_models))
            })
            .unwrap_or_else(|| Err(access::not_found(task_id)))?;
        let sender = Participant {
            id: caller.id.clone(),
            role,
        };
        let message = match class {
            Class::Ordinary => screen::request_received(&registry, message, &sender, &view).await?,
            _ => message,
        };
        let submission = Submission {
            sender: caller.id.clone(),
            message,
            class,
        };
        self.handle(task_id)?.submit(submission).await
    }

    async fn start_task(
        &self,
        caller: &Caller,
        message: Message,
        registry: Arc<CommandRegistry>,
    ) -> Result<Admitted, A2aError> {
        let env = &self.inner.env;
        let class = classify::classify(&message, &registry)?;
        if class.is_envelope() {
            return Err(A2aError::invalid_field(
                "message.taskId",
                "a control or task event acts on an existing task: set message.taskId",
            ));
        }
        let record = self.new_conversation(caller, &message);
        let role =
            access::role_of(&record, &caller.id, &env.settings.admins).unwrap_or(Role::Reporter);
        let message = match class {
            Class::Ordinary => {
                let sender = Participant {
                    id: caller.id.clone(),
                    role,
                };
                let view = record.view(&env.settings.selectable_models);
                // Refused here, the task is never created.
                screen::request_received(&registry, message, &sender, &view).await?
            }
            _ => message,
        };
        let handle = actor::spawn(Arc::clone(env), &self.inner.directory, record);
        let submission = Submission {
            sender: caller.id.clone(),
            message,
            class,
        };
        handle.submit(submission).await
    }

    /// A new conversation whose reporter is `caller`.
    fn new_conversation(&self, caller: &Caller, message: &Message) -> TaskRecord {
        let settings = &self.inner.env.settings;
        TaskRecord::new(
            new_id(),
            message.context_id.clone().unwrap_or_else(new_id),
            Lifecycle::Conversation,
            vec![Participant {
                id: caller.id.clone(),
                role: Role::Reporter,
            }],
            settings.default_model.clone(),
            settings.default_effort.clone(),
        )
    }

    fn handle(&self, task_id: &str) -> Result<TaskHandle, A2aError> {
        self.inner
            .directory
            .get(task_id)
            .ok_or_else(|| access::not_found(task_id))
    }

    /// A fresh snapshot of `task_id` for a lagging stream.
    fn resync(&self, task_id: String, history_length: Option<i32>) -> super::events::Snapshot {
        let env = Arc::clone(&self.inner.env);
        Box::new(move || {
            env.store.read(&task_id, |record| {
                (record.seq, record.to_task(history_length))
            })
        })
    }
}
