//! One actor per task: a Tokio task that owns the task's lifecycle.
//!
//! The actor takes commands from its inbox (messages, cancellations,
//! sub-task reports) and steps from the one [`Job`] it may be running (the
//! current turn). It alone changes its task: it applies changes to the
//! record it holds, commits them to the store, and only then publishes the
//! resulting events and answers whoever is waiting. A write the store
//! refuses is the sender's answer, and the actor stops: its record is ahead
//! of the store, and the next request rebuilds it from the store.
//!
//! * An ordinary message, a command or a task event while a turn runs waits
//!   in a queue and is taken in order when the turn ends (for a one-shot
//!   task, when it has concluded: then it is refused if the task completed).
//! * A turn ends per the task's lifecycle ([`TaskActor::finish`]): a
//!   conversation parks, a delegated task completes, a one-shot task keeps
//!   its reply as an artifact and concludes: it waits for its open
//!   sub-tasks, then completes if `task.complete` allows (else it parks).
//! * An answer an `llm.invoked` executor shaped may add artifacts, reject
//!   the task (`REJECTED`, in any lifecycle), or ask that a blocking sender
//!   get the agent's message instead of the task (`domain::answer`).
//! * A control (`complete`) and a cancellation act at once: after the
//!   sender's role is checked, they cut the running turn (dropping its
//!   partial output) and go straight to their decision.
//! * A message whose id the task already accepted is answered with the task
//!   and never applied again.
//! * A plain message whose sender waits for the turn's end, to a task no one
//!   watches, is committed with the turn's reply when the turn is quick
//!   (`accept_commit_delay`): one commit instead of two, and nobody was told
//!   of it before. Anything else that happens to the task commits it first.
//! * The actor never awaits a turn: turns run as jobs, so it stays free to
//!   take a control or a cancellation. It awaits the store, and its own
//!   sub-tasks' cancellation, which never waits on it in return.
//! * With nothing to do for the configured idle period, it stops; the
//!   directory starts it again from the store when it is needed.
//! * Started from the store, it first settles what a restart interrupted
//!   (`recovery`).

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Weak};

use tokio::sync::{mpsc, oneshot};

use super::access;
use super::agent::ModelTurn;
use super::classify::{self, Class};
use super::completion;
use super::directory::Directory;
use super::env::Env;
use super::events::{Broadcaster, Sequenced};
use super::inbox::{
    Admitted, AnswerWatch, Answering, Canceller, Command, Rendered, Reply, Submission, TurnReply,
    stopped,
};
use super::job::{Job, Spawned, Step, SubtaskEnd, TurnEnd, TurnOutput};
use super::journal::{Journal, Published};
use super::lifecycle::{self, Ending, Finished, Next};
use super::notify::{Notification, Notifier};
use super::participants;
use super::recovery::{self, Resume};
use super::state::{Change, Lifecycle, StatusChange, TaskRecord, Turn, TurnWork, new_id};
use super::subtasks::{self, Report};
use super::transcript;
use super::turn;
use crate::a2a::error::A2aError;
use crate::a2a::types::{Message, TaskState, Timestamp};
use crate::domain::{
    Participant, RequestContext, Role, StateChangedContext, SubtaskSpawnedContext, SubtaskView,
    TaskCreatedContext, TaskRef, TaskView,
};
use crate::hooks::Trace;

/// How an actor comes to run.
pub(crate) enum Start {
    /// A new conversation; its first commit creates it in the store.
    Conversation { created_by: String },
    /// A new delegated task, stored with its parent's commit.
    Delegated,
    /// A task read back from the store.
    Recovered,
}

/// Start the actor of `record`.
/// The most bytes a task's waiting future may take (it is 416).
const MAX_RUN_FUTURE: usize = 512;

pub(crate) fn spawn(
    directory: &Arc<Directory>,
    record: TaskRecord,
    start: Start,
) -> Result<(), A2aError> {
    let env = Arc::clone(directory.env());
    let journal = match &start {
        Start::Conversation { created_by } => Journal::new_task(&record, Some(created_by.clone()))?,
        Start::Delegated | Start::Recovered => Journal::stored(&record),
    };
    let (inbox_sender, inbox) = mpsc::unbounded_channel();
    let events = Arc::new(Broadcaster::default());
    let generation = directory.register(&record.id, inbox_sender, Arc::clone(&events));
    let actor = TaskActor {
        notifier: Notifier::new(env.registries.clone(), record.id.clone()),
        turn_message: running_turn_message(&record),
        record,
        journal,
        env,
        directory: Arc::downgrade(directory),
        generation,
        inbox,
        events,
        job: None,
        queue: VecDeque::new(),
        waiters: Vec::new(),
        children: Vec::new(),
        notes: Vec::new(),
        subtask_waiters: HashMap::new(),
        turn_ended: false,
        direct_reply: None,
        answer_watch: None,
        broken: None,
        unstored_since: None,
        transcript_span: 0,
    };
    // The actor is boxed apart, and every step the loop awaits is boxed
    // too: the future is what a live task costs while it waits, and it
    // must not carry the size of its largest step (an inlined recovery made
    // it 4.7 KB, and an actor argument is stored twice in an async fn's
    // future). Every test that starts a task checks the bound.
    let run = Box::new(actor).run(start);
    debug_assert!(
        std::mem::size_of_val(&run) <= MAX_RUN_FUTURE,
        "a task's future is {} bytes, more than {MAX_RUN_FUTURE}",
        std::mem::size_of_val(&run)
    );
    tokio::spawn(Box::pin(run));
    Ok(())
}

/// What ended an actor's wait.
enum Woken {
    /// A command, or `None` once the service is gone.
    Command(Option<Box<Command>>),
    Step(Option<Step>),
    /// The idle period passed, or the time a deferred acceptance may wait.
    Timer,
}

/// A waiting task's status message, kept as its JSON text.
///
/// A parked conversation's status message is its last reply, and that
/// carries the turn's trace: as a tree of JSON values it was about 1.9 KB of
/// a live task's 5.3 KB. An idle actor holds the text instead (a few
/// hundred bytes), and parses it back when it wakes, before it does anything
/// else: the record is whole whenever the actor uses it.
struct PackedStatus(Box<str>);

impl PackedStatus {
    /// Take `record`'s status message, if it has one, as text.
    fn take(record: &mut TaskRecord) -> Option<Self> {
        let message = record.status.message.take()?;
        match serde_json::to_string(&message) {
            Ok(text) => Some(PackedStatus(text.into_boxed_str())),
            Err(_) => {
                // Cannot happen (a message is plain JSON); kept as it is.
                record.status.message = Some(message);
                None
            }
        }
    }

    /// Put the message back. (It cannot fail to parse: it is a message's
    /// own JSON. Should it ever, the error says so.)
    fn restore(self, record: &mut TaskRecord) -> Result<(), String> {
        let message = serde_json::from_str(&self.0).map_err(|error| {
            format!(
                "task {}'s status message could not be read back: {error}",
                record.id
            )
        })?;
        record.status.message = Some(message);
        Ok(())
    }
}

/// A message waiting for the running turn to end.
struct Pending {
    submission: Submission,
    reply: Reply<Admitted>,
}

/// A caller waiting for the turn to end, and how much history it wants.
type Waiter = (Option<i32>, oneshot::Sender<Result<TurnReply, A2aError>>);

/// What the task knows of a message's id.
enum Known {
    /// A new id.
    New,
    /// A participant's message the task accepted before.
    Resent,
    /// The id of another message of the task (one of the agent's).
    Taken,
}

struct TaskActor {
    /// The task as this actor has changed it; the store has it as of the
    /// last commit, and `journal` holds the rest. Of the history it holds
    /// the running turn's messages at most (see `settle`).
    record: TaskRecord,
    journal: Journal,
    /// The id of the message whose turn is running: a resend of it waits
    /// for the turn's end.
    turn_message: Option<String>,
    env: Arc<Env>,
    directory: Weak<Directory>,
    generation: u64,
    inbox: mpsc::UnboundedReceiver<Box<Command>>,
    events: Arc<Broadcaster>,
    notifier: Notifier,
    /// The running turn, if any.
    job: Option<Job>,
    queue: VecDeque<Pending>,
    /// Callers waiting for the current turn to end.
    waiters: Vec<Waiter>,
    /// Sub-tasks spawned since the last commit: stored with it, started
    /// after it.
    children: Vec<(TaskRecord, Journal)>,
    /// Notification hooks to run once the current changes are committed.
    notes: Vec<Notification>,
    /// Tool calls of the running turn waiting for a sub-task to end.
    subtask_waiters: HashMap<String, oneshot::Sender<SubtaskEnd>>,
    /// The turn ended since the last commit: answer the waiters after it.
    turn_ended: bool,
    /// The agent message a blocking sender gets instead of the task when
    /// the turn ends (an answer with the `message` disposition).
    direct_reply: Option<Message>,
    /// Told whether the first turn of a streamed one-shot task answers
    /// with a message alone.
    answer_watch: Option<AnswerWatch>,
    /// The store refused a write; the actor stops.
    broken: Option<A2aError>,
    /// Since when the running turn's accepted message has waited to be
    /// committed: it is, `accept_commit_delay` later, unless the turn's end
    /// stores it with the reply first ([`TaskActor::defers_acceptance`]).
    unstored_since: Option<tokio::time::Instant>,
    /// How many stored messages the last model turn's transcript went
    /// through, so the next one reads that many first; 0 when none did.
    /// Four bytes, where they fit beside the other fields: every running
    /// worker carries them.
    transcript_span: u32,
}

impl TaskActor {
    async fn run(mut self: Box<Self>, start: Start) {
        match start {
            Start::Conversation { .. } => {}
            Start::Delegated => {
                self.note(Notification::Created(TaskCreatedContext {
                    task: self.view(),
                    created_by: None,
                }));
                Box::pin(self.start_goal()).await;
            }
            Start::Recovered => Box::pin(self.recover()).await,
        }
        while self.broken.is_none() {
            let idle = self.is_idle();
            let packed = if idle {
                PackedStatus::take(&mut self.record)
            } else {
                None
            };
            // One timer, so the waiting future stays small: an idle actor
            // never has an acceptance to store.
            let timer = match self.unstored_since {
                Some(since) => Some(since + self.env.accept_commit_delay),
                None => idle.then(|| tokio::time::Instant::now() + self.env.idle_timeout),
            };
            let woken = tokio::select! {
                // Controls and cancellations first: they may cut the turn.
                biased;
                command = self.inbox.recv() => Woken::Command(command),
                step = next_step(&mut self.job) => Woken::Step(step),
                () = sleep_until(timer) => Woken::Timer,
            };
            if let Some(packed) = packed
                && let Err(error) = packed.restore(&mut self.record)
            {
                // The store has the task whole: the next request starts
                // from it rather than from a record missing its status.
                let error = A2aError::Internal(error);
                if let Woken::Command(Some(command)) = woken {
                    refuse(*command, &error);
                }
                self.break_down(error);
                break;
            }
            // Boxed steps: the actor's own future stays small while it
            // waits, which is most of its life.
            match woken {
                Woken::Command(Some(command)) => Box::pin(self.handle(*command)).await,
                Woken::Command(None) => return,
                Woken::Step(step) => Box::pin(self.on_step(step)).await,
                Woken::Timer if self.unstored_since.is_some() => {
                    let _ = Box::pin(self.settle()).await;
                }
                Woken::Timer => {
                    if self.retire() {
                        return;
                    }
                }
            }
        }
        self.shut_down();
    }

    async fn handle(&mut self, command: Command) {
        // Whatever the command is, it meets the task as stored: a resend
        // of the unstored message is found, a cancellation stores it first.
        if self.unstored_since.is_some() {
            let _ = self.settle().await;
        }
        match command {
            Command::Submit { submission, reply } => {
                self.submit(Pending { submission, reply }).await;
            }
            Command::Cancel { by, reply } => {
                let result = self.cancel(by).await;
                let _ = reply.send(result);
            }
            Command::Report(report) => {
                self.record_subtask(report.subtask, report.result);
                self.resume_conclusion();
                let _ = self.settle().await;
            }
        }
    }

    // --- Messages --------------------------------------------------------------------------

    async fn submit(&mut self, pending: Pending) {
        match self.known(&pending.submission).await {
            Ok(Known::New) => {}
            Ok(Known::Resent) => return self.resend(pending),
            Ok(Known::Taken) => {
                let _ = pending.reply.send(Err(taken(&pending.submission.message)));
                return;
            }
            Err(error) => {
                let _ = pending.reply.send(Err(error));
                return;
            }
        }
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
            self.begin(pending, role).await;
        } else if self.job.is_some() || self.record.is_concluding() {
            self.queue.push_back(pending);
        } else {
            self.begin(pending, role).await;
        }
    }

    /// The authoritative check of a message against the task as it is now.
    fn admit(&self, submission: &Submission) -> Result<Role, A2aError> {
        lifecycle::admit(
            &self.record,
            &self.env.settings,
            &submission.sender,
            submission.message.context_id.as_deref(),
            &submission.class.kind(),
        )
    }

    /// Whether the task's history already holds a message with this id, and
    /// whose. The service looked in the store before sending it here; only
    /// if the task changed since does the actor look again (a resend that
    /// raced its original, or one queued behind it). The store has the
    /// whole history: the actor commits each step before taking the next
    /// command, so it has nothing unstored when it looks.
    async fn known(&self, submission: &Submission) -> Result<Known, A2aError> {
        if submission.checked_at == Some(self.record.changes) {
            return Ok(Known::New);
        }
        let message = &submission.message;
        let stored = self
            .env
            .store
            .message(self.record.id.clone(), message.message_id.clone())
            .await
            .map_err(A2aError::from)?;
        let Some(document) = stored else {
            return Ok(Known::New);
        };
        let role = serde_json::from_str::<Message>(&document)
            .map_err(|error| {
                A2aError::Internal(format!("a stored message is unreadable: {error}"))
            })?
            .role;
        Ok(if role == message.role {
            Known::Resent
        } else {
            Known::Taken
        })
    }

    /// The task as its actor answers with it (see [`Rendered`]).
    fn render(&self, history_length: Option<i32>) -> Rendered {
        Rendered {
            task: self.record.to_task(history_length),
            history_len: self.record.history_len,
        }
    }

    /// Answer a message the task accepted before without applying it again:
    /// with the task once that message's turn is over.
    fn resend(&mut self, Pending { submission, reply }: Pending) {
        let admins = &self.env.settings.admins;
        if let Err(error) = access::visible(&self.record, &submission.sender, admins) {
            let _ = reply.send(Err(error));
            return;
        }
        let running = self.job.is_some()
            && self.turn_message.as_deref() == Some(submission.message.message_id.as_str());
        let history_length = submission.history_length;
        let (done, waiter) = oneshot::channel();
        if running {
            self.waiters.push((history_length, done));
        } else {
            let _ = done.send(Ok(TurnReply::Task(self.render(history_length))));
        }
        let _ = reply.send(Ok(Admitted {
            task: self.render(history_length),
            seq: self.record.seq,
            events: (submission.answering == Answering::Streamed).then(|| self.events.subscribe()),
            done: waiter,
            finished: !running,
            answer_watch: None,
        }));
    }

    /// Accept a message: record it, commit, tell the sender, start the turn.
    async fn begin(&mut self, pending: Pending, role: Role) {
        let Pending { submission, reply } = pending;
        let Submission {
            sender,
            mut message,
            class,
            history_length,
            answering,
            ..
        } = submission;
        let text = classify::command_text(&message)
            .map(str::to_owned)
            .unwrap_or_default();
        // Commands and completion hooks see the task as the message found it
        // (parked, or mid-turn for a control), not half-way through accepting it.
        let before = self.view();
        let sender = Participant { id: sender, role };
        message.task_id = Some(self.record.id.clone());
        message.context_id = Some(self.record.context_id.clone());
        if matches!(class, Class::Ordinary) {
            self.note(Notification::Received(RequestContext {
                text: super::state::message_text(&message),
                sender: sender.clone(),
                task: before.clone(),
            }));
        }
        let stream = answering == Answering::Streamed;
        let events = stream.then(|| self.events.subscribe());
        self.turn_message = Some(message.message_id.clone());
        // A message-only answer belongs to the turn that made it.
        self.direct_reply = None;
        let starts_task = self.record.history_len == 0;
        let kind = class.kind();
        let approval = lifecycle::receive(self, message, &kind, &sender);
        // A stream of a new task opens on it as submitted, before the WORKING
        // update (A2A's order); everyone else sees the task as its turn starts.
        let submitted =
            (stream && starts_task).then(|| (self.record.seq, self.render(history_length)));
        lifecycle::start_turn(self, &kind, &sender, approval, &text);
        // What the sender sees accepted: the task as its turn starts.
        let answer_watch = (submitted.is_some() && self.record.lifecycle == Lifecycle::Task)
            .then(AnswerWatch::default);
        self.answer_watch.clone_from(&answer_watch);
        let (seq, task) =
            submitted.unwrap_or_else(|| (self.record.seq, self.render(history_length)));
        if let Class::Participants(grants) = &class {
            let text = participants::confirmation(grants);
            self.apply(Change::Participants(grants.clone()));
            let sub_state = lifecycle::waiting_sub_state(&self.record);
            let next = lifecycle::park(self, text, sub_state);
            self.proceed(next);
        }
        let (done, waiter) = oneshot::channel();
        self.waiters.push((history_length, done));
        if self.defers_acceptance(&class, answering) {
            // Its sender hears nothing before the turn's end, which stores it.
            self.unstored_since = Some(tokio::time::Instant::now());
        } else if let Err(error) = self.settle().await {
            // Committed before it is acknowledged: a refused write is the
            // answer, and a message not accepted has no one waiting for its turn.
            self.waiters.pop();
            let _ = reply.send(Err(error));
            return;
        }
        let _ = reply.send(Ok(Admitted {
            task,
            seq,
            events,
            done: waiter,
            finished: false,
            answer_watch,
        }));
        match class {
            Class::Ordinary | Class::Decide { .. } => self.start_model_turn(),
            Class::Command(registry) => {
                self.job = Some(Job::spawn(|_| {
                    turn::command_turn(registry, text, sender, before)
                }));
            }
            Class::Complete => self.start_completion(sender, before),
            Class::Participants(_) => {}
        }
    }

    /// Whether the message just accepted may wait for its turn's commit
    /// (at most `accept_commit_delay`): a follow-up is then one commit, not
    /// two. Only when no one can tell: its sender waits for the turn's end,
    /// and no one watches the task's events. And only for a model turn: a
    /// command body may act outside, and must find its message stored so
    /// that a restart does not run it again.
    fn defers_acceptance(&self, class: &Class, answering: Answering) -> bool {
        matches!(class, Class::Ordinary)
            && answering == Answering::AtTurnEnd
            && !self.env.accept_commit_delay.is_zero()
            && self.events.receiver_count() == 0
            && self.env.push.watches_nothing(&self.record.id)
    }

    /// Take queued messages while no turn runs.
    async fn pump(&mut self) {
        while self.job.is_none() && !self.record.is_concluding() && self.broken.is_none() {
            let Some(pending) = self.queue.pop_front() else {
                break;
            };
            match self.known(&pending.submission).await {
                Ok(Known::New) => {}
                Ok(Known::Resent) => {
                    // A resend queued behind its original.
                    self.resend(pending);
                    continue;
                }
                Ok(Known::Taken) => {
                    let _ = pending.reply.send(Err(taken(&pending.submission.message)));
                    continue;
                }
                Err(error) => {
                    let _ = pending.reply.send(Err(error));
                    continue;
                }
            }
            match self.admit(&pending.submission) {
                Ok(role) => self.begin(pending, role).await,
                Err(error) => {
                    let _ = pending.reply.send(Err(error));
                }
            }
        }
    }

    // --- Turns ---------------------------------------------------------------------------

    fn start_model_turn(&mut self) {
        // The approval and the turn's message id come from the record and
        // the actor: what a model turn needs of the task is taken now.
        let unstored = self.journal.unstored_messages(&self.record);
        let turn = ModelTurn::prepare(
            &self.env,
            &self.record,
            self.view(),
            self.turn_message.clone(),
        )
        .with_unstored(unstored)
        .after_span((self.transcript_span > 0).then_some(self.transcript_span as usize));
        self.job = Some(Job::spawn(move |link| turn.run(link)));
    }

    fn start_completion(&mut self, requested_by: Participant, task: TaskView) {
        let registry = self.env.registries.current();
        let open: Vec<_> = task.open_subtasks().cloned().collect();
        let context = completion::context(task, &requested_by, &open);
        self.job = Some(Job::spawn(|_| async move {
            let trace = Trace::default();
            let verdict = completion::decide(registry, context, &trace).await;
            TurnOutput {
                trace: trace.finish(),
                ..TurnOutput::untraced(TurnEnd::Completion(verdict))
            }
        }));
    }

    /// A delegated task works on its goal as soon as it exists.
    async fn start_goal(&mut self) {
        let Lifecycle::Delegated { parent_id, goal } = &self.record.lifecycle else {
            return;
        };
        let message = subtasks::goal_message(&self.record, new_id(), parent_id, goal);
        lifecycle::start_goal(self, message);
        if self.settle().await.is_ok() {
            self.start_model_turn();
        }
    }

    async fn on_step(&mut self, step: Option<Step>) {
        match step {
            Some(Step::Progress(text)) => {
                let message = self.record.agent_message(text, None);
                self.apply(Change::Status(StatusChange::progress(message)));
                let _ = self.settle().await;
            }
            Some(Step::Delta(text)) => self.stream_delta(text),
            Some(Step::Record(record, committed)) => {
                lifecycle::record(self, record);
                if self.settle().await.is_ok() {
                    let _ = committed.send(());
                }
            }
            Some(Step::Spawn { goal, answer }) => {
                let spawned = self.spawn_for_tool(&goal);
                let spawned = match self.settle().await {
                    Ok(()) => spawned,
                    Err(error) => Err(error.to_string()),
                };
                let _ = answer.send(spawned);
            }
            Some(Step::Done(output)) => self.end_job(output).await,
            None => {
                let failed = TurnEnd::Failed("the turn stopped unexpectedly".into());
                self.end_job(TurnOutput::untraced(failed)).await;
            }
        }
    }

    /// Send the next piece of the reply to whoever is subscribed, now: a
    /// live-only event, never stored (the reply is, when the turn ends).
    fn stream_delta(&self, text: String) {
        if self.events.receiver_count() == 0 {
            return;
        }
        let metadata = transcript::stream_metadata(transcript::TEXT_DELTA);
        let event = transcript::live_update(&self.record, text, metadata);
        self.events.send(Sequenced::live(self.record.seq, event));
    }

    async fn end_job(&mut self, output: TurnOutput) {
        self.job = None;
        self.finish(output);
        if self.settle().await.is_ok() {
            self.pump().await;
        }
    }

    fn finish(&mut self, output: TurnOutput) {
        // Waiters of a turn that ended (or was cut) hear nothing more.
        self.subtask_waiters.clear();
        if let Some(span) = output.transcript_span {
            self.transcript_span = span;
        }
        let env = Arc::clone(&self.env);
        let Finished { next, direct_reply } = lifecycle::finish(self, output, &env.settings);
        let watch = self.answer_watch.take();
        if let Some(reply) = direct_reply {
            if let Some(watch) = watch {
                watch.answered_with_message();
            }
            // Kept until the turn's waiters are answered: a one-shot task's
            // turn ends only after the completion decision that follows.
            self.direct_reply = Some(reply);
        }
        self.proceed(next);
    }

    /// After a sub-task report: a concluding one-shot task waiting on its
    /// sub-tasks goes on once none is open.
    fn resume_conclusion(&mut self) {
        if self.job.is_some() {
            return;
        }
        if let Some(next) = lifecycle::resumed_conclusion(self) {
            self.proceed(next);
        }
    }

    /// Do what a lifecycle decision says comes next.
    fn proceed(&mut self, next: Next) {
        match next {
            Next::Continue => {}
            Next::TurnEnded => self.turn_ended = true,
            Next::Completion(requested_by) => {
                let view = self.view();
                self.start_completion(requested_by, view);
            }
        }
    }

    // --- Recovery ------------------------------------------------------------------------

    /// Settle what a restart interrupted (see `recovery`).
    async fn recover(&mut self) {
        self.catch_up_subtasks().await;
        match recovery::plan(&self.record) {
            Resume::Nothing => {}
            Resume::StartGoal => return self.start_goal().await,
            Resume::Retry(turn) => return self.retry(turn).await,
            Resume::Interrupted { why, .. } => {
                tracing::warn!(task = %self.record.id, "a turn interrupted by a restart is not repeated");
                let next = lifecycle::interrupted(self, why);
                self.proceed(next);
            }
        }
        let _ = self.settle().await;
    }

    /// Run an interrupted turn again, once its new attempt is recorded (so a
    /// second interruption is not retried again).
    async fn retry(&mut self, turn: Turn) {
        tracing::info!(task = %self.record.id, attempt = turn.attempt, "retrying a turn interrupted by a restart");
        let work = turn.work.clone();
        self.apply(Change::TurnStarted(turn));
        if self.settle().await.is_err() {
            return;
        }
        match work {
            TurnWork::Model { .. } => self.start_model_turn(),
            TurnWork::Completion { requested_by } => {
                let view = self.view();
                self.start_completion(requested_by, view);
            }
            TurnWork::Conclude { requested_by } => {
                let next = lifecycle::conclusion(self, requested_by);
                self.proceed(next);
            }
            // Never planned: commands are not repeated.
            TurnWork::Command { .. } => {}
        }
    }

    /// A sub-task may have finished after this task's last write (the
    /// process died before its report was recorded): read how each open one
    /// stands in the store.
    async fn catch_up_subtasks(&mut self) {
        let open: Vec<String> = self.record.open_subtasks().map(|s| s.id.clone()).collect();
        for id in open {
            let head = match self.env.store.head(id.clone()).await {
                Ok(Some(head)) => head,
                Ok(None) => continue,
                Err(error) => {
                    tracing::warn!(task = %self.record.id, subtask = %id, %error, "cannot read a sub-task");
                    continue;
                }
            };
            match TaskRecord::from_head(&head).map(|child| Report::of(&child)) {
                Ok(Some(report)) => self.record_subtask(report.subtask, report.result),
                Ok(None) => {}
                Err(error) => tracing::warn!(subtask = %id, %error, "cannot read a sub-task"),
            }
        }
    }

    // --- Cancellation --------------------------------------------------------------------

    async fn cancel(&mut self, by: Canceller) -> Result<Rendered, A2aError> {
        let admins = &self.env.settings.admins;
        let text = match &by {
            Canceller::Participant(sender) => access::admit_cancel(&self.record, admins, sender)
                .map(|role| format!("Task canceled by {sender} ({role})."))?,
            Canceller::Parent if self.record.is_terminal() => {
                return Err(A2aError::TaskNotCancelable {
                    task_id: self.record.id.clone(),
                    state: self.record.state(),
                });
            }
            Canceller::Parent => "Task canceled with its parent task.".to_owned(),
        };
        self.job = None;
        self.cancel_subtasks().await;
        let ending = Ending::notice(Ending::default());
        let next = lifecycle::conclude(self, TaskState::Canceled, text, ending);
        self.proceed(next);
        self.settle().await?;
        // Queued messages are refused now that the task is terminal.
        self.pump().await;
        Ok(self.render(None))
    }

    /// Cancel every open sub-task (and, through them, theirs) and record how
    /// each ended before this task's own state changes.
    async fn cancel_subtasks(&mut self) {
        let Some(directory) = self.directory.upgrade() else {
            return;
        };
        let open: Vec<SubtaskView> = self.record.open_subtasks().cloned().collect();
        for subtask in open {
            let canceled = directory
                .ask(&subtask.id, |reply| Command::Cancel {
                    by: Canceller::Parent,
                    reply,
                })
                .await;
            // A sub-task that finished meanwhile is not cancelable; its own
            // report says how it ended.
            if let Ok(Rendered { task, .. }) = canceled {
                let state = task.status.state.as_str().to_owned();
                self.apply(Change::Subtask(SubtaskView { state, ..subtask }));
            }
        }
    }

    // --- Sub-tasks -----------------------------------------------------------------------

    /// Delegate `goal` to a new sub-task, stored with this task's next
    /// commit and started after it.
    fn spawn_subtask(&mut self, goal: &str) -> Result<SubtaskView, String> {
        let child = subtasks::child_of(&self.record, goal);
        let subtask = child
            .as_subtask()
            .ok_or("a sub-task must be a delegated task")?;
        let journal = Journal::new_task(&child, None).map_err(|error| {
            tracing::error!(task = %self.record.id, %error, "cannot record a sub-task");
            format!("the sub-task could not be recorded: {error}")
        })?;
        // Listed before the child runs, so its reports find it; both are
        // stored in the same commit.
        self.apply(Change::Subtask(subtask.clone()));
        self.note(Notification::Spawned(SubtaskSpawnedContext {
            parent: TaskRef {
                id: self.record.id.clone(),
                context_id: self.record.context_id.clone(),
            },
            goal: subtask.goal.clone(),
            subtask: Some(subtask.clone()),
        }));
        self.children.push((child, journal));
        Ok(subtask)
    }

    /// A `spawn_subtask` tool call: the sub-task, if it may start, and how
    /// the call learns its end.
    fn spawn_for_tool(&mut self, goal: &str) -> Result<Spawned, String> {
        lifecycle::may_delegate(&self.record, &self.env.settings, goal)?;
        let subtask = self.spawn_subtask(goal)?;
        let (sender, ended) = oneshot::channel();
        self.subtask_waiters.insert(subtask.id.clone(), sender);
        Ok(Spawned { subtask, ended })
    }

    /// Record how a sub-task stands. Reports can arrive twice (a report and
    /// a catch-up after a restart), so an unchanged state and an existing
    /// result artifact are left alone.
    fn record_subtask(&mut self, subtask: SubtaskView, result: Option<String>) {
        if let Some(result) = &result
            && let Some(waiter) = self.subtask_waiters.remove(&subtask.id)
        {
            let _ = waiter.send(SubtaskEnd {
                state: subtask.state.clone(),
                text: result.clone(),
            });
        }
        lifecycle::record_subtask(self, subtask, result.as_deref());
    }

    // --- State ---------------------------------------------------------------------------

    /// The one way this actor changes its task: on its record, noted in the
    /// journal until [`TaskActor::settle`] commits it.
    fn apply(&mut self, change: Change) {
        if let Err(error) = self
            .journal
            .apply(&mut self.record, change, Timestamp::now())
        {
            // Only a change that cannot be serialized gets here; the record
            // moved ahead of what can be stored, so stop like a failed write.
            self.break_down(error);
        }
    }

    /// The record is ahead of the store: stop taking requests. The actor
    /// leaves the directory before anyone hears of the failure, so a request
    /// made after it (the store may be back) starts a fresh actor from the
    /// store instead of reaching this one.
    fn break_down(&mut self, error: A2aError) {
        if let Some(directory) = self.directory.upgrade() {
            directory.remove(&self.record.id, self.generation);
        }
        self.broken.get_or_insert(error);
    }

    fn note(&mut self, notification: Notification) {
        self.notes.push(notification);
    }

    /// Commit this step's changes, then tell everyone: events, hooks,
    /// the parent, and the waiters if the turn ended.
    async fn settle(&mut self) -> Result<(), A2aError> {
        self.commit().await?;
        if std::mem::take(&mut self.turn_ended) {
            let direct = self.direct_reply.take();
            for (history_length, waiter) in std::mem::take(&mut self.waiters) {
                let reply = match &direct {
                    Some(message) => TurnReply::Message(message.clone()),
                    None => TurnReply::Task(self.render(history_length)),
                };
                let _ = waiter.send(Ok(reply));
            }
            // Everything is stored and everyone answered: between turns the
            // actor keeps only counts, so an idle conversation costs the same
            // at any length, and no unwatched channel stays allocated.
            // (A one-shot task concluding still needs its reply.)
            if self.job.is_none() && !self.record.is_active() {
                self.record.forget_history();
                self.turn_message = None;
            }
            self.events.release_if_unwatched();
        }
        Ok(())
    }

    async fn commit(&mut self) -> Result<(), A2aError> {
        if let Some(error) = &self.broken {
            return Err(error.clone());
        }
        // The service that ran this actor is gone (the server is stopping,
        // or an embedding program dropped it and opened another on the same
        // store): it must not write behind its successor's back.
        if self.directory.strong_count() == 0 {
            self.broken = Some(stopped());
            return Err(stopped());
        }
        if self.journal.is_empty() && self.children.is_empty() {
            self.post_notes();
            return Ok(());
        }
        match self.store_changes().await {
            Ok(published) => {
                // A deferred acceptance was part of it.
                self.unstored_since = None;
                self.publish(published).await;
                Ok(())
            }
            Err(error) => {
                tracing::error!(task = %self.record.id, %error, "a task change could not be stored; the task's actor stops");
                self.break_down(error.clone());
                Err(error)
            }
        }
    }

    /// One atomic write: this task's changes and the sub-tasks it created.
    async fn store_changes(&mut self) -> Result<Published, A2aError> {
        let mut writes = vec![self.journal.write(&self.record)?];
        for (child, journal) in &self.children {
            writes.push(journal.write(child)?);
        }
        self.env
            .store
            .commit(writes)
            .await
            .map_err(A2aError::from)?;
        Ok(self.journal.committed(&self.record))
    }

    async fn publish(&mut self, published: Published) {
        if published.created {
            let created_by = self
                .record
                .participants
                .iter()
                .find(|participant| participant.role == Role::Reporter)
                .cloned();
            self.notifier
                .post(Notification::Created(TaskCreatedContext {
                    task: self.view(),
                    created_by,
                }));
        }
        for event in published.events {
            self.env.push.post(&self.record.id, event.seq, &event.event);
            // No subscribers is fine.
            self.events.send(event);
        }
        self.post_notes();
        if let Some(directory) = self.directory.upgrade() {
            for (child, _) in std::mem::take(&mut self.children) {
                let id = child.id.clone();
                if let Err(error) = spawn(&directory, child, Start::Delegated) {
                    tracing::error!(subtask = %id, %error, "cannot start a sub-task");
                }
            }
        }
        for (from, to) in published.transitions {
            self.on_transition(from, to).await;
        }
    }

    fn post_notes(&mut self) {
        // Taken, not drained: a drained Vec keeps its capacity, and an idle
        // task would hold room for a turn's notifications (1.3 KB).
        for notification in std::mem::take(&mut self.notes) {
            self.notifier.post(notification);
        }
    }

    async fn on_transition(&mut self, from: TaskState, to: TaskState) {
        self.notifier
            .post(Notification::StateChanged(StateChangedContext {
                task: self.view(),
                from: from.as_str().to_owned(),
                to: to.as_str().to_owned(),
            }));
        let Some(report) = Report::of(&self.record) else {
            return;
        };
        let Some(directory) = self.directory.upgrade() else {
            return;
        };
        let parent = report.parent_id.clone();
        if let Err(error) = directory.deliver(&parent, Command::Report(report)).await {
            // The parent catches up from the store when it next starts.
            tracing::warn!(task = %self.record.id, %parent, %error, "cannot report to the parent task");
        }
    }

    fn view(&self) -> TaskView {
        self.record.view(&self.env.settings.selectable_models)
    }

    // --- Stopping ------------------------------------------------------------------------

    /// Nothing running, queued or waiting.
    fn is_idle(&self) -> bool {
        self.job.is_none()
            && self.queue.is_empty()
            && self.waiters.is_empty()
            && self.children.is_empty()
    }

    /// Stop if nobody needs this actor; the store has everything.
    fn retire(&mut self) -> bool {
        match self.directory.upgrade() {
            Some(directory) => directory.retire(&self.record.id, self.generation, &self.inbox),
            None => true,
        }
    }

    /// After a refused write (the actor already left the directory): answer
    /// everyone waiting, and every request that reached the inbox before it
    /// left, with the error. The next request starts from the store.
    fn shut_down(mut self: Box<Self>) {
        let error = self.broken.take().unwrap_or_else(stopped);
        self.inbox.close();
        for pending in self.queue.drain(..) {
            let _ = pending.reply.send(Err(error.clone()));
        }
        // A waiter's message was accepted: only its turn's result is
        // missing, unless the write refused was its acceptance too.
        let unrecorded = match &error {
            A2aError::StoreUnavailable(_) if self.unstored_since.is_some() => error.clone(),
            A2aError::StoreUnavailable(reason) => A2aError::TurnNotStored {
                task_id: self.record.id.clone(),
                reason: reason.clone(),
            },
            other => other.clone(),
        };
        for (_, waiter) in self.waiters.drain(..) {
            let _ = waiter.send(Err(unrecorded.clone()));
        }
        while let Ok(command) = self.inbox.try_recv() {
            refuse(*command, &error);
        }
    }
}

/// The lifecycle's decisions read and change the actor's record, through
/// its journal.
impl lifecycle::Task for TaskActor {
    fn record(&self) -> &TaskRecord {
        &self.record
    }

    fn apply(&mut self, change: Change) {
        TaskActor::apply(self, change);
    }

    fn spawn_subtask(&mut self, goal: &str) -> Result<SubtaskView, String> {
        TaskActor::spawn_subtask(self, goal)
    }
}

/// Answer `command` with `error` (a stopping actor's last word).
fn refuse(command: Command, error: &A2aError) {
    match command {
        Command::Submit { reply, .. } => {
            let _ = reply.send(Err(error.clone()));
        }
        Command::Cancel { reply, .. } => {
            let _ = reply.send(Err(error.clone()));
        }
        // The parent catches up from the store when it next starts.
        Command::Report(_) => {}
    }
}

/// The message whose turn a task read back from the store is running (a
/// restart interrupted it): the newest participant's message it holds, so
/// a resend of it waits for the retried turn's end.
fn running_turn_message(record: &TaskRecord) -> Option<String> {
    if !record.is_active() {
        return None;
    }
    record
        .history
        .iter()
        .rev()
        .find(|message| message.role == crate::a2a::types::Role::User)
        .map(|message| message.message_id.clone())
}

/// A participant reused the id of another message of the task (one of the
/// agent's): two messages would be indistinguishable.
fn taken(message: &Message) -> A2aError {
    let id = &message.message_id;
    A2aError::invalid_field(
        "message.messageId",
        format!("messageId `{id}` is already used by another message of this task"),
    )
}

/// Ready at `deadline`; pending forever without one.
async fn sleep_until(deadline: Option<tokio::time::Instant>) {
    match deadline {
        Some(deadline) => tokio::time::sleep_until(deadline).await,
        None => std::future::pending().await,
    }
}

/// The running job's next step; pending forever when there is none.
async fn next_step(job: &mut Option<Job>) -> Option<Step> {
    match job {
        Some(job) => job.next().await,
        None => std::future::pending().await,
    }
}
