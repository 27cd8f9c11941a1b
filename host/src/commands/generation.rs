//! The registry generation currently served. A reload builds and validates a
//! whole new frozen registry and swaps it in atomically; work already running
//! keeps the `Arc` of the generation it started on.

use std::sync::{Arc, RwLock};

use super::CommandRegistry;

/// A shared handle on the current registry generation.
#[derive(Clone, Default)]
pub struct Registries {
    current: Arc<RwLock<Arc<CommandRegistry>>>,
}

impl Registries {
    pub fn new(registry: CommandRegistry) -> Self {
        Registries {
            current: Arc::new(RwLock::new(Arc::new(registry))),
        }
    }

    /// The generation to run the next command on.
    pub fn current(&self) -> Arc<CommandRegistry> {
        // A poisoned lock only means a writer panicked mid-swap; the value
        // inside is still a whole generation.
        match self.current.read() {
            Ok(guard) => guard.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }

    /// Serve `registry` from now on.
    pub fn replace(&self, registry: CommandRegistry) {
        let registry = Arc::new(registry);
        match self.current.write() {
            Ok(mut guard) => *guard = registry,
            Err(poisoned) => *poisoned.into_inner() = registry,
        }
    }
}
