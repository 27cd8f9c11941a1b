//! The task service the store benches drive: the offline model, no plugins
//! (the measurement is the lifecycle and the store), on a given store.
//!
//! Shared by the `store` and `parked` benches.

use std::sync::Arc;
use std::time::Duration;

use tiny_harness::commands::{CommandRegistry, Registries};
use tiny_harness::model::Models;
use tiny_harness::store::TaskStore;
use tiny_harness::task::{Durability, TaskService, TaskSettings};

/// A service on `store` whose idle actors leave memory after `idle_timeout`.
pub(crate) fn offline_service(store: Arc<dyn TaskStore>, idle_timeout: Duration) -> TaskService {
    TaskService::with_durability(
        TaskSettings {
            default_model: "offline-echo".into(),
            selectable_models: vec!["offline-echo".into()],
            default_effort: "medium".into(),
            admins: Vec::new(),
            ..TaskSettings::default()
        },
        Registries::new(CommandRegistry::default()),
        Models::offline(),
        Durability {
            store,
            idle_timeout,
            accept_commit_delay: Durability::DEFAULT_ACCEPT_COMMIT_DELAY,
            ..Durability::in_memory()
        },
    )
}
