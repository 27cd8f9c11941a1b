//! One actor per task: a Tokio task that owns the task's lifecycle.
//!
//! The actor takes commands from its inbox (messages, cancellations,
//! sub-task reports) and steps from the one [`Job`] it may be running (the
//! current turn). It alone changes its task, through the store, and
//! publishes the resulting events on the task's broadcast channel, so every
//! decision follows from the order in which inputs reached it.
//!
//! * An ordinary message, a command or a task event while a turn runs waits
//!   in a queue and is taken in order when the turn ends.
//! * A control (`complete`) and a cancellation act at once: after the
//!   sender's role is checked, they cut the running turn (dropping its
//!   partial output) and go straight to their decision.
//! * The actor never awaits a turn: turns run as jobs, so it stays free to
//!   take a control or a cancellation. The only thing it awaits is its own
//!   sub-tasks' cancellation, which never waits on it in return.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, PoisonError, RwLock, Weak};

use serde_json::json;
use tokio::sync::{broadcast, mpsc, oneshot};

use super::access;
use super::classify::{self, Class};
use super::completion::{self, Verdict};
use super::effects;
use super::events::{self, Sequenced};
use super::job::{Job, Step, TurnOutput};
use super::notify::Notifier;
use super::participants;
use super::service::TaskSettings;
use super::state::{Change, Lifecycle, StatusChange, SubState, TaskRecord};
use super::store::TaskStore;
use super::subtasks::{self, Report};
use super::turn;
use super::view::{Participant, Role, TaskView};
use crate::a2a::error::A2aError;
use crate::a2a::types::{Message, Task, TaskState};
use crate::commands::{CommandFailure, Effect, Outcome, Registries};
use crate::hooks::Operation;
use crate::model::{Model, ModelRequest};

/// What every actor shares.
pub(crate) struct Env {
    pub(crate) settings: TaskSettings,
    pub(crate) registries: Registries,
    pub(crate) model: Arc<dyn Model>,
    pub(crate) store: TaskStore,
}

/// The running actors, by task id. Actors hold it weakly: when the service
/// goes, their inboxes close and they stop.
#[derive(Default)]
pub(crate) struct Directory {
    handles: RwLock<HashMap<String, TaskHandle>>,
}

impl Directory {
    pub(crate) fn get(&self, id: &str) -> Option<TaskHandle> {
        let handles = self.handles.read().unwrap_or_else(PoisonError::into_inner);
        handles.get(id).cloned()
    }

    fn insert(&self, id: String, handle: TaskHandle) {
        let mut handles = self.handles.write().unwrap_or_else(PoisonError::into_inner);
        handles.insert(id, handle);
    }
}

/// A message on its way into a task.
pub(crate) struct Submission {
    pub(crate) sender: String,
    pub(crate) message: Message,
    pub(crate) class: Class,
}

/// A message the task accepted: the task right after acceptance (at `seq`),
/// a subscription to its events taken before, and the task as it is when
/// the turn ends.
pub(crate) struct Admitted {
    pub(crate) task: Task,
    pub(crate) seq: u64,
    pub(crate) events: broadcast::Receiver<Sequenced>,
    pub(crate) done: oneshot::Receiver<Task>,
}

type Reply<T> = oneshot::Sender<Result<T, A2aError>>;

enum Command {
    Submit {
        submission: Submission,
        reply: Reply<Admitted>,
    },
    Cancel {
        by: Canceller,
        reply: Reply<Task>,
    },
    Report(Report),
}

enum Canceller {
    Participant(String),
    /// The parent task was canceled.
    Parent,
}

/// How the rest of the harness talks to a task's actor.
#[derive(Clone)]
pub(crate) struct TaskHandle {
    inbox: mpsc::UnboundedSender<Command>,
    events: broadcast::Sender<Sequenced>,
}

impl TaskHandle {
    /// Hand a message to the task; resolves once it is accepted (after the
    /// turns queued before it) or refused.
    pub(crate) async fn submit(&self, submission: Submission) -> Result<Admitted, A2aError> {
        self.ask(|reply| Command::Submit { submission, reply })
            .await
    }

    /// `sender` cancels the task.
    pub(crate) async fn cancel(&self, sender: &str) -> Result<Task, A2aError> {
        let by = Canceller::Participant(sender.to_owned());
        self.ask(|reply| Command::Cancel { by, reply }).await
    }

    async fn cancel_with_parent(&self) -> Result<Task, A2aError> {
        let by = Canceller::Parent;
        self.ask(|reply| Command::Cancel { by, reply }).await
    }

    fn report(&self, report: Report) {
        // Only fails when the parent's actor is gone (shutdown).
        let _ = self.inbox.send(Command::Report(report));
    }

    /// Subscribe to the task's events from now on.
    pub(crate) fn subscribe(&self) -> broadcast::Receiver<Sequenced> {
        self.events.subscribe()
    }

    async fn ask<T>(&self, command: impl FnOnce(Reply<T>) -> Command) -> Result<T, A2aError> {
        let (reply, answer) = oneshot::channel();
        self.inbox.send(command(reply)).map_err(|_| stopped())?;
        answer.await.map_err(|_| stopped())?
    }
}

/// The error a caller gets when a task's actor is gone mid-request.
pub(crate) fn stopped() -> A2aError {
    A2aError::Internal("the task stopped before answering: the server is shutting down".into())
}

/// Store `record` (a new task) and start its actor.
pub(crate) fn spawn(env: Arc<Env>, directory: &Arc<Directory>, record: TaskRecord) -> TaskHandle {
    let id = record.id.clone();
    env.store.insert(record);
    let (inbox_sender, inbox) = mpsc::unbounded_channel();
    let (events, _) = broadcast::channel(events::BUFFER);
    let handle = TaskHandle {
        inbox: inbox_sender,
        events: events.clone(),
    };
    directory.insert(id.clone(), handle.clone());
    let actor = TaskActor {
        notifier: Notifier::spawn(env.registries.clone(), id.clone()),
        id,
        env,
        directory: Arc::downgrade(directory),
        inbox,
        events,
        job: None,
        queue: VecDeque::new(),
        waiters: Vec::new(),
    };
    tokio::spawn(actor.run());
    handle
}

/// A message waiting for the running turn to end.
struct Pending {
    submission: Submission,
    reply: Reply<Admitted>,
}

struct TaskActor {
    id: String,
    env: Arc<Env>,
    directory: Weak<Directory>,
    inbox: mpsc::UnboundedReceiver<Command>,
    events: broadcast::Sender<Sequenced>,
    notifier: Notifier,
    /// The running turn, if any.
    job: Option<Job>,
    queue: VecDeque<Pending>,
    /// Callers waiting for the current turn to end.
    waiters: Vec<oneshot::Sender<Task>>,
}

impl TaskActor {
    async fn run(mut self) {
        if let Some(view) = self.view() {
            self.notifier
                .post(Operation::TaskCreated, json!({ "task": view }));
        }
        self.start_delegated();
        loop {
            tokio::select! {
                // Controls and cancellations first: they may cut the turn.
                biased;
                command = self.inbox.recv() => match command {
                    Some(command) => self.handle(command).await,
                    None => break,
                },
                step = next_step(&mut self.job) => self.on_step(step),
            }
        }
    }

    async fn handle(&mut self, command: Command) {
        match command {
            Command::Submit { submission, reply } => self.submit(Pending { submission, reply }),
            Command::Cancel { by, reply } => {
                let result = self.cancel(by).await;
                let _ = reply.send(result);
            }
            Command::Report(report) => self.on_report(report),
        }
    }

    // --- Messages --------------------------------------------------------------------------

    fn submit(&mut self, pending: Pending) {
        let role = match self.admit(&pending.submission) {
            Ok(role) => role,
            Err(error) => {
                let _ = pending.reply.send(Err(error));
                return;
            }
        };
        if matches!(pending.submission.class, Class::Complete) {
            // A control acts now: it cuts the running turn.
            self.job = None;
            self.begin(pending, role);
        } else if self.job.is_some() {
            self.queue.push_back(pending);
        } else {
            self.begin(pending, role);
        }
    }

    /// The authoritative check of a message against the task as it is now.
    fn admit(&self, submission: &Submission) -> Result<Role, A2aError> {
        let admins = &self.env.settings.admins;
        self.read(|record| {
            let context_id = submission.message.context_id.as_deref();
            let role = access::admit_message(
                record,
                admins,
                &submission.sender,
                context_id,
                &submission.class,
            )?;
            if let Class::Participants(grants) = &submission.class {
                participants::check_grants(&record.participants, grants)?;
            }
            Ok(role)
        })
        .unwrap_or_else(|| Err(access::not_found(&self.id)))
    }

    /// Accept a message: record it, start the turn, tell the sender.
    fn begin(&mut self, Pending { submission, reply }: Pending, role: Role) {
        let Submission {
            sender,
            mut message,
            class,
        } = submission;
        let command_text = classify::command_text(&message).map(str::to_owned);
        // Commands and completion hooks see the task as the message found it
        // (parked, or mid-turn for a control), not half-way through accepting it.
        let Some(before) = self.view() else {
            let _ = reply.send(Err(access::not_found(&self.id)));
            return;
        };
        message.task_id = Some(self.id.clone());
        message.context_id = self.read(|record| record.context_id.clone());
        let events = self.events.subscribe();
        self.apply(Change::Received(message));
        self.apply(Change::Status(StatusChange::working()));
        let Some((seq, task)) = self.snapshot() else {
            let _ = reply.send(Err(access::not_found(&self.id)));
            return;
        };
        let (done, waiter) = oneshot::channel();
        self.waiters.push(done);
        let _ = reply.send(Ok(Admitted {
            task,
            seq,
            events,
            done: waiter,
        }));
        let sender = Participant { id: sender, role };
        match class {
            Class::Ordinary => self.start_model_turn(),
            Class::Command(registry) => {
                let text = command_text.unwrap_or_default();
                self.job = Some(Job::spawn(|_| {
                    turn::command_turn(registry, text, sender, before)
                }));
            }
            Class::Participants(grants) => {
                let text = participants::confirmation(&grants);
                self.apply(Change::Participants(grants));
                self.park(text, None, SubState::AwaitingNextMessage);
            }
            Class::Complete => self.start_completion(sender, before),
        }
    }

    /// Take queued messages while no turn runs.
    fn pump(&mut self) {
        while self.job.is_none() {
            let Some(pending) = self.queue.pop_front() else {
                break;
            };
            match self.admit(&pending.submission) {
                Ok(role) => self.begin(pending, role),
                Err(error) => {
                    let _ = pending.reply.send(Err(error));
                }
            }
        }
    }

    // --- Turns ---------------------------------------------------------------------------

    fn start_model_turn(&mut self) {
        let registry = self.env.registries.current();
        let model = Arc::clone(&self.env.model);
        let selectable = &self.env.settings.selectable_models;
        let Some((view, request)) = self.read(|record| {
            let request = ModelRequest {
                model: record.model.clone(),
                effort: record.effort.clone(),
                history: record.history.clone(),
            };
            (record.view(selectable), request)
        }) else {
            return;
        };
        self.job = Some(Job::spawn(|progress| {
            turn::model_turn(registry, model, view, request, progress)
        }));
    }

    fn start_completion(&mut self, requested_by: Participant, task: TaskView) {
        let registry = self.env.registries.current();
        let open: Vec<_> = task.open_subtasks().cloned().collect();
        let context = completion::context(task, &requested_by, &open);
        self.job = Some(Job::spawn(|_| async move {
            TurnOutput::Completion(completion::decide(registry, requested_by, context).await)
        }));
    }

    /// A delegated task starts on its goal as soon as it exists.
    fn start_delegated(&mut self) {
        let goal_message = self.read(|record| match &record.lifecycle {
            Lifecycle::Delegated { parent_id, goal } => {
                Some(subtasks::goal_message(record, parent_id, goal))
            }
            Lifecycle::Conversation => None,
        });
        if let Some(Some(message)) = goal_message {
            self.apply(Change::Received(message));
            self.apply(Change::Status(StatusChange::working()));
            self.start_model_turn();
        }
    }

    fn on_step(&mut self, step: Option<Step>) {
        match step {
            Some(Step::Progress(text)) => {
                if let Some(message) = self.read(|record| record.agent_message(text, None)) {
                    self.apply(Change::Status(StatusChange::progress(message)));
                }
            }
            Some(Step::Done(output)) => {
                self.job = None;
                self.finish(output);
                self.pump();
            }
            None => {
                self.job = None;
                self.finish(TurnOutput::Failed("the turn stopped unexpectedly".into()));
                self.pump();
            }
        }
    }

    fn finish(&mut self, output: TurnOutput) {
        let delegated = self
            .read(|record| matches!(record.lifecycle, Lifecycle::Delegated { .. }))
            .unwrap_or(false);
        match output {
            TurnOutput::Reply { text, .. } if delegated => {
                self.conclude(TaskState::Completed, text, None);
            }
            TurnOutput::Failed(reason) if delegated => {
                self.conclude(TaskState::Failed, reason, None);
            }
            TurnOutput::Reply {
                text,
                asks_question,
            } => {
                let sub_state = if asks_question {
                    SubState::AwaitingAnswer
                } else {
                    SubState::AwaitingNextMessage
                };
                self.park(text, None, sub_state);
            }
            TurnOutput::Failed(reason) => {
                let text = format!("This turn failed: {reason}");
                self.park(text, None, SubState::AwaitingNextMessage);
            }
            TurnOutput::Command(result) => self.finish_command(result),
            TurnOutput::Completion(verdict) => self.finish_completion(verdict),
        }
    }

    /// The command's reply (or why it failed, or why its effects were
    /// refused) is the agent's message; the outcome never reaches the model.
    fn finish_command(&mut self, result: Result<Outcome, CommandFailure>) {
        let (text, data) = match result {
            Err(failure) => (failure.to_string(), None),
            Ok(outcome) => match effects::check(&outcome.effects, &self.env.settings) {
                Err(refusal) => (refusal, None),
                Ok(()) => {
                    for effect in outcome.effects {
                        self.apply_effect(effect);
                    }
                    (outcome.reply.text, outcome.reply.data)
                }
            },
        };
        self.park(text, data, SubState::AwaitingNextMessage);
    }

    fn apply_effect(&mut self, effect: Effect) {
        match effect {
            Effect::SetModel(model) => self.apply(Change::Model(model)),
            Effect::SetEffort(effort) => self.apply(Change::Effort(effort)),
            Effect::SpawnSubtask(goal) => self.spawn_subtask(&goal),
        }
    }

    fn finish_completion(&mut self, verdict: Verdict) {
        let (text, data) = (verdict.message(), Some(verdict.data()));
        if verdict.allowed {
            self.conclude(TaskState::Completed, text, data);
        } else {
            self.park(text, data, SubState::AwaitingNextMessage);
        }
    }

    /// End the turn in `INPUT_REQUIRED` with the agent's `text`.
    fn park(&mut self, text: String, data: Option<serde_json::Value>, sub_state: SubState) {
        if let Some(reply) = self.read(|record| record.agent_message(text, data)) {
            self.apply(Change::Status(StatusChange::parked(reply, sub_state)));
        }
        self.end_turn();
    }

    /// End the task in terminal `state`, explained by the agent's `text`.
    fn conclude(&mut self, state: TaskState, text: String, data: Option<serde_json::Value>) {
        if let Some(message) = self.read(|record| record.agent_message(text, data)) {
            self.apply(Change::Status(StatusChange::finished(state, message)));
        }
        self.end_turn();
    }

    /// Tell everyone waiting for this turn how the task stands now.
    fn end_turn(&mut self) {
        let task = self.snapshot().map(|(_, task)| task);
        for waiter in self.waiters.drain(..) {
            if let Some(task) = &task {
                let _ = waiter.send(task.clone());
            }
        }
    }

    // --- Cancellation --------------------------------------------------------------------

    async fn cancel(&mut self, by: Canceller) -> Result<Task, A2aError> {
        let admins = &self.env.settings.admins;
        let checked = self.read(|record| match &by {
            Canceller::Participant(sender) => access::admit_cancel(record, admins, sender)
                .map(|role| format!("Task canceled by {sender} ({role}).")),
            Canceller::Parent if record.is_terminal() => Err(A2aError::TaskNotCancelable {
                task_id: record.id.clone(),
                state: record.state(),
            }),
            Canceller::Parent => Ok("Task canceled with its parent task.".to_owned()),
        });
        let text = checked.unwrap_or_else(|| Err(access::not_found(&self.id)))?;
        self.job = None;
        self.cancel_subtasks().await;
        self.conclude(TaskState::Canceled, text, None);
        // Queued messages are refused now that the task is terminal.
        self.pump();
        self.snapshot()
            .map(|(_, task)| task)
            .ok_or_else(|| access::not_found(&self.id))
    }

    /// Cancel every open sub-task (and, through them, theirs) and record how
    /// each ended before this task's own state changes.
    async fn cancel_subtasks(&mut self) {
        let Some(directory) = self.directory.upgrade() else {
            return;
        };
        let open: Vec<String> = self
            .read(|record| record.open_subtasks().map(|s| s.id.clone()).collect())
            .unwrap_or_default();
        for id in open {
            let Some(child) = directory.get(&id) else {
                continue;
            };
            // A sub-task that finished meanwhile is not cancelable; its own
            // report says how it ended.
            if child.cancel_with_parent().await.is_ok()
                && let Some(Some(subtask)) = self.env.store.read(&id, TaskRecord::as_subtask)
            {
                self.apply(Change::Subtask(subtask));
            }
        }
    }

    // --- Sub-tasks -----------------------------------------------------------------------

    fn spawn_subtask(&mut self, goal: &str) {
        let Some(directory) = self.directory.upgrade() else {
            return;
        };
        let Some(child) = self.read(|parent| subtasks::child_of(parent, goal)) else {
            return;
        };
        let Some(subtask) = child.as_subtask() else {
            return;
        };
        // Listed before the child runs, so its reports find it.
        self.apply(Change::Subtask(subtask.clone()));
        if let Some(view) = self.view() {
            let context = json!({ "task": view, "subtask": subtask });
            self.notifier.post(Operation::SubtaskSpawned, context);
        }
        spawn(Arc::clone(&self.env), &directory, child);
    }

    fn on_report(&mut self, report: Report) {
        let terminal = self.read(TaskRecord::is_terminal).unwrap_or(true);
        self.apply(Change::Subtask(report.subtask.clone()));
        // A finished task takes no more artifacts; its list still shows how
        // the sub-task ended.
        if let Some(result) = report.result
            && !terminal
        {
            let artifact = subtasks::result_artifact(&report.subtask, &result);
            self.apply(Change::Artifact(artifact));
        }
    }

    // --- State ---------------------------------------------------------------------------

    /// The one way this actor changes its task: through the store, then
    /// publish the event, then react to a state change.
    fn apply(&mut self, change: Change) {
        let Some(applied) = self.env.store.apply(&self.id, change) else {
            return;
        };
        if let Some(event) = applied.event {
            // No subscribers is fine.
            let _ = self.events.send(event);
        }
        if let Some((from, to)) = applied.transition {
            self.on_transition(from, to);
        }
    }

    fn on_transition(&mut self, from: TaskState, to: TaskState) {
        if let Some(view) = self.view() {
            let context = json!({ "task": view, "from": from, "to": to });
            self.notifier.post(Operation::TaskStateChanged, context);
        }
        let report = self.read(Report::of).flatten();
        if let (Some(report), Some(directory)) = (report, self.directory.upgrade())
            && let Some(parent) = directory.get(&report.parent_id)
        {
            parent.report(report);
        }
    }

    /// Read this task's record. The store never forgets a task, so this is
    /// `None` only if that invariant breaks; callers then do nothing.
    fn read<R>(&self, read: impl FnOnce(&TaskRecord) -> R) -> Option<R> {
        let result = self.env.store.read(&self.id, read);
        if result.is_none() {
            tracing::error!(task = %self.id, "a task's record is missing from the store");
        }
        result
    }

    fn view(&self) -> Option<TaskView> {
        let selectable = &self.env.settings.selectable_models;
        self.read(|record| record.view(selectable))
    }

    fn snapshot(&self) -> Option<(u64, Task)> {
        self.read(|record| (record.seq, record.to_task(None)))
    }
}

/// The running job's next step; pending forever when there is none.
async fn next_step(job: &mut Option<Job>) -> Option<Step> {
    match job {
        Some(job) => job.next().await,
        None => std::future::pending().await,
    }
}
