//! The line editor: reedline with history (kept in a file), Emacs keys, and Tab completion
//! of harness commands (names with usage and description from the agent card's commands
//! extension, then argument values: an enum's declared values and what the command's plugin
//! suggests over the completion route) and of the client's own `:` commands. Without a
//! terminal (input from a pipe) lines are read plainly.

use std::borrow::Cow;
use std::io::{BufRead, IsTerminal};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use reedline::{
    Completer, CompletionResult, DescriptionMode, Emacs, FileBackedHistory, IdeMenu, KeyCode,
    KeyModifiers, MenuBuilder, Prompt, PromptEditMode, PromptHistorySearch, Reedline,
    ReedlineEvent, ReedlineMenu, Signal, Span, Suggestion, default_emacs_keybindings,
};
use serde_json::Value;

use super::client::Client;
use super::local::LOCAL_COMMANDS;
use crate::a2a::types::AgentCard;
use crate::server::COMMANDS_EXTENSION_URI;

/// Lines of history kept.
const HISTORY_LINES: usize = 1000;

/// How long Tab waits for a plugin's suggestions before giving up.
const COMPLETION_TIMEOUT: Duration = Duration::from_secs(2);

/// One command of the card's commands extension.
#[derive(Clone, Debug)]
pub(crate) struct CardCommand {
    pub(crate) name: String,
    pub(crate) description: String,
    pub(crate) usage: String,
    /// Each argument's declared values when it is an enum, else empty.
    pub(crate) enum_values: Vec<Vec<String>>,
    pub(crate) roles: Vec<String>,
}

impl CardCommand {
    /// The commands the card lists.
    pub(crate) fn from_card(card: &AgentCard) -> Vec<CardCommand> {
        let Some(extension) = card
            .capabilities
            .extensions
            .iter()
            .find(|extension| extension.uri == COMMANDS_EXTENSION_URI)
        else {
            return Vec::new();
        };
        let strings = |value: &Value| -> Vec<String> {
            value
                .as_array()
                .map(|items| {
                    items
                        .iter()
                        .filter_map(Value::as_str)
                        .map(str::to_owned)
                        .collect()
                })
                .unwrap_or_default()
        };
        let commands = extension.params.get("commands").and_then(Value::as_array);
        commands
            .into_iter()
            .flatten()
            .map(|command| CardCommand {
                name: command["name"].as_str().unwrap_or_default().to_owned(),
                description: command["description"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned(),
                usage: command["usage"].as_str().unwrap_or_default().to_owned(),
                enum_values: command["arguments"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .map(|argument| strings(&argument["values"]))
                    .collect(),
                roles: strings(&command["roles"]),
            })
            .collect()
    }

    /// Whether `role` may run it, by the rule the harness enforces.
    pub(crate) fn allows(&self, role: Option<&str>) -> bool {
        match role {
            None | Some("watcher") => false,
            Some("admin") => true,
            Some(role) => self.roles.iter().any(|allowed| allowed == role),
        }
    }
}

/// What completion needs to know about the conversation, kept current by the session.
#[derive(Clone, Debug, Default)]
pub(crate) struct Context {
    pub(crate) task_id: Option<String>,
    pub(crate) role: Option<String>,
}

/// Completes harness commands and the client's own.
struct CommandCompleter {
    commands: Vec<CardCommand>,
    context: Arc<Mutex<Context>>,
    client: Client,
    runtime: tokio::runtime::Handle,
}

impl Completer for CommandCompleter {
    fn complete(&mut self, line: &str, pos: usize) -> CompletionResult {
        let text = line.get(..pos).unwrap_or(line);
        CompletionResult::fresh(self.suggest(text, pos))
    }
}

impl CommandCompleter {
    fn suggest(&self, text: &str, pos: usize) -> Vec<Suggestion> {
        let whole = Span::new(0, pos);
        if text.starts_with(':') && !text.contains(char::is_whitespace) {
            return LOCAL_COMMANDS
                .iter()
                .filter(|(name, _, _)| name.starts_with(text))
                .map(|(name, arguments, what)| suggestion(name, what, whole, !arguments.is_empty()))
                .collect();
        }
        let Some(rest) = text.strip_prefix('/') else {
            return Vec::new();
        };
        let context = self.context.lock().map(|c| c.clone()).unwrap_or_default();
        let role = context.role.as_deref();
        let Some(end) = rest.find(char::is_whitespace) else {
            return self
                .commands
                .iter()
                .filter(|command| command.name.starts_with(rest) && command.allows(role))
                .map(|command| {
                    let description = format!("{} — {}", command.usage, command.description);
                    let takes_arguments = !command.enum_values.is_empty();
                    suggestion(
                        &format!("/{}", command.name),
                        &description,
                        whole,
                        takes_arguments,
                    )
                })
                .collect();
        };
        let name = &rest[..end];
        let Some(command) = self
            .commands
            .iter()
            .find(|c| c.name == name && c.allows(role))
        else {
            return Vec::new();
        };
        let start = text.rfind(char::is_whitespace).map_or(0, |at| at + 1);
        let partial = &text[start..];
        let typed = Span::new(start, pos);
        let position = text[end + 1..start].split_whitespace().count();
        let mut values: Vec<Suggestion> = command
            .enum_values
            .get(position)
            .into_iter()
            .flatten()
            .filter(|value| value.starts_with(partial))
            .map(|value| suggestion(value, "", typed, true))
            .collect();
        let asked = self.runtime.block_on(async {
            let asking = self.client.complete(context.task_id.as_deref(), text);
            tokio::time::timeout(COMPLETION_TIMEOUT, asking).await
        });
        match asked {
            Ok(Ok(answer)) => {
                for found in answer.suggestions {
                    if !values.iter().any(|known| known.value == found.value) {
                        let description = found.description.unwrap_or_default();
                        values.push(suggestion(&found.value, &description, typed, true));
                    }
                }
            }
            // Shown, not swallowed: picking it leaves the line as it is.
            Ok(Err(error)) => values.push(suggestion(
                partial,
                &format!("completion failed: {error}"),
                typed,
                false,
            )),
            Err(_) => values.push(suggestion(partial, "completion timed out", typed, false)),
        }
        values
    }
}

fn suggestion(value: &str, description: &str, span: Span, append_whitespace: bool) -> Suggestion {
    Suggestion {
        value: value.to_owned(),
        description: (!description.is_empty()).then(|| description.to_owned()),
        span,
        append_whitespace,
        ..Suggestion::default()
    }
}

/// The prompt: who is speaking, and in which conversation.
pub(crate) struct ChatPrompt(pub(crate) String);

impl Prompt for ChatPrompt {
    fn render_prompt_left(&self) -> Cow<'_, str> {
        Cow::Borrowed(&self.0)
    }

    fn render_prompt_right(&self) -> Cow<'_, str> {
        Cow::Borrowed("")
    }

    fn render_prompt_indicator(&self, _mode: PromptEditMode) -> Cow<'_, str> {
        Cow::Borrowed(" › ")
    }

    fn render_prompt_multiline_indicator(&self) -> Cow<'_, str> {
        Cow::Borrowed("… ")
    }

    fn render_prompt_history_search_indicator(&self, search: PromptHistorySearch) -> Cow<'_, str> {
        Cow::Owned(format!("(search: {}) ", search.term))
    }
}

/// What a read gave.
pub(crate) enum Read {
    Line(String),
    /// Ctrl-C at the prompt: the line is dropped.
    Cleared,
    /// Ctrl-D, or the end of piped input.
    End,
}

/// Where lines come from.
pub(crate) enum LineSource {
    Editor(Box<Reedline>),
    Plain(std::io::Lines<std::io::StdinLock<'static>>),
}

impl LineSource {
    pub(crate) fn new(
        commands: Vec<CardCommand>,
        context: Arc<Mutex<Context>>,
        client: Client,
        runtime: tokio::runtime::Handle,
    ) -> Self {
        if !std::io::stdin().is_terminal() {
            return LineSource::Plain(std::io::stdin().lock().lines());
        }
        let completer = CommandCompleter {
            commands,
            context,
            client,
            runtime,
        };
        let menu = IdeMenu::default()
            .with_name("completion_menu")
            .with_description_mode(DescriptionMode::PreferRight)
            .with_max_completion_width(40);
        let mut keys = default_emacs_keybindings();
        // Output is only ever appended: nothing clears the screen.
        keys.remove_binding(KeyModifiers::CONTROL, KeyCode::Char('l'));
        keys.add_binding(
            KeyModifiers::NONE,
            KeyCode::Tab,
            ReedlineEvent::UntilFound(vec![
                ReedlineEvent::Menu("completion_menu".to_owned()),
                ReedlineEvent::MenuNext,
            ]),
        );
        let editor = Reedline::create()
            .with_history(history())
            .with_completer(Box::new(completer))
            .with_menu(ReedlineMenu::EngineCompleter(Box::new(menu)))
            .with_quick_completions(true)
            .with_partial_completions(true)
            .with_edit_mode(Box::new(Emacs::new(keys)));
        LineSource::Editor(Box::new(editor))
    }

    pub(crate) fn read(&mut self, prompt: &ChatPrompt) -> std::io::Result<Read> {
        match self {
            LineSource::Editor(editor) => Ok(match editor.read_line(prompt)? {
                Signal::Success(line) => Read::Line(line),
                Signal::CtrlC => Read::Cleared,
                _ => Read::End,
            }),
            LineSource::Plain(lines) => match lines.next() {
                Some(line) => line.map(Read::Line),
                None => Ok(Read::End),
            },
        }
    }
}

/// The history file (`$XDG_STATE_HOME/tiny-harness/chat-history`, else under
/// `~/.local/state`), or history in memory when there is no such place.
fn history() -> Box<FileBackedHistory> {
    let file = history_file().and_then(|file| {
        std::fs::create_dir_all(file.parent()?).ok()?;
        FileBackedHistory::with_file(HISTORY_LINES, file).ok()
    });
    Box::new(file.unwrap_or_else(|| FileBackedHistory::new(HISTORY_LINES).unwrap_or_default()))
}

fn history_file() -> Option<PathBuf> {
    let state = std::env::var_os("XDG_STATE_HOME")
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".local/state"))
        })?;
    Some(state.join("tiny-harness").join("chat-history"))
}
