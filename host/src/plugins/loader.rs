//! Loading a plugins folder into a frozen [`CommandRegistry`] and a
//! [`LoadReport`].
//!
//! The rules: a plugin whose plugin.json is missing or invalid is rejected
//! whole; a bad commands.json or hooks.json entry, or a bad component, is
//! skipped with its reason and the rest loads; paths stay inside the plugin
//! root; a command name two plugins declare is reported and the first
//! declaration kept, never silently shadowed. The built-in plugin always
//! loads first.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use super::embedded::BUILTIN;
use super::manifest::{self, ExecutorSource, HookDeclaration, ManifestError, PluginManifest};
use super::report::{LoadReport, PluginOrigin, PluginReport, PluginStatus};
use super::root::PluginRoot;
use super::wasm::{
    PluginComponent, PluginIdentity, WasmCommandBody, WasmCompleter, WasmHookExecutor, WasmRuntime,
};
use crate::commands::{BodyExecutor, CommandRegistry, MAX_TIMEOUT, RegistryBuilder};
use crate::hooks::{
    DEFAULT_PRIORITY, Executor, ExecutorKind, HookEntry, HookPoint, Operation, Phase,
    RemoteExecutor,
};
use crate::outbound::{self, ExtraRoots};

/// How long a hook executor may run when hooks.json does not say.
pub const DEFAULT_HOOK_TIMEOUT: Duration = Duration::from_millis(1000);

/// Loads plugins folders. Holds what every load shares: the Wasm runtime and
/// the HTTP client remote executors use.
#[derive(Clone)]
pub struct PluginLoader {
    runtime: WasmRuntime,
    http: reqwest::Client,
    embedded_builtin: bool,
}

/// The result of a load: the registry to serve and the report to show.
pub struct Loaded {
    pub registry: CommandRegistry,
    pub report: LoadReport,
}

/// A plugin whose plugin.json was accepted.
struct Candidate {
    root: PluginRoot,
    manifest: PluginManifest,
    identity: Arc<PluginIdentity>,
    report: PluginReport,
}

impl PluginLoader {
    pub fn new(runtime: WasmRuntime) -> Self {
        PluginLoader {
            runtime,
            http: http_client(&ExtraRoots::default()),
            embedded_builtin: true,
        }
    }

    /// Trust `extra_roots` (on top of the system's) for remote executors
    /// served over https.
    pub fn with_extra_roots(mut self, extra_roots: &ExtraRoots) -> Self {
        self.http = http_client(extra_roots);
        self
    }

    /// Whether to fall back to the built-in plugin compiled into the binary
    /// when the folder has none (default: yes).
    pub fn with_embedded_builtin(mut self, enabled: bool) -> Self {
        self.embedded_builtin = enabled;
        self
    }

    /// Load every plugin under `dir` (if given) on top of `builder`, which
    /// may already hold commands and hooks registered by code.
    pub fn load(&self, dir: Option<&Path>, mut builder: RegistryBuilder) -> Loaded {
        let mut report = LoadReport::default();
        let mut candidates = Vec::new();
        if let Some(dir) = dir {
            match std::fs::read_dir(dir) {
                Ok(entries) => {
                    let mut paths: Vec<_> = entries
                        .filter_map(Result::ok)
                        .map(|entry| entry.path())
                        .filter(|path| path.is_dir() && !is_hidden(path))
                        .collect();
                    paths.sort();
                    for path in paths {
                        match read_candidate(&path) {
                            Ok(candidate) => candidates.push(candidate),
                            Err(rejected) => report.plugins.push(*rejected),
                        }
                    }
                }
                Err(err) => report.plugins.push(PluginReport::rejected(
                    &dir.display().to_string(),
                    PluginOrigin::Directory(dir.to_owned()),
                    format!("the plugins folder cannot be read: {err}"),
                )),
            }
        }
        if self.embedded_builtin && !candidates.iter().any(|c| c.manifest.name == BUILTIN) {
            match embedded_candidate() {
                Ok(candidate) => candidates.push(candidate),
                Err(rejected) => report.plugins.push(*rejected),
            }
        }
        // The built-in plugin loads first; the rest in folder-name order.
        candidates.sort_by_key(|candidate| candidate.manifest.name != BUILTIN);
        let mut candidates = reject_duplicate_names(candidates, &mut report);

        // Declare every command before any hook, so a plugin may serve or
        // override a command another plugin declares, whatever their order.
        for candidate in &mut candidates {
            declare_commands(candidate, &mut builder);
        }
        for candidate in &mut candidates {
            self.add_hooks(candidate, &mut builder);
        }
        let (registry, bodiless) = builder.freeze();
        for command in bodiless {
            let name = &command.spec.name;
            if let Some(candidate) = candidates
                .iter_mut()
                .find(|c| c.manifest.name == command.origin)
            {
                candidate.report.skip(
                    format!("command /{name}"),
                    "no command.invoked.in hook serves it, so it is not registered",
                );
                if let PluginStatus::Loaded { commands, .. } = &mut candidate.report.status {
                    commands.retain(|declared| declared != name);
                }
            }
        }
        report
            .plugins
            .extend(candidates.into_iter().map(|candidate| candidate.report));
        report.plugins.sort_by_key(|plugin| {
            (
                plugin.name != BUILTIN || plugin.is_rejected(),
                plugin.origin.to_string(),
            )
        });
        Loaded { registry, report }
    }

    fn add_hooks(&self, candidate: &mut Candidate, builder: &mut RegistryBuilder) {
        let text = match candidate.root.read_manifest("hooks.json") {
            Ok(Some(text)) => text,
            Ok(None) => return,
            Err(reason) => return candidate.report.skip("hooks.json", reason),
        };
        let entries = match manifest::parse_hooks(&text) {
            Ok(entries) => entries,
            Err(reason) => return candidate.report.skip("hooks.json", reason),
        };
        for (label, reason) in entries.invalid {
            candidate.report.skip(format!("hook `{label}`"), reason);
        }
        let mut components = ComponentSet::default();
        let mut names = Vec::new();
        for declaration in entries.valid {
            let what = format!("hook `{}`", declaration.name);
            if names.contains(&declaration.name) {
                candidate
                    .report
                    .skip(what, "another hook of this plugin has the same name");
                continue;
            }
            let entry = self.hook_entry(candidate, &declaration, builder, &mut components);
            match entry.and_then(|entry| builder.add_hook(entry).map_err(|err| err.to_string())) {
                Ok(()) => {
                    offer_completion(&declaration, &components, builder);
                    names.push(declaration.name.clone());
                    if let PluginStatus::Loaded { hooks, .. } = &mut candidate.report.status {
                        hooks.push(declaration.name);
                    }
                }
                Err(reason) => candidate.report.skip(what, reason),
            }
        }
    }

    fn hook_entry(
        &self,
        candidate: &Candidate,
        declaration: &HookDeclaration,
        builder: &RegistryBuilder,
        components: &mut ComponentSet,
    ) -> Result<HookEntry, String> {
        let point: HookPoint = declaration.point.parse().map_err(|err| format!("{err}"))?;
        if let Some(command) = &declaration.command
            && !builder.is_declared(command)
        {
            return Err(format!(
                "it is for command /{command}, which no plugin declares"
            ));
        }
        let timeout = hook_timeout(declaration, builder)?;
        let is_body = point == HookPoint::new(Operation::CommandInvoked, Phase::In)
            && declaration.command.is_some();
        let source = declaration.source()?;
        let source_name = match &source {
            ExecutorSource::Component(path) => path.clone(),
            ExecutorSource::Remote(url) => url.clone(),
        };
        let (kind, executor): (ExecutorKind, Arc<dyn Executor>) = match source {
            ExecutorSource::Component(path) => {
                let component = components.get(self, candidate, &path)?;
                let executor: Arc<dyn Executor> = if is_body && component.exports_command() {
                    let body = WasmCommandBody::new(component, timeout);
                    Arc::new(BodyExecutor::new(Arc::new(body)))
                } else if component.exports_hook() {
                    Arc::new(WasmHookExecutor::new(component, timeout))
                } else {
                    return Err(format!(
                        "component `{path}` exports no {} for {point}",
                        if is_body {
                            "command body or hook executor"
                        } else {
                            "hook executor"
                        }
                    ));
                };
                (ExecutorKind::Wasm, executor)
            }
            ExecutorSource::Remote(url) => {
                let url = parse_remote_url(&url)?;
                let remote = RemoteExecutor::new(self.http.clone(), url, timeout);
                (ExecutorKind::Remote, Arc::new(remote))
            }
        };
        Ok(HookEntry {
            name: declaration.name.clone(),
            origin: candidate.manifest.name.clone(),
            point,
            command: declaration.command.clone(),
            priority: declaration.priority.unwrap_or(DEFAULT_PRIORITY),
            kind,
            source: source_name,
            executor,
        })
    }
}

/// A command body's component that also exports `completion` completes
/// that command's arguments (the lowest-priority body's, like the body).
fn offer_completion(
    declaration: &HookDeclaration,
    components: &ComponentSet,
    builder: &mut RegistryBuilder,
) {
    let (Some(command), Some(path)) = (&declaration.command, &declaration.component) else {
        return;
    };
    let is_body = declaration.point.parse::<HookPoint>().ok()
        == Some(HookPoint::new(Operation::CommandInvoked, Phase::In));
    if let (true, Some(Ok(component))) = (is_body, components.loaded.get(path))
        && component.exports_completion()
    {
        let completer = WasmCompleter::new(component.clone(), DEFAULT_HOOK_TIMEOUT);
        let priority = declaration.priority.unwrap_or(DEFAULT_PRIORITY);
        builder.set_completer(command, priority, Arc::new(completer));
    }
}

/// Components of one plugin, each compiled once however many hooks name it.
#[derive(Default)]
struct ComponentSet {
    loaded: HashMap<String, Result<Arc<PluginComponent>, String>>,
}

impl ComponentSet {
    fn get(
        &mut self,
        loader: &PluginLoader,
        candidate: &Candidate,
        path: &str,
    ) -> Result<Arc<PluginComponent>, String> {
        self.loaded
            .entry(path.to_owned())
            .or_insert_with(|| {
                let bytes = candidate.root.read_component(path)?;
                PluginComponent::load(&loader.runtime, candidate.identity.clone(), &bytes)
                    .map(Arc::new)
                    .map_err(|err| format!("component `{path}` {err}"))
            })
            .clone()
    }
}

fn read_candidate(dir: &Path) -> Result<Candidate, Box<PluginReport>> {
    let dir_name = dir
        .file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_default();
    let origin = PluginOrigin::Directory(dir.to_owned());
    let reject =
        |reason: String| Box::new(PluginReport::rejected(&dir_name, origin.clone(), reason));
    let canonical = dir
        .canonicalize()
        .map_err(|err| reject(format!("the plugin directory cannot be resolved: {err}")))?;
    let root = PluginRoot::Directory(canonical);
    let text = match root.read_manifest("plugin.json") {
        Ok(Some(text)) => text,
        Ok(None) => return Err(reject(ManifestError::Missing.to_string())),
        Err(reason) => return Err(reject(ManifestError::Unreadable(reason).to_string())),
    };
    let manifest = PluginManifest::parse(&text).map_err(|err| reject(err.to_string()))?;
    Ok(candidate(root, manifest, origin))
}

fn embedded_candidate() -> Result<Candidate, Box<PluginReport>> {
    let origin = PluginOrigin::Embedded;
    let manifest = PluginManifest::parse(super::embedded::PLUGIN_JSON).map_err(|err| {
        Box::new(PluginReport::rejected(
            BUILTIN,
            origin.clone(),
            err.to_string(),
        ))
    })?;
    Ok(candidate(PluginRoot::Embedded, manifest, origin))
}

fn candidate(root: PluginRoot, manifest: PluginManifest, origin: PluginOrigin) -> Candidate {
    let identity = Arc::new(PluginIdentity {
        name: manifest.name.clone(),
        config: manifest.config.clone(),
        memory_bytes: manifest.limits.memory_bytes(),
        instances: manifest.instances.policy(),
    });
    let report = PluginReport::loaded(&manifest.name, origin, manifest.version.to_string());
    Candidate {
        root,
        manifest,
        identity,
        report,
    }
}

/// Two directories claiming one plugin name: the first (in load order)
/// keeps it, the other is rejected and says which one won.
fn reject_duplicate_names(candidates: Vec<Candidate>, report: &mut LoadReport) -> Vec<Candidate> {
    let mut kept: Vec<Candidate> = Vec::with_capacity(candidates.len());
    for candidate in candidates {
        if let Some(first) = kept
            .iter()
            .find(|k| k.manifest.name == candidate.manifest.name)
        {
            report.plugins.push(PluginReport::rejected(
                &candidate.manifest.name,
                candidate.report.origin.clone(),
                format!(
                    "plugin name `{}` is already taken by {}",
                    candidate.manifest.name, first.report.origin
                ),
            ));
        } else {
            kept.push(candidate);
        }
    }
    kept
}

fn declare_commands(candidate: &mut Candidate, builder: &mut RegistryBuilder) {
    let text = match candidate.root.read_manifest("commands.json") {
        Ok(Some(text)) => text,
        Ok(None) => return,
        Err(reason) => return candidate.report.skip("commands.json", reason),
    };
    let entries = match manifest::parse_commands(&text) {
        Ok(entries) => entries,
        Err(reason) => return candidate.report.skip("commands.json", reason),
    };
    for (label, reason) in entries.invalid {
        candidate.report.skip(format!("command `{label}`"), reason);
    }
    for spec in entries.valid {
        let name = spec.name.clone();
        match builder.declare(spec, &candidate.manifest.name) {
            Ok(()) => {
                if let PluginStatus::Loaded { commands, .. } = &mut candidate.report.status {
                    commands.push(name);
                }
            }
            Err(err) => candidate.report.skip(format!("command /{name}"), err),
        }
    }
}

/// hooks.json's `timeout_ms`, else the served command's, else the default.
fn hook_timeout(
    declaration: &HookDeclaration,
    builder: &RegistryBuilder,
) -> Result<Duration, String> {
    let timeout = match (declaration.timeout_ms, &declaration.command) {
        (Some(ms), _) => Duration::from_millis(ms),
        (None, Some(command)) => builder.timeout_of(command).unwrap_or(DEFAULT_HOOK_TIMEOUT),
        (None, None) => DEFAULT_HOOK_TIMEOUT,
    };
    if timeout.is_zero() || timeout > MAX_TIMEOUT {
        return Err(format!(
            "timeout_ms must be between 1 and {}",
            MAX_TIMEOUT.as_millis()
        ));
    }
    Ok(timeout)
}

fn parse_remote_url(url: &str) -> Result<reqwest::Url, String> {
    let parsed =
        reqwest::Url::parse(url).map_err(|err| format!("url `{url}` is invalid: {err}"))?;
    if !matches!(parsed.scheme(), "http" | "https") {
        return Err(format!("url `{url}` must be http or https"));
    }
    Ok(parsed)
}

fn is_hidden(path: &Path) -> bool {
    path.file_name()
        .is_some_and(|name| name.to_string_lossy().starts_with('.'))
}

/// The client remote executors share; each call sets its own timeout.
fn http_client(extra_roots: &ExtraRoots) -> reqwest::Client {
    outbound::client_builder(extra_roots)
        .build()
        .unwrap_or_else(|error| {
            tracing::error!(%error, "cannot configure the remote executors' HTTP client; using the defaults");
            reqwest::Client::new()
        })
}
