//! Checking a command's outcome before the task keeps it: its reply's size,
//! and the effects it asks for. Bodies describe changes; the task decides.
//! Either every effect of a command is acceptable and all apply, or none
//! does and the refusal is the agent's reply.

use super::env::TaskSettings;
use crate::commands::{Effect, Outcome};

/// The reasoning efforts a conversation may run on.
pub(crate) const EFFORTS: [&str; 3] = ["low", "medium", "high"];

/// `Ok` when the outcome may be kept and every effect may apply, on a task
/// with `open_subtasks` sub-tasks open; otherwise why not, for the sender.
pub(crate) fn check(
    command: &str,
    outcome: &Outcome,
    settings: &TaskSettings,
    open_subtasks: usize,
) -> Result<(), String> {
    let limits = &settings.limits;
    let data_bytes = outcome
        .reply
        .data
        .as_ref()
        .map_or(0, |data| data.to_string().len());
    let bytes = outcome.reply.text.len() + data_bytes;
    if bytes > limits.max_reply_bytes {
        return Err(format!(
            "/{command} replied with {bytes} bytes, over the limit of {} bytes per reply (text \
             and data together; `[limits] max_reply_bytes`), so the reply was not kept and none \
             of its effects applied.",
            limits.max_reply_bytes
        ));
    }
    let effects = &outcome.effects;
    if effects.len() > limits.max_effects {
        return Err(format!(
            "/{command} asked for {} effects, over the limit of {} per command (`[limits] \
             max_effects`), so none applied.",
            effects.len(),
            limits.max_effects
        ));
    }
    let spawns = effects
        .iter()
        .filter(|effect| matches!(effect, Effect::SpawnSubtask(_)))
        .count();
    if spawns > 0 && open_subtasks + spawns > limits.max_open_subtasks {
        return Err(format!(
            "/{command} would start {spawns} sub-tasks while {open_subtasks} are open; a task may \
             have at most {} open at once (`[limits] max_open_subtasks`), so none started.",
            limits.max_open_subtasks
        ));
    }
    let problems: Vec<String> = effects
        .iter()
        .filter_map(|effect| problem(effect, settings))
        .collect();
    if problems.is_empty() {
        Ok(())
    } else {
        Err(problems.join("\n"))
    }
}

fn problem(effect: &Effect, settings: &TaskSettings) -> Option<String> {
    match effect {
        Effect::SetModel(model) if !settings.selectable_models.contains(model) => Some(format!(
            "Cannot switch to model `{model}`: it is not a selectable model here. Selectable models: {}.",
            settings.selectable_models.join(", ")
        )),
        Effect::SetEffort(effort) if !EFFORTS.contains(&effort.as_str()) => Some(format!(
            "Cannot set the effort to `{effort}`: use {}.",
            EFFORTS.join(", ")
        )),
        Effect::SpawnSubtask(goal) if goal.trim().is_empty() => {
            Some("Cannot start a sub-task without a goal.".to_owned())
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings() -> TaskSettings {
        TaskSettings {
            default_model: "offline-echo".into(),
            selectable_models: vec!["offline-echo".into(), "fast-1".into()],
            default_effort: "medium".into(),
            admins: Vec::new(),
            ..TaskSettings::default()
        }
    }

    fn outcome(effects: Vec<Effect>) -> Outcome {
        Outcome {
            effects,
            ..Outcome::text("ok")
        }
    }

    fn checked(effects: Vec<Effect>) -> Result<(), String> {
        check("test", &outcome(effects), &settings(), 0)
    }

    #[test]
    fn refusals_explain_and_list_what_is_allowed() {
        assert!(checked(vec![Effect::SetModel("fast-1".into())]).is_ok());
        let refusal = checked(vec![
            Effect::SetModel("gpt-9".into()),
            Effect::SetEffort("max".into()),
        ])
        .expect_err("refused");
        assert!(refusal.contains("`gpt-9`"), "{refusal}");
        assert!(refusal.contains("offline-echo, fast-1"), "{refusal}");
        assert!(refusal.contains("low, medium, high"), "{refusal}");
        assert!(checked(vec![Effect::SpawnSubtask("  ".into())]).is_err());
    }

    #[test]
    fn outcomes_beyond_the_limits_are_refused_whole() {
        let limits = TaskSettings::default().limits;
        let spawns = |n| {
            (0..n)
                .map(|i| Effect::SpawnSubtask(format!("goal {i}")))
                .collect()
        };
        let many = checked(spawns(limits.max_effects + 1)).expect_err("too many effects");
        assert!(many.contains("max_effects"), "{many}");
        assert!(checked(spawns(limits.max_effects)).is_ok());
        let crowded = check(
            "test",
            &outcome(spawns(2)),
            &settings(),
            limits.max_open_subtasks - 1,
        )
        .expect_err("too many open sub-tasks");
        assert!(crowded.contains("max_open_subtasks"), "{crowded}");
        let big = Outcome::text("x".repeat(limits.max_reply_bytes + 1));
        let refusal = check("big", &big, &settings(), 0).expect_err("too big");
        assert!(
            refusal.contains("max_reply_bytes") && refusal.starts_with("/big"),
            "{refusal}"
        );
    }
}
