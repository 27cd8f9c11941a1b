//! The `host` interface plugins import: logging (within the log budget, see
//! `log_budget.rs`) and their own configuration. This is the latest
//! contract's; 0.1.0's delegates here (`bindings/since_v0_1_0.rs`).

use super::bindings::latest::tiny_harness::plugin::host::{Host, Level};
use super::store::StoreState;

/// Guests may log, but not flood the log: longer messages are cut (and
/// count against the call's budget at their cut length).
const MAX_LOG_MESSAGE_BYTES: usize = 4096;

impl Host for StoreState {
    async fn log(&mut self, level: Level, message: String) {
        let message = truncate(&message, MAX_LOG_MESSAGE_BYTES);
        if !self.log.admit(&self.plugin.share.log_rate, message.len()) {
            return;
        }
        let plugin = self.plugin.name.as_str();
        match level {
            Level::Trace => tracing::trace!(plugin, "{message}"),
            Level::Debug => tracing::debug!(plugin, "{message}"),
            Level::Info => tracing::info!(plugin, "{message}"),
            Level::Warn => tracing::warn!(plugin, "{message}"),
            Level::Error => tracing::error!(plugin, "{message}"),
        }
    }

    async fn config(&mut self, key: String) -> Option<String> {
        self.plugin.config.get(&key).cloned()
    }
}

impl super::bindings::latest::tiny_harness::plugin::types::Host for StoreState {}

fn truncate(text: &str, max: usize) -> &str {
    if text.len() <= max {
        return text;
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}
