//! `tiny-harness:plugin@0.1.0` (`wit/v0.1.0/plugin.wit`, frozen): the
//! bindings of the first contract, kept so that components built against it
//! keep loading and working. Everything here delegates to the latest
//! contract ([`super::latest`]): host imports call the latest's, arguments
//! are the latest's values with what 0.1.0 lacks left out (the task view's
//! usage), and answers become the latest's values.

use wasmtime::Store;
use wasmtime::component::{Instance, InstancePre};

use super::latest::{self, wit as new};
use super::since_v0_2_0::missing;
use crate::plugins::wasm::store::StoreState;

wasmtime::component::bindgen!({
    path: "../wit/v0.1.0/plugin.wit",
    world: "plugin",
    imports: { default: async },
    exports: { default: async },
});

use self::tiny_harness::plugin::host::{self as old_host, Level};
use self::tiny_harness::plugin::types as old;
use exports::tiny_harness::plugin::{command, completion, hook};

impl old_host::Host for StoreState {
    async fn log(&mut self, level: Level, message: String) {
        let level = match level {
            Level::Trace => latest::tiny_harness::plugin::host::Level::Trace,
            Level::Debug => latest::tiny_harness::plugin::host::Level::Debug,
            Level::Info => latest::tiny_harness::plugin::host::Level::Info,
            Level::Warn => latest::tiny_harness::plugin::host::Level::Warn,
            Level::Error => latest::tiny_harness::plugin::host::Level::Error,
        };
        latest::tiny_harness::plugin::host::Host::log(self, level, message).await;
    }

    async fn config(&mut self, key: String) -> Option<String> {
        latest::tiny_harness::plugin::host::Host::config(self, key).await
    }
}

impl old::Host for StoreState {}

fn role(role: new::Role) -> old::Role {
    match role {
        new::Role::Reporter => old::Role::Reporter,
        new::Role::Assignee => old::Role::Assignee,
        new::Role::Watcher => old::Role::Watcher,
        new::Role::Admin => old::Role::Admin,
    }
}

fn participant(participant: &new::Participant) -> old::Participant {
    old::Participant {
        id: participant.id.clone(),
        role: role(participant.role),
    }
}

/// The task view of 0.1.0: the latest's without `usage` and
/// `last-turn-usage`.
fn task_view(task: &new::TaskView) -> old::TaskView {
    old::TaskView {
        id: task.id.clone(),
        context_id: task.context_id.clone(),
        state: task.state.clone(),
        sub_state: task.sub_state.clone(),
        model: task.model.clone(),
        effort: task.effort.clone(),
        selectable_models: task.selectable_models.clone(),
        participants: task.participants.iter().map(participant).collect(),
        subtasks: task
            .subtasks
            .iter()
            .map(|subtask| old::SubtaskView {
                id: subtask.id.clone(),
                goal: subtask.goal.clone(),
                state: subtask.state.clone(),
            })
            .collect(),
        turn_count: task.turn_count,
    }
}

fn invocation(invocation: &new::Invocation) -> old::Invocation {
    old::Invocation {
        command: invocation.command.clone(),
        raw_arguments: invocation.raw_arguments.clone(),
        arguments: invocation
            .arguments
            .iter()
            .map(|argument| old::Argument {
                name: argument.name.clone(),
                value: argument.value.clone(),
            })
            .collect(),
        sender: participant(&invocation.sender),
        task: task_view(&invocation.task),
    }
}

fn outcome(outcome: old::Outcome) -> new::Outcome {
    new::Outcome {
        reply: new::Reply {
            text: outcome.reply.text,
            data: outcome.reply.data,
        },
        effects: outcome
            .effects
            .into_iter()
            .map(|effect| match effect {
                old::Effect::SetModel(model) => new::Effect::SetModel(model),
                old::Effect::SetEffort(effort) => new::Effect::SetEffort(effort),
                old::Effect::SpawnSubtask(goal) => new::Effect::SpawnSubtask(goal),
            })
            .collect(),
    }
}

fn command_error(error: old::CommandError) -> new::CommandError {
    match error {
        old::CommandError::Usage(message) => new::CommandError::Usage(message),
        old::CommandError::Refused(message) => new::CommandError::Refused(message),
        old::CommandError::Failed(message) => new::CommandError::Failed(message),
    }
}

fn decision(decision: old::Decision) -> new::Decision {
    match decision {
        old::Decision::Pass => new::Decision::Pass,
        old::Decision::Replace(context) => new::Decision::Replace(context),
        old::Decision::Abort(abort) => new::Decision::Abort(new::Abort {
            reason: match abort.reason {
                old::AbortReason::Refused => new::AbortReason::Refused,
                old::AbortReason::Policy => new::AbortReason::Policy,
                old::AbortReason::Invalid => new::AbortReason::Invalid,
            },
            message: abort.message,
        }),
    }
}

/// Which of the 0.1.0 interfaces a component exports (it had no tools).
pub(crate) struct ExportIndices {
    pub(crate) command: Option<command::GuestIndices>,
    pub(crate) hook: Option<hook::GuestIndices>,
    pub(crate) completion: Option<completion::GuestIndices>,
}

impl ExportIndices {
    pub(crate) fn new(pre: &InstancePre<StoreState>) -> Self {
        ExportIndices {
            command: command::GuestIndices::new(pre).ok(),
            hook: hook::GuestIndices::new(pre).ok(),
            completion: completion::GuestIndices::new(pre).ok(),
        }
    }

    pub(crate) async fn run_command(
        &self,
        store: &mut Store<StoreState>,
        instance: &Instance,
        call: &new::Invocation,
    ) -> wasmtime::Result<Result<new::Outcome, new::CommandError>> {
        let indices = missing(self.command.as_ref(), "command")?;
        let guest = indices.load(&mut *store, instance)?;
        let answer = guest.call_run(store, &invocation(call)).await?;
        Ok(answer.map(outcome).map_err(command_error))
    }

    pub(crate) async fn handle_hook(
        &self,
        store: &mut Store<StoreState>,
        instance: &Instance,
        point: &str,
        context: &str,
    ) -> wasmtime::Result<new::Decision> {
        let indices = missing(self.hook.as_ref(), "hook")?;
        let guest = indices.load(&mut *store, instance)?;
        Ok(decision(guest.call_handle(store, point, context).await?))
    }

    pub(crate) async fn complete(
        &self,
        store: &mut Store<StoreState>,
        instance: &Instance,
        command: &str,
        partial_arguments: &str,
    ) -> wasmtime::Result<Vec<new::Suggestion>> {
        let indices = missing(self.completion.as_ref(), "completion")?;
        let guest = indices.load(&mut *store, instance)?;
        let suggestions = guest
            .call_complete(store, command, partial_arguments)
            .await?;
        Ok(suggestions
            .into_iter()
            .map(|suggestion| new::Suggestion {
                value: suggestion.value,
                description: suggestion.description,
            })
            .collect())
    }
}
