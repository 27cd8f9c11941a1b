//! `tiny-harness chat`: a terminal client for people. It speaks A2A over HTTP to a running
//! harness, like any other client, and only ever appends to the terminal (no full-screen
//! interface), so the terminal's own scrollback, search and copy keep working.
//!
//! * `client`: JSON-RPC, SSE streams, the card and the completion route.
//! * `session`: the conversation being talked in, and what each line does.
//! * `interrupt`: Ctrl-C over a whole wait for a turn.
//! * `turn`: what the events of a turn print; a turn ends on any final status update,
//!   INPUT_REQUIRED included (decision 007), never waiting for COMPLETED.
//! * `render`: messages, states in plain words, traces, the inbox.
//! * `editor`: the line editor (history, Tab completion of commands and arguments).
//! * `local`: the client's own `:` commands (`:complete`, `:cancel`, `:inbox`, ...).

mod client;
mod editor;
mod interrupt;
mod local;
mod render;
mod session;
mod turn;

use std::process::ExitCode;
use std::sync::{Arc, Mutex};

use client::{Client, Speaker};
use editor::{CardCommand, ChatPrompt, Context, LineSource, Read};
use session::{Flow, Session, say};

/// The inbox lines shown when no conversation is named.
const SHOWN_INBOX: usize = 10;

/// What `tiny-harness chat` was asked for.
#[derive(Clone, Debug)]
pub struct ChatOptions {
    /// The harness, e.g. `http://127.0.0.1:8080`.
    pub url: String,
    /// Who to speak as on a loopback server without tokens (`X-Participant-Id`).
    pub participant: Option<String>,
    /// A bearer token, for servers with `[auth] tokens`.
    pub token: Option<String>,
    /// A conversation to resume.
    pub task_id: Option<String>,
}

/// Runs the client until `:quit`, Ctrl-D or the end of its input.
pub fn run(options: ChatOptions) -> anyhow::Result<ExitCode> {
    let runtime = tokio::runtime::Runtime::new()?;
    // From here on Ctrl-C is the session's to handle (it cuts a wait), not a kill.
    install_interrupt_handler(&runtime)?;
    let speaker = match &options.token {
        Some(token) => Speaker::Token(token.clone()),
        None => Speaker::Named(options.participant.clone()),
    };
    let client = Client::new(&options.url, &speaker)?;
    let card = runtime
        .block_on(client.agent_card())
        .map_err(|error| anyhow::anyhow!("cannot talk to {}: {error}", client.base()))?;
    let name = match (&options.token, &options.participant) {
        (Some(_), _) => "you".to_owned(),
        (None, Some(name)) => name.clone(),
        (None, None) => crate::server::DEFAULT_PARTICIPANT.to_owned(),
    };
    let context = Arc::new(Mutex::new(Context::default()));
    let mut lines = LineSource::new(
        CardCommand::from_card(&card),
        Arc::clone(&context),
        client.clone(),
        runtime.handle().clone(),
    );
    let mut session = Session::new(client.clone(), runtime, name.clone(), context);
    session
        .start()
        .map_err(|error| anyhow::anyhow!("cannot talk to {} as {name}: {error}", client.base()))?;
    say(&format!(
        "tiny-harness chat · {} · as {name} · :help lists the client's commands, Tab completes /commands\n",
        client.base()
    ));
    match &options.task_id {
        Some(id) => session.open(id),
        None => {
            session.inbox(SHOWN_INBOX);
            say("Type a message to start a new conversation, or :open N.\n");
        }
    }
    loop {
        match lines.read(&ChatPrompt(session.prompt()))? {
            Read::Line(line) => {
                if let Flow::Quit = session.handle(&line) {
                    break;
                }
            }
            Read::Cleared => {}
            Read::End => break,
        }
    }
    say("bye: your conversations stay open on the server\n");
    Ok(ExitCode::SUCCESS)
}

/// Ctrl-C must never kill the client while it waits for a turn (that would look like the
/// turn was stopped), so SIGINT is taken over for the whole session; the waits listen for
/// it. At the prompt the terminal is in raw mode and Ctrl-C is a key, not a signal.
fn install_interrupt_handler(runtime: &tokio::runtime::Runtime) -> std::io::Result<()> {
    let _guard = runtime.enter();
    // Registering is what counts: the handler stays for the process's life.
    interrupt::Interrupt::listen().map(drop)
}
