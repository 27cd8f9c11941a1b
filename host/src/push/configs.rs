//! The cached configurations, by task, with how many each participant owns,
//! and the caps on both (`[push] max_configs_per_task`,
//! `max_configs_per_participant`).
//!
//! Every event of a task fans out to each of its webhooks, and each
//! configuration holds a delivery worker and stored state, so a caller who
//! could add configurations without end could multiply the server's work
//! without end. The per-owner counts are kept up to date on every change, so
//! checking a cap never scans other tasks' configurations.

use std::collections::HashMap;
use std::ops::Deref;

use super::Webhook;
use crate::a2a::error::A2aError;

/// Every configuration, by task id, and the number each owner has.
#[derive(Default)]
pub(super) struct Configs {
    by_task: HashMap<String, Vec<Webhook>>,
    owned: HashMap<String, u32>,
}

/// The caps a new configuration must fit in.
#[derive(Clone, Copy, Debug)]
pub(super) struct Caps {
    pub(super) per_task: u32,
    pub(super) per_participant: u32,
}

impl Deref for Configs {
    type Target = HashMap<String, Vec<Webhook>>;

    fn deref(&self) -> &Self::Target {
        &self.by_task
    }
}

impl Configs {
    /// The configurations as stored, counted.
    pub(super) fn from_stored(by_task: HashMap<String, Vec<Webhook>>) -> Self {
        let mut owned: HashMap<String, u32> = HashMap::new();
        for webhook in by_task.values().flatten() {
            *owned.entry(webhook.registered.owner.clone()).or_default() += 1;
        }
        Configs { by_task, owned }
    }

    /// Whether `owner` may add configuration `id` to `task_id`: replacing one
    /// of their own never needs room.
    pub(super) fn check_room(
        &self,
        caps: Caps,
        task_id: &str,
        owner: &str,
        id: &str,
    ) -> Result<(), A2aError> {
        let on_task = self.by_task.get(task_id).map_or(&[][..], Vec::as_slice);
        if on_task.iter().any(|webhook| webhook.registered.id() == id) {
            return Ok(());
        }
        if on_task.len() >= caps.per_task as usize {
            return Err(A2aError::invalid_field(
                "taskId",
                format!(
                    "task {task_id} already has {} push notification configurations, the most \
                     one task may have (`[push] max_configs_per_task`); delete one first",
                    on_task.len()
                ),
            ));
        }
        let owned = self.owned.get(owner).copied().unwrap_or(0);
        if owned >= caps.per_participant {
            return Err(A2aError::invalid_params(format!(
                "{owner} already owns {owned} push notification configurations, the most one \
                 participant may have (`[push] max_configs_per_participant`); delete one first"
            )));
        }
        Ok(())
    }

    /// Add `webhook` to `task_id`, replacing a configuration with its id.
    pub(super) fn insert(&mut self, task_id: &str, webhook: Webhook) {
        self.remove(task_id, webhook.registered.id());
        *self
            .owned
            .entry(webhook.registered.owner.clone())
            .or_default() += 1;
        self.by_task
            .entry(task_id.to_owned())
            .or_default()
            .push(webhook);
    }

    /// Remove configuration `id` of `task_id`, if there is one.
    pub(super) fn remove(&mut self, task_id: &str, id: &str) {
        let Some(list) = self.by_task.get_mut(task_id) else {
            return;
        };
        let (gone, kept): (Vec<Webhook>, Vec<Webhook>) = std::mem::take(list)
            .into_iter()
            .partition(|webhook| webhook.registered.id() == id);
        *list = kept;
        if list.is_empty() {
            self.by_task.remove(task_id);
        }
        self.disown(&gone);
    }

    /// Make `webhooks` the configurations of `task_id`.
    pub(super) fn replace_task(&mut self, task_id: &str, webhooks: Vec<Webhook>) {
        self.remove_task(task_id);
        for webhook in webhooks {
            self.insert(task_id, webhook);
        }
    }

    /// Remove every configuration of `task_id`.
    pub(super) fn remove_task(&mut self, task_id: &str) {
        if let Some(gone) = self.by_task.remove(task_id) {
            self.disown(&gone);
        }
    }

    /// The configuration `id` of `task_id`, to change in place (its cursor).
    pub(super) fn get_mut(&mut self, task_id: &str, id: &str) -> Option<&mut Webhook> {
        self.by_task
            .get_mut(task_id)?
            .iter_mut()
            .find(|webhook| webhook.registered.id() == id)
    }

    fn disown(&mut self, gone: &[Webhook]) {
        for webhook in gone {
            let owner = &webhook.registered.owner;
            if let Some(count) = self.owned.get_mut(owner) {
                *count = count.saturating_sub(1);
                if *count == 0 {
                    self.owned.remove(owner);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::Registered;
    use super::*;
    use crate::a2a::types::TaskPushNotificationConfig;

    fn webhook(owner: &str, id: &str) -> Webhook {
        Webhook {
            registered: Registered {
                owner: owner.to_owned(),
                config: TaskPushNotificationConfig {
                    id: Some(id.to_owned()),
                    ..TaskPushNotificationConfig::default()
                },
            },
            delivered_seq: 0,
        }
    }

    const CAPS: Caps = Caps {
        per_task: 2,
        per_participant: 3,
    };

    #[test]
    fn a_task_holds_at_most_its_cap_and_a_replacement_needs_no_room() {
        let mut configs = Configs::default();
        configs.insert("t", webhook("alice", "a"));
        configs.insert("t", webhook("bob", "b"));
        let refused = configs
            .check_room(CAPS, "t", "carol", "c")
            .expect_err("full");
        assert!(
            refused.to_string().contains("max_configs_per_task"),
            "{refused}"
        );
        configs
            .check_room(CAPS, "t", "alice", "a")
            .expect("a replacement");
        configs.remove("t", "b");
        configs
            .check_room(CAPS, "t", "carol", "c")
            .expect("room again");
    }

    #[test]
    fn a_participant_owns_at_most_their_cap_over_all_tasks() {
        let mut configs = Configs::default();
        for task in ["t1", "t2", "t3"] {
            configs.check_room(CAPS, task, "alice", "a").expect("room");
            configs.insert(task, webhook("alice", "a"));
        }
        // Replacing one changes no count.
        configs.insert("t3", webhook("alice", "a"));
        let refused = configs
            .check_room(CAPS, "t4", "alice", "a")
            .expect_err("alice is at her cap");
        assert!(
            refused.to_string().contains("max_configs_per_participant"),
            "{refused}"
        );
        configs
            .check_room(CAPS, "t4", "bob", "a")
            .expect("bob is not");
        configs.remove_task("t1");
        configs
            .check_room(CAPS, "t4", "alice", "a")
            .expect("room again");
        let counted = Configs::from_stored(configs.by_task.clone());
        assert_eq!(counted.owned.get("alice"), Some(&2));
    }
}
