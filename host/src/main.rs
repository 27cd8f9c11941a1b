//! The `tiny-harness` command line.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};
use tiny_harness::commands::CommandRegistry;
use tiny_harness::plugins::PluginLoader;
use tiny_harness::plugins::wasm::{RuntimeConfig, WasmRuntime};
use tiny_harness::task::{Participant, Role, TaskView};

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
    /// Inspect and try plugins without a server.
    #[command(subcommand)]
    Plugins(PluginsCommand),
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
    init_tracing();
    let cli = Cli::parse();
    let result = match cli.command {
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

fn init_tracing() {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .init();
}

fn loader(args: &RuntimeArgs) -> anyhow::Result<PluginLoader> {
    let cache_dir = if args.no_cache {
        None
    } else {
        args.cache_dir.clone().or_else(default_cache_dir)
    };
    Ok(PluginLoader::new(WasmRuntime::new(RuntimeConfig {
        cache_dir,
    })?))
}

fn default_cache_dir() -> Option<PathBuf> {
    let base = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".cache")))?;
    Some(base.join("tiny-harness").join("components"))
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
