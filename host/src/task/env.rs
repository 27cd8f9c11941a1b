//! What every task actor shares: the settings from the configuration and
//! the services a task uses (registries, model, store, push delivery).

use std::sync::Arc;
use std::time::Duration;

use crate::commands::Registries;
use crate::model::Models;
use crate::push::Pusher;
use crate::store::TaskStore;

/// What the lifecycle needs from the configuration.
#[derive(Clone, Debug)]
pub struct TaskSettings {
    /// The model a new conversation starts on.
    pub default_model: String,
    /// Models a participant may switch to with `/model` (includes the default).
    pub selectable_models: Vec<String>,
    /// The effort a new conversation starts on: low, medium or high.
    pub default_effort: String,
    /// Participant ids that are admins on every task.
    pub admins: Vec<String>,
}

/// What every actor shares.
pub(crate) struct Env {
    pub(crate) settings: TaskSettings,
    pub(crate) registries: Registries,
    pub(crate) models: Models,
    pub(crate) store: Arc<dyn TaskStore>,
    pub(crate) push: Arc<Pusher>,
    /// How long an actor with nothing to do lives on.
    pub(crate) idle_timeout: Duration,
}
