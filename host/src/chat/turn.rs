//! What a stream of one turn prints, event by event: progress (at most one line a second,
//! so a long turn does not flood the scrollback), the reply as its pieces arrive, tool
//! calls and their results, artifacts, and, on any final status update (INPUT_REQUIRED
//! included), the whole reply, its trace, and the state the conversation is left in.

use std::time::{Duration, Instant};

use serde_json::Value;

use super::render;
use crate::a2a::types::{StreamResponse, TaskStatusUpdateEvent};

/// The least time between two progress lines.
const PROGRESS_EVERY: Duration = Duration::from_secs(1);

/// Follows one turn's events and says what to print for each.
#[derive(Default)]
pub(crate) struct TurnView {
    /// Whether reply pieces (`text-delta`) were printed; the final message then is not.
    streamed: bool,
    /// Whether the last thing printed was a reply piece, with no newline after it yet.
    mid_line: bool,
    last_progress: Option<Instant>,
    ended: bool,
}

impl TurnView {
    /// Whether the turn has ended (the last event was a final status update).
    pub(crate) fn ended(&self) -> bool {
        self.ended
    }

    /// The text to print for `event`, received at `now`.
    pub(crate) fn show(&mut self, event: &StreamResponse, now: Instant) -> String {
        match event {
            StreamResponse::Task(task) if task.status.state.ends_turn() => {
                // A stream that starts with a finished turn (a resent message) ends at once.
                self.ended = true;
                let mut out = task
                    .status
                    .message
                    .as_ref()
                    .map(render::message)
                    .unwrap_or_default();
                out.push_str(&render::state_line(
                    &task.id,
                    task.status.state,
                    render::sub_state(&task.metadata),
                ));
                out
            }
            StreamResponse::Task(_) => String::new(),
            StreamResponse::StatusUpdate(update) if update.status.state.ends_turn() => {
                self.ended = true;
                self.turn_end(update)
            }
            StreamResponse::StatusUpdate(update) => self.progress(update, now),
            StreamResponse::ArtifactUpdate(update) => {
                let artifact = &update.artifact;
                let name = artifact.name.as_deref().unwrap_or(&artifact.artifact_id);
                let body = render::parts(&artifact.parts);
                let indented = body.replace('\n', "\n           ");
                format!("{}[artifact {name}] {indented}\n", self.break_line())
            }
            StreamResponse::Message(message) => render::message(message),
        }
    }

    /// A WORKING update: a piece of the reply, a tool call or result, or progress.
    fn progress(&mut self, update: &TaskStatusUpdateEvent, now: Instant) -> String {
        let Some(message) = &update.status.message else {
            return String::new();
        };
        let Some(part) = message.parts.first() else {
            return String::new();
        };
        match update.metadata.get("stream").and_then(Value::as_str) {
            Some("text-delta") => {
                // Continuation lines sit under the text, as in a whole message.
                let piece = part
                    .as_text()
                    .unwrap_or_default()
                    .replace('\n', &format!("\n{}", render::INDENT));
                let lead = if self.mid_line { "" } else { "agent › " };
                self.streamed = true;
                self.mid_line = true;
                format!("{lead}{piece}")
            }
            Some("tool-call") => {
                let data = part.as_data().cloned().unwrap_or_default();
                format!(
                    "{}   calls {}({})\n",
                    self.break_line(),
                    data["name"].as_str().unwrap_or("?"),
                    data["arguments"]
                )
            }
            Some("tool-result") => {
                let data = part.as_data().cloned().unwrap_or_default();
                let answer = match data.get("error") {
                    Some(error) => format!("failed: {error}"),
                    None => format!("answered: {}", data["result"]),
                };
                format!(
                    "{}   {} {answer}\n",
                    self.break_line(),
                    data["name"].as_str().unwrap_or("?")
                )
            }
            _ => {
                let due = self
                    .last_progress
                    .is_none_or(|last| now.duration_since(last) >= PROGRESS_EVERY);
                if !due {
                    return String::new();
                }
                self.last_progress = Some(now);
                format!("{}   · {}\n", self.break_line(), render::text_of(message))
            }
        }
    }

    fn turn_end(&mut self, update: &TaskStatusUpdateEvent) -> String {
        let mut out = self.break_line();
        if let Some(message) = &update.status.message {
            if !self.streamed {
                out.push_str(&render::message(message));
            }
            if let Some(trace) = render::trace(message) {
                out.push_str(&trace);
            }
        }
        out.push_str(&render::state_line(
            &update.task_id,
            update.status.state,
            render::sub_state(&update.metadata),
        ));
        out
    }

    /// Ends a line of streamed reply pieces before anything else is printed.
    fn break_line(&mut self) -> String {
        if std::mem::take(&mut self.mid_line) {
            "\n".to_owned()
        } else {
            String::new()
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn event(value: Value) -> StreamResponse {
        serde_json::from_value(value).expect("an event")
    }

    fn working(text: &str, stream: Option<&str>) -> StreamResponse {
        let mut update = json!({"statusUpdate": {"taskId": "t1234567890", "contextId": "c",
            "status": {"state": "TASK_STATE_WORKING",
                "message": {"messageId": "p", "role": "ROLE_AGENT", "parts": [{"text": text}]}}}});
        if let Some(kind) = stream {
            update["statusUpdate"]["metadata"] = json!({"stream": kind});
        }
        event(update)
    }

    fn parked(text: &str) -> StreamResponse {
        event(
            json!({"statusUpdate": {"taskId": "t1234567890", "contextId": "c",
            "status": {"state": "TASK_STATE_INPUT_REQUIRED",
                "message": {"messageId": "r", "role": "ROLE_AGENT", "parts": [{"text": text}]}},
            "metadata": {"sub_state": "awaiting-next-message"}}}),
        )
    }

    #[test]
    fn progress_is_at_most_a_line_a_second_and_input_required_ends_the_turn() {
        let mut view = TurnView::default();
        let start = Instant::now();
        assert_eq!(
            view.show(&working("Working: 0.1 of 2 seconds", None), start),
            "   · Working: 0.1 of 2 seconds\n"
        );
        let soon = start + Duration::from_millis(300);
        assert_eq!(
            view.show(&working("Working: 0.4 of 2 seconds", None), soon),
            ""
        );
        let later = start + Duration::from_millis(1100);
        assert!(
            view.show(&working("Working: 1.1 of 2 seconds", None), later)
                .contains("1.1")
        );
        assert!(!view.ended());
        let end = view.show(&parked("Worked for 2 seconds."), later);
        assert_eq!(
            end,
            "agent › Worked for 2 seconds.\n── waiting for your next message · 34567890 ──\n"
        );
        assert!(view.ended(), "INPUT_REQUIRED ends the turn");
    }

    #[test]
    fn streamed_pieces_are_not_printed_twice() {
        let mut view = TurnView::default();
        let now = Instant::now();
        assert_eq!(
            view.show(&working("Hel", Some("text-delta")), now),
            "agent › Hel"
        );
        assert_eq!(
            view.show(&working("lo\nthere", Some("text-delta")), now),
            "lo\n        there"
        );
        let end = view.show(&parked("Hello"), now);
        assert_eq!(end, "\n── waiting for your next message · 34567890 ──\n");
    }
}
