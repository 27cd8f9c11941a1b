//! Loading a plugins folder into a frozen [`CommandRegistry`] and a
//! [`LoadReport`].
//!
//! The rules: a plugin whose plugin.json is missing or invalid is rejected
//! whole; a bad commands.json, tools.json or hooks.json entry, or a bad
//! component, is skipped with its reason and the rest loads; paths stay
//! inside the plugin root; a command or tool name two plugins declare is
//! reported and the first declaration kept, never silently shadowed. The
//! built-in plugin always loads first. Every file is read through
//! `root.rs`'s safe path, within its size cap; a plugin declares at most
//! `[plugins.declarations]` commands, tools and hooks; it gets the
//! capabilities it asks for only as far as the operator grants them
//! (`grants.rs`), network requests rule by rule (`network.rs`).

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use super::embedded::BUILTIN;
use super::grants::{Capability, Decision, Grants};
use super::manifest::{
    self, ExecutorSource, HookDeclaration, HookFilter, ManifestError, PluginManifest,
};
use super::report::{LoadReport, PluginOrigin, PluginReport, PluginStatus};
use super::root::{FileKind, PluginRoot};
use super::settings::{DeclarationLimits, FileLimits, NetworkLimits, PluginsConfig};
use super::wasm::{
    NetworkAccess, PluginComponent, PluginIdentity, Reuse, SANDBOX_EPOCH_SECS, Sandbox,
    WasmCommandBody, WasmCompleter, WasmHookExecutor, WasmRuntime, WasmToolBody, plugin_client,
};
use crate::commands::{BodyExecutor, CommandRegistry, MAX_TIMEOUT, RegistryBuilder};
use crate::hooks::{
    DEFAULT_PRIORITY, Executor, ExecutorKind, HookEntry, HookPoint, Operation, Phase,
    RemoteExecutor,
};
use crate::outbound::{self, ExtraRoots};
use crate::tools::{INTRINSIC_TOOLS, ToolBodyExecutor};

/// How long a hook executor may run when hooks.json does not say.
pub const DEFAULT_HOOK_TIMEOUT: Duration = Duration::from_millis(1000);

/// Loads plugins folders. Holds what every load shares: the Wasm runtime and
/// the HTTP client remote executors use.
#[derive(Clone)]
pub struct PluginLoader {
    runtime: WasmRuntime,
    http: reqwest::Client,
    /// The client granted plugins' wasi:http requests go out through, or
    /// why there is none (then no plugin gets the network).
    plugin_http: Result<reqwest::Client, String>,
    embedded_builtin: bool,
    grants: Grants,
    files: FileLimits,
    declarations: DeclarationLimits,
    network: NetworkLimits,
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
            plugin_http: plugin_client(&ExtraRoots::default()),
            embedded_builtin: true,
            grants: Grants::default(),
            files: FileLimits::default(),
            declarations: DeclarationLimits::default(),
            network: NetworkLimits::default(),
        }
    }

    /// Apply `[plugins]`: the operator's grants and the file and
    /// declaration caps. (Instance and log limits belong to the runtime:
    /// [`WasmRuntime::with_limits`].)
    pub fn with_settings(mut self, settings: &PluginsConfig) -> Self {
        self.grants = settings.grants();
        self.files = settings.files;
        self.declarations = settings.declarations;
        self.network = settings.network;
        self
    }

    /// The largest file the loader reads, of any kind.
    pub(crate) fn largest_file(&self) -> u64 {
        let files = &self.files;
        files
            .plugin_json_bytes
            .max(files.commands_json_bytes)
            .max(files.tools_json_bytes)
            .max(files.hooks_json_bytes)
            .max(files.component_bytes)
    }

    /// Grant capabilities (default: none).
    pub fn with_grants(mut self, grants: Grants) -> Self {
        self.grants = grants;
        self
    }

    /// Trust `extra_roots` (on top of the system's) for remote executors
    /// served over https.
    pub fn with_extra_roots(mut self, extra_roots: &ExtraRoots) -> Self {
        self.http = http_client(extra_roots);
        self.plugin_http = plugin_client(extra_roots);
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
                        match self.read_candidate(&path) {
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
            match self.embedded_candidate() {
                Ok(candidate) => candidates.push(candidate),
                Err(rejected) => report.plugins.push(*rejected),
            }
        }
        // The built-in plugin loads first; the rest in folder-name order.
        candidates.sort_by_key(|candidate| candidate.manifest.name != BUILTIN);
        let mut candidates = reject_duplicate_names(candidates, &mut report);

        // Declare every command and tool before any hook, so a plugin may
        // serve or override one another plugin declares, whatever their order.
        for candidate in &mut candidates {
            self.declare_commands(candidate, &mut builder);
            self.declare_tools(candidate, &mut builder);
        }
        for candidate in &mut candidates {
            self.add_hooks(candidate, &mut builder);
        }
        let (registry, bodiless) = builder.freeze();
        for tool in registry.unserved_tools() {
            let name = &tool.declaration.name;
            if let Some(candidate) = candidates
                .iter_mut()
                .find(|c| c.manifest.name == tool.origin)
            {
                candidate.report.skip(
                    format!("tool `{name}`"),
                    "no tool.invoked.in hook serves it, so the model is not offered it",
                );
                if let PluginStatus::Loaded { tools, .. } = &mut candidate.report.status {
                    tools.retain(|declared| declared != name);
                }
            }
        }
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
        let text = match candidate
            .root
            .read_manifest(FileKind::HooksJson, &self.files)
        {
            Ok(Some(text)) => text,
            Ok(None) => return,
            Err(reason) => return candidate.report.skip("hooks.json", reason),
        };
        let entries = match manifest::parse_hooks(&text).and_then(|entries| {
            let allowed = self.declarations.hooks;
            manifest::check_entry_count(entries.len(), allowed, "hooks", "hooks")?;
            Ok(entries)
        }) {
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
        let filter = declaration.filter(point)?;
        match &filter {
            HookFilter::Command(command)
                if point.operation == Operation::CommandInvoked
                    && !builder.is_declared(command) =>
            {
                return Err(format!(
                    "it is for command /{command}, which no plugin declares"
                ));
            }
            HookFilter::Tool(tool)
                if !builder.is_tool_declared(tool) && !INTRINSIC_TOOLS.contains(&tool.as_str()) =>
            {
                return Err(format!("it is for tool `{tool}`, which no plugin declares"));
            }
            _ => {}
        }
        let timeout = hook_timeout(declaration, &filter, builder)?;
        let is_command_body = point == HookPoint::new(Operation::CommandInvoked, Phase::In)
            && matches!(filter, HookFilter::Command(_));
        let is_tool_body = point == HookPoint::new(Operation::ToolInvoked, Phase::In)
            && matches!(filter, HookFilter::Tool(_));
        let source = declaration.source()?;
        let source_name = match &source {
            ExecutorSource::Component(path) => path.clone(),
            ExecutorSource::Remote(url) => url.clone(),
        };
        let (kind, executor): (ExecutorKind, Arc<dyn Executor>) = match source {
            ExecutorSource::Component(path) => {
                let component = components.get(self, candidate, &path)?;
                let executor: Arc<dyn Executor> = if is_command_body && component.exports_command()
                {
                    let body = WasmCommandBody::new(component, timeout);
                    Arc::new(BodyExecutor::new(Arc::new(body)))
                } else if is_tool_body && component.exports_tool() {
                    let body = WasmToolBody::new(component, timeout);
                    Arc::new(ToolBodyExecutor::new(Arc::new(body)))
                } else if component.exports_hook() {
                    Arc::new(WasmHookExecutor::new(component, timeout))
                } else {
                    let wanted = if is_command_body {
                        "command body or hook executor"
                    } else if is_tool_body {
                        "tool body (contract 0.2.0) or hook executor"
                    } else {
                        "hook executor"
                    };
                    return Err(format!(
                        "component `{path}` (contract {}) exports no {wanted} for {point}",
                        component.contract_version()
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
        let filter = match filter {
            HookFilter::None => None,
            HookFilter::Command(name) | HookFilter::Tool(name) => Some(name),
        };
        Ok(HookEntry {
            name: declaration.name.clone(),
            origin: candidate.manifest.name.clone(),
            point,
            command: filter,
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
                let bytes = candidate.root.read_component(path, &loader.files)?;
                PluginComponent::load(&loader.runtime, candidate.identity.clone(), path, &bytes)
                    .map(Arc::new)
                    .map_err(|err| format!("component `{path}` {err}"))
            })
            .clone()
    }
}

impl PluginLoader {
    fn read_candidate(&self, dir: &Path) -> Result<Candidate, Box<PluginReport>> {
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
        let text = match root.read_manifest(FileKind::PluginJson, &self.files) {
            Ok(Some(text)) => text,
            Ok(None) => return Err(reject(ManifestError::Missing.to_string())),
            Err(reason) => return Err(reject(ManifestError::Unreadable(reason).to_string())),
        };
        let manifest = PluginManifest::parse(&text).map_err(|err| reject(err.to_string()))?;
        Ok(self.candidate(root, manifest, origin))
    }

    fn embedded_candidate(&self) -> Result<Candidate, Box<PluginReport>> {
        let origin = PluginOrigin::Embedded;
        let manifest = PluginManifest::parse(super::embedded::PLUGIN_JSON).map_err(|err| {
            Box::new(PluginReport::rejected(
                BUILTIN,
                origin.clone(),
                err.to_string(),
            ))
        })?;
        Ok(self.candidate(PluginRoot::Embedded, manifest, origin))
    }

    /// A plugin about to load: what it gets of what it asks for, and the
    /// identity its instances run with.
    fn candidate(
        &self,
        root: PluginRoot,
        manifest: PluginManifest,
        origin: PluginOrigin,
    ) -> Candidate {
        let name = &manifest.name;
        let mut decision = self.grants.decide(
            name,
            &manifest.requested_capabilities(),
            &manifest.capabilities.network,
        );
        let mut notes = Vec::new();
        let network = if decision.has(Capability::Network) {
            match &self.plugin_http {
                Ok(client) => Some(Arc::new(NetworkAccess::new(
                    name,
                    decision.network.clone(),
                    client.clone(),
                    self.network,
                ))),
                Err(why) => {
                    notes.push(format!(
                        "network granted but not given: the plugins' HTTP client cannot be set up ({why})"
                    ));
                    decision.granted.retain(|c| *c != Capability::Network);
                    decision.denied.push(Capability::Network);
                    decision.network.clear();
                    None
                }
            }
        } else {
            None
        };
        let mut instances = manifest.instances.policy();
        if instances.reuse == Reuse::Stateless && !decision.has(Capability::ReuseAcrossTasks) {
            instances.reuse = Reuse::PerTask;
        }
        let identity = Arc::new(PluginIdentity {
            name: name.clone(),
            config: manifest.config.clone(),
            memory_bytes: manifest.limits.memory_bytes(),
            instances,
            sandbox: Sandbox {
                real_clocks: decision.has(Capability::Clocks),
                real_random: decision.has(Capability::Random),
            },
            network,
            share: self.runtime.capacity.share(name),
        });
        let mut report = PluginReport::loaded(name, origin, manifest.version.to_string());
        report.notes = self.notes(name, &decision);
        report.notes.extend(notes);
        report.capabilities = decision;
        Candidate {
            root,
            manifest,
            identity,
            report,
        }
    }

    /// What the operator should know about `plugin`'s capabilities: each one
    /// it asked for and was not granted (how it runs instead, and how to
    /// grant it), and each one granted that it does not ask for.
    fn notes(&self, plugin: &str, decision: &Decision) -> Vec<String> {
        let mut notes: Vec<String> = decision
            .denied
            .iter()
            .map(|capability| {
                let instead = match capability {
                    Capability::Clocks => format!(
                        "it reads the sandbox's virtual clock (wall time {SANDBOX_EPOCH_SECS} s after the Unix epoch, 2000-01-01, plus the time it has waited)"
                    ),
                    Capability::Random => {
                        "it reads random bytes from streams seeded by its name (the same in every fresh instance)".to_owned()
                    }
                    Capability::ReuseAcrossTasks => {
                        "its `stateless` instances run `per-task` instead".to_owned()
                    }
                    Capability::Network => {
                        return format!(
                            "network not granted: it reaches no host, and its components that import wasi:http do not load; grant it with [plugins.grants.{plugin}] network = [{}]",
                            quoted_rules(&decision.asked_network)
                        );
                    }
                };
                format!(
                    "{capability} not granted: {instead}; grant it with [plugins.grants.{plugin}] {capability} = true"
                )
            })
            .collect();
        // Network granted in part: say which rules reach nothing.
        if decision.has(Capability::Network) && !self.grants.all {
            let granted = self
                .grants
                .per_plugin
                .get(plugin)
                .map(|grant| grant.network.clone())
                .unwrap_or_default();
            for asked in &decision.asked_network {
                if super::network::effective(std::slice::from_ref(asked), &granted).is_empty() {
                    notes.push(format!(
                        "network rule `{asked}` not granted: its requests are refused; grant it with [plugins.grants.{plugin}] network = [\"{asked}\"]"
                    ));
                }
            }
        }
        if let Some(grant) = self.grants.per_plugin.get(plugin) {
            for capability in Capability::ALL {
                if grant.gives(capability) && !decision.asked.contains(&capability) {
                    notes.push(format!(
                        "[plugins.grants.{plugin}] grants {capability}, which the plugin does not ask for, so it does not get it"
                    ));
                }
            }
        }
        notes
    }

    fn declare_commands(&self, candidate: &mut Candidate, builder: &mut RegistryBuilder) {
        let text = match candidate
            .root
            .read_manifest(FileKind::CommandsJson, &self.files)
        {
            Ok(Some(text)) => text,
            Ok(None) => return,
            Err(reason) => return candidate.report.skip("commands.json", reason),
        };
        let entries = match manifest::parse_commands(&text).and_then(|entries| {
            let allowed = self.declarations.commands;
            manifest::check_entry_count(entries.len(), allowed, "commands", "commands")?;
            Ok(entries)
        }) {
            Ok(entries) => entries,
            Err(reason) => return candidate.report.skip("commands.json", reason),
        };
        for (label, reason) in entries.invalid {
            candidate.report.skip(format!("command `{label}`"), reason);
        }
        for spec in entries.valid {
            let name = spec.name.clone();
            let declared = manifest::check_command_size(&spec, &self.declarations).and_then(|()| {
                builder
                    .declare(spec, &candidate.manifest.name)
                    .map_err(|err| err.to_string())
            });
            match declared {
                Ok(()) => {
                    if let PluginStatus::Loaded { commands, .. } = &mut candidate.report.status {
                        commands.push(name);
                    }
                }
                Err(err) => candidate.report.skip(format!("command /{name}"), err),
            }
        }
    }
}

impl PluginLoader {
    fn declare_tools(&self, candidate: &mut Candidate, builder: &mut RegistryBuilder) {
        let text = match candidate
            .root
            .read_manifest(FileKind::ToolsJson, &self.files)
        {
            Ok(Some(text)) => text,
            Ok(None) => return,
            Err(reason) => return candidate.report.skip("tools.json", reason),
        };
        let entries = match manifest::parse_tools(&text).and_then(|entries| {
            let allowed = self.declarations.tools;
            manifest::check_entry_count(entries.len(), allowed, "tools", "tools")?;
            Ok(entries)
        }) {
            Ok(entries) => entries,
            Err(reason) => return candidate.report.skip("tools.json", reason),
        };
        for (label, reason) in entries.invalid {
            candidate.report.skip(format!("tool `{label}`"), reason);
        }
        for declaration in entries.valid {
            let name = declaration.name.clone();
            let declared =
                manifest::check_tool_size(&declaration, &self.declarations).and_then(|()| {
                    builder
                        .declare_tool(declaration, &candidate.manifest.name)
                        .map_err(|err| err.to_string())
                });
            match declared {
                Ok(()) => {
                    if let PluginStatus::Loaded { tools, .. } = &mut candidate.report.status {
                        tools.push(name);
                    }
                }
                Err(err) => candidate.report.skip(format!("tool `{name}`"), err),
            }
        }
    }
}

/// Rules as a TOML array's items: `"GET https://a.example", "..."`.
fn quoted_rules(rules: &[super::network::NetworkRule]) -> String {
    rules
        .iter()
        .map(|rule| format!("\"{rule}\""))
        .collect::<Vec<_>>()
        .join(", ")
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

/// hooks.json's `timeout_ms`, else the served command's or tool's, else
/// the default.
fn hook_timeout(
    declaration: &HookDeclaration,
    filter: &HookFilter,
    builder: &RegistryBuilder,
) -> Result<Duration, String> {
    let (timeout, most) = match (declaration.timeout_ms, filter) {
        (Some(ms), HookFilter::Tool(_)) => (Duration::from_millis(ms), MAX_TOOL_TIMEOUT),
        (Some(ms), _) => (Duration::from_millis(ms), MAX_TIMEOUT),
        (None, HookFilter::Command(command)) => (
            builder.timeout_of(command).unwrap_or(DEFAULT_HOOK_TIMEOUT),
            MAX_TIMEOUT,
        ),
        (None, HookFilter::Tool(tool)) => (
            builder
                .tool_timeout_of(tool)
                .unwrap_or(DEFAULT_HOOK_TIMEOUT),
            MAX_TOOL_TIMEOUT,
        ),
        (None, HookFilter::None) => (DEFAULT_HOOK_TIMEOUT, MAX_TIMEOUT),
    };
    if timeout.is_zero() || timeout > most {
        return Err(format!(
            "timeout_ms must be between 1 and {}",
            most.as_millis()
        ));
    }
    Ok(timeout)
}

/// The longest a tool's executor may run: as long as a tool call may.
const MAX_TOOL_TIMEOUT: Duration = Duration::from_millis(crate::tools::MAX_TOOL_TIMEOUT_MS);

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
