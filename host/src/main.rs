//! The `tiny-harness` command line.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Context;
use clap::{Args, Parser, Subcommand};
use tiny_harness::a2a::server::{self, ServerSettings};
use tiny_harness::commands::{CommandRegistry, Registries};
use tiny_harness::config::{self, Config, Overrides};
use tiny_harness::model::OfflineModel;
use tiny_harness::plugins::wasm::{RuntimeConfig, WasmRuntime};
use tiny_harness::plugins::{LoadReport, PluginLoader, PluginStatus};
use tiny_harness::task::{Participant, Role, TaskService, TaskSettings, TaskView};

/// An A2A agent server whose command bodies are sandboxed WebAssembly plugins.
#[derive(Parser)]
#[command(version, about)]
struct Cli {
    #[command(flatten)]
    runtime: RuntimeArgs,
    #[command(subcommand)]
    command: Command,
}

#[derive(Args)]
struct RuntimeArgs {
    /// Where compiled components are cached [default: $XDG_CACHE_HOME/tiny-harness/components].
    #[arg(long, global = true, env = "TINY_HARNESS_CACHE_DIR")]
    cache_dir: Option<PathBuf>,
    /// Compile every component afresh instead of using the disk cache.
    #[arg(long, global = true)]
    no_cache: bool,
}

#[derive(Subcommand)]
enum Command {
    /// Serve A2A (JSON-RPC and HTTP+JSON) until interrupted.
    Serve(ServeArgs),
    /// Inspect and try plugins without a server.
    #[command(subcommand)]
    Plugins(PluginsCommand),
}

#[derive(Args)]
struct ServeArgs {
    /// The configuration file [default: tiny-harness.toml in the working
    /// directory if it exists, else built-in defaults].
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// The address to listen on, overriding the file (port 0 picks a free
    /// port; the bound address is printed).
    #[arg(long, value_name = "IP:PORT")]
    listen: Option<SocketAddr>,
    /// The plugins folder, overriding the file.
    #[arg(long, value_name = "DIR")]
    plugins: Option<PathBuf>,
}

#[derive(Subcommand)]
enum PluginsCommand {
    /// Load a plugins folder and print the load report; exits 1 when any
    /// plugin was rejected or any part of one skipped.
    Check {
        /// The plugins folder.
        #[arg(default_value = "plugins")]
        dir: PathBuf,
    },
    /// Run one command against a scratch conversation and print the outcome.
    Run {
        /// `[DIR] COMMAND`: the plugins folder (default `plugins`) and the
        /// message, e.g. "/status".
        #[arg(num_args = 1..=2, required = true, value_names = ["DIR", "COMMAND"])]
        args: Vec<String>,
        /// The sender's participant id.
        #[arg(long = "as", default_value = "you")]
        sender: String,
        /// The sender's role.
        #[arg(long, default_value = "reporter")]
        role: String,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    // A server reports what it loaded and serves; the one-shot commands stay quiet.
    init_tracing(match cli.command {
        Command::Serve(_) => "info",
        Command::Plugins(_) => "warn",
    });
    let result = match cli.command {
        Command::Serve(args) => serve(&cli.runtime, args),
        Command::Plugins(PluginsCommand::Check { dir }) => check(&cli.runtime, &dir),
        Command::Plugins(PluginsCommand::Run { args, sender, role }) => {
            let (dir, message) = match args.as_slice() {
                [message] => (PathBuf::from("plugins"), message.clone()),
                [dir, message] => (PathBuf::from(dir), message.clone()),
                _ => unreachable!("clap enforces one or two values"),
            };
            run(&cli.runtime, &dir, &message, &sender, &role)
        }
    };
    match result {
        Ok(code) => code,
        Err(err) => {
            eprintln!("error: {err:#}");
            ExitCode::FAILURE
        }
    }
}

fn init_tracing(default_level: &str) {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default_level));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .init();
}

fn loader(args: &RuntimeArgs) -> anyhow::Result<PluginLoader> {
    let cache_dir = if args.no_cache {
        None
    } else {
        args.cache_dir.clone().or_else(config::default_cache_dir)
    };
    Ok(PluginLoader::new(WasmRuntime::new(RuntimeConfig {
        cache_dir,
    })?))
}

/// `tiny-harness serve`: configuration, plugins, task service, then HTTP until
/// SIGINT or SIGTERM.
fn serve(runtime: &RuntimeArgs, args: ServeArgs) -> anyhow::Result<ExitCode> {
    let mut config = Config::load(args.config.as_deref())?;
    config.apply(Overrides {
        listen: args.listen,
        plugins_dir: args.plugins,
        cache_dir: runtime.cache_dir.clone(),
        no_cache: runtime.no_cache,
    });
    // Before anything is loaded: an exposed server without tokens must not start at all.
    config.check_exposure()?;
    let registry = load_plugins(&config)?;

    let tokio = tokio::runtime::Runtime::new()?;
    // The service may start background work, which needs the runtime.
    let _runtime = tokio.enter();
    let service = TaskService::new(
        TaskSettings {
            default_model: config.models.default.clone(),
            selectable_models: config.models.selectable.clone(),
            default_effort: config.default_effort.clone(),
            admins: config.admins.clone(),
        },
        Registries::new(registry),
        Arc::new(OfflineModel::new()),
    );
    tokio.block_on(listen_and_serve(&config, service))?;
    Ok(ExitCode::SUCCESS)
}

/// The built-in plugin and the configured plugins folder, if it exists.
fn load_plugins(config: &Config) -> anyhow::Result<CommandRegistry> {
    let loader = PluginLoader::new(WasmRuntime::new(RuntimeConfig {
        cache_dir: config.cache_dir.clone(),
    })?);
    let dir = config.plugins_dir.as_path();
    if !dir.is_dir() {
        tracing::info!(dir = %dir.display(), "no plugins folder; serving the built-in plugin only");
    }
    let loaded = loader.load(dir.is_dir().then_some(dir), CommandRegistry::builder());
    log_load_report(&loaded.report);
    Ok(loaded.registry)
}

async fn listen_and_serve(config: &Config, service: TaskService) -> anyhow::Result<()> {
    let listener = tokio::net::TcpListener::bind(config.listen)
        .await
        .with_context(|| format!("cannot listen on {}", config.listen))?;
    let bound = listener.local_addr()?;
    let app = server::app(service, ServerSettings::new(config, bound));
    // The end-to-end tests read this line to find the port.
    eprintln!("listening on http://{bound}");
    server::serve(listener, app, shutdown_signal()).await?;
    Ok(())
}

/// Resolves on SIGINT (Ctrl-C) or, on Unix, SIGTERM.
async fn shutdown_signal() {
    let interrupt = async {
        if let Err(error) = tokio::signal::ctrl_c().await {
            tracing::error!(%error, "cannot listen for Ctrl-C");
            std::future::pending::<()>().await;
        }
    };
    #[cfg(unix)]
    let terminate = async {
        use tokio::signal::unix::{SignalKind, signal};
        match signal(SignalKind::terminate()) {
            Ok(mut sigterm) => {
                sigterm.recv().await;
            }
            Err(error) => {
                tracing::error!(%error, "cannot listen for SIGTERM");
                std::future::pending::<()>().await;
            }
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        () = interrupt => {}
        () = terminate => {}
    }
}

/// Problems as warnings, then what is being served.
fn log_load_report(report: &LoadReport) {
    for problem in report.problems() {
        tracing::warn!("{problem}");
    }
    for plugin in &report.plugins {
        if let PluginStatus::Loaded {
            version,
            commands,
            hooks,
        } = &plugin.status
        {
            let commands: Vec<String> = commands.iter().map(|c| format!("/{c}")).collect();
            tracing::info!(
                plugin = %plugin.name,
                %version,
                origin = %plugin.origin,
                commands = %commands.join(" "),
                hooks = hooks.len(),
                "plugin loaded"
            );
        }
    }
}

fn check(args: &RuntimeArgs, dir: &Path) -> anyhow::Result<ExitCode> {
    if !dir.is_dir() {
        anyhow::bail!("plugins folder {} does not exist", dir.display());
    }
    let loaded = loader(args)?.load(Some(dir), CommandRegistry::builder());
    println!("{}", loaded.report);
    Ok(if loaded.report.has_problems() {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}

fn run(
    args: &RuntimeArgs,
    dir: &Path,
    message: &str,
    sender: &str,
    role: &str,
) -> anyhow::Result<ExitCode> {
    let role: Role = role.parse().map_err(anyhow::Error::msg)?;
    let dir = dir.is_dir().then_some(dir);
    let loaded = loader(args)?.load(dir, CommandRegistry::builder());
    for problem in loaded.report.problems() {
        eprintln!("warning: {problem}");
    }
    let registry = loaded.registry;
    let Some(call) = registry.parse(message) else {
        let known: Vec<_> = registry
            .commands()
            .map(|c| format!("/{}", c.spec.name))
            .collect();
        anyhow::bail!(
            "`{message}` is not a registered command (it would go to the model); registered: {}",
            known.join(" ")
        );
    };
    let sender = Participant {
        id: sender.to_owned(),
        role,
    };
    let mut task = TaskView::scratch(&sender.id);
    if role != Role::Reporter {
        task.participants.push(sender.clone());
    }
    let runtime = tokio::runtime::Runtime::new()?;
    let outcome = runtime.block_on(registry.invoke(call, sender, task));
    match outcome {
        Ok(outcome) => {
            println!("{}", outcome.reply.text);
            if let Some(data) = &outcome.reply.data {
                println!("data: {data}");
            }
            for effect in &outcome.effects {
                println!("effect: {}", serde_json::to_string(effect)?);
            }
            Ok(ExitCode::SUCCESS)
        }
        Err(failure) => {
            eprintln!("{failure}");
            Ok(ExitCode::FAILURE)
        }
    }
}
