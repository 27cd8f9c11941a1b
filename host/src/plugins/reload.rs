//! Reloading a plugins folder while the harness serves.
//!
//! Each reload builds and validates a whole new frozen registry generation
//! and swaps it in atomically; commands already running finish on the
//! generation they started on (they hold its `Arc`). A plugin whose new
//! version is broken (rejected, or any part skipped) keeps its previous
//! version serving: every plugin that loads cleanly is copied to a private
//! staging folder, and a broken one is loaded from that copy instead.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use super::loader::{Loaded, PluginLoader};
use super::report::{LoadReport, PluginOrigin, PluginReport, PluginStatus};
use super::root::copy_regular;
use crate::commands::{CommandRegistry, Registries, RegistryBuilder};

/// Builds the native part of every generation (commands and hooks
/// registered by code), since a frozen registry cannot be extended.
pub type NativeRegistrations = Arc<dyn Fn(&mut RegistryBuilder) + Send + Sync>;

/// What one reload did.
#[derive(Debug)]
pub struct ReloadOutcome {
    pub report: LoadReport,
    /// Plugins whose new version was broken and whose previous version
    /// still serves.
    pub kept_previous: Vec<String>,
    pub took: Duration,
}

/// Owns the served generation's provenance: the live folder, the staged
/// last-good copies, and the latest load report.
pub struct Reloader {
    loader: PluginLoader,
    dir: PathBuf,
    natives: NativeRegistrations,
    registries: Registries,
    report: Arc<RwLock<LoadReport>>,
    staging: tempfile::TempDir,
    /// Plugin folder name -> its last clean copy under `staging`.
    last_good: HashMap<String, Staged>,
    generation: u64,
}

impl Reloader {
    /// Load `dir` for the first time. Every load's report is written to
    /// `report`, which natives (such as `/plugins`) may read.
    pub fn start(
        loader: PluginLoader,
        dir: PathBuf,
        natives: NativeRegistrations,
        report: Arc<RwLock<LoadReport>>,
    ) -> std::io::Result<(Self, Loaded)> {
        let staging = tempfile::Builder::new()
            .prefix("tiny-harness-plugins-")
            .tempdir()?;
        let mut reloader = Reloader {
            loader,
            dir,
            natives,
            registries: Registries::default(),
            report,
            staging,
            last_good: HashMap::new(),
            generation: 0,
        };
        let loaded = reloader.load_generation();
        reloader.registries = Registries::new(loaded.registry.clone());
        reloader.set_report(loaded.report.clone());
        Ok((reloader, loaded))
    }

    /// The handle the task service reads generations from.
    pub fn registries(&self) -> Registries {
        self.registries.clone()
    }

    /// The latest load report, shared with whoever shows it (`/plugins`).
    pub fn report(&self) -> Arc<RwLock<LoadReport>> {
        self.report.clone()
    }

    /// Load the folder as it is now and swap the new generation in.
    pub fn reload(&mut self) -> ReloadOutcome {
        let started = Instant::now();
        let loaded = self.load_generation();
        let kept_previous = kept_previous(&loaded.report);
        self.registries.replace(loaded.registry);
        self.set_report(loaded.report.clone());
        ReloadOutcome {
            report: loaded.report,
            kept_previous,
            took: started.elapsed(),
        }
    }

    /// One generation: the live folder, with each broken plugin replaced by
    /// its last clean copy when it has one.
    fn load_generation(&mut self) -> Loaded {
        self.generation += 1;
        let live = self.load(&self.dir.clone());
        let broken: Vec<(String, PluginReport)> = live
            .report
            .plugins
            .iter()
            .filter_map(|plugin| Some((folder_name(plugin)?, plugin.clone())))
            .filter(|(folder, plugin)| has_problems(plugin) && self.last_good.contains_key(folder))
            .collect();
        self.stage_clean_plugins(&live.report);
        if broken.is_empty() {
            return live;
        }
        match self.compose(&broken) {
            Ok(composed) => {
                let mut loaded = self.load(&composed);
                // Loading read every component into memory; the folder of
                // links is not needed again.
                let _ = std::fs::remove_dir_all(&composed);
                annotate_kept_previous(&mut loaded.report, &broken);
                loaded
            }
            Err(err) => {
                tracing::warn!(%err, "cannot compose the previous plugin versions; serving the folder as it is");
                live
            }
        }
    }

    fn load(&self, dir: &Path) -> Loaded {
        let mut builder = CommandRegistry::builder();
        (self.natives)(&mut builder);
        self.loader.load(Some(dir), builder)
    }

    /// Copy every plugin that loaded cleanly, so a later broken version can
    /// fall back to it.
    fn stage_clean_plugins(&mut self, report: &LoadReport) {
        for plugin in &report.plugins {
            let (Some(folder), PluginOrigin::Directory(source)) =
                (folder_name(plugin), &plugin.origin)
            else {
                continue;
            };
            if has_problems(plugin) {
                continue;
            }
            let fingerprint = match Fingerprint::of(source) {
                Ok(fingerprint) => fingerprint,
                Err(err) => {
                    tracing::warn!(plugin = %plugin.name, %err, "cannot read the plugin to stage it");
                    continue;
                }
            };
            // Most reloads change one plugin: copying the unchanged ones (an
            // 18 MB Python component, say) again would be wasted work.
            if self
                .last_good
                .get(&folder)
                .is_some_and(|staged| staged.fingerprint == fingerprint)
            {
                continue;
            }
            let copy = self
                .staging
                .path()
                .join(format!("{}", self.generation))
                .join(&folder);
            match copy_dir(source, &copy, self.loader.largest_file()) {
                Ok(()) => {
                    let staged = Staged { copy, fingerprint };
                    if let Some(old) = self.last_good.insert(folder, staged) {
                        let _ = std::fs::remove_dir_all(old.copy);
                    }
                }
                Err(err) => {
                    tracing::warn!(plugin = %plugin.name, %err, "cannot stage a copy of the plugin")
                }
            }
        }
    }

    /// A folder holding links to the live plugins, except the broken ones,
    /// which link to their last clean copy.
    fn compose(&self, broken: &[(String, PluginReport)]) -> std::io::Result<PathBuf> {
        let composed = self
            .staging
            .path()
            .join(format!("composed-{}", self.generation));
        std::fs::create_dir_all(&composed)?;
        for entry in std::fs::read_dir(&self.dir)? {
            let entry = entry?;
            let name = entry.file_name().to_string_lossy().into_owned();
            let source = match broken.iter().find(|(folder, _)| *folder == name) {
                Some((folder, _)) => self.last_good[folder].copy.clone(),
                None => entry.path().canonicalize()?,
            };
            std::os::unix::fs::symlink(source, composed.join(&name))?;
        }
        Ok(composed)
    }

    fn set_report(&self, report: LoadReport) {
        match self.report.write() {
            Ok(mut guard) => *guard = report,
            Err(poisoned) => *poisoned.into_inner() = report,
        }
    }
}

/// A plugin's last clean copy, and what its source looked like then.
struct Staged {
    copy: PathBuf,
    fingerprint: Fingerprint,
}

/// Every file of a plugin folder with its size and modification time: enough
/// to tell that a folder was not touched since it was staged.
#[derive(PartialEq, Eq)]
struct Fingerprint(Vec<(PathBuf, u64, std::time::SystemTime)>);

impl Fingerprint {
    fn of(dir: &Path) -> std::io::Result<Self> {
        let mut files = Vec::new();
        collect_files(dir, Path::new(""), &mut files)?;
        files.sort();
        Ok(Fingerprint(files))
    }
}

fn collect_files(
    dir: &Path,
    relative: &Path,
    files: &mut Vec<(PathBuf, u64, std::time::SystemTime)>,
) -> std::io::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        let name = relative.join(entry.file_name());
        let kind = entry.file_type()?;
        if kind.is_dir() {
            collect_files(&entry.path(), &name, files)?;
        } else if kind.is_file() {
            let metadata = entry.metadata()?;
            files.push((name, metadata.len(), metadata.modified()?));
        }
    }
    Ok(())
}

fn has_problems(plugin: &PluginReport) -> bool {
    plugin.is_rejected() || !plugin.skipped.is_empty()
}

/// The plugin's folder name under the plugins folder (for embedded
/// plugins, none).
fn folder_name(plugin: &PluginReport) -> Option<String> {
    match &plugin.origin {
        PluginOrigin::Directory(path) => Some(path.file_name()?.to_string_lossy().into_owned()),
        PluginOrigin::Embedded => None,
    }
}

/// Say, on each plugin served from its previous copy, why its new version
/// was not taken.
fn annotate_kept_previous(report: &mut LoadReport, broken: &[(String, PluginReport)]) {
    for (folder, new_version) in broken {
        let why = match &new_version.status {
            PluginStatus::Rejected { reason } => reason.clone(),
            PluginStatus::Loaded { .. } => new_version
                .skipped
                .iter()
                .map(|s| format!("{}: {}", s.what, s.reason))
                .collect::<Vec<_>>()
                .join("; "),
        };
        let served = report
            .plugins
            .iter_mut()
            .find(|plugin| folder_name(plugin).as_deref() == Some(folder.as_str()));
        if let Some(plugin) = served {
            plugin.skip(
                "new version",
                format!("rejected ({why}); the previous version keeps serving"),
            );
        }
    }
}

fn kept_previous(report: &LoadReport) -> Vec<String> {
    report
        .plugins
        .iter()
        .filter(|plugin| plugin.skipped.iter().any(|s| s.what == "new version"))
        .map(|plugin| plugin.name.clone())
        .collect()
}

/// Copy a plugin folder (manifests and components; nested folders too):
/// regular files of at most `cap` bytes, read as the loader reads them, so
/// staging a copy can neither hang on a FIFO nor copy without bound.
fn copy_dir(source: &Path, target: &Path, cap: u64) -> std::io::Result<()> {
    std::fs::create_dir_all(target)?;
    for entry in std::fs::read_dir(source)? {
        let entry = entry?;
        let kind = entry.file_type()?;
        let to = target.join(entry.file_name());
        if kind.is_dir() {
            copy_dir(&entry.path(), &to, cap)?;
        } else if kind.is_file() {
            copy_regular(&entry.path(), &to, cap)?;
        }
    }
    Ok(())
}
