//! The tools a turn offers the model, and how one call runs: through
//! `tool.invoked` `pre` (may refuse or rewrite the call), `in` (the body: an
//! executor filtered to the tool may answer; otherwise the harness's own
//! body), `post` (may rewrite the result).
//!
//! The model's intrinsic tools:
//! * `spawn_subtask(goal)` delegates `goal` to a child task that runs the
//!   agent loop on its own, completes on its own, and reports to its parent;
//!   the call's result is the child's final answer (and the parent gets it
//!   as an artifact too). While it runs, the parent's completion rule sees
//!   it open.
//! * `ask_participant(question)` ends the turn with the question
//!   (`awaiting-answer`); the participants' next message is the result.
//!
//! No tool lets the model complete the conversation: only a participant
//! does (decision 007). Delegated tasks are offered neither tool: nobody can
//! answer their questions, and delegation does not recurse.

use std::time::Duration;

use serde_json::{Value, json};

use super::job::{Link, SubtaskEnd};
use super::state::ApprovalDecision;
use super::transcript::ASK_PARTICIPANT;
use super::turn::hook_failure;
use crate::commands::CommandRegistry;
use crate::domain::{
    Participant, Role, SubtaskSpawnedContext, TaskRef, TaskView, ToolCall, ToolContext, ToolOutput,
    ToolResult, ToolSpec,
};
use crate::hooks::{ChainError, HookCall, HookPoint, Operation, Phase, Trace};
use crate::tools::Approval;

/// The intrinsic tool that delegates work to a sub-task.
pub(crate) const SPAWN_SUBTASK: &str = "spawn_subtask";

/// The tools one turn offers: intrinsic ones, and the registry's declared
/// tools the turn's sender may use.
#[derive(Clone, Debug, Default)]
pub(crate) struct Toolbox {
    intrinsic: Vec<Intrinsic>,
    declared: Vec<ToolSpec>,
    /// Tools whose calls wait for a participant's approval.
    needing_approval: Vec<String>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Intrinsic {
    SpawnSubtask,
    AskParticipant,
}

/// What a call came to.
#[derive(Debug)]
pub(crate) enum Called {
    /// The tool answered (or failed, or was refused).
    Output(ToolOutput),
    /// The model asks the participants; the turn ends with the question.
    Ask { question: String },
}

impl Toolbox {
    /// A conversation's tools: both intrinsic tools, and the declared tools
    /// `role` may use.
    /// `operator_approval` names tools every call of which waits for a
    /// participant's approval, beside those declared `approval = "ask"`.
    pub(crate) fn conversation(
        registry: &CommandRegistry,
        role: Role,
        operator_approval: &[String],
    ) -> Self {
        let needing_approval = registry
            .tools()
            .filter(|tool| tool.declaration.approval == Approval::Ask)
            .map(|tool| tool.declaration.name.clone())
            .chain(operator_approval.iter().cloned())
            .collect();
        Toolbox {
            intrinsic: vec![Intrinsic::SpawnSubtask, Intrinsic::AskParticipant],
            declared: declared(registry, role),
            needing_approval,
        }
    }

    /// A delegated task's tools: the declared ones, none of the intrinsic,
    /// and none that need approval (a delegated task takes no messages, so
    /// nobody could approve).
    pub(crate) fn delegated(
        registry: &CommandRegistry,
        role: Role,
        operator_approval: &[String],
    ) -> Self {
        let mut tools = Toolbox::conversation(registry, role, operator_approval);
        tools.intrinsic.clear();
        let needing = std::mem::take(&mut tools.needing_approval);
        tools.declared.retain(|spec| !needing.contains(&spec.name));
        tools
    }

    /// Whether a call of `name` waits for a participant's approval.
    pub(crate) fn needs_approval(&self, name: &str) -> bool {
        self.needing_approval.iter().any(|tool| tool == name)
    }

    pub(crate) fn specs(&self) -> Vec<ToolSpec> {
        self.intrinsic
            .iter()
            .map(|tool| tool.spec())
            .chain(self.declared.iter().cloned())
            .collect()
    }

    /// Whether the model was offered `name` in this turn.
    pub(crate) fn offers(&self, name: &str) -> bool {
        self.intrinsic(name).is_some() || self.declared.iter().any(|spec| spec.name == name)
    }

    fn intrinsic(&self, name: &str) -> Option<Intrinsic> {
        self.intrinsic
            .iter()
            .copied()
            .find(|tool| tool.name() == name)
    }
}

impl Intrinsic {
    fn name(self) -> &'static str {
        match self {
            Intrinsic::SpawnSubtask => SPAWN_SUBTASK,
            Intrinsic::AskParticipant => ASK_PARTICIPANT,
        }
    }

    fn spec(self) -> ToolSpec {
        let (description, field, about) = match self {
            Intrinsic::SpawnSubtask => (
                "Delegate a self-contained piece of work to a sub-task that works on it on its \
                 own and returns its result. Use it for work that can proceed independently.",
                "goal",
                "What the sub-task should achieve, stated completely.",
            ),
            Intrinsic::AskParticipant => (
                "Ask the participants of this conversation a question and wait for their \
                 answer. Use it when you cannot go on without their input.",
                "question",
                "The question to ask.",
            ),
        };
        ToolSpec {
            name: self.name().to_owned(),
            description: description.to_owned(),
            input_schema: json!({
                "type": "object",
                "properties": { field: { "type": "string", "description": about } },
                "required": [field],
                "additionalProperties": false,
            }),
        }
    }
}

/// What running one call needs.
pub(crate) struct ToolRun<'a> {
    pub(crate) registry: &'a CommandRegistry,
    pub(crate) tools: &'a Toolbox,
    pub(crate) task: &'a TaskView,
    pub(crate) trace: &'a Trace,
    pub(crate) link: &'a Link,
}

impl ToolRun<'_> {
    /// Run `call` through `tool.invoked`.
    pub(crate) async fn call(&self, call: ToolCall) -> Called {
        let (id, name) = (call.id.clone(), call.name.clone());
        let error = |message: String| {
            Called::Output(ToolOutput {
                call_id: id.clone(),
                name: name.clone(),
                content: message,
                is_error: true,
            })
        };
        // Nothing runs for a tool the turn does not offer (unknown, or one
        // the sender's role may not use), not even its hooks.
        if !self.tools.offers(&call.name) {
            return error(self.unknown(&call.name));
        }
        let context = ToolContext {
            task: self.task.clone(),
            call,
            result: None,
        };
        let context = match self.phase(Phase::Pre, context).await {
            Ok(context) => context,
            Err(refusal) => return error(refusal),
        };
        // A declared tool's body sees only arguments that fit its schema
        // (as `pre` left them); the model reads what does not and may retry.
        let declared = self.registry.tool(&context.call.name);
        if let Some(tool) = declared
            && let Err(problems) = tool.schema.check(&context.call.arguments)
        {
            return error(format!("invalid arguments: {problems}"));
        }
        // Its body has the declared time, whatever its executors do.
        let body = self.phase(Phase::In, context);
        let body = match declared.map(|tool| tool.declaration.timeout_ms) {
            Some(ms) => tokio::time::timeout(Duration::from_millis(ms), body)
                .await
                .unwrap_or_else(|_| Err(format!("tool `{name}` timed out after {ms} ms"))),
            None => body.await,
        };
        let mut context = match body {
            Ok(context) => context,
            Err(refusal) => return error(refusal),
        };
        if context.result.is_none() {
            match self.body(&context.call).await {
                Body::Result(result) => context.result = Some(result),
                Body::Ask(question) => return Called::Ask { question },
            }
        }
        match self.phase(Phase::Post, context).await {
            Ok(context) => Called::Output(output(&context.call, context.result)),
            Err(refusal) => error(refusal),
        }
    }

    async fn phase(&self, phase: Phase, context: ToolContext) -> Result<ToolContext, String> {
        let point = HookPoint::new(Operation::ToolInvoked, phase);
        let tool = context.call.name.clone();
        self.registry
            .hooks()
            .run_typed(self.hook_call(point), Some(&tool), context)
            .await
            .map_err(|error| match error {
                ChainError::Aborted { by, abort } => {
                    format!(
                        "the call was refused by {by} ({}): {}",
                        abort.reason, abort.message
                    )
                }
                error => hook_failure(point, error),
            })
    }

    fn hook_call(&self, point: HookPoint) -> HookCall<'_> {
        HookCall::new(point, Some(&self.task.id))
            .traced(self.trace)
            .reporting(self.link)
    }

    /// The harness's own body for `call`.
    async fn body(&self, call: &ToolCall) -> Body {
        let Some(tool) = self.tools.intrinsic(&call.name) else {
            // A declared tool whose body (an `in` executor) set no result.
            return Body::Result(ToolResult::Error(format!(
                "the tool `{}` gave no result",
                call.name
            )));
        };
        let field = match tool {
            Intrinsic::SpawnSubtask => "goal",
            Intrinsic::AskParticipant => "question",
        };
        let Some(text) = string_argument(&call.arguments, field) else {
            return Body::Result(ToolResult::Error(format!(
                "{} takes {{\"{field}\": \"...\"}}: a non-empty string",
                call.name
            )));
        };
        match tool {
            Intrinsic::AskParticipant => Body::Ask(text),
            Intrinsic::SpawnSubtask => Body::Result(self.spawn(text).await),
        }
    }

    /// What the model reads for a call to a tool it was not offered.
    fn unknown(&self, name: &str) -> String {
        let offered: Vec<String> = self.tools.specs().into_iter().map(|s| s.name).collect();
        let offered = if offered.is_empty() {
            "none".to_owned()
        } else {
            offered.join(", ")
        };
        format!("there is no tool named `{name}` here; the tools are: {offered}")
    }

    /// Delegate `goal` (after `subtask.spawned.pre`) and wait for the
    /// sub-task's end.
    async fn spawn(&self, goal: String) -> ToolResult {
        let context = SubtaskSpawnedContext {
            parent: TaskRef {
                id: self.task.id.clone(),
                context_id: self.task.context_id.clone(),
            },
            goal,
            subtask: None,
        };
        let point = HookPoint::new(Operation::SubtaskSpawned, Phase::Pre);
        let context = match self
            .registry
            .hooks()
            .run_typed(self.hook_call(point), None, context)
            .await
        {
            Ok(context) => context,
            Err(error) => return ToolResult::Error(hook_failure(point, error)),
        };
        let spawned = match self.link.spawn(context.goal).await {
            Ok(spawned) => spawned,
            Err(reason) => return ToolResult::Error(reason),
        };
        let id = spawned.subtask.id.clone();
        match spawned.ended.await {
            Ok(SubtaskEnd { state, text }) => {
                ToolResult::Output(json!({ "subtask_id": id, "state": state, "result": text }))
            }
            Err(_) => ToolResult::Error(format!(
                "sub-task {id} did not report back; its result will arrive as an artifact"
            )),
        }
    }
}

/// The registry's tools `role` may use, in name order.
fn declared(registry: &CommandRegistry, role: Role) -> Vec<ToolSpec> {
    registry
        .tools()
        .filter(|tool| tool.declaration.allows(role))
        .map(|tool| tool.declaration.spec())
        .collect()
}

enum Body {
    Result(ToolResult),
    Ask(String),
}

/// A non-empty string argument.
fn string_argument(arguments: &Value, field: &str) -> Option<String> {
    arguments
        .get(field)
        .and_then(Value::as_str)
        .map(str::trim)
        .filter(|text| !text.is_empty())
        .map(str::to_owned)
}

/// The output the model reads for `call`'s `result`.
fn output(call: &ToolCall, result: Option<ToolResult>) -> ToolOutput {
    let (content, is_error) = match result {
        Some(ToolResult::Output(Value::String(text))) => (text, false),
        Some(ToolResult::Output(value)) => (value.to_string(), false),
        Some(ToolResult::Error(message)) => (message, true),
        None => ("the tool gave no result".to_owned(), true),
    };
    ToolOutput {
        call_id: call.id.clone(),
        name: call.name.clone(),
        content,
        is_error,
    }
}

/// What the model reads for a call the participants did not approve.
pub(crate) fn denied(call: &ToolCall, decision: &ApprovalDecision) -> ToolOutput {
    let Participant { id, role } = &decision.by;
    let content = if decision.implicit {
        format!(
            "This call was not approved: {id} ({role}) sent a new message instead of approving \
             it. Do not call it again unless they ask for it."
        )
    } else {
        format!("{id} ({role}) denied this call. Do not call it again unless they ask for it.")
    };
    ToolOutput {
        call_id: call.id.clone(),
        name: call.name.clone(),
        content,
        is_error: true,
    }
}
