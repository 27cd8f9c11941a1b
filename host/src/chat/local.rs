//! The client's own commands. They start with `:`, so they can never collide with a
//! harness command (those start with `/` and run on the server: `/status`, `/model`, ...).

/// One local command, as typed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Local {
    /// `:help`
    Help,
    /// `:inbox`: the conversations, waiting-for-you first, numbered.
    Inbox,
    /// `:open ID` or `:open N` (a number from the last `:inbox`).
    Open(String),
    /// `:new`: the next message starts a new conversation.
    New,
    /// `:complete`: send the control envelope.
    Complete,
    /// `:cancel`: CancelTask.
    Cancel,
    /// `:follow`: wait for the conversation's next turn (or the running one) and show it.
    Follow,
    /// `:quit` (or Ctrl-D).
    Quit,
}

/// The names, for completion and help: (name, arguments, what it does).
pub(crate) const LOCAL_COMMANDS: [(&str, &str, &str); 8] = [
    (
        ":inbox",
        "",
        "list your conversations, those waiting for you first",
    ),
    (
        ":open",
        " ID|N",
        "open a conversation by id (or its number in :inbox)",
    ),
    (":new", "", "start a new conversation with the next message"),
    (
        ":complete",
        "",
        "complete this conversation (refused while sub-tasks are open)",
    ),
    (
        ":cancel",
        "",
        "cancel this conversation and its open sub-tasks",
    ),
    (
        ":follow",
        "",
        "show the conversation's next turn as it happens",
    ),
    (":help", "", "show this help"),
    (
        ":quit",
        "",
        "leave (Ctrl-D too); conversations stay open on the server",
    ),
];

/// Why a `:` line is not a local command.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum LocalError {
    #[error("unknown command {0}: :help lists them (harness commands start with /)")]
    Unknown(String),
    #[error("usage: :open ID|N")]
    OpenNeedsTarget,
    #[error("{0} takes no arguments")]
    NoArguments(String),
}

impl Local {
    /// Parses a line starting with `:`; `None` for any other line.
    pub(crate) fn parse(line: &str) -> Option<Result<Local, LocalError>> {
        let rest = line.trim().strip_prefix(':')?;
        let (name, argument) = match rest.split_once(char::is_whitespace) {
            Some((name, argument)) => (name, argument.trim()),
            None => (rest, ""),
        };
        let bare = |command: Local| {
            if argument.is_empty() {
                Ok(command)
            } else {
                Err(LocalError::NoArguments(format!(":{name}")))
            }
        };
        Some(match name {
            "help" | "h" | "?" => bare(Local::Help),
            "inbox" | "i" => bare(Local::Inbox),
            "open" | "o" if argument.is_empty() => Err(LocalError::OpenNeedsTarget),
            "open" | "o" => Ok(Local::Open(argument.to_owned())),
            "new" | "n" => bare(Local::New),
            "complete" => bare(Local::Complete),
            "cancel" => bare(Local::Cancel),
            "follow" | "f" => bare(Local::Follow),
            "quit" | "q" | "exit" => bare(Local::Quit),
            other => Err(LocalError::Unknown(format!(":{other}"))),
        })
    }
}

/// The help text.
pub(crate) fn help() -> String {
    let mut out = String::from(
        "Type a message and press Enter. /command runs a harness command (Tab completes \
         names and arguments).\nThe client's own commands start with ':' so they never \
         collide with harness commands:\n",
    );
    for (name, arguments, what) in LOCAL_COMMANDS {
        out.push_str(&format!("  {:<16} {what}\n", format!("{name}{arguments}")));
    }
    out.push_str("Ctrl-C stops waiting for a turn (the turn goes on: :follow); Ctrl-D leaves.\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn local_commands_parse() {
        assert_eq!(Local::parse(":complete"), Some(Ok(Local::Complete)));
        assert_eq!(
            Local::parse("  :open 3 "),
            Some(Ok(Local::Open("3".into())))
        );
        assert_eq!(
            Local::parse(":open"),
            Some(Err(LocalError::OpenNeedsTarget))
        );
        assert_eq!(
            Local::parse(":cancel now"),
            Some(Err(LocalError::NoArguments(":cancel".into())))
        );
        assert_eq!(
            Local::parse(":status"),
            Some(Err(LocalError::Unknown(":status".into())))
        );
        assert_eq!(Local::parse("/status"), None);
        assert_eq!(Local::parse("hello :complete"), None);
    }
}
