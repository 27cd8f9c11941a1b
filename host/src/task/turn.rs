//! Command turns: a command through `command.invoked`, run as a
//! [`Job`](super::job::Job) that returns its outcome without touching the
//! task. Model turns are the agent loop (`agent`).
//!
//! A command's `spawn-subtask` effects pass `subtask.spawned.pre` here,
//! before the task applies any effect: an executor may rewrite a goal, and
//! one that refuses refuses the command's effects (all or none apply).

use std::sync::Arc;

use super::job::{TurnEnd, TurnOutput};
use crate::commands::{CommandFailure, CommandRegistry, Effect, Outcome};
use crate::domain::{Participant, SubtaskSpawnedContext, TaskRef, TaskView};
use crate::hooks::{ChainError, HookCall, HookPoint, Operation, Phase, Trace};

/// How a hook's refusal or fault reads in the agent's reply.
pub(crate) fn hook_failure(point: HookPoint, error: ChainError) -> String {
    match error {
        ChainError::Aborted { by, abort } => {
            format!(
                "{point} refused by {by} ({}): {}",
                abort.reason, abort.message
            )
        }
        ChainError::Fault { by, fault } => {
            tracing::warn!(%point, executor = %by, %fault, "hook executor fault");
            format!("{point} failed: {by} {fault}")
        }
    }
}

/// Run the command `text` names on the registry generation it was
/// classified on.
pub(crate) async fn command_turn(
    registry: Arc<CommandRegistry>,
    text: String,
    sender: Participant,
    view: TaskView,
) -> TurnOutput {
    let trace = Trace::default();
    let result = match registry.parse(&text) {
        Some(call) => {
            registry
                .invoke_traced(call, sender, view.clone(), Some(&trace))
                .await
        }
        // Classification parsed it on this same generation, so this is a bug.
        None => Err(CommandFailure::Failed(format!(
            "`{text}` is not a command of this registry"
        ))),
    };
    let result = match result {
        Ok(outcome) => screen_spawns(&registry, &view, outcome, &trace).await,
        Err(failure) => Err(failure),
    };
    TurnOutput {
        end: TurnEnd::Command(result),
        trace: trace.finish(),
        usage: None,
        transcript_span: None,
    }
}

/// Pass each `spawn-subtask` effect of `outcome` through
/// `subtask.spawned.pre`.
async fn screen_spawns(
    registry: &CommandRegistry,
    task: &TaskView,
    mut outcome: Outcome,
    trace: &Trace,
) -> Result<Outcome, CommandFailure> {
    let point = HookPoint::new(Operation::SubtaskSpawned, Phase::Pre);
    if !registry.hooks().has_entries(point, None) {
        return Ok(outcome);
    }
    for effect in &mut outcome.effects {
        let Effect::SpawnSubtask(goal) = effect else {
            continue;
        };
        let context = SubtaskSpawnedContext {
            parent: TaskRef {
                id: task.id.clone(),
                context_id: task.context_id.clone(),
            },
            goal: std::mem::take(goal),
            subtask: None,
        };
        let call = HookCall::new(point, Some(&task.id)).traced(trace);
        match registry.hooks().run_typed(call, None, context).await {
            Ok(context) => *goal = context.goal,
            Err(error) => return Err(CommandFailure::Refused(hook_failure(point, error))),
        }
    }
    Ok(outcome)
}
