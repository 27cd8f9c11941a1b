//! The typed context of every hook operation: what executors at
//! `<operation>.{pre,in,post}` receive and may replace. The harness builds
//! and reads these as Rust values; they become JSON only when they cross to
//! an executor (a Wasm component or a remote endpoint), and
//! docs/contracts.md documents each one from these types.
//!
//! `command.invoked`'s context, [`CommandContext`](super::CommandContext),
//! lives with the rest of the command vocabulary.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::answer::{ArtifactPiece, Disposition};
use super::model::{ModelRequest, Reasoning, StopReason, ToolCall, Usage};
use super::participant::Participant;
use super::view::{SubtaskView, TaskView};

/// `request.received`: a participant's ordinary message (never a command or
/// a control: `command.invoked` is their policy point).
///
/// `pre` may refuse it (nothing is stored) or rewrite `text`, which becomes
/// the message's text; `post` runs once the message is committed.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RequestContext {
    pub text: String,
    pub sender: Participant,
    pub task: TaskView,
}

/// `task.created`: a participant's first message is about to create a
/// conversation (`pre`, which may refuse it: nothing is created) or has
/// created it (`post`, after the commit).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TaskCreatedContext {
    pub task: TaskView,
    /// The participant whose message created it; none for a delegated task.
    #[serde(default)]
    pub created_by: Option<Participant>,
}

/// `task.state_changed`, `post` only: the task moved from one A2A state to
/// another, and the change is committed.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StateChangedContext {
    pub task: TaskView,
    /// A2A state names, e.g. `TASK_STATE_WORKING`.
    pub from: String,
    pub to: String,
}

/// The task a notification is about, without its whole view: a parent with
/// many sub-tasks must not copy every one of them into every notification.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TaskRef {
    pub id: String,
    pub context_id: String,
}

/// `subtask.spawned`: a task is about to delegate `subtask` (`pre`, which
/// may refuse it or rewrite its goal) or has (`post`, after the commit,
/// with the sub-task's id).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SubtaskSpawnedContext {
    pub parent: TaskRef,
    pub goal: String,
    /// The sub-task, once it exists (`post`).
    #[serde(default)]
    pub subtask: Option<SubtaskView>,
}

/// What a `task.complete` body decided.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CompletionDecision {
    pub allow: bool,
    #[serde(default)]
    pub reason: Option<String>,
}

/// `task.complete`: a participant asked to complete the task.
///
/// `pre` may refuse; the `in` body sets `decision` (the harness's default
/// refuses while sub-tasks are open); `post` may replace the decision.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CompletionContext {
    pub task: TaskView,
    pub requested_by: Participant,
    pub open_subtasks: Vec<SubtaskView>,
    #[serde(default)]
    pub decision: Option<CompletionDecision>,
}

/// A model's whole answer to one request, as `llm.invoked` carries it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ModelResponse {
    #[serde(default)]
    pub text: String,
    #[serde(default)]
    pub tool_calls: Vec<ToolCall>,
    #[serde(default)]
    pub usage: Option<Usage>,
    pub stop: StopReason,
    /// What the provider needs back with this answer in the next request
    /// of the tool round (Anthropic's signed thinking), if anything.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning: Option<Reasoning>,
    /// Artifacts the answer adds to the task, whole or in chunks (an
    /// executor's, never a provider's: see `domain::answer`). A one-shot
    /// task keeps them instead of its reply artifact.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub artifacts: Vec<ArtifactPiece>,
    /// How the answer reaches the task and its sender, when not as usual.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disposition: Option<Disposition>,
}

/// `llm.invoked`: one model request of a turn (a turn with tool rounds
/// makes several).
///
/// `pre` may rewrite the request or refuse it; an `in` executor that sets
/// `response` answers instead of the model (the model is then not called);
/// `post` may rewrite the response.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LlmContext {
    pub task: TaskView,
    /// The `messageId` of the participant's message the turn answers (a
    /// delegated task's goal has none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message_id: Option<String>,
    pub request: ModelRequest,
    #[serde(default)]
    pub response: Option<ModelResponse>,
}

/// What a tool call produced, as `tool.invoked` carries it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolResult {
    /// The tool's answer (any JSON; text for most tools).
    Output(Value),
    /// The tool failed or was refused; the model reads the message and may
    /// correct its call.
    Error(String),
}

/// `tool.invoked`: one tool call the model made.
///
/// `pre` may rewrite the call or refuse it (the model gets the refusal as
/// the tool's error); the `in` body sets `result`; `post` may rewrite the
/// result before the model reads it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ToolContext {
    pub task: TaskView,
    pub call: ToolCall,
    #[serde(default)]
    pub result: Option<ToolResult>,
}

#[cfg(test)]
mod tests {
    use serde::de::DeserializeOwned;

    use super::*;
    use crate::domain::CommandContext;

    const CONTRACTS: &str = include_str!("../../../docs/contracts.md");

    /// The JSON example under the docs' heading `### \`name\``, with the
    /// task view example in place of `"<task view>"`.
    fn example(name: &str) -> Value {
        let block = |heading: &str| {
            let start = CONTRACTS
                .find(heading)
                .unwrap_or_else(|| panic!("docs/contracts.md has no `{heading}`"));
            let rest = &CONTRACTS[start..];
            let open = rest.find("```json\n").expect("a JSON example") + "```json\n".len();
            let close = rest[open..].find("```").expect("the example ends");
            rest[open..open + close].to_owned()
        };
        let view = block("### The task view");
        let text = block(&format!("### `{name}`")).replace("\"<task view>\"", &view);
        serde_json::from_str(&text).unwrap_or_else(|error| panic!("{name}: {error}\n{text}"))
    }

    /// Every field of `documented` reads into `C`, and `C` writes each of
    /// them back: the docs describe the type, not a wish.
    fn matches<C: Serialize + DeserializeOwned>(name: &str) {
        let documented = example(name);
        let typed: C = serde_json::from_value(documented.clone())
            .unwrap_or_else(|error| panic!("{name} does not read as its type: {error}"));
        let written = serde_json::to_value(&typed).expect("serializes");
        for key in documented.as_object().expect("an object").keys() {
            assert!(
                written.get(key).is_some(),
                "{name}: documented field `{key}` is not part of the type"
            );
        }
    }

    #[test]
    fn docs_examples_are_the_hook_contexts() {
        matches::<RequestContext>("RequestContext");
        matches::<TaskCreatedContext>("TaskCreatedContext");
        matches::<StateChangedContext>("StateChangedContext");
        matches::<CompletionContext>("CompletionContext");
        matches::<LlmContext>("LlmContext");
        matches::<ToolContext>("ToolContext");
        matches::<SubtaskSpawnedContext>("SubtaskSpawnedContext");
        matches::<CommandContext>("CommandContext");
    }
}
