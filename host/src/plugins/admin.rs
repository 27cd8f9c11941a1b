//! `/plugins`: the current load report, for admins, over any A2A client:
//! what each plugin serves, what it asked for and was granted, its notes
//! and its problems.
//!
//! The report lives in the host, which a sandboxed component cannot see, so
//! this body is native Rust that the harness registers in every generation
//! (as an embedding program would).

use std::sync::{Arc, RwLock};

use serde_json::json;

use super::grants::Capability;
use super::report::{LoadReport, PluginStatus};
use crate::commands::{
    CommandError, CommandSpec, Invocation, NativeBody, Outcome, RegistryBuilder, Reply,
};
use crate::domain::Role;

/// Register `/plugins` (admins only) showing `report`.
pub fn register_plugins_command(
    builder: &mut RegistryBuilder,
    report: Arc<RwLock<LoadReport>>,
) -> Result<(), crate::commands::RegistryError> {
    let spec = CommandSpec {
        name: "plugins".into(),
        description:
            "Show the plugin load report: what loaded, what was rejected or skipped, and why".into(),
        usage: "/plugins".into(),
        arguments: Vec::new(),
        roles: vec![Role::Admin],
        timeout_ms: 1000,
    };
    let body = NativeBody(move |_: &Invocation| show(&report));
    builder.register(spec, Arc::new(body))
}

fn show(report: &RwLock<LoadReport>) -> Result<Outcome, CommandError> {
    let report = match report.read() {
        Ok(guard) => guard.clone(),
        Err(poisoned) => poisoned.into_inner().clone(),
    };
    let plugins: Vec<_> = report
        .plugins
        .iter()
        .map(|plugin| {
            let (status, version, commands, tools) = match &plugin.status {
                PluginStatus::Loaded {
                    version,
                    commands,
                    tools,
                    ..
                } => ("loaded", Some(version), commands.clone(), tools.clone()),
                PluginStatus::Rejected { .. } => ("rejected", None, Vec::new(), Vec::new()),
            };
            let keys = |capabilities: &[Capability]| {
                capabilities.iter().map(|c| c.key()).collect::<Vec<_>>()
            };
            let mut entry = json!({
                "name": plugin.name,
                "origin": plugin.origin.to_string(),
                "status": status,
                "version": version,
                "commands": commands,
                "tools": tools,
                "capabilities": {
                    "asked": keys(&plugin.capabilities.asked),
                    "granted": keys(&plugin.capabilities.granted),
                    "denied": keys(&plugin.capabilities.denied),
                },
                "notes": plugin.notes,
                "problems": plugin_problems(plugin),
            });
            // The granted network rules, for the plugins that asked for any.
            if !plugin.capabilities.asked_network.is_empty() {
                entry["capabilities"]["network"] = json!(
                    plugin
                        .capabilities
                        .network
                        .iter()
                        .map(ToString::to_string)
                        .collect::<Vec<_>>()
                );
            }
            entry
        })
        .collect();
    Ok(Outcome {
        reply: Reply {
            text: report.to_string(),
            data: Some(json!({ "plugins": plugins })),
        },
        effects: Vec::new(),
    })
}

fn plugin_problems(plugin: &super::report::PluginReport) -> Vec<String> {
    let mut problems = Vec::new();
    if let PluginStatus::Rejected { reason } = &plugin.status {
        problems.push(reason.clone());
    }
    problems.extend(
        plugin
            .skipped
            .iter()
            .map(|s| format!("{}: {}", s.what, s.reason)),
    );
    problems
}
