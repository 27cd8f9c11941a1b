//! The conversation as providers accept it. OpenAI and Anthropic both
//! refuse a request in which an assistant's tool call is not followed by
//! its result, or a result follows no call of the message before it. A
//! transcript can hold either (a call a restart cut off before its result
//! was journaled, a hook that rewrote the conversation), so both adapters
//! send [`answered`] instead of the messages as they are.

use std::borrow::Cow;

use super::{ChatMessage, ToolOutput};

/// What the model reads for a call that has no result.
pub(crate) const NO_RESULT: &str =
    "This call has no result: it was cut off before it finished, and was not run again.";

/// `messages` with every tool call answered: a call without a result among
/// the tool messages right after its assistant message gets an error result
/// saying so (after the results there are), and a result that answers no
/// call of that assistant message is left out. Borrowed when nothing
/// changes.
pub(crate) fn answered(messages: &[ChatMessage]) -> Cow<'_, [ChatMessage]> {
    if is_answered(messages) {
        return Cow::Borrowed(messages);
    }
    let mut out = Vec::with_capacity(messages.len());
    let mut index = 0;
    while index < messages.len() {
        let message = &messages[index];
        index += 1;
        match message {
            ChatMessage::Assistant { tool_calls, .. } if !tool_calls.is_empty() => {
                out.push(message.clone());
                let mut answered = Vec::new();
                while let Some(ChatMessage::Tool(output)) = messages.get(index) {
                    index += 1;
                    let asked = tool_calls.iter().any(|call| call.id == output.call_id);
                    if asked && !answered.contains(&output.call_id) {
                        answered.push(output.call_id.clone());
                        out.push(ChatMessage::Tool(output.clone()));
                    }
                }
                for call in tool_calls
                    .iter()
                    .filter(|call| !answered.contains(&call.id))
                {
                    out.push(ChatMessage::Tool(ToolOutput {
                        call_id: call.id.clone(),
                        name: call.name.clone(),
                        content: NO_RESULT.to_owned(),
                        is_error: true,
                    }));
                }
            }
            // A result no call asked for.
            ChatMessage::Tool(_) => {}
            other => out.push(other.clone()),
        }
    }
    Cow::Owned(out)
}

/// Whether every call has exactly one result right after it, and every
/// result answers one (the usual case: nothing to copy).
fn is_answered(messages: &[ChatMessage]) -> bool {
    let mut open: Vec<&str> = Vec::new();
    for message in messages {
        match message {
            ChatMessage::Tool(output) => {
                let Some(at) = open.iter().position(|id| *id == output.call_id) else {
                    return false;
                };
                open.remove(at);
            }
            _ if !open.is_empty() => return false,
            ChatMessage::Assistant { tool_calls, .. } => {
                open = tool_calls.iter().map(|call| call.id.as_str()).collect();
            }
            ChatMessage::User { .. } => {}
        }
    }
    open.is_empty()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::model::ToolCall;

    fn assistant(ids: &[&str]) -> ChatMessage {
        ChatMessage::Assistant {
            content: String::new(),
            tool_calls: ids
                .iter()
                .map(|id| ToolCall {
                    id: (*id).into(),
                    name: "t".into(),
                    arguments: json!({}),
                })
                .collect(),
            reasoning: None,
        }
    }

    fn result(id: &str) -> ChatMessage {
        ChatMessage::Tool(ToolOutput {
            call_id: id.into(),
            name: "t".into(),
            content: format!("result {id}"),
            is_error: false,
        })
    }

    fn user(text: &str) -> ChatMessage {
        ChatMessage::User {
            content: text.into(),
        }
    }

    #[test]
    fn a_well_formed_conversation_is_borrowed_as_it_is() {
        let messages = vec![
            user("hi"),
            assistant(&["a", "b"]),
            result("b"),
            result("a"),
            user("more"),
        ];
        assert!(matches!(answered(&messages), Cow::Borrowed(_)));
    }

    #[test]
    fn a_call_without_a_result_gets_one_and_stray_results_go() {
        let messages = vec![
            user("hi"),
            assistant(&["a", "b"]),
            result("a"),
            result("zzz"),
            user("after a restart"),
            result("orphan"),
            assistant(&["c"]),
        ];
        let fixed = answered(&messages);
        let ids: Vec<String> = fixed
            .iter()
            .map(|message| match message {
                ChatMessage::User { content } => format!("user:{content}"),
                ChatMessage::Assistant { .. } => "assistant".into(),
                ChatMessage::Tool(output) => format!("{}:{}", output.call_id, output.is_error),
            })
            .collect();
        assert_eq!(
            ids,
            [
                "user:hi",
                "assistant",
                "a:false",
                "b:true",
                "user:after a restart",
                "assistant",
                "c:true"
            ]
        );
        let ChatMessage::Tool(missing) = &fixed[3] else {
            panic!("{fixed:?}");
        };
        assert_eq!(missing.content, NO_RESULT);
    }
}
