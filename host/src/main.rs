//! The `tiny-harness` command line.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::{Arc, Mutex, RwLock};

use anyhow::Context;
use clap::{Args, Parser, Subcommand};
use tiny_harness::commands::{CommandRegistry, Registries, RegistryBuilder};
use tiny_harness::config::{self, Config, Overrides};
use tiny_harness::model::Models;
use tiny_harness::plugins::wasm::{RuntimeConfig, WasmRuntime};
use tiny_harness::plugins::{
    LoadReport, NativeRegistrations, PluginLoader, PluginWatch, PluginsConfig, Reloader,
    register_plugins_command,
};
use tiny_harness::server::{self, ServerSettings};
use tiny_harness::task::{Participant, Role, TaskService, TaskView};
use tiny_harness::tools::ToolSources;

#[global_allocator]
static ALLOCATOR: tiny_harness::heap::Allocator = tiny_harness::heap::Allocator {};

/// The allocator's options are set before anything allocates (see
/// `heap::use_mimalloc`): the loader runs `.init_array` entries before `main`.
#[cfg(target_os = "linux")]
#[used]
#[allow(unsafe_code)]
#[unsafe(link_section = ".init_array")]
static TUNE_ALLOCATOR: extern "C" fn() = {
    extern "C" fn tune() {
        tiny_harness::heap::use_mimalloc();
    }
    tune
};

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

/// What the `plugins` commands load with.
#[derive(Args)]
struct PluginsArgs {
    /// The configuration whose `[plugins]` section (grants, limits) applies
    /// [default: none: nothing is granted, every limit at its default].
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
}

#[derive(Subcommand)]
enum Command {
    /// Serve A2A (JSON-RPC, HTTP+JSON, and gRPC with `[grpc] listen`) until interrupted.
    Serve(ServeArgs),
    /// Inspect and try plugins without a server.
    #[command(subcommand)]
    Plugins(PluginsCommand),
    /// Talk to a running harness from the terminal: an inbox of your conversations,
    /// streamed replies, /command completion with Tab, :complete and :cancel.
    Chat(ChatArgs),
    /// Run turns of the Temporal engine's tasks, without serving A2A, until interrupted
    /// (any number of workers and servers share one task queue).
    Worker(WorkerArgs),
}

/// Where tasks run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
enum EngineKind {
    /// In this process: one actor per task over the store's log.
    Embedded,
    /// On a Temporal cluster: one workflow per task; several servers may serve any task.
    Temporal,
}

#[derive(Args)]
struct TemporalArgs {
    /// The Temporal frontend (with `--engine temporal`, and for `worker`).
    #[arg(long, value_name = "HOST:PORT", env = "TEMPORAL_ADDRESS")]
    temporal_address: Option<String>,
    /// The Temporal namespace.
    #[arg(long, value_name = "NS", default_value = "default")]
    namespace: String,
    /// The task queue every server and worker of one deployment shares.
    #[arg(long, value_name = "QUEUE", default_value = "tiny-harness-tasks")]
    task_queue: String,
    /// A task's workflow run continues as new once its history holds this many events
    /// (about 20 a turn), for the tasks this server starts.
    #[arg(long, value_name = "EVENTS", default_value_t = 2_000,
          value_parser = clap::value_parser!(u32).range(100..))]
    continue_after_events: u32,
    /// How long a stopping worker lets its running turns go on before it cuts
    /// them (each model turn then runs again on another worker).
    #[arg(long, value_name = "SECS", default_value_t = 10)]
    shutdown_grace_secs: u64,
}

#[derive(Args)]
struct WorkerArgs {
    /// The configuration file (its `[store]` must be the servers').
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// The plugins folder, overriding the file.
    #[arg(long, value_name = "DIR")]
    plugins: Option<PathBuf>,
    #[command(flatten)]
    temporal: TemporalArgs,
}

#[derive(Args)]
struct ChatArgs {
    /// The harness to talk to.
    #[arg(
        long,
        value_name = "URL",
        default_value = "http://127.0.0.1:8080",
        env = "TINY_HARNESS_URL"
    )]
    url: String,
    /// Who you are, on a loopback harness without tokens (sent as X-Participant-Id)
    /// [default: the harness's default participant, `local`].
    #[arg(
        long = "as",
        value_name = "PARTICIPANT",
        env = "TINY_HARNESS_PARTICIPANT"
    )]
    participant: Option<String>,
    /// A bearer token, for a harness with `[auth] tokens`. Prefer the environment
    /// variable: other users can see a command line.
    #[arg(
        long,
        value_name = "T",
        env = "TINY_HARNESS_TOKEN",
        hide_env_values = true
    )]
    token: Option<String>,
    /// A conversation to resume, by task id.
    #[arg(value_name = "TASK_ID")]
    task_id: Option<String>,
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
    /// Where the tasks run.
    #[arg(long, value_enum, default_value_t = EngineKind::Embedded)]
    engine: EngineKind,
    #[command(flatten)]
    temporal: TemporalArgs,
}

#[derive(Subcommand)]
enum PluginsCommand {
    /// Load a plugins folder and print the load report; exits 1 when any
    /// plugin was rejected or any part of one skipped.
    Check {
        /// The plugins folder.
        #[arg(default_value = "plugins")]
        dir: PathBuf,
        #[command(flatten)]
        with: PluginsArgs,
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
        #[command(flatten)]
        with: PluginsArgs,
    },
    /// Complete a partly typed message: command names, then the command's
    /// arguments from its plugin's completion export.
    Complete {
        /// `[DIR] TEXT`: the plugins folder (default `plugins`) and the text
        /// typed so far, e.g. "/gr" or "/greet w".
        #[arg(num_args = 1..=2, required = true, value_names = ["DIR", "TEXT"])]
        args: Vec<String>,
        #[command(flatten)]
        with: PluginsArgs,
    },
    /// Scaffold a plugin that builds: manifests, a source file, build.sh,
    /// a README and the WIT contract, in DIR/NAME.
    New {
        /// The plugin's name: 1-64 of a-z, 0-9, `.` and `-`.
        name: String,
        /// The language to write it in.
        #[arg(long, value_enum)]
        lang: tiny_harness::scaffold::Lang,
        /// What it serves: a command, or a tool the model may call.
        #[arg(long, value_enum, default_value_t)]
        kind: tiny_harness::scaffold::Kind,
        /// Where to create the plugin's folder (created when missing).
        #[arg(long, default_value = ".")]
        dir: PathBuf,
    },
}

fn main() -> ExitCode {
    // Off Linux, the first call (there is no `.init_array`); on it, a repeat.
    tiny_harness::heap::use_mimalloc();
    let cli = Cli::parse();
    // A server reports what it loaded and serves; the one-shot commands stay quiet.
    init_tracing(match cli.command {
        Command::Serve(_) | Command::Worker(_) => "info",
        Command::Plugins(_) | Command::Chat(_) => "warn",
    });
    let result = match cli.command {
        Command::Serve(args) => serve(&cli.runtime, args),
        Command::Worker(args) => worker(&cli.runtime, args),
        Command::Chat(args) => tiny_harness::chat::run(tiny_harness::chat::ChatOptions {
            url: args.url,
            participant: args.participant,
            token: args.token,
            task_id: args.task_id,
        }),
        Command::Plugins(PluginsCommand::Check { dir, with }) => check(&cli.runtime, &with, &dir),
        Command::Plugins(PluginsCommand::Run {
            args,
            sender,
            role,
            with,
        }) => {
            let (dir, message) = dir_and_text(&args);
            run(&cli.runtime, &with, &dir, &message, &sender, &role)
        }
        Command::Plugins(PluginsCommand::Complete { args, with }) => {
            let (dir, text) = dir_and_text(&args);
            complete(&cli.runtime, &with, &dir, &text)
        }
        Command::Plugins(PluginsCommand::New {
            name,
            lang,
            kind,
            dir,
        }) => tiny_harness::scaffold::create_kind(&name, lang, kind, &dir)
            .map(|created| {
                println!("{created}");
                ExitCode::SUCCESS
            })
            .map_err(anyhow::Error::from),
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

fn loader(args: &RuntimeArgs, with: &PluginsArgs) -> anyhow::Result<PluginLoader> {
    let cache_dir = if args.no_cache {
        None
    } else {
        args.cache_dir.clone().or_else(config::default_cache_dir)
    };
    let settings = match &with.config {
        Some(file) => Config::load(Some(file))?.plugins,
        None => PluginsConfig::default(),
    };
    plugin_loader(cache_dir, &settings)
}

/// The loader of `[plugins]`: a runtime with its instance and log limits, and
/// its grants and file and declaration caps.
fn plugin_loader(
    cache_dir: Option<PathBuf>,
    settings: &PluginsConfig,
) -> anyhow::Result<PluginLoader> {
    let runtime = WasmRuntime::with_limits(RuntimeConfig { cache_dir }, settings.runtime_limits())?;
    Ok(PluginLoader::new(runtime).with_settings(settings))
}

/// `tiny-harness serve`: configuration, plugins, task service, then HTTP until
/// SIGINT or SIGTERM.
fn serve(runtime: &RuntimeArgs, args: ServeArgs) -> anyhow::Result<ExitCode> {
    let temporal = match args.engine {
        EngineKind::Embedded => None,
        EngineKind::Temporal => Some(args.temporal),
    };
    let started = start(runtime, args.config, args.plugins, args.listen, temporal)?;
    let served = started
        .tokio
        .block_on(listen_and_serve(&started.config, started.service));
    started.tokio.block_on(started.sources.shutdown());
    served?;
    Ok(ExitCode::SUCCESS)
}

/// `tiny-harness worker`: the task service of a Temporal deployment, running
/// its turns, until SIGINT or SIGTERM.
fn worker(runtime: &RuntimeArgs, args: WorkerArgs) -> anyhow::Result<ExitCode> {
    let started = start(
        runtime,
        args.config,
        args.plugins,
        None,
        Some(args.temporal),
    )?;
    eprintln!("worker running on task queue {}", started.task_queue);
    // The signal handlers need the runtime.
    started.tokio.block_on(async { shutdown_signal().await });
    drop(started.service);
    started.tokio.block_on(started.sources.shutdown());
    Ok(ExitCode::SUCCESS)
}

/// A task service ready to serve, and what it runs on.
struct Started {
    tokio: tokio::runtime::Runtime,
    config: Config,
    service: TaskService,
    sources: ToolSources,
    task_queue: String,
    /// Reloads the plugins folder while the service runs.
    _watch: Option<PluginWatch>,
}

/// Configuration, models, store, tool sources, plugins, then the task
/// service on the embedded engine, or on Temporal when `temporal` says where.
fn start(
    runtime: &RuntimeArgs,
    config_file: Option<PathBuf>,
    plugins_dir: Option<PathBuf>,
    listen: Option<SocketAddr>,
    temporal: Option<TemporalArgs>,
) -> anyhow::Result<Started> {
    let mut config = Config::load(config_file.as_deref())?;
    config.apply(Overrides {
        listen,
        plugins_dir,
        cache_dir: runtime.cache_dir.clone(),
        no_cache: runtime.no_cache,
    });
    // Before anything is loaded: an exposed server without tokens must not start at all.
    config.check_exposure()?;
    // Nor one whose model key is missing from the environment.
    let models = Models::build(&config.model_settings()?, config.models.default_name())?;
    // Next the store, whose lock keeps a second server off a database in use before it
    // touches it (or compiles a single plugin); the Temporal engine's processes share it.
    let durability = match &temporal {
        None => config.durability()?,
        Some(_) => config.shared_durability()?,
    };
    // Tokens of MCP servers and delegates, like model keys, before anything starts.
    let tool_settings = config.tool_sources()?;

    let tokio = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        // A worker about to sleep gives its allocator's free pages back if a sweep asked.
        .on_thread_park(tiny_harness::heap::on_worker_park)
        .build()?;
    // The tool sources, the service and the plugin watch start background work, which
    // needs the runtime.
    let service = {
        let _runtime = tokio.enter();
        // MCP servers start (and list their tools) before the first registry generation,
        // which offers their tools; they outlive every generation.
        let sources = tokio
            .block_on(ToolSources::start(tool_settings, &config.extra_roots))
            .map_err(|reason| anyhow::anyhow!("cannot start the tool sources: {reason}"))?;
        let plugins = Plugins::load(&config, &sources)?;
        let watch = plugins.watch()?;
        if !sources.is_empty() {
            tokio.spawn(rebuild_on_changes(
                sources.changes(),
                plugins.rebuild.clone(),
            ));
        }
        let task_queue = temporal
            .as_ref()
            .map(|args| args.task_queue.clone())
            .unwrap_or_default();
        let service = match temporal {
            None => TaskService::with_durability(
                config.task_settings(),
                plugins.registries,
                models,
                durability,
            ),
            Some(args) => on_temporal(
                &tokio,
                &config,
                plugins.registries,
                models,
                durability,
                args,
            )?,
        };
        // Before serving: settle whatever the last stop interrupted.
        tokio.block_on(service.recover())?;
        service.spawn_maintenance();
        (service, sources, task_queue, watch)
    };
    let (service, sources, task_queue, watch) = service;
    Ok(Started {
        tokio,
        config,
        service,
        sources,
        task_queue,
        _watch: watch,
    })
}

#[cfg(feature = "temporal")]
fn on_temporal(
    tokio: &tokio::runtime::Runtime,
    config: &Config,
    registries: Registries,
    models: Models,
    durability: tiny_harness::task::Durability,
    args: TemporalArgs,
) -> anyhow::Result<TaskService> {
    use tiny_harness::temporal::{TemporalEngine, TemporalOptions};
    let address = args
        .temporal_address
        .context("the Temporal engine needs --temporal-address HOST:PORT")?;
    let options = TemporalOptions {
        namespace: args.namespace,
        task_queue: args.task_queue,
        continue_after_events: args.continue_after_events,
        shutdown_grace: std::time::Duration::from_secs(args.shutdown_grace_secs),
        ..TemporalOptions::new(address)
    };
    let engine = tokio
        .block_on(TemporalEngine::connect(options))
        .map_err(anyhow::Error::msg)?;
    TaskService::on_temporal(
        config.task_settings(),
        registries,
        models,
        durability,
        engine,
        true,
    )
    .map_err(anyhow::Error::msg)
}

#[cfg(not(feature = "temporal"))]
fn on_temporal(
    _tokio: &tokio::runtime::Runtime,
    _config: &Config,
    _registries: Registries,
    _models: Models,
    _durability: tiny_harness::task::Durability,
    _args: TemporalArgs,
) -> anyhow::Result<TaskService> {
    anyhow::bail!(
        "this build has no Temporal engine: build it with `cargo build --release --features \
         temporal`"
    )
}

/// Build a new registry generation whenever the tool sources offer other tools (an MCP
/// server that started late, or listed other tools after a restart).
async fn rebuild_on_changes(
    mut changes: tokio::sync::watch::Receiver<u64>,
    rebuild: Arc<dyn Fn() + Send + Sync>,
) {
    while changes.changed().await.is_ok() {
        let rebuild = rebuild.clone();
        // Loading a generation reads plugin files and may compile components.
        if tokio::task::spawn_blocking(move || rebuild())
            .await
            .is_err()
        {
            tracing::error!("rebuilding the registry for the tool sources panicked");
        }
    }
}

/// The served plugins: the built-in plugin, the plugins folder (reloaded
/// when it changes), and the harness's own admin command `/plugins`.
struct Plugins {
    registries: Registries,
    reloader: Option<(PathBuf, Arc<Mutex<Reloader>>)>,
    /// Builds and serves a new generation (for the tool sources' changes).
    rebuild: Arc<dyn Fn() + Send + Sync>,
}

impl Plugins {
    fn load(config: &Config, sources: &ToolSources) -> anyhow::Result<Self> {
        let loader = plugin_loader(config.cache_dir.clone(), &config.plugins)?
            .with_extra_roots(&config.extra_roots);
        let report = Arc::new(RwLock::new(LoadReport::default()));
        let natives: NativeRegistrations = {
            let report = report.clone();
            let sources = sources.clone();
            Arc::new(move |builder: &mut RegistryBuilder| {
                if let Err(err) = register_plugins_command(builder, report.clone()) {
                    tracing::error!(%err, "cannot register /plugins");
                }
                // First, so a plugin's tool of the same name is the one reported.
                sources.register(builder);
            })
        };
        let dir = config.plugins_dir.clone();
        if !dir.is_dir() {
            tracing::info!(dir = %dir.display(), "no plugins folder; serving the built-in plugin only");
            let load = move || {
                let mut builder = CommandRegistry::builder();
                natives(&mut builder);
                let loaded = loader.load(None, builder);
                log_load_report(&loaded.report);
                match report.write() {
                    Ok(mut guard) => *guard = loaded.report,
                    Err(poisoned) => *poisoned.into_inner() = loaded.report,
                }
                loaded.registry
            };
            let registries = Registries::new(load());
            let served = registries.clone();
            return Ok(Plugins {
                registries,
                reloader: None,
                rebuild: Arc::new(move || served.replace(load())),
            });
        }
        let (reloader, loaded) = Reloader::start(loader, dir.clone(), natives, report)
            .context("cannot prepare the plugin staging folder")?;
        log_load_report(&loaded.report);
        let reloader = Arc::new(Mutex::new(reloader));
        let rebuild = {
            let reloader = reloader.clone();
            Arc::new(move || match reloader.lock() {
                Ok(mut reloader) => log_load_report(&reloader.reload().report),
                Err(_) => tracing::error!("the plugin reloader is poisoned"),
            })
        };
        let registries = reloader
            .lock()
            .map_err(|_| anyhow::anyhow!("the plugin reloader is poisoned"))?
            .registries();
        Ok(Plugins {
            registries,
            reloader: Some((dir, reloader)),
            rebuild,
        })
    }

    /// Start reloading on changes to the plugins folder (inside the runtime).
    fn watch(&self) -> anyhow::Result<Option<PluginWatch>> {
        let Some((dir, reloader)) = &self.reloader else {
            return Ok(None);
        };
        let watch = tiny_harness::plugins::watch(dir.clone(), reloader.clone())
            .with_context(|| format!("cannot watch the plugins folder {}", dir.display()))?;
        tracing::info!(dir = %dir.display(), "watching the plugins folder for changes");
        Ok(Some(watch))
    }
}

async fn listen_and_serve(config: &Config, service: TaskService) -> anyhow::Result<()> {
    // A broken certificate stops the start before anything listens.
    let identity = config.server_identity();
    let acceptor = match &identity {
        Some((cert, key)) => Some(
            server::tls::acceptor(cert, key)
                .map_err(|problem| anyhow::anyhow!("invalid configuration: `[tls]`: {problem}"))?,
        ),
        None => None,
    };
    let listener = tokio::net::TcpListener::bind(config.listen)
        .await
        .with_context(|| format!("cannot listen on {}", config.listen))?;
    let bound = listener.local_addr()?;
    let grpc_listener = match config.grpc.listen {
        Some(address) => Some(
            tokio::net::TcpListener::bind(address)
                .await
                .with_context(|| format!("cannot listen for gRPC on {address}"))?,
        ),
        None => None,
    };
    let mut settings = ServerSettings::new(config, bound);
    settings.grpc = match &grpc_listener {
        Some(listener) => Some(listener.local_addr()?),
        None => None,
    };
    let limits = settings.connection_limits;
    let max_message_bytes = settings.max_body_bytes;
    let (app, grpc) = server::bindings(service, settings);
    let scheme = if acceptor.is_some() { "https" } else { "http" };
    if acceptor.is_none() && !bound.ip().to_canonical().is_loopback() {
        tracing::warn!(
            "serving plain http beyond loopback: bearer tokens cross the network in clear \
             text; set [tls] cert_file and key_file, or put a TLS-terminating proxy in front"
        );
    }
    let http_shutdown = shutdown_signal();
    let grpc_shutdown = shutdown_signal();
    // The end-to-end tests read this line to find the port.
    eprintln!("listening on {scheme}://{bound}");
    let http = server::serve(listener, acceptor, app, limits, http_shutdown);
    let grpc = async {
        let Some(listener) = grpc_listener else {
            return Ok(());
        };
        let limits = server::grpc::GrpcLimits {
            max_connections: config.grpc.max_connections,
            max_concurrent_streams: config.grpc.max_concurrent_streams,
            max_message_bytes,
        };
        let grpc_bound = listener.local_addr()?;
        // The end-to-end tests read this line to find the gRPC port.
        eprintln!("gRPC listening on {grpc_bound}");
        match &identity {
            Some((cert, key)) => {
                let acceptor = server::tls::grpc_acceptor(cert, key).map_err(|problem| {
                    anyhow::anyhow!("invalid configuration: `[tls]`: {problem}")
                })?;
                let listener = server::tls::TlsListener::new(listener, acceptor)?;
                server::grpc::serve(listener, grpc, limits, grpc_shutdown).await?;
            }
            None => server::grpc::serve(listener, grpc, limits, grpc_shutdown).await?,
        }
        anyhow::Ok(())
    };
    let (http, grpc) = tokio::join!(http, grpc);
    http?;
    grpc
}

/// Resolves on SIGINT (Ctrl-C) or, on Unix, SIGTERM. The handlers are
/// installed when this is called, not when the future is first polled: a
/// signal sent right after the "listening" line would otherwise find no
/// handler and kill the process without a clean shutdown.
fn shutdown_signal() -> impl Future<Output = ()> + Send + 'static {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{Signal, SignalKind, signal};
        let listen = |kind: SignalKind, name: &str| match signal(kind) {
            Ok(stream) => Some(stream),
            Err(error) => {
                tracing::error!(%error, "cannot listen for {name}");
                None
            }
        };
        let interrupt = listen(SignalKind::interrupt(), "Ctrl-C");
        let terminate = listen(SignalKind::terminate(), "SIGTERM");
        async fn received(stream: Option<Signal>) {
            match stream {
                Some(mut stream) => {
                    stream.recv().await;
                }
                None => std::future::pending().await,
            }
        }
        async move {
            tokio::select! {
                () = received(interrupt) => {}
                () = received(terminate) => {}
            }
        }
    }
    #[cfg(not(unix))]
    async {
        if let Err(error) = tokio::signal::ctrl_c().await {
            tracing::error!(%error, "cannot listen for Ctrl-C");
            std::future::pending::<()>().await;
        }
    }
}

/// Problems as warnings, then what is being served and granted.
fn log_load_report(report: &LoadReport) {
    report.log();
}

/// What the `plugins` commands load: a plugins folder as given, or, when the
/// path is one plugin (it has a plugin.json), a scratch folder holding just
/// that plugin, so `plugins check examples/plugins/python` works.
enum PluginsFolder {
    Folder(PathBuf),
    Single(tempfile::TempDir),
}

impl PluginsFolder {
    fn at(dir: &Path) -> anyhow::Result<Self> {
        if !dir.join("plugin.json").is_file() {
            return Ok(PluginsFolder::Folder(dir.to_owned()));
        }
        let scratch = tempfile::tempdir()?;
        let plugin = dir.canonicalize()?;
        let name = plugin
            .file_name()
            .map(|n| n.to_owned())
            .unwrap_or_else(|| "plugin".into());
        std::os::unix::fs::symlink(&plugin, scratch.path().join(name))?;
        Ok(PluginsFolder::Single(scratch))
    }

    fn path(&self) -> &Path {
        match self {
            PluginsFolder::Folder(dir) => dir,
            PluginsFolder::Single(scratch) => scratch.path(),
        }
    }
}

/// `[DIR] TEXT` positionals: clap guarantees one or two values.
fn dir_and_text(args: &[String]) -> (PathBuf, String) {
    match args {
        [dir, text] => (PathBuf::from(dir), text.clone()),
        [text, ..] => (PathBuf::from("plugins"), text.clone()),
        [] => (PathBuf::from("plugins"), String::new()),
    }
}

fn complete(
    args: &RuntimeArgs,
    with: &PluginsArgs,
    dir: &Path,
    text: &str,
) -> anyhow::Result<ExitCode> {
    let folder = dir.is_dir().then(|| PluginsFolder::at(dir)).transpose()?;
    let loaded = loader(args, with)?.load(
        folder.as_ref().map(PluginsFolder::path),
        CommandRegistry::builder(),
    );
    let suggestions = tokio::runtime::Runtime::new()?.block_on(loaded.registry.complete(text))?;
    for suggestion in suggestions {
        match suggestion.description {
            Some(description) => println!("{}\t{description}", suggestion.value),
            None => println!("{}", suggestion.value),
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn check(args: &RuntimeArgs, with: &PluginsArgs, dir: &Path) -> anyhow::Result<ExitCode> {
    if !dir.is_dir() {
        anyhow::bail!("plugins folder {} does not exist", dir.display());
    }
    let folder = PluginsFolder::at(dir)?;
    let loaded = loader(args, with)?.load(Some(folder.path()), CommandRegistry::builder());
    println!("{}", loaded.report);
    Ok(if loaded.report.has_problems() {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}

fn run(
    args: &RuntimeArgs,
    with: &PluginsArgs,
    dir: &Path,
    message: &str,
    sender: &str,
    role: &str,
) -> anyhow::Result<ExitCode> {
    let role: Role = role.parse().map_err(anyhow::Error::msg)?;
    let folder = dir.is_dir().then(|| PluginsFolder::at(dir)).transpose()?;
    let loaded = loader(args, with)?.load(
        folder.as_ref().map(PluginsFolder::path),
        CommandRegistry::builder(),
    );
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
