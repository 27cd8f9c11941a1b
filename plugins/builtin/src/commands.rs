//! The four built-in command bodies.

use serde_json::json;
use tiny_harness_plugin::{CommandError, Effect, Invocation, Outcome, TaskView, Usage};

const EFFORT_LEVELS: [&str; 3] = ["low", "medium", "high"];
const EFFORT_USAGE: &str = "usage: /effort [low|medium|high]";
const SUB_TASK_USAGE: &str = "usage: /sub-task <goal>";

/// Runs the body of the built-in command `invocation.command`.
pub(crate) fn run(invocation: &Invocation) -> Result<Outcome, CommandError> {
    match invocation.command.as_str() {
        "model" => Ok(model(invocation)),
        "effort" => effort(invocation),
        "sub-task" => sub_task(invocation),
        "status" => Ok(status(&invocation.task)),
        other => Err(CommandError::Failed(format!(
            "the builtin plugin has no body for /{other}"
        ))),
    }
}

/// `/model [name]`: show the model, or ask to switch (the task checks the
/// allowlist when it applies the effect).
fn model(invocation: &Invocation) -> Outcome {
    let task = &invocation.task;
    if let Some(name) = invocation.arg("name") {
        return Outcome::reply(format!("Switching model to {name}."))
            .with_effect(Effect::SetModel(name.to_owned()));
    }
    let selectable = if task.selectable_models.is_empty() {
        "none".to_owned()
    } else {
        task.selectable_models.join(", ")
    };
    let data = json!({ "model": task.model, "selectable": task.selectable_models });
    Outcome::reply(format!("Model: {}. Selectable: {selectable}.", task.model))
        .with_data(data.to_string())
}

/// `/effort [low|medium|high]`: show the effort, or ask to switch.
fn effort(invocation: &Invocation) -> Result<Outcome, CommandError> {
    let task = &invocation.task;
    let Some(level) = invocation.arg("level") else {
        let data = json!({ "effort": task.effort, "levels": EFFORT_LEVELS });
        return Ok(Outcome::reply(format!(
            "Effort: {}. Levels: low, medium, high.",
            task.effort
        ))
        .with_data(data.to_string()));
    };
    if !EFFORT_LEVELS.contains(&level) {
        return Err(CommandError::Usage(EFFORT_USAGE.to_owned()));
    }
    Ok(Outcome::reply(format!("Switching effort to {level}."))
        .with_effect(Effect::SetEffort(level.to_owned())))
}

/// `/sub-task <goal>`: ask the task to delegate `goal` to a child task.
fn sub_task(invocation: &Invocation) -> Result<Outcome, CommandError> {
    let Some(goal) = invocation.arg("goal") else {
        return Err(CommandError::Usage(SUB_TASK_USAGE.to_owned()));
    };
    Ok(Outcome::reply(format!("Starting a sub-task: {goal}"))
        .with_effect(Effect::SpawnSubtask(goal.to_owned())))
}

/// `/status`: the task's state, model and effort, participants, open
/// sub-tasks, turns, and the tokens its models reported (the last turn's
/// and the total).
fn status(task: &TaskView) -> Outcome {
    let open: Vec<_> = task.open_subtasks().collect();
    let state = match &task.sub_state {
        Some(sub_state) if !sub_state.is_empty() => format!("{} ({sub_state})", task.state),
        _ => task.state.clone(),
    };
    let participants = if task.participants.is_empty() {
        "none".to_owned()
    } else {
        let named: Vec<String> = task
            .participants
            .iter()
            .map(|p| format!("{} ({})", p.id, p.role))
            .collect();
        named.join(", ")
    };
    let mut text = format!(
        "State: {state}\nModel: {} (effort {})\nParticipants: {participants}\n\
         Open sub-tasks: {}",
        task.model,
        task.effort,
        open.len()
    );
    for subtask in &open {
        text.push_str(&format!(
            "\n- {}: {} [{}]",
            subtask.id, subtask.goal, subtask.state
        ));
    }
    text.push_str(&format!("\nTurns: {}", task.turn_count));
    text.push_str(&format!("\nTokens: {}", tokens(task)));

    let data = json!({
        "state": task.state,
        "sub_state": task.sub_state,
        "model": task.model,
        "effort": task.effort,
        "participants": task.participants.iter()
            .map(|p| json!({ "id": p.id, "role": p.role.as_str() }))
            .collect::<Vec<_>>(),
        "open_subtasks": open.iter()
            .map(|s| json!({ "id": s.id, "goal": s.goal, "state": s.state }))
            .collect::<Vec<_>>(),
        "turn_count": task.turn_count,
        "usage": {
            "input_tokens": task.usage.input_tokens,
            "output_tokens": task.usage.output_tokens,
            "last_turn": task.last_turn_usage.as_ref().map(|last| json!({
                "input_tokens": last.input_tokens,
                "output_tokens": last.output_tokens,
            })),
        },
    });
    Outcome::reply(text).with_data(data.to_string())
}

/// `120 in, 48 out in total; last turn 40 in, 16 out`, or `none reported
/// yet` before any model has answered.
fn tokens(task: &TaskView) -> String {
    let pair = |usage: &Usage| format!("{} in, {} out", usage.input_tokens, usage.output_tokens);
    match &task.last_turn_usage {
        None => "none reported yet".to_owned(),
        Some(last) => format!("{} in total; last turn {}", pair(&task.usage), pair(last)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tiny_harness_plugin::{Argument, Participant, Role, SubtaskView};

    fn task() -> TaskView {
        TaskView {
            id: "t1".into(),
            context_id: "c1".into(),
            state: "TASK_STATE_INPUT_REQUIRED".into(),
            sub_state: None,
            model: "offline-echo".into(),
            effort: "medium".into(),
            selectable_models: vec!["offline-echo".into(), "fast-1".into()],
            participants: vec![Participant {
                id: "alice".into(),
                role: Role::Reporter,
            }],
            subtasks: vec![
                SubtaskView {
                    id: "s1".into(),
                    goal: "open one".into(),
                    state: "TASK_STATE_WORKING".into(),
                },
                SubtaskView {
                    id: "s2".into(),
                    goal: "done one".into(),
                    state: "TASK_STATE_COMPLETED".into(),
                },
            ],
            turn_count: 3,
            usage: Usage {
                input_tokens: 120,
                output_tokens: 48,
            },
            last_turn_usage: Some(Usage {
                input_tokens: 40,
                output_tokens: 16,
            }),
        }
    }

    fn invoke(command: &str, args: &[(&str, &str)]) -> Result<Outcome, CommandError> {
        run(&Invocation {
            command: command.into(),
            raw_arguments: args.iter().map(|(_, v)| *v).collect::<Vec<_>>().join(" "),
            arguments: args
                .iter()
                .map(|(n, v)| Argument {
                    name: (*n).into(),
                    value: (*v).into(),
                })
                .collect(),
            sender: Participant {
                id: "alice".into(),
                role: Role::Reporter,
            },
            task: task(),
        })
    }

    #[test]
    fn model_without_argument_shows_current_and_selectable() {
        let outcome = invoke("model", &[]).expect("outcome");
        assert!(outcome.reply.text.contains("offline-echo"));
        assert!(outcome.effects.is_empty());
        let data: serde_json::Value =
            serde_json::from_str(outcome.reply.data.as_deref().expect("data")).expect("json");
        assert_eq!(data["model"], "offline-echo");
        assert_eq!(data["selectable"], json!(["offline-echo", "fast-1"]));
    }

    #[test]
    fn model_with_name_asks_for_switch() {
        let outcome = invoke("model", &[("name", "fast-1")]).expect("outcome");
        assert_eq!(outcome.reply.text, "Switching model to fast-1.");
        assert_eq!(outcome.effects, vec![Effect::SetModel("fast-1".into())]);
    }

    #[test]
    fn effort_shows_sets_and_rejects() {
        let shown = invoke("effort", &[]).expect("outcome");
        assert!(shown.reply.text.contains("medium"));
        let set = invoke("effort", &[("level", "high")]).expect("outcome");
        assert_eq!(set.effects, vec![Effect::SetEffort("high".into())]);
        let bad = invoke("effort", &[("level", "max")]);
        assert_eq!(bad, Err(CommandError::Usage(EFFORT_USAGE.into())));
    }

    #[test]
    fn sub_task_needs_a_goal() {
        let outcome = invoke("sub-task", &[("goal", "write the docs")]).expect("outcome");
        assert_eq!(
            outcome.effects,
            vec![Effect::SpawnSubtask("write the docs".into())]
        );
        let missing = invoke("sub-task", &[("goal", "  ")]);
        assert_eq!(missing, Err(CommandError::Usage(SUB_TASK_USAGE.into())));
    }

    #[test]
    fn status_reports_open_subtasks_only() {
        let outcome = invoke("status", &[]).expect("outcome");
        assert!(outcome.reply.text.contains("TASK_STATE_INPUT_REQUIRED"));
        assert!(outcome.reply.text.contains("Open sub-tasks: 1"));
        assert!(!outcome.reply.text.contains("done one"));
        let data: serde_json::Value =
            serde_json::from_str(outcome.reply.data.as_deref().expect("data")).expect("json");
        assert_eq!(data["sub_state"], serde_json::Value::Null);
        assert_eq!(data["open_subtasks"][0]["id"], "s1");
        assert_eq!(data["turn_count"], 3);
        assert_eq!(data["participants"][0]["role"], "reporter");
    }

    #[test]
    fn status_shows_the_tokens_of_the_last_turn_and_in_total() {
        let outcome = invoke("status", &[]).expect("outcome");
        assert!(
            outcome
                .reply
                .text
                .contains("Tokens: 120 in, 48 out in total; last turn 40 in, 16 out"),
            "{}",
            outcome.reply.text
        );
        let data: serde_json::Value =
            serde_json::from_str(outcome.reply.data.as_deref().expect("data")).expect("json");
        assert_eq!(
            data["usage"],
            json!({"input_tokens": 120, "output_tokens": 48,
                   "last_turn": {"input_tokens": 40, "output_tokens": 16}})
        );
        let mut fresh = task();
        fresh.usage = Usage {
            input_tokens: 0,
            output_tokens: 0,
        };
        fresh.last_turn_usage = None;
        assert_eq!(tokens(&fresh), "none reported yet");
    }
}
