//! The command registry: declared commands plus the hook chains that run
//! them, frozen before any task runs.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde::Deserialize;
use serde_json::Value;

use super::body::{BodyExecutor, CommandBody};
use super::{
    CommandContext, CommandError, CommandResult, CommandSpec, Completer, InvalidSpec,
    InvokedCommand, Outcome, Suggestion,
};
use crate::domain::{Participant, Role, TaskView};
use crate::hooks::{
    AbortReason, ChainError, DEFAULT_PRIORITY, ExecutorKind, HookCall, HookChains, HookEntry,
    HookPoint, Operation, Phase, Trace,
};
use crate::tools::{ArgumentSchema, InvalidTool, ToolDeclaration};

/// A command and who declared it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RegisteredCommand {
    pub spec: CommandSpec,
    /// The plugin that declared it, or `native`.
    pub origin: String,
}

/// A tool and who declared it.
#[derive(Clone, Debug)]
pub struct RegisteredTool {
    pub declaration: ToolDeclaration,
    /// The plugin (or MCP server, or delegate) that declared it, or `native`.
    pub origin: String,
    /// `declaration.input_schema`, compiled: every call's arguments are
    /// checked against it before the body runs.
    pub schema: ArgumentSchema,
}

/// Why something could not be registered.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RegistryError {
    #[error(transparent)]
    Invalid(#[from] InvalidSpec),
    /// Two origins declare one name: reported, never silently shadowed.
    #[error(
        "command /{name} is declared by both `{first}` and `{second}`; `{second}`'s declaration is ignored"
    )]
    Duplicate {
        name: String,
        first: String,
        second: String,
    },
    #[error(transparent)]
    InvalidTool(#[from] InvalidTool),
    /// Two origins declare one tool: reported, never silently shadowed.
    #[error(
        "tool `{name}` is declared by both `{first}` and `{second}`; `{second}`'s declaration is ignored"
    )]
    DuplicateTool {
        name: String,
        first: String,
        second: String,
    },
    #[error("hook `{hook}` is for command /{command}, which no plugin declares")]
    UnknownCommand { hook: String, command: String },
    #[error(
        "hook `{hook}` names a command but its point `{point}` is neither command.invoked nor tool.invoked"
    )]
    CommandFilterOutsideCommands { hook: String, point: String },
    /// The point exists but the harness never runs executors there.
    #[error(
        "hook `{hook}` is at `{point}`, where no executor ever runs: {operation} runs executors at {phases}"
    )]
    PhaseNeverRuns {
        hook: String,
        point: String,
        operation: String,
        phases: String,
    },
}

/// Collects declarations and executors; [`RegistryBuilder::freeze`] makes the
/// immutable registry tasks use.
#[derive(Default)]
pub struct RegistryBuilder {
    commands: BTreeMap<String, RegisteredCommand>,
    tools: BTreeMap<String, RegisteredTool>,
    hooks: Vec<HookEntry>,
    /// Per command: the completer of the lowest-priority body offering one.
    completers: BTreeMap<String, (i32, Arc<dyn Completer>)>,
}

impl RegistryBuilder {
    /// Declare a command whose body comes from a hook entry.
    pub fn declare(&mut self, spec: CommandSpec, origin: &str) -> Result<(), RegistryError> {
        spec.validate()?;
        if let Some(existing) = self.commands.get(&spec.name) {
            return Err(RegistryError::Duplicate {
                name: spec.name,
                first: existing.origin.clone(),
                second: origin.to_owned(),
            });
        }
        let registered = RegisteredCommand {
            spec,
            origin: origin.to_owned(),
        };
        self.commands
            .insert(registered.spec.name.clone(), registered);
        Ok(())
    }

    /// Declare a tool whose body is a `tool.invoked.in` executor filtered to
    /// its name.
    pub fn declare_tool(
        &mut self,
        declaration: ToolDeclaration,
        origin: &str,
    ) -> Result<(), RegistryError> {
        declaration.validate()?;
        if let Some(existing) = self.tools.get(&declaration.name) {
            return Err(RegistryError::DuplicateTool {
                name: declaration.name,
                first: existing.origin.clone(),
                second: origin.to_owned(),
            });
        }
        let schema =
            ArgumentSchema::compile(&declaration.input_schema).map_err(|problem| InvalidTool {
                name: declaration.name.clone(),
                problem,
            })?;
        let registered = RegisteredTool {
            declaration,
            origin: origin.to_owned(),
            schema,
        };
        self.tools
            .insert(registered.declaration.name.clone(), registered);
        Ok(())
    }

    /// Register a command with a body written in Rust, at the default body
    /// priority: the programmatic form of commands.json + hooks.json.
    pub fn register(
        &mut self,
        spec: CommandSpec,
        body: Arc<dyn CommandBody>,
    ) -> Result<(), RegistryError> {
        let name = spec.name.clone();
        self.declare(spec, "native")?;
        self.add_hook(HookEntry {
            name: format!("{name}-body"),
            origin: "native".into(),
            point: HookPoint::new(Operation::CommandInvoked, Phase::In),
            command: Some(name),
            priority: DEFAULT_PRIORITY,
            kind: ExecutorKind::Native,
            source: "native".into(),
            executor: Arc::new(BodyExecutor::new(body)),
        })
    }

    /// Add an executor. It must be at a point that runs, and one filtered
    /// to a command needs that command declared.
    pub fn add_hook(&mut self, entry: HookEntry) -> Result<(), RegistryError> {
        if !entry.point.runs() {
            let phases: Vec<String> = entry
                .point
                .operation
                .phases()
                .iter()
                .map(|phase| HookPoint::new(entry.point.operation, *phase).to_string())
                .collect();
            return Err(RegistryError::PhaseNeverRuns {
                hook: entry.qualified_name(),
                point: entry.point.to_string(),
                operation: entry.point.operation.as_str().to_owned(),
                phases: phases.join(", "),
            });
        }
        if let Some(command) = &entry.command {
            match entry.point.operation {
                // Filtered to a tool: the tool's body or policy.
                Operation::ToolInvoked => {
                    self.hooks.push(entry);
                    return Ok(());
                }
                Operation::CommandInvoked => {}
                _ => {
                    return Err(RegistryError::CommandFilterOutsideCommands {
                        hook: entry.qualified_name(),
                        point: entry.point.to_string(),
                    });
                }
            }
            if !self.commands.contains_key(command) {
                return Err(RegistryError::UnknownCommand {
                    hook: entry.qualified_name(),
                    command: command.clone(),
                });
            }
        }
        self.hooks.push(entry);
        Ok(())
    }

    /// Complete `command`'s arguments with `completer`, offered by a body at
    /// `priority`: like bodies, the lowest priority wins (ties: first set).
    pub fn set_completer(&mut self, command: &str, priority: i32, completer: Arc<dyn Completer>) {
        if !self.commands.contains_key(command) {
            return;
        }
        match self.completers.get(command) {
            Some((existing, _)) if *existing <= priority => {}
            _ => {
                self.completers
                    .insert(command.to_owned(), (priority, completer));
            }
        }
    }

    pub fn is_declared(&self, command: &str) -> bool {
        self.commands.contains_key(command)
    }

    /// Whether a tool called `name` is declared (by any origin so far).
    pub fn is_tool_declared(&self, name: &str) -> bool {
        self.tools.contains_key(name)
    }

    /// The declared timeout of tool `name`.
    pub fn tool_timeout_of(&self, name: &str) -> Option<std::time::Duration> {
        self.tools
            .get(name)
            .map(|tool| std::time::Duration::from_millis(tool.declaration.timeout_ms))
    }

    /// The declared body timeout of `command`.
    pub fn timeout_of(&self, command: &str) -> Option<std::time::Duration> {
        self.commands.get(command).map(|c| c.spec.timeout())
    }

    /// Freeze the registry. A declared command that no `command.invoked.in`
    /// executor serves would fail every time it is sent, so it is left out
    /// and returned for the load report: its text goes to the model instead.
    pub fn freeze(mut self) -> (CommandRegistry, Vec<RegisteredCommand>) {
        let body_point = HookPoint::new(Operation::CommandInvoked, Phase::In);
        let served = |name: &String| {
            self.hooks
                .iter()
                .any(|hook| hook.point == body_point && hook.command.as_ref() == Some(name))
        };
        let bodiless: Vec<String> = self
            .commands
            .keys()
            .filter(|name| !served(name))
            .cloned()
            .collect();
        let bodiless = bodiless
            .iter()
            .filter_map(|name| self.commands.remove(name))
            .collect();
        let commands = &self.commands;
        self.completers
            .retain(|command, _| commands.contains_key(command));
        // A tool no body serves would fail every call: it is not offered.
        let tool_body = HookPoint::new(Operation::ToolInvoked, Phase::In);
        let hooks = &self.hooks;
        let (tools, unserved_tools): (BTreeMap<_, _>, BTreeMap<_, _>) =
            self.tools.into_iter().partition(|(name, _)| {
                hooks
                    .iter()
                    .any(|hook| hook.point == tool_body && hook.command.as_ref() == Some(name))
            });
        let registry = CommandRegistry {
            commands: self.commands,
            tools,
            unserved_tools: unserved_tools.into_values().collect(),
            hooks: HookChains::new(self.hooks),
            completers: self
                .completers
                .into_iter()
                .map(|(command, (_, completer))| (command, completer))
                .collect(),
        };
        (registry, bodiless)
    }
}

/// A message that names a registered command.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CommandCall<'a> {
    pub name: &'a str,
    pub raw_arguments: &'a str,
}

/// Why a command produced no outcome, as the sender is told.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error, serde::Serialize, serde::Deserialize)]
pub enum CommandFailure {
    /// The arguments do not fit; the message includes the usage line.
    #[error("{0}")]
    Usage(String),
    /// A policy or the body refused the sender.
    #[error("{0}")]
    Refused(String),
    /// The body failed, trapped, timed out or ran out of memory.
    #[error("{0}")]
    Failed(String),
}

/// The frozen registry: every command and every hook chain of one
/// generation. Cheap to share; a reload builds a new one.
#[derive(Clone, Default)]
pub struct CommandRegistry {
    commands: BTreeMap<String, RegisteredCommand>,
    /// Tools with a body, by name.
    tools: BTreeMap<String, RegisteredTool>,
    /// Tools declared without a body, for the load report.
    unserved_tools: Vec<RegisteredTool>,
    hooks: HookChains,
    completers: BTreeMap<String, Arc<dyn Completer>>,
}

impl CommandRegistry {
    pub fn builder() -> RegistryBuilder {
        RegistryBuilder::default()
    }

    /// Every command, by name: what the agent card publishes.
    pub fn commands(&self) -> impl Iterator<Item = &RegisteredCommand> {
        self.commands.values()
    }

    pub fn get(&self, name: &str) -> Option<&RegisteredCommand> {
        self.commands.get(name)
    }

    pub fn hooks(&self) -> &HookChains {
        &self.hooks
    }

    /// Every tool with a body, by name.
    pub fn tools(&self) -> impl Iterator<Item = &RegisteredTool> {
        self.tools.values()
    }

    pub fn tool(&self, name: &str) -> Option<&RegisteredTool> {
        self.tools.get(name)
    }

    /// Tools declared without a `tool.invoked.in` body: not offered.
    pub fn unserved_tools(&self) -> &[RegisteredTool] {
        &self.unserved_tools
    }

    /// A message that is exactly `/<name> <arguments>` (or `/<name>`) for a
    /// registered name is a command; anything else, an unregistered `/name`
    /// included, is an ordinary message.
    pub fn parse<'a>(&self, text: &'a str) -> Option<CommandCall<'a>> {
        let rest = text.strip_prefix('/')?;
        let (name, raw_arguments) = match rest.find(char::is_whitespace) {
            Some(end) => (&rest[..end], rest[end..].trim()),
            None => (rest, ""),
        };
        self.commands.contains_key(name).then_some(CommandCall {
            name,
            raw_arguments,
        })
    }

    /// Suggestions for what follows `text`: registered command names while
    /// the first word is being typed (`/st` -> `/status`), then the
    /// command's own argument completion, if its body's plugin offers one.
    pub async fn complete(&self, text: &str) -> Result<Vec<Suggestion>, CommandFailure> {
        let Some(rest) = text.strip_prefix('/') else {
            return Ok(Vec::new());
        };
        let Some((name, partial)) = rest.split_once(char::is_whitespace) else {
            return Ok(self
                .commands
                .values()
                .filter(|command| command.spec.name.starts_with(rest))
                .map(|command| Suggestion {
                    value: format!("/{}", command.spec.name),
                    description: Some(command.spec.description.clone()),
                })
                .collect());
        };
        let Some(completer) = self.completers.get(name) else {
            return Ok(Vec::new());
        };
        completer
            .complete(name, partial.trim_start())
            .await
            .map_err(|fault| CommandFailure::Failed(format!("completing /{name} {fault}")))
    }

    /// Run a command through `command.invoked`: the sender's role checked by
    /// the host against the command's declared roles, arguments validated,
    /// then the `pre` chain (policy), the `in` chain (the body), the `post`
    /// chain.
    pub async fn invoke(
        &self,
        call: CommandCall<'_>,
        sender: Participant,
        task: TaskView,
    ) -> Result<Outcome, CommandFailure> {
        self.invoke_traced(call, sender, task, None).await
    }

    /// [`CommandRegistry::invoke`], recording every executor's step in `trace`.
    pub async fn invoke_traced(
        &self,
        call: CommandCall<'_>,
        sender: Participant,
        task: TaskView,
        trace: Option<&Trace>,
    ) -> Result<Outcome, CommandFailure> {
        let registered = self.commands.get(call.name).ok_or_else(|| {
            CommandFailure::Failed(format!("/{} is not a registered command", call.name))
        })?;
        let spec = &registered.spec;
        check_role(&spec.name, &spec.roles, &sender)?;
        let arguments = spec
            .parse_arguments(call.raw_arguments)
            .map_err(|err| CommandFailure::Usage(err.to_string()))?;
        let task_id = task.id.clone();
        let context = CommandContext {
            command: InvokedCommand {
                name: spec.name.clone(),
                raw_arguments: call.raw_arguments.to_owned(),
                arguments,
                usage: spec.usage.clone(),
                roles: spec.roles.clone(),
            },
            sender,
            task,
            result: None,
        };
        let mut context = encode(&context, &spec.name)?;
        for phase in [Phase::Pre, Phase::In, Phase::Post] {
            let point = HookPoint::new(Operation::CommandInvoked, phase);
            let mut hook_call = HookCall::new(point, Some(&task_id));
            if let Some(trace) = trace {
                hook_call = hook_call.traced(trace);
            }
            context = self
                .hooks
                .run(hook_call, Some(&spec.name), context)
                .await
                .map_err(|err| chain_failure(&spec.name, err))?;
        }
        // Only the result matters now; the rest of the context is not read back.
        let result = Option::<CommandResult>::deserialize(&context["result"]).map_err(|err| {
            CommandFailure::Failed(format!(
                "command /{}: an executor left a result out of shape: {err}",
                spec.name
            ))
        })?;
        match result {
            Some(CommandResult::Outcome(outcome)) => Ok(outcome),
            Some(CommandResult::Error(error)) => Err(body_failure(&spec.name, error)),
            None => Err(CommandFailure::Failed(format!(
                "command /{} has no body: no executor on command.invoked.in set a result",
                spec.name
            ))),
        }
    }
}

/// Who may run a command, decided by the host whatever the plugins say:
/// watchers never run commands (decision 007), admins run every command,
/// everyone else needs a role the command declares. A policy hook on
/// `command.invoked.pre` can refuse more, never allow more.
fn check_role(command: &str, roles: &[Role], sender: &Participant) -> Result<(), CommandFailure> {
    let Participant { id, role } = sender;
    match role {
        Role::Watcher => Err(CommandFailure::Refused(format!(
            "watchers cannot run commands; {id} is a watcher"
        ))),
        Role::Admin => Ok(()),
        _ if roles.contains(role) => Ok(()),
        _ => {
            let allowed: Vec<&str> = roles.iter().map(|role| role.as_str()).collect();
            let article = if matches!(role, Role::Assignee) {
                "an"
            } else {
                "a"
            };
            let allowed = if allowed.is_empty() {
                "admins only".to_owned()
            } else {
                allowed.join(", ")
            };
            Err(CommandFailure::Refused(format!(
                "/{command} is for {allowed}; {id} is {article} {role}"
            )))
        }
    }
}

fn encode(context: &CommandContext, name: &str) -> Result<Value, CommandFailure> {
    serde_json::to_value(context).map_err(|err| {
        CommandFailure::Failed(format!("command /{name}: cannot encode its context: {err}"))
    })
}

fn chain_failure(name: &str, err: ChainError) -> CommandFailure {
    match err {
        ChainError::Aborted { abort, .. } => match abort.reason {
            AbortReason::Refused | AbortReason::Policy => CommandFailure::Refused(abort.message),
            AbortReason::Invalid => {
                CommandFailure::Failed(format!("command /{name}: {}", abort.message))
            }
        },
        ChainError::Fault { by, fault } => {
            tracing::warn!(command = name, executor = by, %fault, "command executor fault");
            CommandFailure::Failed(format!("command /{name} {fault}"))
        }
    }
}

fn body_failure(name: &str, error: CommandError) -> CommandFailure {
    match error {
        CommandError::Usage(message) => CommandFailure::Usage(message),
        CommandError::Refused(message) => CommandFailure::Refused(message),
        CommandError::Failed(message) => {
            CommandFailure::Failed(format!("command /{name} failed: {message}"))
        }
    }
}
