//! How conversations read in a terminal: plain lines, appended, never redrawn. States and
//! sub-states in plain words (the same words as the web page), messages with their author,
//! the turn trace in one line, and the inbox in its order.

use std::fmt::Write as _;

use serde_json::Value;

use crate::a2a::types::{Message, Metadata, Part, PartContent, Role, Task, TaskState};

/// How far continuation lines of a message are indented, under its text.
pub(crate) const INDENT: &str = "        ";

/// Data parts up to this many characters print on one line.
const JSON_ON_ONE_LINE: usize = 100;

/// The last 8 characters of an id: enough to tell tasks apart on a screen.
/// The last, as the harness's ids are UUIDv7 and begin with their creation
/// time, the same for every task of a minute.
pub(crate) fn short(id: &str) -> &str {
    id.char_indices()
        .rev()
        .nth(7)
        .map_or(id, |(at, _)| &id[at..])
}

/// The status extension's sub-state in `metadata`.
pub(crate) fn sub_state(metadata: &Metadata) -> Option<&str> {
    metadata.get("sub_state").and_then(Value::as_str)
}

/// "the agent asked you a question", "completed", ...
pub(crate) fn describe(state: TaskState, sub_state: Option<&str>) -> &'static str {
    match (state, sub_state) {
        (TaskState::InputRequired, Some("awaiting-answer")) => "the agent asked you a question",
        (TaskState::InputRequired, Some("awaiting-approval")) => "a tool call needs your approval",
        (TaskState::InputRequired, Some("awaiting-next-message")) => {
            "waiting for your next message"
        }
        (TaskState::InputRequired, _) => "waiting for you",
        (TaskState::Submitted, _) => "submitted, about to start",
        (TaskState::Working, _) => "the agent is working",
        (TaskState::AuthRequired, _) => "waiting for an authorization",
        (TaskState::Completed, _) => "completed",
        (TaskState::Canceled, _) => "canceled",
        (TaskState::Failed, _) => "failed",
        (TaskState::Rejected, _) => "rejected",
        (TaskState::Unspecified, _) => "in an unknown state",
    }
}

pub(crate) fn describe_task(task: &Task) -> &'static str {
    describe(task.status.state, sub_state(&task.metadata))
}

/// The task that delegated `task`, if it is a sub-task.
pub(crate) fn parent_of(task: &Task) -> Option<&str> {
    task.metadata.get("parent_task_id").and_then(Value::as_str)
}

/// How urgently a task wants its participants: a question, then an approval, then a reply
/// awaiting the next message, then running work, then finished conversations.
pub(crate) fn urgency(task: &Task) -> u8 {
    match (task.status.state, sub_state(&task.metadata)) {
        (TaskState::InputRequired, Some("awaiting-answer")) => 0,
        (TaskState::InputRequired, Some("awaiting-approval")) | (TaskState::AuthRequired, _) => 1,
        (TaskState::InputRequired, _) => 2,
        (state, _) if state.is_terminal() => 4,
        _ => 3,
    }
}

/// `tasks` (most recent first, as ListTasks sends them) in inbox order, sub-tasks left to
/// their parents.
pub(crate) fn inbox_order(mut tasks: Vec<Task>) -> Vec<Task> {
    tasks.retain(|task| parent_of(task).is_none());
    // Stable: recency stays the order within a group.
    tasks.sort_by_key(urgency);
    tasks
}

/// The inbox, numbered from 1 for `:open N`.
pub(crate) fn inbox(tasks: &[Task]) -> String {
    if tasks.is_empty() {
        return "No conversations yet: type a message to start one.\n".to_owned();
    }
    let mut out = String::new();
    for (index, task) in tasks.iter().enumerate() {
        let preview = task
            .status
            .message
            .as_ref()
            .map(|message| first_line(&text_of(message)))
            .unwrap_or_default();
        let _ = writeln!(
            out,
            "{:>3}. {}  {:<31} {}",
            index + 1,
            short(&task.id),
            describe_task(task),
            clip(&preview, 60)
        );
    }
    out
}

/// A message with its author, continuation lines indented under its text.
pub(crate) fn message(message: &Message) -> String {
    let author = match message.role {
        Role::Agent => "agent › ",
        _ => "you   › ",
    };
    let body = parts(&message.parts);
    let mut out = String::new();
    for (index, line) in body.lines().enumerate() {
        out.push_str(if index == 0 { author } else { INDENT });
        out.push_str(line);
        out.push('\n');
    }
    if out.is_empty() {
        let _ = writeln!(out, "{author}(nothing)");
    }
    out
}

/// Parts as text: text as written, data as JSON, files by name and link.
pub(crate) fn parts(parts: &[Part]) -> String {
    let rendered: Vec<String> = parts.iter().map(part).collect();
    rendered.join("\n")
}

fn part(part: &Part) -> String {
    let name = part.filename.as_deref().unwrap_or("file");
    match &part.content {
        PartContent::Text(text) => text.clone(),
        PartContent::Data(data) => envelope(data).unwrap_or_else(|| json(data)),
        PartContent::Url(url) => format!("[file {name}] {url}"),
        PartContent::Raw(bytes) => format!("[file {name}, {} bytes]", bytes.len()),
    }
}

/// Data as JSON: on one line when it fits, indented when it does not.
fn json(data: &Value) -> String {
    let line = data.to_string();
    if line.chars().count() <= JSON_ON_ONE_LINE {
        return line;
    }
    serde_json::to_string_pretty(data).unwrap_or(line)
}

/// A participant's control or task envelope in words.
fn envelope(data: &Value) -> Option<String> {
    if data["kind"] == "control" && data["action"] == "complete" {
        return Some("(asked to complete the conversation)".to_owned());
    }
    let participants = data["payload"]["participants"].as_array()?;
    let who: Vec<String> = participants
        .iter()
        .map(|p| {
            format!(
                "{} ({})",
                p["id"].as_str().unwrap_or("?"),
                p["role"].as_str().unwrap_or("?")
            )
        })
        .collect();
    Some(format!("(changed the participants: {})", who.join(", ")))
}

/// The line that closes a turn: the state in words and whose conversation it is.
pub(crate) fn state_line(task_id: &str, state: TaskState, sub_state: Option<&str>) -> String {
    format!(
        "── {} · {} ──\n",
        describe(state, sub_state),
        short(task_id)
    )
}

/// The turn trace of an agent message in one line, if it carries one (CONVENTIONS.md).
pub(crate) fn trace(message: &Message) -> Option<String> {
    let trace = message.metadata.get("trace")?;
    let steps = trace["steps"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default();
    let listed: Vec<String> = steps
        .iter()
        .map(|step| {
            format!(
                "{} {} {} {}",
                step["point"].as_str().unwrap_or("?"),
                step["executor"].as_str().unwrap_or("?"),
                step["outcome"].as_str().unwrap_or("?"),
                duration(step["duration_us"].as_u64().unwrap_or(0))
            )
        })
        .collect();
    let mut shown = Vec::new();
    if !listed.is_empty() {
        shown.push(listed.join("; "));
    }
    if let Some(model) = trace["model_us"].as_u64() {
        shown.push(format!("model {}", duration(model)));
    }
    if let Some(usage) = trace.get("usage") {
        shown.push(tokens(usage));
    }
    (!shown.is_empty()).then(|| format!("   trace: {}\n", shown.join(" · ")))
}

/// "120 in, 48 out tokens"
pub(crate) fn tokens(usage: &Value) -> String {
    format!(
        "{} in, {} out tokens",
        usage["input_tokens"].as_u64().unwrap_or(0),
        usage["output_tokens"].as_u64().unwrap_or(0)
    )
}

fn duration(microseconds: u64) -> String {
    if microseconds < 1000 {
        format!("{microseconds} µs")
    } else {
        format!("{:.1} ms", microseconds as f64 / 1000.0)
    }
}

/// The sub-tasks of a parent, one per line, if it has any.
pub(crate) fn subtasks(task: &Task) -> Option<String> {
    let subtasks = task.metadata.get("subtasks")?.as_array()?;
    let mut out = String::new();
    for subtask in subtasks {
        let id = subtask["id"].as_str().unwrap_or("?");
        let state = subtask["state"]
            .as_str()
            .and_then(|state| state.parse::<TaskState>().ok())
            .unwrap_or_default();
        let _ = writeln!(
            out,
            "   sub-task {} {}: {}",
            short(id),
            subtask["goal"].as_str().unwrap_or(""),
            describe(state, None)
        );
    }
    (!out.is_empty()).then_some(out)
}

/// The text parts of a message, joined.
pub(crate) fn text_of(message: &Message) -> String {
    let texts: Vec<&str> = message.parts.iter().filter_map(Part::as_text).collect();
    texts.join("\n")
}

fn first_line(text: &str) -> String {
    text.lines().next().unwrap_or("").to_owned()
}

fn clip(text: &str, chars: usize) -> String {
    if text.chars().count() <= chars {
        return text.to_owned();
    }
    let kept: String = text.chars().take(chars - 1).collect();
    format!("{kept}…")
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn task(id: &str, state: &str, metadata: Value) -> Task {
        serde_json::from_value(json!({
            "id": id, "contextId": "c", "status": {"state": state}, "metadata": metadata,
        }))
        .expect("a task")
    }

    #[test]
    fn the_inbox_puts_what_waits_for_you_first() {
        let tasks = vec![
            task("done", "TASK_STATE_COMPLETED", json!({})),
            task(
                "replied",
                "TASK_STATE_INPUT_REQUIRED",
                json!({"sub_state": "awaiting-next-message"}),
            ),
            task(
                "child",
                "TASK_STATE_WORKING",
                json!({"parent_task_id": "replied"}),
            ),
            task("working", "TASK_STATE_WORKING", json!({})),
            task(
                "asked",
                "TASK_STATE_INPUT_REQUIRED",
                json!({"sub_state": "awaiting-answer"}),
            ),
            task(
                "replied2",
                "TASK_STATE_INPUT_REQUIRED",
                json!({"sub_state": "awaiting-next-message"}),
            ),
        ];
        let order: Vec<String> = inbox_order(tasks).into_iter().map(|t| t.id).collect();
        assert_eq!(order, ["asked", "replied", "replied2", "working", "done"]);
    }

    #[test]
    fn messages_indent_their_continuation_lines() {
        let agent: Message = serde_json::from_value(json!({
            "messageId": "m", "role": "ROLE_AGENT",
            "parts": [{"text": "one\ntwo"}, {"data": {"k": 1}}],
        }))
        .expect("a message");
        assert_eq!(
            message(&agent),
            "agent › one\n        two\n        {\"k\":1}\n"
        );
        let control: Message = serde_json::from_value(json!({
            "messageId": "n", "role": "ROLE_USER",
            "parts": [{"data": {"kind": "control", "action": "complete"}}],
        }))
        .expect("a message");
        assert_eq!(
            message(&control),
            "you   › (asked to complete the conversation)\n"
        );
    }

    #[test]
    fn a_trace_without_steps_shows_its_tokens() {
        let agent: Message = serde_json::from_value(json!({
            "messageId": "m", "role": "ROLE_AGENT", "parts": [{"text": "hi"}],
            "metadata": {"trace": {"steps": [], "usage": {"input_tokens": 9, "output_tokens": 15}}},
        }))
        .expect("a message");
        assert_eq!(
            trace(&agent).expect("a trace"),
            "   trace: 9 in, 15 out tokens\n"
        );
    }

    #[test]
    fn a_trace_is_one_line() {
        let agent: Message = serde_json::from_value(json!({
            "messageId": "m", "role": "ROLE_AGENT", "parts": [{"text": "hi"}],
            "metadata": {"trace": {
                "steps": [
                    {"point": "command.invoked.pre", "executor": "builtin/role-policy", "kind": "wasm", "duration_us": 87, "outcome": "pass"},
                    {"point": "command.invoked.in", "executor": "builtin/status-body", "kind": "wasm", "duration_us": 1400, "outcome": "replace"}
                ],
                "model_us": 4200,
                "usage": {"input_tokens": 120, "output_tokens": 48}
            }},
        }))
        .expect("a message");
        assert_eq!(
            trace(&agent).expect("a trace"),
            "   trace: command.invoked.pre builtin/role-policy pass 87 µs; \
             command.invoked.in builtin/status-body replace 1.4 ms · model 4.2 ms · 120 in, 48 out \
             tokens\n"
        );
    }
}
