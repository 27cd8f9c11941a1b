//! The load report: what loaded, what was rejected or skipped, and why.

use std::fmt;
use std::path::PathBuf;

use super::grants::Decision;

/// Where a plugin came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PluginOrigin {
    /// A directory under the plugins folder.
    Directory(PathBuf),
    /// Compiled into the harness binary (the built-in plugin, when the
    /// plugins folder does not provide one).
    Embedded,
}

impl fmt::Display for PluginOrigin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PluginOrigin::Directory(path) => write!(f, "{}", path.display()),
            PluginOrigin::Embedded => f.write_str("embedded in the harness"),
        }
    }
}

/// A part of a plugin that did not load, with the reason.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Skipped {
    /// What was skipped, e.g. "hook `status-body`" or "commands.json".
    pub what: String,
    pub reason: String,
}

/// The result for one plugin.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PluginStatus {
    Loaded {
        version: String,
        commands: Vec<String>,
        /// The tools it declares that a body serves (the model is offered
        /// them).
        tools: Vec<String>,
        hooks: Vec<String>,
    },
    /// Rejected whole (its plugin.json is missing or invalid, or its name is
    /// taken).
    Rejected { reason: String },
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PluginReport {
    /// The manifest's name, or the directory name when there is no valid one.
    pub name: String,
    pub origin: PluginOrigin,
    pub status: PluginStatus,
    pub skipped: Vec<Skipped>,
    /// What it asked for and was granted (loaded plugins only).
    pub capabilities: Decision,
    /// What the operator should know that is not a problem: a capability
    /// asked for and not granted, say, and how the plugin runs without it.
    pub notes: Vec<String>,
}

impl PluginReport {
    pub(crate) fn loaded(name: &str, origin: PluginOrigin, version: String) -> Self {
        PluginReport {
            name: name.to_owned(),
            origin,
            status: PluginStatus::Loaded {
                version,
                commands: Vec::new(),
                tools: Vec::new(),
                hooks: Vec::new(),
            },
            skipped: Vec::new(),
            capabilities: Decision::default(),
            notes: Vec::new(),
        }
    }

    pub(crate) fn rejected(name: &str, origin: PluginOrigin, reason: String) -> Self {
        PluginReport {
            name: name.to_owned(),
            origin,
            status: PluginStatus::Rejected { reason },
            skipped: Vec::new(),
            capabilities: Decision::default(),
            notes: Vec::new(),
        }
    }

    pub(crate) fn skip(&mut self, what: impl Into<String>, reason: impl fmt::Display) {
        self.skipped.push(Skipped {
            what: what.into(),
            reason: reason.to_string(),
        });
    }

    pub fn is_rejected(&self) -> bool {
        matches!(self.status, PluginStatus::Rejected { .. })
    }
}

/// What loading a plugins folder did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LoadReport {
    pub plugins: Vec<PluginReport>,
}

impl LoadReport {
    /// True when any plugin was rejected or any part of one skipped.
    pub fn has_problems(&self) -> bool {
        self.plugins
            .iter()
            .any(|plugin| plugin.is_rejected() || !plugin.skipped.is_empty())
    }

    pub fn plugin(&self, name: &str) -> Option<&PluginReport> {
        self.plugins.iter().find(|plugin| plugin.name == name)
    }

    /// Every problem as one line each, e.g. for logs.
    pub fn problems(&self) -> Vec<String> {
        let mut lines = Vec::new();
        for plugin in &self.plugins {
            if let PluginStatus::Rejected { reason } = &plugin.status {
                lines.push(format!("plugin {} rejected: {reason}", plugin.name));
            }
            for skipped in &plugin.skipped {
                lines.push(format!(
                    "plugin {}: {} skipped: {}",
                    plugin.name, skipped.what, skipped.reason
                ));
            }
        }
        lines
    }
}

impl LoadReport {
    /// Write the report to the log: problems as warnings, then each loaded
    /// plugin with what it serves, what it asked for and was granted, and
    /// its notes.
    pub fn log(&self) {
        for problem in self.problems() {
            tracing::warn!("{problem}");
        }
        for plugin in &self.plugins {
            let PluginStatus::Loaded {
                version,
                commands,
                tools,
                hooks,
            } = &plugin.status
            else {
                continue;
            };
            let commands: Vec<String> = commands.iter().map(|c| format!("/{c}")).collect();
            tracing::info!(
                plugin = %plugin.name,
                %version,
                origin = %plugin.origin,
                commands = %commands.join(" "),
                tools = %tools.join(" "),
                hooks = hooks.len(),
                capabilities = %plugin.capabilities.summary(),
                "plugin loaded"
            );
            for note in &plugin.notes {
                tracing::info!(plugin = %plugin.name, "{note}");
            }
        }
    }
}

impl fmt::Display for LoadReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for plugin in &self.plugins {
            match &plugin.status {
                PluginStatus::Loaded {
                    version,
                    commands,
                    tools,
                    hooks,
                } => {
                    let commands = if commands.is_empty() {
                        "no commands".to_owned()
                    } else {
                        commands
                            .iter()
                            .map(|c| format!("/{c}"))
                            .collect::<Vec<_>>()
                            .join(" ")
                    };
                    // Only plugins with tools say so, so older reports read
                    // as they did.
                    let tools = if tools.is_empty() {
                        String::new()
                    } else {
                        format!("; tools {}", tools.join(" "))
                    };
                    writeln!(
                        f,
                        "loaded    {} {version} ({}): {commands}{tools}; {} hook(s)",
                        plugin.name,
                        plugin.origin,
                        hooks.len()
                    )?;
                    writeln!(f, "  capabilities: {}", plugin.capabilities.summary())?;
                }
                PluginStatus::Rejected { reason } => {
                    writeln!(f, "REJECTED  {} ({}): {reason}", plugin.name, plugin.origin)?;
                }
            }
            for skipped in &plugin.skipped {
                writeln!(f, "  skipped {}: {}", skipped.what, skipped.reason)?;
            }
            for note in &plugin.notes {
                writeln!(f, "  note: {note}")?;
            }
        }
        let rejected = self.plugins.iter().filter(|p| p.is_rejected()).count();
        let skipped: usize = self.plugins.iter().map(|p| p.skipped.len()).sum();
        write!(
            f,
            "{} plugin(s): {} loaded, {rejected} rejected, {skipped} part(s) skipped",
            self.plugins.len(),
            self.plugins.len() - rejected
        )
    }
}
