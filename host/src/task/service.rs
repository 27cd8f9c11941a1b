//! The task service: the one entry point every A2A binding (JSON-RPC,
//! HTTP+JSON, SSE) calls. Bindings authenticate the caller and translate
//! wire formats; everything about conversations happens behind this API.
//!
//! A message with a `taskId` continues that task; one without starts a new
//! task (in the given `contextId` or a new one) whose lifecycle is the one
//! its `metadata.lifecycle` names (`conversation` or `task`), else the
//! configured default. A later message cannot change it: naming another
//! lifecycle is InvalidParams (naming the same one is harmless). The
//! service checks what it can up front (visibility, the sender's role, the
//! message's kind) against the task as stored, and runs the
//! `request.received` policy on ordinary messages in the caller's own task;
//! the task's actor then checks again against the task as it is when the
//! message arrives, and runs it.
//!
//! Reads (GetTask, ListTasks, the snapshot a subscription starts with) come
//! from the store, which holds every task whether its actor runs or not; an
//! actor commits before it tells anyone anything, so a read never shows
//! less than a client was told.
//!
//! A message whose `messageId` the task already accepted (a client retrying
//! after a timeout or a restart) is answered with the task and never applied
//! twice; so is a resent first message, found by its sender and id.

use std::pin::Pin;
use std::sync::{Arc, Weak};
use std::time::Duration;

use futures_core::Stream;

use super::access;
use super::actor::{self, Start};
use super::classify::{self, Class};
use super::directory::Directory;
use super::env::TaskLifecycle;
use super::env::{Env, TaskSettings};
use super::events::{Replay, Sequenced, TaskEvents};
use super::inbox::{
    self, Admitted, Answering, Canceller, Command, Rendered, Submission, TurnReply,
};
use super::listing;
use super::reply_stream;
use super::screen;
use super::state::{LIFECYCLE_KEY, Lifecycle, TaskRecord, new_id, trim_history};
use super::suggest::{self, Completion};
use crate::a2a::error::A2aError;
use crate::a2a::types::{
    CancelTaskRequest, DeleteTaskPushNotificationConfigRequest,
    GetTaskPushNotificationConfigRequest, GetTaskRequest, History,
    ListTaskPushNotificationConfigsRequest, ListTaskPushNotificationConfigsResponse,
    ListTasksRequest, ListTasksResponse, Message, SendMessageRequest, SendMessageResponse,
    StreamResponse, SubscribeToTaskRequest, Task, TaskPushNotificationConfig, Timestamp,
};
use crate::commands::{CommandRegistry, Registries};
use crate::domain::{Participant, Role};
use crate::model::Models;
use crate::push::{PushSettings, Pusher, Viewer};
use crate::store::{MemoryStore, MessageLookup, StoredTask, TaskStore};

/// The authenticated participant behind a request. Bindings resolve it
/// (bearer token, or on loopback the self-asserted `X-Participant-Id`
/// header / message metadata); the service decides what that id may do.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Caller {
    pub id: String,
}

/// A stream of events for one task: the first item is the Task (or, for a
/// one-shot task that answered with a message alone, that Message, the only
/// item); it ends when the turn ends (INPUT_REQUIRED) or the task ends.
///
/// The stream ends itself: a binding forwards every item until the stream
/// returns `None`. It must not close after the first item, even when that
/// Task shows `INPUT_REQUIRED` (a subscription to a parked conversation
/// stays open for its next turn).
pub type EventStream = Pin<Box<dyn Stream<Item = StreamResponse> + Send>>;

/// How the service keeps tasks and delivers their events.
#[derive(Clone)]
pub struct Durability {
    pub store: Arc<dyn TaskStore>,
    /// How long a task's actor with nothing to do stays in memory; the task
    /// is read back from the store when it is needed again.
    pub idle_timeout: Duration,
    /// Terminal tasks are deleted this long after they ended; `None` keeps
    /// them forever.
    pub retain_terminal: Option<Duration>,
    pub push: PushSettings,
    /// How long a plain message whose sender waits for its turn's end may
    /// stay unstored: a turn that ends sooner stores the message with its
    /// reply, in one commit (nothing is acknowledged before it). Zero
    /// stores every message before its turn starts.
    pub accept_commit_delay: Duration,
}

impl Durability {
    /// The default idle period of a task's actor.
    pub const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(300);

    /// The default for [`Durability::accept_commit_delay`].
    pub const DEFAULT_ACCEPT_COMMIT_DELAY: Duration = Duration::from_millis(10);

    /// Nothing survives the process; push delivery with its defaults.
    pub fn in_memory() -> Self {
        Durability {
            store: Arc::new(MemoryStore::new()),
            idle_timeout: Self::DEFAULT_IDLE_TIMEOUT,
            accept_commit_delay: Self::DEFAULT_ACCEPT_COMMIT_DELAY,
            retain_terminal: None,
            push: PushSettings::default(),
        }
    }
}

/// How often tasks left without an actor are looked for.
const RESUME_SWEEP: Duration = Duration::from_secs(60);

/// Retention runs every this many resume sweeps (hourly), the first at start.
const RETENTION_EVERY: u64 = 60;

/// Conversations: create, continue, complete, cancel, read, subscribe.
#[derive(Clone)]
pub struct TaskService {
    inner: Arc<Inner>,
}

struct Inner {
    env: Arc<Env>,
    /// The running task actors. Only the service holds it strongly, so
    /// dropping the service stops them.
    directory: Arc<Directory>,
    retain_terminal: Option<Duration>,
    /// Set when the tasks run on Temporal instead of in actors here.
    #[cfg(feature = "temporal")]
    temporal: Option<crate::temporal::TemporalFront>,
}

impl TaskService {
    /// A service keeping its tasks in memory.
    pub fn new(settings: TaskSettings, registries: Registries, models: Models) -> Self {
        Self::with_durability(settings, registries, models, Durability::in_memory())
    }

    /// A service on `durability`'s store. Call [`TaskService::recover`]
    /// before serving.
    pub fn with_durability(
        settings: TaskSettings,
        registries: Registries,
        models: Models,
        durability: Durability,
    ) -> Self {
        let push = Pusher::new(Arc::clone(&durability.store), durability.push.clone());
        Self::assemble(settings, registries, models, durability, push)
    }

    fn assemble(
        settings: TaskSettings,
        registries: Registries,
        models: Models,
        durability: Durability,
        push: Arc<Pusher>,
    ) -> Self {
        let env = Env {
            settings,
            registries,
            models,
            store: durability.store,
            push,
            idle_timeout: durability.idle_timeout,
            accept_commit_delay: durability.accept_commit_delay,
        };
        let env = Arc::new(env);
        let directory = Directory::new(Arc::clone(&env), |directory, record| {
            actor::spawn(directory, record, Start::Recovered)
        });
        TaskService {
            inner: Arc::new(Inner {
                env,
                directory: Arc::new(directory),
                retain_terminal: durability.retain_terminal,
                #[cfg(feature = "temporal")]
                temporal: None,
            }),
        }
    }

    /// A service whose tasks run on Temporal (`engine`), read from
    /// `durability`'s store, which every server of the deployment shares;
    /// with `run_worker`, this process also runs a worker for them.
    #[cfg(feature = "temporal")]
    pub fn on_temporal(
        settings: TaskSettings,
        registries: Registries,
        models: Models,
        durability: Durability,
        engine: crate::temporal::TemporalEngine,
        run_worker: bool,
    ) -> Result<Self, String> {
        // Servers and workers in other processes share the store, and with
        // it the push configurations.
        let push = Pusher::shared(Arc::clone(&durability.store), durability.push.clone());
        let service = Self::assemble(settings, registries, models, durability, push);
        let Inner {
            env,
            directory,
            retain_terminal,
            ..
        } = Arc::into_inner(service.inner).ok_or("the service is not shared yet")?;
        let temporal = crate::temporal::TemporalFront::new(engine, &env, run_worker)?;
        Ok(TaskService {
            inner: Arc::new(Inner {
                env,
                directory,
                retain_terminal,
                temporal: Some(temporal),
            }),
        })
    }

    /// Bring back what a restart interrupted: read the push configurations
    /// and queue the notifications they were still owed, then start the actor of every task a turn was running (or due) in and
    /// of every open parent that may have missed a sub-task's end. Each
    /// settles itself (see `recovery`). Returns how many were started.
    pub async fn recover(&self) -> Result<usize, A2aError> {
        let push = &self.inner.env.push;
        push.load().await.map_err(A2aError::from)?;
        push.resend_undelivered().await.map_err(A2aError::from)?;
        if self.temporal().is_some() {
            // The cluster resumes its workflows itself.
            return Ok(0);
        }
        let resumed = self.resume().await?;
        if resumed > 0 {
            tracing::info!(
                tasks = resumed,
                "resumed tasks interrupted by the last stop"
            );
        }
        Ok(resumed)
    }

    /// Start the actor of every task that needs one now and has none.
    async fn resume(&self) -> Result<usize, A2aError> {
        let env = &self.inner.env;
        let ids = env
            .store
            .recovery_candidates()
            .await
            .map_err(A2aError::from)?;
        let mut resumed = 0;
        for id in &ids {
            // One unreadable task must not keep the others down.
            match self.inner.directory.ensure(id).await {
                Ok(()) => resumed += 1,
                Err(error) => tracing::error!(task = %id, %error, "cannot resume a task"),
            }
        }
        Ok(resumed)
    }

    /// Look after the store while the service lives: every minute, start the
    /// tasks a turn is due in that have no actor (their actor stopped on a
    /// refused write, and the store takes writes again), so no task stays
    /// `WORKING` for good, and give the memory of retired actors back to the
    /// OS; every hour, delete terminal tasks past retention.
    pub fn spawn_maintenance(&self) {
        let inner: Weak<Inner> = Arc::downgrade(&self.inner);
        tokio::spawn(async move {
            let mut sweeps = tokio::time::interval(RESUME_SWEEP);
            sweeps.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            for sweep in 0u64.. {
                sweeps.tick().await;
                // Held only for this sweep: dropping the service stops it.
                let Some(inner) = inner.upgrade() else {
                    return;
                };
                let service = TaskService { inner };
                if sweep > 0
                    && let Err(error) = service.resume().await
                {
                    tracing::warn!(%error, "the resume sweep failed");
                }
                service.inner.directory.shrink();
                // An idle server keeps no page caches (a busy one keeps them
                // warm).
                if service.running_tasks() == 0
                    && let Err(error) = service.inner.env.store.release_memory().await
                {
                    tracing::warn!(%error, "the store could not release its caches");
                }
                crate::heap::give_back_freed();
                if let Some(retain) = service.inner.retain_terminal
                    && sweep % RETENTION_EVERY == 0
                {
                    match service.purge_terminal(retain).await {
                        Ok(0) => {}
                        Ok(purged) => {
                            tracing::info!(purged, "deleted terminal tasks past retention");
                        }
                        Err(error) => tracing::warn!(%error, "the retention sweep failed"),
                    }
                }
            }
        });
    }

    /// Delete terminal tasks whose last status change is older than `retain`.
    pub async fn purge_terminal(&self, retain: Duration) -> Result<u64, A2aError> {
        let retain_ms = i64::try_from(retain.as_millis()).unwrap_or(i64::MAX);
        let before = Timestamp::now().unix_millis().saturating_sub(retain_ms);
        let env = &self.inner.env;
        let purged = env
            .store
            .purge_terminal(before)
            .await
            .map_err(A2aError::from)?;
        env.push.forget(&purged);
        Ok(purged.len() as u64)
    }

    /// How many task actors are in memory now.
    pub fn running_tasks(&self) -> usize {
        self.inner.directory.len()
    }

    /// The lifecycle of a task whose first message does not name one.
    pub fn default_lifecycle(&self) -> TaskLifecycle {
        self.inner.env.settings.default_lifecycle
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
        let push = configuration.task_push_notification_config;
        let history_length = configuration.history_length;
        let answering = if configuration.return_immediately {
            Answering::AtAcceptance
        } else {
            Answering::AtTurnEnd
        };
        let admitted = self
            .admit(caller, request.message, push, history_length, answering)
            .await?;
        let reply = if configuration.return_immediately {
            TurnReply::Task(admitted.task)
        } else {
            admitted.done.await.map_err(|_| inbox::stopped())??
        };
        Ok(match reply {
            TurnReply::Task(rendered) => {
                SendMessageResponse::Task(self.with_history(rendered, history_length).await?)
            }
            TurnReply::Message(message) => SendMessageResponse::Message(message),
        })
    }

    /// `SendStreamingMessage`: like `send_message`, streaming the turn. The
    /// first item is the Task once the message is accepted (a new task as
    /// `SUBMITTED`, then its `WORKING` update; a continued one as `WORKING`),
    /// then this turn's status and artifact updates, ending with the update
    /// that ends the turn. A new one-shot task whose answer is a message
    /// alone streams only that Message (`reply_stream`).
    pub async fn send_streaming_message(
        &self,
        caller: &Caller,
        request: SendMessageRequest,
    ) -> Result<EventStream, A2aError> {
        request.validate()?;
        let configuration = request.configuration.unwrap_or_default();
        let history_length = configuration.history_length;
        let push = configuration.task_push_notification_config;
        let admitted = self
            .admit(
                caller,
                request.message,
                push,
                history_length,
                Answering::Streamed,
            )
            .await?;
        let task_id = admitted.task.task.id.clone();
        let first = self.with_history(admitted.task, history_length).await?;
        let events = match admitted.events {
            Some(events) if !admitted.finished => events,
            // A resent message whose turn is over: the task is the answer.
            _ => return Ok(Box::pin(TaskEvents::only(first))),
        };
        let events = TaskEvents::new(first, admitted.seq, events, self.replay(task_id));
        if let Some(watch) = admitted.answer_watch {
            return Ok(Box::pin(reply_stream::message_or_task(
                events,
                admitted.done,
                watch,
            )));
        }
        Ok(Box::pin(events))
    }

    /// `GetTask`, honouring `historyLength`.
    pub async fn get_task(
        &self,
        caller: &Caller,
        request: GetTaskRequest,
    ) -> Result<Task, A2aError> {
        request.validate()?;
        let history = request
            .history_length
            .map(|n| usize::try_from(n).unwrap_or(0));
        // Who may see it is decided from the head alone, before its history
        // is read: a stranger costs (and learns) nothing more than a task
        // that does not exist.
        let head = self.head(&request.id).await?;
        access::visible(&head, &caller.id, &self.inner.env.settings.admins)?;
        let stored = self.load_stored(&request.id, history).await?;
        TaskRecord::render_stored(stored, request.history_length).map_err(A2aError::Internal)
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
        listing::list(
            env.store.as_ref(),
            &caller.id,
            &env.settings.admins,
            &request,
        )
        .await
    }

    /// `CancelTask`: cancel the task and its open sub-tasks. Reporters,
    /// assignees and admins may; a finished task is not cancelable.
    pub async fn cancel_task(
        &self,
        caller: &Caller,
        request: CancelTaskRequest,
    ) -> Result<Task, A2aError> {
        request.validate()?;
        // Refused without starting the task's actor when the stored task
        // already says no.
        let record = self.head(&request.id).await?;
        access::admit_cancel(&record, &self.inner.env.settings.admins, &caller.id)?;
        #[cfg(feature = "temporal")]
        if let Some(temporal) = self.temporal() {
            temporal.cancel(&request.id, &caller.id).await?;
            let stored = self.load_stored(&request.id, None).await?;
            return TaskRecord::render_stored(stored, None).map_err(A2aError::Internal);
        }
        let by = Canceller::Participant(caller.id.clone());
        let rendered = self
            .ask(&request.id, |reply| Command::Cancel { by, reply })
            .await?;
        self.with_history(rendered, None).await
    }

    /// `SubscribeToTask`: the Task, then live events until the next turn ends
    /// or the task ends. A subscription to a parked conversation (in
    /// `INPUT_REQUIRED`) stays open until its next turn ends, so a watcher
    /// sees the next exchange and any sub-task results meanwhile; to a task
    /// mid-turn, until that turn ends. A finished task cannot be subscribed
    /// to (UnsupportedOperation). Works for every stored task: its actor is
    /// started from the store if it is not running (after a restart too).
    pub async fn subscribe(
        &self,
        caller: &Caller,
        request: SubscribeToTaskRequest,
    ) -> Result<EventStream, A2aError> {
        request.validate()?;
        let record = self.head(&request.id).await?;
        access::visible(&record, &caller.id, &self.inner.env.settings.admins)?;
        if record.is_terminal() {
            return Err(finished(&record));
        }
        #[cfg(feature = "temporal")]
        if let Some(temporal) = self.temporal() {
            // Its events are tailed from the store, from the snapshot on.
            let record = self.load(&request.id, None).await?;
            let task = record.to_task(None);
            if record.is_terminal() {
                return Ok(Box::pin(TaskEvents::only(task)));
            }
            let live = temporal.follow(&request.id, record.seq);
            let replay = self.replay(request.id);
            return Ok(Box::pin(TaskEvents::new(task, record.seq, live, replay)));
        }
        // Subscribe before the snapshot: events in between are then
        // received twice rather than lost, and the sequence number drops
        // the duplicates.
        let live = self.inner.directory.subscribe_started(&request.id).await?;
        let record = self.load(&request.id, None).await?;
        let task = record.to_task(None);
        if record.is_terminal() {
            // It ended in between: nothing more will come.
            return Ok(Box::pin(TaskEvents::only(task)));
        }
        let replay = self.replay(request.id);
        Ok(Box::pin(TaskEvents::new(task, record.seq, live, replay)))
    }

    // --- Command completion ------------------------------------------------------------

    /// What `caller` may type next after `text` in task `task_id` (or, without one, in a
    /// conversation they would start): the command names their role may run, then the
    /// argument suggestions of such a command (see `suggest`). A stranger gets
    /// TaskNotFound; a watcher, or a task that takes no messages (finished, delegated),
    /// gets no suggestions.
    pub async fn complete_command(
        &self,
        caller: &Caller,
        task_id: Option<&str>,
        text: &str,
    ) -> Result<Completion, A2aError> {
        let admins = &self.inner.env.settings.admins;
        let (role, takes_messages) = match task_id {
            Some(task_id) => {
                let record = self.head(task_id).await?;
                let role = access::visible(&record, &caller.id, admins)?;
                let delegated = matches!(record.lifecycle, Lifecycle::Delegated { .. });
                (role, !record.is_terminal() && !delegated)
            }
            None if admins.contains(&caller.id) => (Role::Admin, true),
            None => (Role::Reporter, true),
        };
        let suggestions = if takes_messages {
            let registry = self.inner.env.registries.current();
            suggest::suggest(&registry, role, text).await?
        } else {
            Vec::new()
        };
        Ok(Completion { role, suggestions })
    }

    // --- Push notifications ------------------------------------------------------------

    /// `CreateTaskPushNotificationConfig`: deliver the task's events to a
    /// webhook. Any participant who can see the task may; the configuration
    /// is theirs.
    pub async fn create_push_config(
        &self,
        caller: &Caller,
        config: TaskPushNotificationConfig,
    ) -> Result<TaskPushNotificationConfig, A2aError> {
        config.validate()?;
        self.visible(caller, &config.task_id).await?;
        self.inner.env.push.create(&caller.id, config).await
    }

    /// `GetTaskPushNotificationConfig`: one of the caller's configurations
    /// (any, for an admin).
    pub async fn get_push_config(
        &self,
        caller: &Caller,
        request: GetTaskPushNotificationConfigRequest,
    ) -> Result<TaskPushNotificationConfig, A2aError> {
        request.validate()?;
        let viewer = self.visible(caller, &request.task_id).await?;
        let push = &self.inner.env.push;
        push.refresh(&request.task_id).await?;
        push.get(&viewer, &request.task_id, &request.id)
    }

    /// `ListTaskPushNotificationConfigs`: the caller's configurations of the
    /// task (all of them, for an admin), by id, in pages.
    pub async fn list_push_configs(
        &self,
        caller: &Caller,
        request: ListTaskPushNotificationConfigsRequest,
    ) -> Result<ListTaskPushNotificationConfigsResponse, A2aError> {
        request.validate()?;
        let viewer = self.visible(caller, &request.task_id).await?;
        let after = listing::decode_push_token(request.page_token.as_deref())?;
        let limit = listing::push_page_size(request.page_size);
        self.inner.env.push.refresh(&request.task_id).await?;
        let (configs, more) =
            self.inner
                .env
                .push
                .list(&viewer, &request.task_id, after.as_deref(), limit);
        let next_page_token = match configs.last().and_then(|last| last.id.as_deref()) {
            Some(last) if more => listing::encode_push_token(last),
            _ => String::new(),
        };
        Ok(ListTaskPushNotificationConfigsResponse {
            configs,
            next_page_token,
        })
    }

    /// `DeleteTaskPushNotificationConfig`: idempotent; deleting a
    /// configuration that is not there (or not the caller's) changes nothing.
    pub async fn delete_push_config(
        &self,
        caller: &Caller,
        request: DeleteTaskPushNotificationConfigRequest,
    ) -> Result<(), A2aError> {
        request.validate()?;
        let viewer = self.visible(caller, &request.task_id).await?;
        let push = &self.inner.env.push;
        push.refresh(&request.task_id).await?;
        push.delete(&viewer, &request.task_id, &request.id).await
    }

    // --- Admission -----------------------------------------------------------------------

    /// Classify and check a message, then hand it to its task.
    async fn admit(
        &self,
        caller: &Caller,
        mut message: Message,
        push: Option<TaskPushNotificationConfig>,
        history_length: Option<i32>,
        answering: Answering,
    ) -> Result<Admitted, A2aError> {
        // The head before the lookup: a message the lookup misses was not
        // in the task as this head shows it, so its actor need not look
        // again unless the task changed since (`Submission::checked_at`).
        let head = match &message.task_id {
            Some(task_id) => Some(self.head(task_id).await?),
            None => None,
        };
        let submission = |message, checked_at| Submission {
            sender: caller.id.clone(),
            message,
            class: Class::Ordinary,
            history_length,
            checked_at,
            answering,
        };
        if let Some(task_id) = self.accepted_before(caller, &message).await? {
            // A resend: the task answers it without applying it again, and
            // without running the policy hooks a second time.
            message.task_id = Some(task_id.clone());
            return self.submit(&task_id, submission(message, None)).await;
        }
        let registry = self.inner.env.registries.current();
        match head {
            Some(record) => {
                let task_id = record.id.clone();
                let checked_at = Some(record.changes);
                let submission = submission(message, checked_at);
                self.continue_task(caller, &task_id, record, submission, registry, push)
                    .await
            }
            None => {
                self.start_task(caller, submission(message, None), registry, push)
                    .await
            }
        }
    }

    /// `rendered` with the history its sender asked for: the newest
    /// `historyLength` messages (unset: all), read from the store when the
    /// actor no longer holds them, and no more than those. A sender that
    /// passes `historyLength` gets an answer that costs the same at any
    /// length of the conversation.
    async fn with_history(
        &self,
        rendered: Rendered,
        history_length: Option<i32>,
    ) -> Result<Task, A2aError> {
        let Rendered { task, history_len } = rendered;
        let wanted = history_length
            .map_or(history_len, |n| usize::try_from(n).unwrap_or(0))
            .min(history_len);
        if task.history.len() >= wanted {
            return Ok(trim_history(task, i32::try_from(wanted).ok()));
        }
        let stored = self
            .inner
            .env
            .store
            .load(task.id.clone(), Some(wanted))
            .await
            .map_err(A2aError::from)?
            .ok_or_else(|| access::not_found(&task.id))?;
        // Kept as the store's text: the answer copies it unparsed.
        let history = History::from_stored(stored.history).map_err(|error| {
            A2aError::Internal(format!("a stored message is unreadable: {error}"))
        })?;
        Ok(Task { history, ..task })
    }

    /// The task that already accepted this message, if one did.
    async fn accepted_before(
        &self,
        caller: &Caller,
        message: &Message,
    ) -> Result<Option<String>, A2aError> {
        let message_id = message.message_id.clone();
        let lookup = match &message.task_id {
            Some(task_id) => MessageLookup::InTask {
                task_id: task_id.clone(),
                message_id,
            },
            // The operator may let senders reuse a first message's id.
            None if !self.inner.env.settings.dedupe_first_messages => return Ok(None),
            None => MessageLookup::Started {
                created_by: caller.id.clone(),
                message_id,
            },
        };
        self.inner
            .env
            .store
            .find_message(lookup)
            .await
            .map_err(A2aError::from)
    }

    /// `submission` (its class still to be found) to an existing task.
    async fn continue_task(
        &self,
        caller: &Caller,
        task_id: &str,
        record: TaskRecord,
        submission: Submission,
        registry: Arc<CommandRegistry>,
        push: Option<TaskPushNotificationConfig>,
    ) -> Result<Admitted, A2aError> {
        let message = submission.message;
        let env = &self.inner.env;
        let admins = &env.settings.admins;
        // Who the sender is comes first: a watcher is refused whatever the
        // message, and a stranger learns nothing.
        let role = access::visible(&record, &caller.id, admins)?;
        access::may_act(
            role,
            &caller.id,
            "send messages, run commands or complete it",
        )?;
        keeps_lifecycle(&record, &message)?;
        let class = classify::classify(&message, &registry)?;
        let context_id = message.context_id.as_deref();
        access::admit_message(&record, admins, &caller.id, context_id, &class.kind())?;
        let view = record.view(&env.settings.selectable_models);
        let sender = Participant {
            id: caller.id.clone(),
            role,
        };
        let message = match class {
            Class::Ordinary => screen::request_received(&registry, message, &sender, &view).await?,
            _ => message,
        };
        if let Some(config) = push {
            self.register_push(caller, task_id, config).await?;
        }
        let submission = Submission {
            message,
            class,
            ..submission
        };
        self.submit(task_id, submission).await
    }

    /// `submission` (its class still to be found) starts a conversation.
    async fn start_task(
        &self,
        caller: &Caller,
        submission: Submission,
        registry: Arc<CommandRegistry>,
        push: Option<TaskPushNotificationConfig>,
    ) -> Result<Admitted, A2aError> {
        let env = &self.inner.env;
        let message = submission.message;
        let class = classify::classify(&message, &registry)?;
        if class.is_envelope() {
            return Err(A2aError::invalid_field(
                "message.taskId",
                "a control or task event acts on an existing task: set message.taskId",
            ));
        }
        let lifecycle = requested_lifecycle(&message)?.unwrap_or(env.settings.default_lifecycle);
        let record = self.new_task(caller, &message, lifecycle);
        let role =
            access::role_of(&record, &caller.id, &env.settings.admins).unwrap_or(Role::Reporter);
        let sender = Participant {
            id: caller.id.clone(),
            role,
        };
        let view = record.view(&env.settings.selectable_models);
        // Refused here, the task is never created.
        let message = match class {
            Class::Ordinary => screen::request_received(&registry, message, &sender, &view).await?,
            _ => message,
        };
        screen::task_created(&registry, &sender, &view).await?;
        let task_id = record.id.clone();
        if let Some(config) = push {
            // Registered first, so the webhook hears the first turn too.
            self.register_push(caller, &task_id, config).await?;
        }
        let created_by = caller.id.clone();
        let submission = Submission {
            message,
            class,
            // A new task holds no message yet.
            checked_at: Some(0),
            ..submission
        };
        #[cfg(feature = "temporal")]
        if let Some(temporal) = self.temporal() {
            return temporal.start(record, created_by, submission).await;
        }
        actor::spawn(
            &self.inner.directory,
            record,
            Start::Conversation { created_by },
        )?;
        // The first commit creates the task with this message, or neither
        // happens.
        self.submit(&task_id, submission).await
    }

    /// A webhook from a send's configuration, for the task it goes to.
    async fn register_push(
        &self,
        caller: &Caller,
        task_id: &str,
        mut config: TaskPushNotificationConfig,
    ) -> Result<(), A2aError> {
        config.task_id = task_id.to_owned();
        self.inner.env.push.create(&caller.id, config).await?;
        Ok(())
    }

    /// A new task whose reporter is `caller`.
    fn new_task(&self, caller: &Caller, message: &Message, lifecycle: TaskLifecycle) -> TaskRecord {
        let settings = &self.inner.env.settings;
        let lifecycle = match lifecycle {
            TaskLifecycle::Conversation => Lifecycle::Conversation,
            TaskLifecycle::Task => Lifecycle::Task,
        };
        TaskRecord::new(
            new_id(),
            message.context_id.clone().unwrap_or_else(new_id),
            lifecycle,
            vec![Participant {
                id: caller.id.clone(),
                role: Role::Reporter,
            }],
            settings.default_model.clone(),
            settings.default_effort.clone(),
        )
    }

    // --- Reaching tasks ------------------------------------------------------------------

    async fn submit(&self, task_id: &str, submission: Submission) -> Result<Admitted, A2aError> {
        #[cfg(feature = "temporal")]
        if let Some(temporal) = self.temporal() {
            return temporal.submit(task_id, submission).await;
        }
        self.ask(task_id, |reply| Command::Submit { submission, reply })
            .await
    }

    /// The Temporal engine's front, when the tasks run there.
    #[cfg(feature = "temporal")]
    fn temporal(&self) -> Option<&crate::temporal::TemporalFront> {
        self.inner.temporal.as_ref()
    }

    #[cfg(not(feature = "temporal"))]
    fn temporal(&self) -> Option<std::convert::Infallible> {
        None
    }

    async fn ask<T>(
        &self,
        task_id: &str,
        command: impl FnOnce(inbox::Reply<T>) -> Command,
    ) -> Result<T, A2aError> {
        self.inner.directory.ask(task_id, command).await
    }

    /// Task `task_id` as stored, with at most `history` recent messages.
    pub(crate) async fn load(
        &self,
        task_id: &str,
        history: Option<usize>,
    ) -> Result<TaskRecord, A2aError> {
        let stored = self.load_stored(task_id, history).await?;
        TaskRecord::from_stored(&stored).map_err(A2aError::Internal)
    }

    /// What the store holds of task `task_id`, with at most `history`
    /// recent messages, unparsed.
    async fn load_stored(
        &self,
        task_id: &str,
        history: Option<usize>,
    ) -> Result<StoredTask, A2aError> {
        self.inner
            .env
            .store
            .load(task_id.to_owned(), history)
            .await
            .map_err(A2aError::from)?
            .ok_or_else(|| access::not_found(task_id))
    }

    /// Task `task_id`'s stored head: no history, no artifacts.
    async fn head(&self, task_id: &str) -> Result<TaskRecord, A2aError> {
        let head = self
            .inner
            .env
            .store
            .head(task_id.to_owned())
            .await
            .map_err(A2aError::from)?
            .ok_or_else(|| access::not_found(task_id))?;
        TaskRecord::from_head(&head).map_err(A2aError::Internal)
    }

    /// Who `caller` is to task `task_id`, if they may see it at all.
    async fn visible(&self, caller: &Caller, task_id: &str) -> Result<Viewer, A2aError> {
        let record = self.head(task_id).await?;
        let role = access::visible(&record, &caller.id, &self.inner.env.settings.admins)?;
        Ok(Viewer {
            id: caller.id.clone(),
            admin: role == Role::Admin,
        })
    }

    /// Read what a lagging stream missed from the store's log.
    pub(crate) fn replay(&self, task_id: String) -> Replay {
        let store = Arc::clone(&self.inner.env.store);
        Box::new(move |after| {
            let store = Arc::clone(&store);
            let task_id = task_id.clone();
            Box::pin(async move {
                let stored = store.events_after(task_id, after).await.ok()?;
                stored
                    .into_iter()
                    .map(|event| {
                        let parsed = serde_json::from_str(&event.document).ok()?;
                        Some(Sequenced::stored(event.seq, parsed))
                    })
                    .collect()
            })
        })
    }
}

/// The lifecycle `message.metadata.lifecycle` names, if it names one.
fn requested_lifecycle(message: &Message) -> Result<Option<TaskLifecycle>, A2aError> {
    let Some(value) = message.metadata.get(LIFECYCLE_KEY) else {
        return Ok(None);
    };
    let field = format!("message.metadata.{LIFECYCLE_KEY}");
    let names = TaskLifecycle::ALL.map(TaskLifecycle::as_str).join(" or ");
    value
        .as_str()
        .and_then(TaskLifecycle::from_name)
        .map(Some)
        .ok_or_else(|| {
            A2aError::invalid_field(
                &field,
                format!("{field} must be {names} (the status extension), not {value}"),
            )
        })
}

/// A message to an existing task may repeat its lifecycle, never change it.
fn keeps_lifecycle(record: &TaskRecord, message: &Message) -> Result<(), A2aError> {
    let Some(requested) = requested_lifecycle(message)? else {
        return Ok(());
    };
    let current = match record.lifecycle {
        Lifecycle::Conversation => "conversation",
        Lifecycle::Task => "task",
        Lifecycle::Delegated { .. } => "delegated",
    };
    if requested.as_str() == current {
        return Ok(());
    }
    Err(A2aError::invalid_field(
        format!("message.metadata.{LIFECYCLE_KEY}"),
        format!(
            "task {} is a {current} task; its first message chose its lifecycle, and a later \
             message cannot change it to {} (start a new task for that)",
            record.id,
            requested.as_str()
        ),
    ))
}

fn finished(record: &TaskRecord) -> A2aError {
    A2aError::UnsupportedOperation(format!(
        "task {} is {}: a finished task has no more events to subscribe to",
        record.id,
        record.state()
    ))
}
