//! One chat session: the conversation being talked in, and what each line typed does.
//! Every network call runs on the session's Tokio runtime; waiting for a turn can be cut
//! with Ctrl-C, which stops the waiting, never the turn (the task goes on on the server).

use std::io::Write as _;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::json;
use tokio_stream::StreamExt;

use super::client::{Client, ClientError, Events};
use super::editor::Context;
use super::interrupt::Interrupt;
use super::local::{self, Local};
use super::render;
use super::turn::TurnView;
use crate::a2a::types::{ListTasksResponse, SendMessageResponse, StreamResponse, Task, TaskState};

/// History shown when a conversation is opened; older messages are counted, not shown.
const SHOWN_HISTORY: usize = 50;

/// Pauses between attempts to follow a stream again after the connection was lost.
const FIRST_RETRY: Duration = Duration::from_millis(500);
const LONGEST_RETRY: Duration = Duration::from_secs(8);

/// What a line asks of the session loop.
pub(crate) enum Flow {
    Continue,
    Quit,
}

/// How a wait for a turn ended.
enum Watched {
    /// A final status update arrived.
    Ended,
    /// Ctrl-C.
    Interrupted,
    /// The stream closed or broke before the turn ended.
    Lost(Option<ClientError>),
}

/// How a stream's first Task is taken.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Snapshot {
    /// The turn being waited for: a finished one ends the wait (a resent message, or a turn
    /// that ended while the connection was down).
    EndsWait,
    /// Only a view of the task: a parked conversation waits for its next turn.
    WaitForNext,
}

/// The conversation being talked in.
struct Current {
    id: String,
    role: String,
    state: TaskState,
    delegated: bool,
}

pub(crate) struct Session {
    client: Client,
    runtime: tokio::runtime::Runtime,
    speaker: String,
    context: Arc<Mutex<Context>>,
    current: Option<Current>,
    /// The role a conversation this participant starts gives them.
    role_when_starting: String,
    /// The ids of the last `:inbox`, for `:open N`.
    listed: Vec<String>,
}

impl Session {
    pub(crate) fn new(
        client: Client,
        runtime: tokio::runtime::Runtime,
        speaker: String,
        context: Arc<Mutex<Context>>,
    ) -> Self {
        Session {
            client,
            runtime,
            speaker,
            context,
            current: None,
            role_when_starting: "reporter".to_owned(),
            listed: Vec::new(),
        }
    }

    /// Learns the role a new conversation would give (the server decides: admin or reporter).
    pub(crate) fn start(&mut self) -> Result<(), ClientError> {
        let answer = self.runtime.block_on(self.client.complete(None, ""))?;
        self.role_when_starting = answer.role;
        self.set_context();
        Ok(())
    }

    pub(crate) fn prompt(&self) -> String {
        match &self.current {
            Some(current) => format!("{}@{}", self.speaker, render::short(&current.id)),
            None => self.speaker.clone(),
        }
    }

    /// Does what `line` says: a local command, or a message (or harness command) to send.
    pub(crate) fn handle(&mut self, line: &str) -> Flow {
        let line = line.trim();
        if line.is_empty() {
            return Flow::Continue;
        }
        match Local::parse(line) {
            Some(Ok(Local::Quit)) => return Flow::Quit,
            Some(Ok(command)) => self.local(command),
            Some(Err(problem)) => say(&format!("{problem}\n")),
            None => self.send(line),
        }
        Flow::Continue
    }

    fn local(&mut self, command: Local) {
        match command {
            Local::Help => say(&local::help()),
            Local::Inbox => self.inbox(usize::MAX),
            Local::Open(target) => {
                let id = self.resolve(&target);
                self.open(&id);
            }
            Local::New => {
                self.current = None;
                self.set_context();
                say("── the next message starts a new conversation ──\n");
            }
            Local::Complete => self.complete(),
            Local::Cancel => self.cancel(),
            Local::Follow => self.follow(),
            Local::Quit => {}
        }
    }

    /// An inbox number from the last `:inbox`, or an id as typed.
    fn resolve(&self, target: &str) -> String {
        target
            .parse::<usize>()
            .ok()
            .and_then(|n| n.checked_sub(1))
            .and_then(|index| self.listed.get(index))
            .cloned()
            .unwrap_or_else(|| target.to_owned())
    }

    fn set_context(&self) {
        if let Ok(mut context) = self.context.lock() {
            context.task_id = self.current.as_ref().map(|c| c.id.clone());
            context.role = Some(match &self.current {
                Some(current) => current.role.clone(),
                None => self.role_when_starting.clone(),
            });
        }
    }

    // --- The inbox -------------------------------------------------------------------------

    /// Lists the conversations, waiting-for-you first; at most `limit` of them.
    pub(crate) fn inbox(&mut self, limit: usize) {
        let listed: Result<ListTasksResponse, _> = self.runtime.block_on(
            self.client
                .rpc("ListTasks", json!({"pageSize": 100, "historyLength": 0})),
        );
        let tasks = match listed {
            Ok(page) => render::inbox_order(page.tasks),
            Err(error) => return report("the inbox could not be read", &error),
        };
        self.listed = tasks.iter().map(|task| task.id.clone()).collect();
        let shown = &tasks[..tasks.len().min(limit)];
        say(&render::inbox(shown));
        if shown.len() < tasks.len() {
            say(&format!(
                "     … {} more: :inbox\n",
                tasks.len() - shown.len()
            ));
        }
    }

    // --- Opening ---------------------------------------------------------------------------

    /// Shows conversation `id` (its history, sub-tasks and state), makes it the current
    /// one, and follows its turn if one is running.
    pub(crate) fn open(&mut self, id: &str) {
        let read = self.runtime.block_on(async {
            let task: Task = self.client.rpc("GetTask", json!({ "id": id })).await?;
            let completion = self.client.complete(Some(id), "").await?;
            Ok::<_, ClientError>((task, completion.role))
        });
        let (task, role) = match read {
            Ok(read) => read,
            Err(error) => return report(&format!("conversation {id} could not be opened"), &error),
        };
        let mut out = format!(
            "── conversation {} · context {} · you are {} ──\n",
            render::short(&task.id),
            render::short(&task.context_id),
            with_article(&role)
        );
        if let Some(parent) = render::parent_of(&task) {
            out.push_str(&format!(
                "   a sub-task of {}: it works on its goal on its own\n",
                render::short(parent)
            ));
        }
        let skipped = task.history.len().saturating_sub(SHOWN_HISTORY);
        if skipped > 0 {
            out.push_str(&format!("   ({skipped} earlier messages)\n"));
        }
        for message in task.history.iter().skip(skipped) {
            match message {
                Ok(message) => out.push_str(&render::message(&message)),
                Err(error) => out.push_str(&format!(
                    "   (a message this client cannot read: {error})\n"
                )),
            }
        }
        if let Some(subtasks) = render::subtasks(&task) {
            out.push_str(&subtasks);
        }
        out.push_str(&render::state_line(
            &task.id,
            task.status.state,
            render::sub_state(&task.metadata),
        ));
        if role == "watcher" {
            out.push_str("   you are a watcher here: you can read and :follow, but not write\n");
        }
        say(&out);
        let working = !task.status.state.ends_turn();
        self.current = Some(Current {
            id: task.id.clone(),
            delegated: render::parent_of(&task).is_some(),
            role,
            state: task.status.state,
        });
        self.set_context();
        if working {
            self.subscribe_and_watch(Snapshot::EndsWait);
        }
    }

    // --- Sending ---------------------------------------------------------------------------

    /// Sends `text` in the current conversation (or starts one) and shows the turn.
    fn send(&mut self, text: &str) {
        if let Some(current) = &self.current {
            if current.role == "watcher" {
                return say("you are a watcher here: you can read and :follow, but not write\n");
            }
            if current.delegated {
                return say(
                    "this is a delegated sub-task: it takes no messages (:cancel stops it)\n",
                );
            }
            if current.state.is_terminal() {
                return say("this conversation is finished; :new starts another\n");
            }
        }
        let mut message = json!({
            "messageId": uuid::Uuid::new_v4().to_string(),
            "role": "ROLE_USER",
            "parts": [{"text": text}],
        });
        if let Some(current) = &self.current {
            message["taskId"] = json!(current.id);
        }
        let Some(interrupt) = self.listen_for_ctrl_c() else {
            return;
        };
        let opened = self.runtime.block_on(
            self.client
                .stream("SendStreamingMessage", json!({ "message": message })),
        );
        match opened {
            Ok(events) => self.watch_resuming(events, Snapshot::EndsWait, interrupt),
            Err(error) => report("the message was not sent", &error),
        }
    }

    /// Sends the control envelope; a refusal is shown with its reason.
    fn complete(&mut self) {
        let Some(current) = &self.current else {
            return say("no conversation is open: :open one first\n");
        };
        let message = json!({
            "messageId": uuid::Uuid::new_v4().to_string(),
            "role": "ROLE_USER",
            "taskId": current.id,
            "parts": [{"data": {"kind": "control", "action": "complete"}}],
        });
        let sent: Result<SendMessageResponse, _> = self.runtime.block_on(
            self.client
                .rpc("SendMessage", json!({ "message": message })),
        );
        match sent {
            Ok(SendMessageResponse::Task(task)) => {
                if task.status.state != TaskState::Completed {
                    let reason = task
                        .status
                        .message
                        .as_ref()
                        .map(render::text_of)
                        .unwrap_or_default();
                    say(&format!("not completed: {reason}\n"));
                }
                self.show_state(&task);
            }
            Ok(SendMessageResponse::Message(message)) => say(&render::message(&message)),
            Err(error) => report("the conversation could not be completed", &error),
        }
    }

    fn cancel(&mut self) {
        let Some(current) = &self.current else {
            return say("no conversation is open: :open one first\n");
        };
        let canceled: Result<Task, _> = self
            .runtime
            .block_on(self.client.rpc("CancelTask", json!({ "id": current.id })));
        match canceled {
            Ok(task) => self.show_state(&task),
            Err(error) => report("the conversation could not be canceled", &error),
        }
    }

    fn show_state(&mut self, task: &Task) {
        say(&render::state_line(
            &task.id,
            task.status.state,
            render::sub_state(&task.metadata),
        ));
        if let Some(current) = &mut self.current {
            current.state = task.status.state;
        }
    }

    // --- Following turns ---------------------------------------------------------------------

    /// `:follow`: the running turn, or the next one of a parked conversation.
    fn follow(&mut self) {
        let Some(current) = &self.current else {
            return say("no conversation is open: :open one first\n");
        };
        // A turn last seen running (one Ctrl-C stopped waiting for) may have ended since:
        // then its end is what to show, not the next turn's.
        let snapshot = if current.state.ends_turn() {
            Snapshot::WaitForNext
        } else {
            Snapshot::EndsWait
        };
        say("   following; Ctrl-C stops\n");
        self.subscribe_and_watch(snapshot);
    }

    fn subscribe_and_watch(&mut self, snapshot: Snapshot) {
        let Some(current) = &self.current else { return };
        let id = current.id.clone();
        let Some(interrupt) = self.listen_for_ctrl_c() else {
            return;
        };
        let subscribed = self
            .runtime
            .block_on(self.client.stream("SubscribeToTask", json!({ "id": id })));
        match subscribed {
            Ok(events) => self.watch_resuming(events, snapshot, interrupt),
            Err(error) if error.reason() == Some("UNSUPPORTED_OPERATION") => {
                say(&format!("   {error}\n"));
            }
            Err(error) => report("the conversation could not be followed", &error),
        }
    }

    /// Shows `events` until the turn ends or Ctrl-C; a lost connection is followed again
    /// with SubscribeToTask, with a growing pause, until the turn's end is seen.
    fn watch_resuming(&mut self, mut events: Events, snapshot: Snapshot, mut interrupt: Interrupt) {
        let mut view = TurnView::default();
        let mut snapshot = snapshot;
        let mut pause = FIRST_RETRY;
        loop {
            match self.watch(&mut events, &mut view, snapshot, &mut interrupt) {
                Watched::Ended => return,
                Watched::Interrupted => {
                    return say(
                        "\n   (stopped waiting: the turn goes on on the server; :follow shows it)\n",
                    );
                }
                Watched::Lost(error) => {
                    let why =
                        error.map_or_else(|| "the stream closed".to_owned(), |e| e.to_string());
                    say(&format!(
                        "\n   connection lost ({why}); reconnecting… (Ctrl-C stops)\n"
                    ));
                }
            }
            let Some(id) = self.current.as_ref().map(|c| c.id.clone()) else {
                return;
            };
            // After a loss, the turn may have ended meanwhile: the snapshot says so.
            snapshot = Snapshot::EndsWait;
            loop {
                if self.pause_or_interrupt(pause, &mut interrupt) {
                    return say("   (stopped reconnecting; :follow tries again)\n");
                }
                pause = (pause * 2).min(LONGEST_RETRY);
                match self
                    .runtime
                    .block_on(self.client.stream("SubscribeToTask", json!({ "id": id })))
                {
                    Ok(resumed) => {
                        events = resumed;
                        say("   reconnected\n");
                        break;
                    }
                    Err(ClientError::Connection(_)) => continue,
                    Err(error) if error.reason() == Some("UNSUPPORTED_OPERATION") => {
                        // The task finished while we were away.
                        return self.refresh();
                    }
                    Err(error) => return report("the conversation could not be followed", &error),
                }
            }
        }
    }

    /// Shows events until the turn ends, Ctrl-C, or the stream is lost.
    fn watch(
        &mut self,
        events: &mut Events,
        view: &mut TurnView,
        snapshot: Snapshot,
        interrupt: &mut Interrupt,
    ) -> Watched {
        let mut first = true;
        loop {
            let next = self.runtime.block_on(async {
                tokio::select! {
                    event = events.next() => Some(event),
                    () = interrupt.pressed() => None,
                }
            });
            let event = match next {
                None => return Watched::Interrupted,
                Some(None) => return Watched::Lost(None),
                Some(Some(Err(error @ ClientError::Refused { .. }))) => {
                    report("the stream ended with an error", &error);
                    return Watched::Ended;
                }
                Some(Some(Err(error))) => return Watched::Lost(Some(error)),
                Some(Some(Ok(event))) => event,
            };
            let is_snapshot =
                std::mem::take(&mut first) && matches!(event, StreamResponse::Task(_));
            self.track(&event);
            if is_snapshot && snapshot == Snapshot::WaitForNext {
                continue;
            }
            say(&view.show(&event, Instant::now()));
            if view.ended() {
                return Watched::Ended;
            }
        }
    }

    /// Keeps the current conversation's id and state up to date from its events.
    fn track(&mut self, event: &StreamResponse) {
        let (id, state) = match event {
            StreamResponse::Task(task) => (&task.id, task.status.state),
            StreamResponse::StatusUpdate(update) => (&update.task_id, update.status.state),
            _ => return,
        };
        match &mut self.current {
            Some(current) if &current.id == id => current.state = state,
            Some(_) => {}
            None => {
                // The first message started a conversation: it is the current one now.
                say(&format!(
                    "── conversation {} started ──\n",
                    render::short(id)
                ));
                self.current = Some(Current {
                    id: id.clone(),
                    role: self.role_when_starting.clone(),
                    state,
                    delegated: false,
                });
                self.set_context();
            }
        }
    }

    /// Reads the current conversation again and shows its state.
    fn refresh(&mut self) {
        let Some(id) = self.current.as_ref().map(|c| c.id.clone()) else {
            return;
        };
        let read: Result<Task, _> = self.runtime.block_on(
            self.client
                .rpc("GetTask", json!({ "id": id, "historyLength": 1 })),
        );
        match read {
            Ok(task) => {
                if let Some(message) = &task.status.message {
                    say(&render::message(message));
                }
                self.show_state(&task);
            }
            Err(error) => report("the conversation could not be read", &error),
        }
    }

    /// Sleeps `pause`; true when Ctrl-C came first.
    fn pause_or_interrupt(&self, pause: Duration, interrupt: &mut Interrupt) -> bool {
        self.runtime.block_on(async {
            tokio::select! {
                () = tokio::time::sleep(pause) => false,
                () = interrupt.pressed() => true,
            }
        })
    }

    /// Listens for Ctrl-C over the wait about to start (its request included, so a Ctrl-C
    /// pressed while connecting ends the wait as soon as the stream opens).
    fn listen_for_ctrl_c(&self) -> Option<Interrupt> {
        let _guard = self.runtime.enter();
        match Interrupt::listen() {
            Ok(interrupt) => Some(interrupt),
            Err(error) => {
                say(&format!(
                    "error: Ctrl-C cannot be listened for, so no wait starts: {error}
"
                ));
                None
            }
        }
    }
}

/// Prints `text` now (a reply piece has no newline yet).
pub(crate) fn say(text: &str) {
    let mut stdout = std::io::stdout().lock();
    let _ = stdout.write_all(text.as_bytes());
    let _ = stdout.flush();
}

/// Prints an error: what failed and why, never swallowed.
pub(crate) fn report(what: &str, error: &ClientError) {
    say(&format!("error: {what}: {error}\n"));
}

fn with_article(role: &str) -> String {
    match role {
        "reporter" => "the reporter".to_owned(),
        "assignee" | "admin" => format!("an {role}"),
        other => format!("a {other}"),
    }
}
