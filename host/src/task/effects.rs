//! Checking the effects a command asks for before the task applies them.
//! Bodies describe changes; the task decides. Either every effect of a
//! command is acceptable and all apply, or none does and the refusal is the
//! agent's reply.

use super::env::TaskSettings;
use crate::commands::Effect;

/// The reasoning efforts a conversation may run on.
pub(crate) const EFFORTS: [&str; 3] = ["low", "medium", "high"];

/// `Ok` when every effect may apply; otherwise why not, for the sender.
pub(crate) fn check(effects: &[Effect], settings: &TaskSettings) -> Result<(), String> {
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
            default_lifecycle: Default::default(),
        }
    }

    #[test]
    fn refusals_explain_and_list_what_is_allowed() {
        assert!(check(&[Effect::SetModel("fast-1".into())], &settings()).is_ok());
        let refusal = check(
            &[
                Effect::SetModel("gpt-9".into()),
                Effect::SetEffort("max".into()),
            ],
            &settings(),
        )
        .expect_err("refused");
        assert!(refusal.contains("`gpt-9`"), "{refusal}");
        assert!(refusal.contains("offline-echo, fast-1"), "{refusal}");
        assert!(refusal.contains("low, medium, high"), "{refusal}");
        assert!(check(&[Effect::SpawnSubtask("  ".into())], &settings()).is_err());
    }
}
