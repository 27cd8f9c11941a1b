//! Deciding whether a participant may complete a task, through `task.complete`.
//!
//! The context is [`CompletionContext`]: the task, who asks, its open
//! sub-tasks, and the decision once a body set it.
//!
//! * `pre`: an abort refuses the completion with its message.
//! * `in`: the body. The harness's own default runs as a native executor at
//!   [`DEFAULT_PRIORITY`], ahead of plugin executors of equal priority: when
//!   no earlier executor set `decision`, it refuses while sub-tasks are open
//!   (naming them) and allows otherwise. An executor at a lower priority that
//!   sets `{"allow": true}` or `{"allow": false, "reason": "..."}` overrides it.
//! * `post`: may replace the decision; an abort refuses.
//!
//! Anything that fails (a fault, a decision out of shape) refuses: a task is
//! never completed by accident.

use std::sync::Arc;

use serde_json::{Value, json};

use super::turn::hook_failure;
use crate::commands::CommandRegistry;
use crate::domain::{CompletionContext, Participant, SubtaskView, TaskView};
use crate::hooks::{
    ChainError, DEFAULT_PRIORITY, Decision, ExecutorFault, ExecutorKind, HookCall, HookChains,
    HookEntry, HookPoint, NativeExecutor, Operation, Phase, Trace,
};

/// The outcome of a completion request.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub(crate) struct Verdict {
    pub(crate) allowed: bool,
    /// Why it was refused (or, optionally, allowed).
    pub(crate) reason: Option<String>,
    pub(crate) requested_by: Participant,
}

impl Verdict {
    /// The agent's message for this decision.
    pub(crate) fn message(&self) -> String {
        let Participant { id, role } = &self.requested_by;
        match (self.allowed, &self.reason) {
            (true, None) => format!("Task completed at the request of {id} ({role})."),
            (true, Some(reason)) => {
                format!("Task completed at the request of {id} ({role}): {reason}")
            }
            (false, reason) => format!(
                "The task was not completed: {}",
                reason.as_deref().unwrap_or("the completion was refused")
            ),
        }
    }

    /// Structured data for clients, next to [`Verdict::message`].
    pub(crate) fn data(&self) -> Value {
        json!({ "completion": { "allow": self.allowed, "reason": self.reason } })
    }
}

/// The `task.complete` context for `requested_by` on `task`.
pub(crate) fn context(
    task: TaskView,
    requested_by: &Participant,
    open: &[SubtaskView],
) -> CompletionContext {
    CompletionContext {
        task,
        requested_by: requested_by.clone(),
        open_subtasks: open.to_vec(),
        decision: None,
    }
}

/// Run `task.complete` on `context`, recording its steps in `trace`.
pub(crate) async fn decide(
    registry: Arc<CommandRegistry>,
    context: CompletionContext,
    trace: &Trace,
) -> Verdict {
    let requested_by = context.requested_by.clone();
    let refuse = |reason: String| Verdict {
        allowed: false,
        reason: Some(reason),
        requested_by: requested_by.clone(),
    };
    // The harness built this context, so its task id is the task's own;
    // executors may rewrite the context, never the call.
    let task_id = context.task.id.clone();
    let call = HookCall::new(
        HookPoint::new(Operation::TaskComplete, Phase::Pre),
        Some(&task_id),
    )
    .traced(trace);
    match run_chains(&registry, call, context).await {
        Ok(CompletionContext {
            decision: Some(decision),
            ..
        }) => Verdict {
            allowed: decision.allow,
            reason: decision.reason,
            requested_by,
        },
        Ok(_) => refuse("no task.complete executor made a decision".into()),
        Err(reason) => refuse(reason),
    }
}

async fn run_chains(
    registry: &CommandRegistry,
    call: HookCall<'_>,
    context: CompletionContext,
) -> Result<CompletionContext, String> {
    let hooks = registry.hooks();
    let context = run_phase(hooks, call, Phase::Pre, context).await?;
    let context = run_phase(&body_chain(hooks), call, Phase::In, context).await?;
    run_phase(hooks, call, Phase::Post, context).await
}

async fn run_phase(
    chains: &HookChains,
    call: HookCall<'_>,
    phase: Phase,
    context: CompletionContext,
) -> Result<CompletionContext, String> {
    let point = HookPoint::new(Operation::TaskComplete, phase);
    chains
        .run_typed(call.at(point), None, context)
        .await
        .map_err(|error| match error {
            // An abort's message is the reason, as the participant reads it.
            ChainError::Aborted { abort, .. } => abort.message,
            error => hook_failure(point, error),
        })
}

/// The generation's `task.complete.in` executors with the default body
/// registered first at [`DEFAULT_PRIORITY`]. Registries are frozen per
/// generation, so the default joins a copy of the chain, not the registry.
fn body_chain(hooks: &HookChains) -> HookChains {
    let point = HookPoint::new(Operation::TaskComplete, Phase::In);
    let default = HookEntry {
        name: "default-completion".into(),
        origin: "harness".into(),
        point,
        command: None,
        priority: DEFAULT_PRIORITY,
        kind: ExecutorKind::Native,
        source: "native".into(),
        executor: Arc::new(NativeExecutor::new(default_decision)),
    };
    HookChains::new(std::iter::once(default).chain(hooks.entries(point, None).cloned()))
}

/// The default body: refuse while sub-tasks are open, else allow. Yields to
/// a decision an earlier executor set.
fn default_decision(_call: HookCall<'_>, context: &Value) -> Result<Decision, ExecutorFault> {
    if context
        .get("decision")
        .is_some_and(|decision| !decision.is_null())
    {
        return Ok(Decision::Pass);
    }
    let open: Vec<SubtaskView> = context
        .get("open_subtasks")
        .cloned()
        .map(serde_json::from_value)
        .transpose()
        .map_err(|error| {
            ExecutorFault::BadAnswer(format!("open_subtasks is out of shape: {error}"))
        })?
        .unwrap_or_default();
    let decision = if open.is_empty() {
        json!({ "allow": true })
    } else {
        json!({ "allow": false, "reason": open_subtasks_reason(&open) })
    };
    let mut next = context.clone();
    match next.as_object_mut() {
        Some(object) => object.insert("decision".into(), decision),
        None => {
            return Err(ExecutorFault::BadAnswer(
                "the task.complete context is not an object".into(),
            ));
        }
    };
    Ok(Decision::Replace(next))
}

fn open_subtasks_reason(open: &[SubtaskView]) -> String {
    let listed: Vec<String> = open
        .iter()
        .map(|subtask| format!("{} \"{}\" ({})", subtask.id, subtask.goal, subtask.state))
        .collect();
    let count = match open.len() {
        1 => "1 sub-task is".to_owned(),
        n => format!("{n} sub-tasks are"),
    };
    format!(
        "{count} still open: {}. Wait for them to finish or cancel them (CancelTask), then complete again.",
        listed.join(", ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::task::Role;

    fn alice() -> Participant {
        Participant {
            id: "alice".into(),
            role: Role::Reporter,
        }
    }

    fn open() -> Vec<SubtaskView> {
        vec![SubtaskView {
            id: "s1".into(),
            goal: "write docs".into(),
            state: "TASK_STATE_WORKING".into(),
        }]
    }

    #[tokio::test]
    async fn the_default_refuses_while_subtasks_are_open() {
        let registry = Arc::new(CommandRegistry::default());
        let context = context(TaskView::scratch("alice"), &alice(), &open());
        let verdict = decide(registry.clone(), context, &Trace::default()).await;
        assert!(!verdict.allowed);
        let message = verdict.message();
        assert!(message.contains("s1 \"write docs\""), "{message}");

        let context = context_without_subtasks();
        let verdict = decide(registry, context, &Trace::default()).await;
        assert!(verdict.allowed);
        assert_eq!(
            verdict.message(),
            "Task completed at the request of alice (reporter)."
        );
    }

    fn context_without_subtasks() -> CompletionContext {
        context(TaskView::scratch("alice"), &alice(), &[])
    }

    #[tokio::test]
    async fn an_earlier_executor_overrides_the_default() {
        let mut builder = CommandRegistry::builder();
        builder
            .add_hook(HookEntry {
                name: "allow".into(),
                origin: "test".into(),
                point: HookPoint::new(Operation::TaskComplete, Phase::In),
                command: None,
                priority: 500,
                kind: ExecutorKind::Native,
                source: "native".into(),
                executor: Arc::new(NativeExecutor::new(|_, context: &Value| {
                    let mut next = context.clone();
                    next["decision"] = json!({ "allow": true, "reason": "overridden" });
                    Ok(Decision::Replace(next))
                })),
            })
            .expect("hook added");
        let (registry, _) = builder.freeze();
        let context = context(TaskView::scratch("alice"), &alice(), &open());
        let verdict = decide(Arc::new(registry), context, &Trace::default()).await;
        assert!(verdict.allowed);
        assert_eq!(verdict.reason.as_deref(), Some("overridden"));
    }
}
