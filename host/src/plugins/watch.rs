//! Watching the plugins folder: file events, debounced, trigger reloads.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use notify::{RecursiveMode, Watcher};
use tokio::sync::mpsc;

use super::reload::Reloader;

/// How long the folder must be quiet before a reload: copying a plugin in
/// writes several files, and compiling half of them is wasted work.
pub const QUIET_PERIOD: Duration = Duration::from_millis(100);

/// The longest a burst of events may postpone a reload.
pub const MAX_DELAY: Duration = Duration::from_secs(1);

/// Keeps the watch alive; dropping it stops watching.
pub struct PluginWatch {
    _watcher: notify::RecommendedWatcher,
    _task: tokio::task::JoinHandle<()>,
}

/// Watch `dir` and reload through `reloader` after each burst of changes.
/// Must be called inside a Tokio runtime.
pub fn watch(dir: PathBuf, reloader: Arc<Mutex<Reloader>>) -> notify::Result<PluginWatch> {
    let (events, mut received) = mpsc::unbounded_channel::<()>();
    let mut watcher =
        notify::recommended_watcher(move |event: notify::Result<notify::Event>| match event {
            Ok(event) if is_change(&event) => {
                let _ = events.send(());
            }
            Ok(_) => {}
            Err(err) => tracing::warn!(%err, "plugins folder watch error"),
        })?;
    watcher.watch(&dir, RecursiveMode::Recursive)?;
    let task = tokio::spawn(async move {
        while received.recv().await.is_some() {
            debounce(&mut received).await;
            let reloader = reloader.clone();
            // Loading compiles (or deserializes) components: keep it off the
            // async workers.
            let reloaded = tokio::task::spawn_blocking(move || match reloader.lock() {
                Ok(mut reloader) => Some(reloader.reload()),
                Err(_) => None,
            })
            .await;
            match reloaded {
                Ok(Some(outcome)) => log_outcome(&outcome),
                Ok(None) => tracing::error!("plugin reloader is poisoned; reloads stopped"),
                Err(err) => tracing::error!(%err, "plugin reload panicked"),
            }
        }
    });
    Ok(PluginWatch {
        _watcher: watcher,
        _task: task,
    })
}

/// Wait until no event arrived for [`QUIET_PERIOD`], or [`MAX_DELAY`] passed.
async fn debounce(received: &mut mpsc::UnboundedReceiver<()>) {
    let deadline = tokio::time::Instant::now() + MAX_DELAY;
    loop {
        let quiet = tokio::time::Instant::now() + QUIET_PERIOD;
        match tokio::time::timeout_at(quiet.min(deadline), received.recv()).await {
            Ok(Some(())) if tokio::time::Instant::now() < deadline => continue,
            _ => return,
        }
    }
}

fn is_change(event: &notify::Event) -> bool {
    use notify::EventKind;
    matches!(
        event.kind,
        EventKind::Create(_) | EventKind::Modify(_) | EventKind::Remove(_) | EventKind::Any
    )
}

fn log_outcome(outcome: &super::reload::ReloadOutcome) {
    tracing::info!(
        took_ms = outcome.took.as_millis() as u64,
        plugins = outcome.report.plugins.len(),
        problems = outcome.report.problems().len(),
        "plugins reloaded"
    );
    outcome.report.log();
}
