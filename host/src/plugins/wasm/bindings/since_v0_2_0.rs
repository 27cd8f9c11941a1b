//! `tiny-harness:plugin@0.2.0` (`wit/plugin.wit`), the latest contract: its
//! bindings, and the conversions between its types and the harness's own
//! (which stay free of wasmtime). Older versions convert to these types.

use wasmtime::Store;
use wasmtime::component::{Instance, InstancePre};

use super::super::store::StoreState;
use crate::commands::{Argument, CommandError, Effect, Invocation, Outcome, Reply};
use crate::domain::{Participant, Role, SubtaskView, TaskView, Usage};
use crate::hooks::{Abort, AbortReason, Decision, ExecutorFault};

wasmtime::component::bindgen!({
    path: "../wit/plugin.wit",
    world: "plugin",
    imports: { default: async },
    exports: { default: async },
});

pub(crate) use self::tiny_harness::plugin::types as wit;
use exports::tiny_harness::plugin::{command, completion, hook, tool};

impl From<Role> for wit::Role {
    fn from(role: Role) -> Self {
        match role {
            Role::Reporter => wit::Role::Reporter,
            Role::Assignee => wit::Role::Assignee,
            Role::Watcher => wit::Role::Watcher,
            Role::Admin => wit::Role::Admin,
        }
    }
}

impl From<Participant> for wit::Participant {
    fn from(participant: Participant) -> Self {
        wit::Participant {
            id: participant.id,
            role: participant.role.into(),
        }
    }
}

impl From<SubtaskView> for wit::SubtaskView {
    fn from(subtask: SubtaskView) -> Self {
        wit::SubtaskView {
            id: subtask.id,
            goal: subtask.goal,
            state: subtask.state,
        }
    }
}

impl From<Usage> for wit::Usage {
    fn from(usage: Usage) -> Self {
        wit::Usage {
            input_tokens: usage.input_tokens,
            output_tokens: usage.output_tokens,
        }
    }
}

impl From<TaskView> for wit::TaskView {
    fn from(task: TaskView) -> Self {
        wit::TaskView {
            id: task.id,
            context_id: task.context_id,
            state: task.state,
            sub_state: task.sub_state,
            model: task.model,
            effort: task.effort,
            selectable_models: task.selectable_models,
            participants: task.participants.into_iter().map(Into::into).collect(),
            subtasks: task.subtasks.into_iter().map(Into::into).collect(),
            turn_count: task.turn_count,
            usage: task.usage.into(),
            last_turn_usage: task.last_turn_usage.map(Into::into),
        }
    }
}

impl From<Argument> for wit::Argument {
    fn from(argument: Argument) -> Self {
        wit::Argument {
            name: argument.name,
            value: argument.value,
        }
    }
}

impl From<Invocation> for wit::Invocation {
    fn from(invocation: Invocation) -> Self {
        wit::Invocation {
            command: invocation.command,
            raw_arguments: invocation.raw_arguments,
            arguments: invocation.arguments.into_iter().map(Into::into).collect(),
            sender: invocation.sender.into(),
            task: invocation.task.into(),
        }
    }
}

impl From<wit::Effect> for Effect {
    fn from(effect: wit::Effect) -> Self {
        match effect {
            wit::Effect::SetModel(model) => Effect::SetModel(model),
            wit::Effect::SetEffort(effort) => Effect::SetEffort(effort),
            wit::Effect::SpawnSubtask(goal) => Effect::SpawnSubtask(goal),
        }
    }
}

impl From<wit::CommandError> for CommandError {
    fn from(error: wit::CommandError) -> Self {
        match error {
            wit::CommandError::Usage(message) => CommandError::Usage(message),
            wit::CommandError::Refused(message) => CommandError::Refused(message),
            wit::CommandError::Failed(message) => CommandError::Failed(message),
        }
    }
}

impl From<AbortReason> for wit::AbortReason {
    fn from(reason: AbortReason) -> Self {
        match reason {
            AbortReason::Refused => wit::AbortReason::Refused,
            AbortReason::Policy => wit::AbortReason::Policy,
            AbortReason::Invalid => wit::AbortReason::Invalid,
        }
    }
}

impl From<wit::AbortReason> for AbortReason {
    fn from(reason: wit::AbortReason) -> Self {
        match reason {
            wit::AbortReason::Refused => AbortReason::Refused,
            wit::AbortReason::Policy => AbortReason::Policy,
            wit::AbortReason::Invalid => AbortReason::Invalid,
        }
    }
}

/// A guest's outcome; its optional data must be JSON, since clients read it
/// as structured data.
pub(crate) fn outcome_from_guest(outcome: wit::Outcome) -> Result<Outcome, ExecutorFault> {
    let data =
        match outcome.reply.data {
            None => None,
            Some(data) => Some(serde_json::from_str(&data).map_err(|err| {
                ExecutorFault::BadAnswer(format!("reply data is not JSON: {err}"))
            })?),
        };
    Ok(Outcome {
        reply: Reply {
            text: outcome.reply.text,
            data,
        },
        effects: outcome.effects.into_iter().map(Into::into).collect(),
    })
}

/// A guest's hook decision; a replacement context must be JSON.
pub(crate) fn decision_from_guest(decision: wit::Decision) -> Result<Decision, ExecutorFault> {
    Ok(match decision {
        wit::Decision::Pass => Decision::Pass,
        wit::Decision::Replace(context) => {
            Decision::Replace(serde_json::from_str(&context).map_err(|err| {
                ExecutorFault::BadAnswer(format!("replacement context is not JSON: {err}"))
            })?)
        }
        wit::Decision::Abort(abort) => Decision::Abort(Abort {
            reason: abort.reason.into(),
            message: abort.message,
        }),
    })
}

/// Which of the contract's interfaces a component exports.
pub(crate) struct ExportIndices {
    pub(crate) command: Option<command::GuestIndices>,
    pub(crate) tool: Option<tool::GuestIndices>,
    pub(crate) hook: Option<hook::GuestIndices>,
    pub(crate) completion: Option<completion::GuestIndices>,
}

impl ExportIndices {
    pub(crate) fn new(pre: &InstancePre<StoreState>) -> Self {
        ExportIndices {
            command: command::GuestIndices::new(pre).ok(),
            tool: tool::GuestIndices::new(pre).ok(),
            hook: hook::GuestIndices::new(pre).ok(),
            completion: completion::GuestIndices::new(pre).ok(),
        }
    }

    pub(crate) async fn run_command(
        &self,
        store: &mut Store<StoreState>,
        instance: &Instance,
        invocation: &wit::Invocation,
    ) -> wasmtime::Result<Result<wit::Outcome, wit::CommandError>> {
        let indices = missing(self.command.as_ref(), "command")?;
        let guest = indices.load(&mut *store, instance)?;
        guest.call_run(store, invocation).await
    }

    pub(crate) async fn handle_hook(
        &self,
        store: &mut Store<StoreState>,
        instance: &Instance,
        point: &str,
        context: &str,
    ) -> wasmtime::Result<wit::Decision> {
        let indices = missing(self.hook.as_ref(), "hook")?;
        let guest = indices.load(&mut *store, instance)?;
        guest.call_handle(store, point, context).await
    }

    pub(crate) async fn complete(
        &self,
        store: &mut Store<StoreState>,
        instance: &Instance,
        command: &str,
        partial_arguments: &str,
    ) -> wasmtime::Result<Vec<wit::Suggestion>> {
        let indices = missing(self.completion.as_ref(), "completion")?;
        let guest = indices.load(&mut *store, instance)?;
        guest.call_complete(store, command, partial_arguments).await
    }

    pub(crate) async fn call_tool(
        &self,
        store: &mut Store<StoreState>,
        instance: &Instance,
        call: &wit::ToolCall,
    ) -> wasmtime::Result<Result<String, wit::ToolError>> {
        let indices = missing(self.tool.as_ref(), "tool")?;
        let guest = indices.load(&mut *store, instance)?;
        guest.call_call(store, call).await
    }
}

/// An export the caller should have checked for: a host bug, so a trap.
pub(super) fn missing<'a, T>(indices: Option<&'a T>, export: &str) -> wasmtime::Result<&'a T> {
    indices.ok_or_else(|| wasmtime::format_err!("the component exports no `{export}`"))
}
