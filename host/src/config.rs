//! The harness configuration: an optional TOML file, then command-line overrides.
//!
//! Where it comes from ([`Config::load`]): the file given with `--config FILE`; otherwise
//! `tiny-harness.toml` in the working directory if there is one; otherwise the built-in
//! defaults. Every key is optional. An unknown key is an error naming it (a typo must not
//! silently fall back to a default), and so is any invalid value ([`Config::validate`]).
//!
//! A complete file, every value at its default except the examples for `admins`, `[auth]`
//! and `[http]`:
//!
//! ```toml
//! listen = "127.0.0.1:8080"        # IP:PORT; port 0 picks a free port
//! plugins_dir = "plugins"
//! # cache_dir = "/home/me/.cache/tiny-harness/components"
//! default_effort = "medium"        # low | medium | high
//! default_lifecycle = "conversation" # conversation | task (a first message may choose)
//! dedupe_first_messages = true     # a first message's id resent by its sender: the same task
//! admins = ["root"]                # admins on every task; needs [auth] tokens (default none)
//!
//! [models]
//! default = "offline-echo"         # a [models.<name>] table, or an embedded offline model
//! # [models.<name>] tables configure providers: see `config::models`
//!
//! [auth]
//! tokens = { "s3cret-token" = "alice", "r00t-token" = "root" }  # bearer token -> participant id
//!
//! [http]
//! public_names = ["harness.example.com"]        # Host names besides loopback (default none)
//! allowed_origins = ["https://app.example.com"] # browser origins besides the server's own
//!
//! [limits]
//! max_body_bytes = 1048576
//! header_read_timeout_secs = 30    # to send a request's headers, per request
//! body_read_timeout_secs = 30      # to send a request's body
//! max_connections = 512            # open connections; beyond: an idle one is closed, or 503
//! tls_handshake_timeout_secs = 10
//! max_parts_per_message = 100
//! max_json_depth = 32              # nesting of metadata and data parts
//! max_json_values_per_message = 10000  # JSON values in a message's metadata and data parts
//! max_history_messages = 100000    # per task
//! max_reply_bytes = 262144         # per command reply, text and data together
//! max_effects = 16                 # per command
//! max_open_subtasks = 32           # per task, at once
//!
//! [agent]
//! # system_prompt = "You are a careful assistant."
//! max_tool_rounds = 8              # per turn, at most 64
//! tools_needing_approval = []      # e.g. ["spawn_subtask"]: each call waits for approval
//!
//! [rate_limit]
//! per_participant_burst = 20       # message sends; by token, or by the self-asserted id
//! per_participant_per_second = 5.0
//! per_address_burst = 20           # without tokens, also by the caller's IP address
//! per_address_per_second = 5.0
//! max_buckets = 10000              # buckets kept; the least recently used goes first
//!
//! [completion]                     # command completion for renderers (POST .../commands:complete)
//! per_participant_burst = 50       # also per IP address without tokens, apart from sends
//! per_participant_per_second = 10.0
//! max_text_bytes = 4096            # the text one request completes
//!
//! [store]
//! path = "tiny-harness.db"         # beside this file; ":memory:" keeps nothing
//! synchronous = "normal"           # normal | full (fsync every commit)
//! idle_timeout_secs = 300          # a parked task leaves memory after this
//! accept_commit_delay_ms = 10      # a quick turn stores its message with its reply
//! max_wal_mib = 64                 # the write-ahead log starts over past this
//! cache_mib = 32                   # conversations being read, kept in memory (0: off)
//! commit_interval_ms = 20          # writes answered from the redo log, committed this often (0: each)
//! # retain_terminal_days = 30      # default: keep finished tasks forever
//! # url = "postgres://tiny@db:5432/tiny"  # PostgreSQL instead of path (feature `postgres`)
//! # password_env = "TINY_HARNESS_DB_PASSWORD"
//! max_connections = 8              # to PostgreSQL, per process
//!
//! [push]
//! allow_private = false            # webhooks on loopback/private addresses
//! max_attempts = 5
//! initial_backoff_ms = 500
//! timeout_secs = 10
//! max_configs_per_task = 10
//! max_configs_per_participant = 100  # across all tasks
//!
//! [grpc]
//! # listen = "127.0.0.1:8081"      # serve the gRPC binding here too; default: off
//! max_connections = 256            # open gRPC connections at once; the next waits
//! max_concurrent_streams = 100     # calls in flight per connection
//!
//! [tls]
//! # cert_file = "server.pem"       # serve https: the certificate chain (PEM) ...
//! # key_file = "server-key.pem"    # ... and its private key (PEM); both or neither
//! extra_ca_files = []              # PEM roots for https webhooks and remote executors
//!
//! [plugins]                        # grants and plugin bounds: see `plugins::settings`
//! grant_all = false
//! ```
//!
//! Every limit, what it bounds and the error when it is hit (the README's "Limits" table
//! says the same):
//!
//! | key | default | bounds | when hit |
//! | :-- | :-- | :-- | :-- |
//! | `limits.max_body_bytes` | 1 MiB | a request body | `PAYLOAD_TOO_LARGE` (413 / -32600) |
//! | `limits.header_read_timeout_secs` | 30 | time to send a request's headers | connection closed |
//! | `limits.body_read_timeout_secs` | 30 | time to send a request's body | `INVALID_REQUEST` naming the key |
//! | `limits.max_connections` | 512 | open connections (TLS handshakes included) | the oldest idle connection is closed; with none idle, 503 and close |
//! | `limits.tls_handshake_timeout_secs` | 10 | time to finish a TLS handshake | connection closed |
//! | `limits.max_parts_per_message` | 100 | parts in one message | `INVALID_PARAMS` naming the key |
//! | `limits.max_json_depth` | 32 | nesting of message and part metadata and data parts | `INVALID_PARAMS` naming the key |
//! | `limits.max_json_values_per_message` | 10,000 | JSON values in those, together | `INVALID_PARAMS` naming the key |
//! | `rate_limit.per_participant_*` | 20, 5/s | message sends per caller | `RATE_LIMITED` (429 / -32603) with `Retry-After` |
//! | `rate_limit.per_address_*` | 20, 5/s | self-asserted sends per IP address | `RATE_LIMITED` |
//! | `rate_limit.max_buckets` | 10,000 | rate-limit buckets kept | the least recently used is forgotten; a full one within a minute |
//! | `push.max_configs_per_task` | 10 | webhooks on one task | `INVALID_PARAMS` naming the key |
//! | `push.max_configs_per_participant` | 100 | webhooks one participant owns | `INVALID_PARAMS` naming the key |
//! | `push.max_attempts`, `push.timeout_secs` | 5, 10 | delivery attempts per event, time per attempt | the event is given up on for that webhook |
//! | `limits.max_history_messages` | 100,000 | messages in one task's history | the task takes no more (`UNSUPPORTED_OPERATION`) |
//! | `limits.max_reply_bytes` | 256 KiB | one command reply | the reply is not kept, no effect applies |
//! | `limits.max_effects` | 16 | effects of one command | none applies |
//! | `limits.max_open_subtasks` | 32 | sub-tasks open at once in one task | none starts |
//! | `agent.max_tool_rounds` | 8 | tool rounds in one turn (at most 64) | the turn stops with a message |

mod models;

use std::collections::BTreeMap;
use std::fmt;
use std::net::{Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;

pub use models::{MAX_MODEL_NAME_CHARS, ModelConfig, ModelsConfig, ProviderKind};

use crate::domain::check_participant_id;
use crate::model::settings::ModelSettings;
use crate::outbound::ExtraRoots;
use crate::plugins::PluginsConfig;
use crate::push::PushSettings;
use crate::store::{
    DEFAULT_CACHE_MIB, DEFAULT_COMMIT_INTERVAL_MS, DEFAULT_MAX_WAL_MIB, PostgresLocation,
    SqliteOptions, StoreError, StoreLocation, StoreOptions, Synchronous,
};
use crate::task::{AgentSettings, Durability, TaskLifecycle, TaskLimits, TaskSettings};
use crate::tools::ToolSourceSettings;
use crate::tools::delegate::settings::DelegateConfig;
use crate::tools::mcp::settings::McpServerConfig;

/// The file read when `--config` is not given, if it exists in the working directory.
pub const DEFAULT_CONFIG_FILE: &str = "tiny-harness.toml";

/// The efforts a conversation can run at.
pub const EFFORTS: [&str; 3] = ["low", "medium", "high"];

/// The task store's file when `[store] path` is not set, beside the
/// configuration file (or in the working directory without one).
pub const DEFAULT_STORE_FILE: &str = "tiny-harness.db";

/// The most tool rounds `[agent] max_tool_rounds` may allow in one turn.
pub const MAX_TOOL_ROUNDS: u32 = 64;

/// Connections to a PostgreSQL store unless `[store] max_connections` says.
pub const DEFAULT_STORE_CONNECTIONS: usize = 8;

/// The longest `[store] accept_commit_delay_ms`: past it, a crash would lose
/// more than a moment of unacknowledged messages, for no further saving.
pub const MAX_ACCEPT_COMMIT_DELAY_MS: u64 = 1000;

/// The longest `[store] commit_interval_ms`: the redo log and the writes a
/// transaction keeps in memory grow with it, and other processes reading
/// the file see commits this late.
pub const MAX_COMMIT_INTERVAL_MS: u32 = 1000;

/// The `[store] path` that keeps tasks in memory only.
pub const MEMORY_STORE: &str = ":memory:";

/// The whole configuration. See the module documentation for the file format.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Config {
    /// The address to serve on. Default `127.0.0.1:8080`. Any address that is not loopback
    /// requires `[auth] tokens` ([`check_exposure`]).
    pub listen: SocketAddr,
    /// The plugins folder, loaded on top of the built-in plugin. Default `plugins`
    /// (relative paths are from the working directory); a missing folder just means no
    /// extra plugins.
    pub plugins_dir: PathBuf,
    /// Where compiled components are cached. Default
    /// `$XDG_CACHE_HOME/tiny-harness/components` (or `~/.cache/...`); none when neither
    /// variable is set.
    pub cache_dir: Option<PathBuf>,
    /// The models by name (the `/model` allowlist) and the default model.
    pub models: ModelsConfig,
    /// The effort a new conversation starts on: `low`, `medium` (default) or `high`.
    pub default_effort: String,
    /// How a task a participant starts lives when its first message does not say:
    /// `conversation` (default, decision 007) or `task`.
    pub default_lifecycle: TaskLifecycle,
    /// Whether a first message (no `taskId`) whose `messageId` its sender already started
    /// a task with is a resend, answered with that task (default), or starts a new task
    /// (`false`: for clients that reuse ids, like the A2A conformance kit).
    pub dedupe_first_messages: bool,
    /// Participant ids that are admins on every task. Default none. Admin rights need a
    /// credential: with admins and no `[auth] tokens` the configuration is refused
    /// ([`ConfigError::SelfAssertedAdmins`]).
    pub admins: Vec<String>,
    /// Bearer tokens. Default none: loopback only, callers self-asserted.
    pub auth: AuthConfig,
    /// The names requests may address the server by, and the browser origins it serves.
    pub http: HttpConfig,
    /// Request and task limits.
    pub limits: LimitsConfig,
    /// How model turns run.
    pub agent: AgentConfig,
    /// The per-participant limit on message sends.
    pub rate_limit: RateLimitConfig,
    /// The per-participant limit on command completion requests.
    pub completion: CompletionConfig,
    /// Where tasks are kept.
    pub store: StoreConfig,
    /// Push-notification delivery.
    pub push: PushConfig,
    /// Outbound TLS.
    pub tls: TlsConfig,
    /// Plugin capability grants and plugin bounds (instances, logs, files,
    /// declarations).
    pub plugins: PluginsConfig,
    /// The gRPC binding.
    pub grpc: GrpcConfig,
    /// `[mcp.<name>]`: MCP servers whose allowlisted tools the model may call.
    /// Default none.
    pub mcp: BTreeMap<String, McpServerConfig>,
    /// `[agents.<name>]`: other A2A agents the model may delegate tasks to.
    /// Default none.
    pub agents: BTreeMap<String, DelegateConfig>,
    /// The folder of the configuration file it was read from; relative store
    /// and CA file paths are from there. Not a key of the file.
    #[serde(skip)]
    pub base_dir: Option<PathBuf>,
    /// The certificates of `[tls] extra_ca_files`, read by [`Config::load`].
    /// Not a key of the file.
    #[serde(skip)]
    pub extra_roots: ExtraRoots,
}

/// `[tls]`: serving https, and how the harness checks the servers it calls
/// (https webhooks, remote hook executors).
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct TlsConfig {
    /// The server's certificate chain, PEM: with `key_file`, the server speaks
    /// https. Relative paths are from the configuration file's folder.
    pub cert_file: Option<PathBuf>,
    /// The private key of `cert_file`, PEM.
    pub key_file: Option<PathBuf>,
    /// PEM files of root certificates trusted on top of the system's, for
    /// servers behind a private CA. Relative paths are from the
    /// configuration file's folder. Default none.
    pub extra_ca_files: Vec<PathBuf>,
}

/// `[grpc]`: the A2A gRPC binding, on a listener of its own (HTTP/2; TLS with `[tls]`).
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct GrpcConfig {
    /// Where to serve it. Default none: the binding is off and the card does not list it.
    /// Beyond loopback, like `listen`, it needs `[auth] tokens`.
    pub listen: Option<SocketAddr>,
    /// gRPC connections open at once; a connection beyond it waits to be accepted.
    /// Default 256.
    pub max_connections: usize,
    /// Calls in flight on one connection (HTTP/2 `SETTINGS_MAX_CONCURRENT_STREAMS`).
    /// Default 100.
    pub max_concurrent_streams: u32,
}

impl Default for GrpcConfig {
    fn default() -> Self {
        GrpcConfig {
            listen: None,
            max_connections: 256,
            max_concurrent_streams: 100,
        }
    }
}

impl GrpcConfig {
    fn validate(&self) -> Result<(), ConfigError> {
        if self.max_connections == 0 {
            return Err(invalid("grpc.max_connections", "must be at least 1"));
        }
        if self.max_concurrent_streams == 0 {
            return Err(invalid("grpc.max_concurrent_streams", "must be at least 1"));
        }
        Ok(())
    }
}

/// `[store]`.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct StoreConfig {
    /// The SQLite file. Relative paths are from the configuration file's folder (the working
    /// directory without a file); `":memory:"` keeps tasks in memory only. Default
    /// [`DEFAULT_STORE_FILE`].
    pub path: Option<String>,
    /// `normal` (default): committed messages survive the process dying; `full`: they also
    /// survive power loss, at an fsync per commit.
    pub synchronous: Synchronous,
    /// Seconds a task's actor with nothing to do stays in memory. Default 300.
    pub idle_timeout_secs: u64,
    /// Milliseconds a plain message whose sender waits for its turn's end may stay unstored,
    /// so that a turn ending sooner stores it with its reply in one commit (nothing is
    /// acknowledged before that commit). 0 stores every message before its turn starts.
    /// Default 10, at most [`MAX_ACCEPT_COMMIT_DELAY_MS`].
    pub accept_commit_delay_ms: u64,
    /// MiB the SQLite write-ahead log may hold before a checkpoint makes it start over (and
    /// the size its file is cut back to). Default 64, at least 1.
    pub max_wal_mib: u32,
    /// MiB of documents the SQLite store keeps of the conversations being read (their
    /// heads, histories and artifacts), kept in step with every commit; the least recently
    /// used goes first, and an idle server empties it. Default 32; 0 turns it off.
    pub cache_mib: u32,
    /// Milliseconds the SQLite store's writer keeps a transaction open: a write is answered
    /// once it is in the redo log beside the database (as durable as a commit with the same
    /// `synchronous`), and a commit carries every write of the interval, so a page many of
    /// them change is written once. Reads see every answered write (a read of a task with
    /// uncommitted writes commits them first); other processes reading the file see them
    /// this late. Default [`DEFAULT_COMMIT_INTERVAL_MS`], at most
    /// [`MAX_COMMIT_INTERVAL_MS`]; 0 commits every batch before it is answered.
    pub commit_interval_ms: u32,
    /// Days a finished (completed, failed, canceled, rejected) task is kept after it ended.
    /// Default: forever.
    pub retain_terminal_days: Option<u32>,
    /// A PostgreSQL database instead of the SQLite file (`postgres://user@host:5432/db`;
    /// a build with the `postgres` or `temporal` feature): what the Temporal engine's
    /// processes on several machines share. Not with `path`.
    pub url: Option<String>,
    /// The environment variable holding the database's password, when the URL has none.
    pub password_env: Option<String>,
    /// Connections to the database one process opens at most. Default 8, at least 1.
    pub max_connections: usize,
}

/// `[push]`.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PushConfig {
    /// Whether webhooks may resolve to loopback, private or link-local addresses. Default
    /// false.
    pub allow_private: bool,
    /// Attempts per event and webhook, the first included. Default 5.
    pub max_attempts: u32,
    /// Milliseconds before the first retry; it doubles after each. Default 500.
    pub initial_backoff_ms: u64,
    /// Seconds one attempt may take. Default 10.
    pub timeout_secs: u64,
    /// Configurations (webhooks) on one task. Default 10.
    pub max_configs_per_task: u32,
    /// Configurations one participant owns, over all tasks. Default 100.
    pub max_configs_per_participant: u32,
}

/// `[auth]`.
#[derive(Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct AuthConfig {
    /// Bearer token -> participant id. When any is configured, every A2A request (not the
    /// agent card) needs `Authorization: Bearer <token>`. Default none.
    pub tokens: BTreeMap<String, String>,
}

/// `[http]`: which `Host` and `Origin` a request may carry (DNS rebinding and cross-site
/// requests; see `server::origin`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct HttpConfig {
    /// Host names (or IP addresses), each optionally with `:port`, that requests may name in
    /// `Host` besides the loopback names (`localhost`, `127.0.0.1`, `[::1]`) and the address
    /// the server is bound to. Needed behind a proxy or for a public name. Default none.
    pub public_names: Vec<String>,
    /// Browser origins (`https://app.example.com`) other than the server's own that may call
    /// it; they get CORS answers. Default none: a page elsewhere cannot call the server.
    pub allowed_origins: Vec<String>,
}

/// `[limits]`.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LimitsConfig {
    /// The largest request body accepted, in bytes. Default 1 MiB.
    pub max_body_bytes: u64,
    /// Seconds a connection has to send a request's headers (each request on a kept-alive
    /// connection included); then it is closed. Default 30.
    pub header_read_timeout_secs: u64,
    /// Seconds a request's body may take to arrive. Default 30.
    pub body_read_timeout_secs: u64,
    /// Connections open at once, TLS handshakes included. A connection beyond it closes the
    /// oldest idle one (no request in flight); with none idle it gets a 503 and is closed.
    /// Default 512: well under the usual 1,024 file descriptors.
    pub max_connections: u32,
    /// Seconds a client has to finish its TLS handshake. Default 10.
    pub tls_handshake_timeout_secs: u64,
    /// Parts in one message. Default 100.
    pub max_parts_per_message: u32,
    /// How deeply message metadata, part metadata and data parts may nest. Default 32.
    pub max_json_depth: u32,
    /// JSON values (objects, arrays and scalars) in a message's metadata and data parts
    /// together. Default 10,000.
    pub max_json_values_per_message: u32,
    /// Messages one task's history may hold; then the task refuses new ones (continue in a
    /// new task of the same context). Default 100,000.
    pub max_history_messages: usize,
    /// Bytes of one command reply, text and data together. Default 256 KiB.
    pub max_reply_bytes: usize,
    /// Effects one command may ask for. Default 16.
    pub max_effects: usize,
    /// Sub-tasks one task may have open at once. Default 32.
    pub max_open_subtasks: usize,
}

/// `[agent]`: how model turns run.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct AgentConfig {
    /// Instructions sent to the model before every conversation. Default none.
    pub system_prompt: Option<String>,
    /// Tool rounds one turn may take before the loop stops it with a message. Default 8.
    pub max_tool_rounds: u32,
    /// Tools every call of which waits for a participant's approval
    /// (`awaiting-approval`), whatever the tool's own declaration says. Default none.
    pub tools_needing_approval: Vec<String>,
}

impl Default for AgentConfig {
    fn default() -> Self {
        let defaults = AgentSettings::default();
        AgentConfig {
            system_prompt: defaults.system_prompt,
            max_tool_rounds: defaults.max_tool_rounds,
            tools_needing_approval: defaults.tools_needing_approval,
        }
    }
}

/// `[rate_limit]`: token buckets on message sends only.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RateLimitConfig {
    /// Sends a participant (a token's participant, or a self-asserted id) may make in a
    /// burst. Default 20.
    pub per_participant_burst: u32,
    /// Sends per second a participant regains, up to the burst. Default 5.
    pub per_participant_per_second: f64,
    /// Without tokens a caller's id is only a claim, so its sends also take a token from its
    /// IP address's bucket: rotating ids does not lift the limit. Default 20.
    pub per_address_burst: u32,
    /// Sends per second an address regains. Default 5.
    pub per_address_per_second: f64,
    /// Buckets kept at once; beyond it the least recently used is forgotten. Default 10,000.
    pub max_buckets: u32,
}

/// `[completion]`: a token bucket per participant on command completion requests, which
/// renderers send as a participant types and which may call a plugin's completion export.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CompletionConfig {
    /// Completion requests a participant may make in a burst. Default 50.
    pub per_participant_burst: u32,
    /// Completion requests per second a participant regains, up to the burst. Default 10.
    pub per_participant_per_second: f64,
    /// The longest text one request completes, in bytes: a command line, not a document.
    /// Default 4096.
    pub max_text_bytes: u32,
}

impl Default for CompletionConfig {
    fn default() -> Self {
        CompletionConfig {
            per_participant_burst: 50,
            per_participant_per_second: 10.0,
            max_text_bytes: 4096,
        }
    }
}

impl CompletionConfig {
    fn validate(&self) -> Result<(), ConfigError> {
        if self.per_participant_burst == 0 {
            return Err(invalid(
                "completion.per_participant_burst",
                "must be at least 1, or no participant could ever complete a command",
            ));
        }
        let rate = self.per_participant_per_second;
        if !rate.is_finite() || rate <= 0.0 {
            return Err(invalid(
                "completion.per_participant_per_second",
                format!("must be a positive number, got {rate}"),
            ));
        }
        if self.max_text_bytes == 0 {
            return Err(invalid("completion.max_text_bytes", "must be at least 1"));
        }
        Ok(())
    }
}

/// Command-line values that replace the file's.
#[derive(Clone, Debug, Default)]
pub struct Overrides {
    /// `--listen`.
    pub listen: Option<SocketAddr>,
    /// `--plugins`.
    pub plugins_dir: Option<PathBuf>,
    /// `--cache-dir`.
    pub cache_dir: Option<PathBuf>,
    /// `--no-cache`: compile every component afresh.
    pub no_cache: bool,
}

/// Why the configuration cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The file could not be read.
    #[error("cannot read the configuration file {}: {error}", path.display())]
    Read {
        path: PathBuf,
        error: std::io::Error,
    },
    /// The text is not valid TOML, has an unknown key, or a value of the wrong type. The
    /// message names the key and its line.
    #[error("invalid configuration: {0}")]
    Parse(String),
    /// An error in a configuration file, naming the file.
    #[error("{}: {error}", path.display())]
    InFile {
        path: PathBuf,
        error: Box<ConfigError>,
    },
    /// A value is out of its allowed range.
    #[error("invalid configuration: `{key}`: {problem}")]
    Invalid { key: String, problem: String },
    /// Admins configured without tokens: anyone could claim to be one.
    #[error(
        "`admins` names {admins} but no `[auth] tokens` are configured: without tokens every caller names itself, so any process on this machine could claim to be an admin. Admin rights need a bearer token: add one per admin, e.g.\n\n    [auth]\n    tokens = {{ \"{example_token}\" = \"{first}\" }}\n\n(with tokens every caller needs one of their own), or remove `admins`"
    )]
    SelfAssertedAdmins {
        /// The configured admins, quoted and joined.
        admins: String,
        /// The first of them, for the example.
        first: String,
        /// A freshly generated random token for the example.
        example_token: String,
    },
    /// Listening beyond loopback without authentication.
    #[error(
        "refusing to listen on {listen}: it is not a loopback address and no `[auth] tokens` are configured, so anyone who can reach it could act as any participant; configure tokens or listen on 127.0.0.1"
    )]
    Unauthenticated { listen: SocketAddr },
}

impl Default for Config {
    fn default() -> Self {
        Config {
            listen: SocketAddr::from((Ipv4Addr::LOCALHOST, 8080)),
            plugins_dir: PathBuf::from("plugins"),
            cache_dir: default_cache_dir(),
            models: ModelsConfig::default(),
            default_effort: "medium".to_owned(),
            default_lifecycle: TaskLifecycle::default(),
            dedupe_first_messages: true,
            admins: Vec::new(),
            auth: AuthConfig::default(),
            http: HttpConfig::default(),
            limits: LimitsConfig::default(),
            agent: AgentConfig::default(),
            rate_limit: RateLimitConfig::default(),
            completion: CompletionConfig::default(),
            store: StoreConfig::default(),
            push: PushConfig::default(),
            tls: TlsConfig::default(),
            plugins: PluginsConfig::default(),
            grpc: GrpcConfig::default(),
            mcp: BTreeMap::new(),
            agents: BTreeMap::new(),
            base_dir: None,
            extra_roots: ExtraRoots::default(),
        }
    }
}

impl Default for StoreConfig {
    fn default() -> Self {
        StoreConfig {
            path: None,
            synchronous: Synchronous::Normal,
            idle_timeout_secs: 300,
            accept_commit_delay_ms: 10,
            max_wal_mib: DEFAULT_MAX_WAL_MIB,
            cache_mib: DEFAULT_CACHE_MIB,
            commit_interval_ms: DEFAULT_COMMIT_INTERVAL_MS,
            retain_terminal_days: None,
            url: None,
            password_env: None,
            max_connections: DEFAULT_STORE_CONNECTIONS,
        }
    }
}

impl Default for PushConfig {
    fn default() -> Self {
        let defaults = PushSettings::default();
        PushConfig {
            allow_private: defaults.allow_private,
            max_attempts: defaults.max_attempts,
            initial_backoff_ms: u64::try_from(defaults.initial_backoff.as_millis()).unwrap_or(500),
            timeout_secs: defaults.timeout.as_secs(),
            max_configs_per_task: defaults.max_configs_per_task,
            max_configs_per_participant: defaults.max_configs_per_participant,
        }
    }
}

impl Default for LimitsConfig {
    fn default() -> Self {
        let task = TaskLimits::default();
        LimitsConfig {
            max_body_bytes: 1024 * 1024,
            header_read_timeout_secs: 30,
            body_read_timeout_secs: 30,
            max_connections: 512,
            tls_handshake_timeout_secs: 10,
            max_parts_per_message: 100,
            max_json_depth: 32,
            max_json_values_per_message: 10_000,
            max_history_messages: task.max_history_messages,
            max_reply_bytes: task.max_reply_bytes,
            max_effects: task.max_effects,
            max_open_subtasks: task.max_open_subtasks,
        }
    }
}

impl Default for RateLimitConfig {
    fn default() -> Self {
        RateLimitConfig {
            per_participant_burst: 20,
            per_participant_per_second: 5.0,
            per_address_burst: 20,
            per_address_per_second: 5.0,
            max_buckets: 10_000,
        }
    }
}

// Tokens are secrets: never print them, only how many there are and whom they name.
impl fmt::Debug for AuthConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let participants: Vec<&String> = self.tokens.values().collect();
        f.debug_struct("AuthConfig")
            .field("tokens", &format_args!("<{} redacted>", self.tokens.len()))
            .field("participants", &participants)
            .finish()
    }
}

impl Config {
    /// Reads and validates the configuration: `explicit` if given (it must exist), else
    /// [`DEFAULT_CONFIG_FILE`] in the working directory if present, else the defaults.
    pub fn load(explicit: Option<&Path>) -> Result<Config, ConfigError> {
        let default_file = Path::new(DEFAULT_CONFIG_FILE);
        let path = match explicit {
            Some(path) => path,
            None if default_file.is_file() => default_file,
            None => return Ok(Config::default()),
        };
        let text = std::fs::read_to_string(path).map_err(|error| ConfigError::Read {
            path: path.to_owned(),
            error,
        })?;
        let in_file = |error| ConfigError::InFile {
            path: path.to_owned(),
            error: Box::new(error),
        };
        let mut config = Config::from_toml(&text).map_err(in_file)?;
        config.base_dir = path.parent().map(Path::to_owned);
        config.extra_roots = config.read_extra_roots().map_err(in_file)?;
        Ok(config)
    }

    /// Parses and validates a configuration file's text.
    pub fn from_toml(text: &str) -> Result<Config, ConfigError> {
        let config: Config =
            toml::from_str(text).map_err(|error| ConfigError::Parse(error.to_string()))?;
        config.validate()?;
        Ok(config)
    }

    /// Applies command-line overrides.
    pub fn apply(&mut self, overrides: Overrides) {
        if let Some(listen) = overrides.listen {
            self.listen = listen;
        }
        if let Some(dir) = overrides.plugins_dir {
            self.plugins_dir = dir;
        }
        if let Some(dir) = overrides.cache_dir {
            self.cache_dir = Some(dir);
        }
        if overrides.no_cache {
            self.cache_dir = None;
        }
    }

    /// Checks every value. Listening beyond loopback is checked separately
    /// ([`Config::check_exposure`]), after command-line overrides.
    pub fn validate(&self) -> Result<(), ConfigError> {
        self.models.validate()?;
        if !EFFORTS.contains(&self.default_effort.as_str()) {
            return Err(invalid(
                "default_effort",
                format!(
                    "`{}` is not an effort; use one of {}",
                    self.default_effort,
                    EFFORTS.join(", ")
                ),
            ));
        }
        for (index, admin) in self.admins.iter().enumerate() {
            check_participant_id(admin)
                .map_err(|problem| invalid(&format!("admins[{index}]"), problem))?;
        }
        self.auth.validate()?;
        self.check_admins()?;
        self.http.validate()?;
        self.limits.validate()?;
        for (key, value) in [
            (
                "limits.max_history_messages",
                self.limits.max_history_messages,
            ),
            ("limits.max_reply_bytes", self.limits.max_reply_bytes),
        ] {
            if value == 0 {
                return Err(invalid(key, "must be at least 1"));
            }
        }
        if self.agent.max_tool_rounds > MAX_TOOL_ROUNDS {
            return Err(invalid(
                "agent.max_tool_rounds",
                format!("must be at most {MAX_TOOL_ROUNDS}"),
            ));
        }
        self.rate_limit.validate()?;
        self.completion.validate()?;
        self.store.validate()?;
        self.push.validate()?;
        self.plugins
            .validate()
            .map_err(|(key, problem)| invalid(&key, problem))?;
        self.grpc.validate()?;
        for (name, server) in &self.mcp {
            server
                .validate(name)
                .map_err(|(key, problem)| invalid(&key, problem))?;
        }
        for (name, agent) in &self.agents {
            agent
                .validate(name)
                .map_err(|(key, problem)| invalid(&key, problem))?;
        }
        self.tls.validate()
    }

    /// Admin rights need a credential: a self-asserted id is never an admin, so admins
    /// without tokens are refused rather than left reachable by anyone who claims the id.
    fn check_admins(&self) -> Result<(), ConfigError> {
        if self.admins.is_empty() || !self.auth.tokens.is_empty() {
            return Ok(());
        }
        let quoted: Vec<String> = self.admins.iter().map(|id| format!("`{id}`")).collect();
        Err(ConfigError::SelfAssertedAdmins {
            admins: quoted.join(", "),
            first: self.admins[0].clone(),
            example_token: uuid::Uuid::new_v4().simple().to_string(),
        })
    }

    /// `[tls] cert_file` and `key_file`, resolved against the configuration
    /// file's folder, when the server is to speak https.
    pub fn server_identity(&self) -> Option<(PathBuf, PathBuf)> {
        let cert = self.tls.cert_file.as_deref()?;
        let key = self.tls.key_file.as_deref()?;
        Some((self.resolve(cert), self.resolve(key)))
    }

    /// `path`, relative to the configuration file's folder if it is relative.
    fn resolve(&self, path: &Path) -> PathBuf {
        match &self.base_dir {
            Some(base) if path.is_relative() => base.join(path),
            _ => path.to_owned(),
        }
    }

    /// Where and how to open the task store: `[store] path` resolved against the
    /// configuration file's folder.
    pub fn store_options(&self) -> StoreOptions {
        let location = match self.store.path.as_deref() {
            _ if self.store.url.is_some() => StoreLocation::Postgres(PostgresLocation {
                url: self.store.url.clone().unwrap_or_default(),
                password_env: self.store.password_env.clone(),
                max_connections: self.store.max_connections,
            }),
            Some(MEMORY_STORE) => StoreLocation::Memory,
            path => {
                let path = Path::new(path.unwrap_or(DEFAULT_STORE_FILE));
                let base = self.base_dir.as_deref().filter(|_| path.is_relative());
                StoreLocation::File(base.map_or_else(|| path.to_owned(), |base| base.join(path)))
            }
        };
        StoreOptions {
            location,
            sqlite: SqliteOptions::bounded(self.store.synchronous, self.store.max_wal_mib)
                .cached(self.store.cache_mib)
                .committing_every(self.store.commit_interval_ms),
            shared: false,
        }
    }

    /// What `[store]` and `[push]` ask for: the store opened (created if
    /// needed), the idle period, retention and push settings.
    pub fn durability(&self) -> Result<Durability, StoreError> {
        self.durability_with(self.store_options())
    }

    /// The same, for a store the Temporal engine's servers and workers
    /// share (`SqliteOptions::shared`).
    pub fn shared_durability(&self) -> Result<Durability, StoreError> {
        let mut options = self.store_options();
        options.shared = true;
        self.durability_with(options)
    }

    fn durability_with(&self, options: StoreOptions) -> Result<Durability, StoreError> {
        match &options.location {
            StoreLocation::File(path) => tracing::info!(
                path = %path.display(),
                synchronous = ?options.sqlite.synchronous,
                max_wal_bytes = options.sqlite.max_wal_bytes,
                "task store"
            ),
            StoreLocation::Memory => {
                tracing::warn!("tasks are kept in memory only: a restart forgets them");
            }
            StoreLocation::Postgres(location) => tracing::info!(
                url = %redacted(&location.url),
                max_connections = location.max_connections,
                "task store"
            ),
        }
        Ok(Durability {
            store: crate::store::open(&options)?,
            idle_timeout: self.store.idle_timeout(),
            accept_commit_delay: self.store.accept_commit_delay(),
            retain_terminal: self.store.retention(),
            push: self.push_settings(),
        })
    }

    /// What the task lifecycle takes from the configuration.
    pub fn task_settings(&self) -> TaskSettings {
        let limits = &self.limits;
        TaskSettings {
            default_model: self.models.default_name().to_owned(),
            selectable_models: self.models.names(),
            default_effort: self.default_effort.clone(),
            admins: self.admins.clone(),
            default_lifecycle: self.default_lifecycle,
            dedupe_first_messages: self.dedupe_first_messages,
            agent: AgentSettings {
                system_prompt: self.agent.system_prompt.clone(),
                max_tool_rounds: self.agent.max_tool_rounds,
                tools_needing_approval: self.agent.tools_needing_approval.clone(),
            },
            limits: TaskLimits {
                max_history_messages: limits.max_history_messages,
                max_reply_bytes: limits.max_reply_bytes,
                max_effects: limits.max_effects,
                max_open_subtasks: limits.max_open_subtasks,
            },
        }
    }

    /// The push delivery settings of `[push]`, trusting `[tls]`'s roots.
    pub fn push_settings(&self) -> PushSettings {
        PushSettings {
            allow_private: self.push.allow_private,
            max_attempts: self.push.max_attempts,
            initial_backoff: Duration::from_millis(self.push.initial_backoff_ms),
            timeout: Duration::from_secs(self.push.timeout_secs),
            extra_roots: self.extra_roots.clone(),
            max_configs_per_task: self.push.max_configs_per_task,
            max_configs_per_participant: self.push.max_configs_per_participant,
        }
    }

    /// Every configured model's settings, API keys read from the
    /// environment: fails naming a variable that is not set.
    pub fn model_settings(&self) -> Result<Vec<ModelSettings>, ConfigError> {
        self.models
            .settings(&self.extra_roots, |name| std::env::var(name).ok())
    }

    /// The MCP servers and delegate agents, their tokens read from the
    /// environment (a variable that is not set stops the start, naming it)
    /// and a stdio server's environment assembled (`PATH`, `inherit_env`,
    /// `env`; nothing else of the harness's).
    pub fn tool_sources(&self) -> Result<ToolSourceSettings, ConfigError> {
        let env = |name: &str| std::env::var(name).ok();
        let base = self.base_dir.as_deref();
        let mcp = self
            .mcp
            .iter()
            .map(|(name, server)| server.settings(name, base, &env))
            .collect::<Result<Vec<_>, _>>();
        let delegates = self
            .agents
            .iter()
            .map(|(name, agent)| agent.settings(name, &env))
            .collect::<Result<Vec<_>, _>>();
        let problem = |(key, problem): (String, String)| invalid(&key, problem);
        Ok(ToolSourceSettings {
            mcp: mcp.map_err(problem)?,
            delegates: delegates.map_err(problem)?,
        })
    }

    /// Read `[tls] extra_ca_files`, relative to the configuration file's
    /// folder.
    fn read_extra_roots(&self) -> Result<ExtraRoots, ConfigError> {
        let files: Vec<PathBuf> = self
            .tls
            .extra_ca_files
            .iter()
            .map(|file| self.resolve(file))
            .collect();
        ExtraRoots::from_pem_files(&files).map_err(|problem| invalid("tls.extra_ca_files", problem))
    }

    /// Refuses to serve beyond loopback without tokens. See [`check_exposure`].
    pub fn check_exposure(&self) -> Result<(), ConfigError> {
        let tokens = !self.auth.tokens.is_empty();
        check_exposure(self.listen, tokens)?;
        match self.grpc.listen {
            Some(grpc) => check_exposure(grpc, tokens),
            None => Ok(()),
        }
    }
}

impl TlsConfig {
    fn validate(&self) -> Result<(), ConfigError> {
        match (&self.cert_file, &self.key_file) {
            (Some(_), None) => Err(invalid(
                "tls.key_file",
                "cert_file is set without key_file; set both to serve https, or neither",
            )),
            (None, Some(_)) => Err(invalid(
                "tls.cert_file",
                "key_file is set without cert_file; set both to serve https, or neither",
            )),
            _ => Ok(()),
        }
    }

    /// Whether the server speaks https.
    pub fn serves_https(&self) -> bool {
        self.cert_file.is_some() && self.key_file.is_some()
    }
}

impl AuthConfig {
    fn validate(&self) -> Result<(), ConfigError> {
        for (token, participant) in &self.tokens {
            // Name the participant, never the token: the error may end up in a log.
            let key = format!("auth.tokens (the token for `{participant}`)");
            if token.is_empty() || token.chars().any(|c| c.is_whitespace() || c.is_control()) {
                return Err(invalid(
                    &key,
                    "a token must be non-empty, without spaces or control characters",
                ));
            }
            check_participant_id(participant).map_err(|problem| invalid(&key, problem))?;
        }
        Ok(())
    }
}

/// `url` without the password it may carry, for logs.
fn redacted(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_owned();
    };
    match rest.split_once('@') {
        Some((user, host)) if user.contains(':') => {
            let name = user.split(':').next().unwrap_or_default();
            format!("{scheme}://{name}:***@{host}")
        }
        _ => url.to_owned(),
    }
}

impl StoreConfig {
    fn validate(&self) -> Result<(), ConfigError> {
        if self
            .path
            .as_deref()
            .is_some_and(|path| path.trim().is_empty())
        {
            return Err(invalid(
                "store.path",
                format!(
                    "cannot be empty; leave it out for {DEFAULT_STORE_FILE} or use \"{MEMORY_STORE}\""
                ),
            ));
        }
        if let Some(url) = &self.url {
            if self.path.is_some() {
                return Err(invalid(
                    "store.url",
                    "a store is a SQLite file (path) or a PostgreSQL database (url), not both",
                ));
            }
            if !(url.starts_with("postgres://") || url.starts_with("postgresql://")) {
                return Err(invalid(
                    "store.url",
                    "must be a postgres:// URL, e.g. postgres://tiny@db.internal:5432/tiny",
                ));
            }
        }
        if self.max_connections == 0 {
            return Err(invalid("store.max_connections", "must be at least 1"));
        }
        if self.idle_timeout_secs == 0 {
            return Err(invalid("store.idle_timeout_secs", "must be at least 1"));
        }
        if self.max_wal_mib == 0 {
            return Err(invalid("store.max_wal_mib", "must be at least 1"));
        }
        if self.accept_commit_delay_ms > MAX_ACCEPT_COMMIT_DELAY_MS {
            return Err(invalid(
                "store.accept_commit_delay_ms",
                format!("must be at most {MAX_ACCEPT_COMMIT_DELAY_MS}"),
            ));
        }
        if self.commit_interval_ms > MAX_COMMIT_INTERVAL_MS {
            return Err(invalid(
                "store.commit_interval_ms",
                format!("must be at most {MAX_COMMIT_INTERVAL_MS}"),
            ));
        }
        Ok(())
    }

    /// How long an idle task's actor stays in memory.
    pub fn idle_timeout(&self) -> Duration {
        Duration::from_secs(self.idle_timeout_secs)
    }

    /// How long a waiting sender's message may stay unstored while its turn runs.
    pub fn accept_commit_delay(&self) -> Duration {
        Duration::from_millis(self.accept_commit_delay_ms)
    }

    /// How long finished tasks are kept, if not forever.
    pub fn retention(&self) -> Option<Duration> {
        self.retain_terminal_days
            .map(|days| Duration::from_secs(u64::from(days) * 86_400))
    }
}

impl PushConfig {
    fn validate(&self) -> Result<(), ConfigError> {
        if !(1..=20).contains(&self.max_attempts) {
            return Err(invalid("push.max_attempts", "must be from 1 to 20"));
        }
        at_least_one("push.timeout_secs", self.timeout_secs)?;
        at_least_one(
            "push.max_configs_per_task",
            self.max_configs_per_task.into(),
        )?;
        at_least_one(
            "push.max_configs_per_participant",
            self.max_configs_per_participant.into(),
        )
    }
}

impl HttpConfig {
    fn validate(&self) -> Result<(), ConfigError> {
        for (index, name) in self.public_names.iter().enumerate() {
            check_public_name(name)
                .map_err(|problem| invalid(&format!("http.public_names[{index}]"), problem))?;
        }
        for (index, origin) in self.allowed_origins.iter().enumerate() {
            check_origin(origin)
                .map_err(|problem| invalid(&format!("http.allowed_origins[{index}]"), problem))?;
        }
        Ok(())
    }
}

/// `host` or `host:port`, nothing else (no scheme, path or credentials).
fn check_public_name(name: &str) -> Result<(), String> {
    let authority: axum::http::uri::Authority = name
        .parse()
        .map_err(|_| format!("`{name}` is not a host name, optionally with :port"))?;
    if authority.as_str().contains('@') || authority.host().is_empty() {
        return Err(format!(
            "`{name}` is not a host name, optionally with :port"
        ));
    }
    Ok(())
}

/// An origin as browsers send it: `http(s)://host[:port]`, without a path.
fn check_origin(origin: &str) -> Result<(), String> {
    let url = reqwest::Url::parse(origin).map_err(|error| format!("`{origin}`: {error}"))?;
    let bare = url.path() == "/" && url.query().is_none() && url.fragment().is_none();
    let shape = matches!(url.scheme(), "http" | "https") && url.host().is_some();
    if !bare || !shape || !url.username().is_empty() || origin.ends_with('/') {
        return Err(format!(
            "`{origin}` is not an origin; write scheme://host[:port], e.g. https://app.example.com"
        ));
    }
    Ok(())
}

impl LimitsConfig {
    fn validate(&self) -> Result<(), ConfigError> {
        at_least_one("limits.max_body_bytes", self.max_body_bytes)?;
        at_least_one(
            "limits.header_read_timeout_secs",
            self.header_read_timeout_secs,
        )?;
        at_least_one("limits.body_read_timeout_secs", self.body_read_timeout_secs)?;
        at_least_one("limits.max_connections", self.max_connections.into())?;
        at_least_one(
            "limits.tls_handshake_timeout_secs",
            self.tls_handshake_timeout_secs,
        )?;
        at_least_one(
            "limits.max_parts_per_message",
            self.max_parts_per_message.into(),
        )?;
        at_least_one("limits.max_json_depth", self.max_json_depth.into())?;
        at_least_one(
            "limits.max_json_values_per_message",
            self.max_json_values_per_message.into(),
        )
    }
}

impl RateLimitConfig {
    fn validate(&self) -> Result<(), ConfigError> {
        for (key, burst) in [
            (
                "rate_limit.per_participant_burst",
                self.per_participant_burst,
            ),
            ("rate_limit.per_address_burst", self.per_address_burst),
        ] {
            if burst == 0 {
                return Err(invalid(
                    key,
                    "must be at least 1, or nobody could ever send",
                ));
            }
        }
        for (key, rate) in [
            (
                "rate_limit.per_participant_per_second",
                self.per_participant_per_second,
            ),
            (
                "rate_limit.per_address_per_second",
                self.per_address_per_second,
            ),
        ] {
            if !rate.is_finite() || rate <= 0.0 {
                return Err(invalid(
                    key,
                    format!("must be a positive number, got {rate}"),
                ));
            }
        }
        at_least_one("rate_limit.max_buckets", self.max_buckets.into())
    }
}

fn at_least_one(key: &str, value: u64) -> Result<(), ConfigError> {
    if value == 0 {
        Err(invalid(key, "must be at least 1"))
    } else {
        Ok(())
    }
}

/// Whether the server may listen on `listen`: loopback always; any other address only with
/// tokens, because without them a caller's identity is whatever it claims.
pub fn check_exposure(listen: SocketAddr, tokens_configured: bool) -> Result<(), ConfigError> {
    if tokens_configured || listen.ip().to_canonical().is_loopback() {
        Ok(())
    } else {
        Err(ConfigError::Unauthenticated { listen })
    }
}

/// `$XDG_CACHE_HOME/tiny-harness/components`, else `~/.cache/tiny-harness/components`.
pub fn default_cache_dir() -> Option<PathBuf> {
    let base = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".cache")))?;
    Some(base.join("tiny-harness").join("components"))
}

fn invalid(key: &str, problem: impl Into<String>) -> ConfigError {
    ConfigError::Invalid {
        key: key.to_owned(),
        problem: problem.into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn error(text: &str) -> String {
        match Config::from_toml(text) {
            Ok(config) => panic!("expected an error, got {config:?}"),
            Err(error) => error.to_string(),
        }
    }

    #[test]
    fn empty_file_is_the_defaults() {
        let config = Config::from_toml("").expect("valid");
        assert_eq!(config, Config::default());
        assert_eq!(config.listen.to_string(), "127.0.0.1:8080");
        assert_eq!(config.models.default_name(), "offline-echo");
        assert_eq!(config.models.names(), ["offline-echo", "offline-large"]);
        assert_eq!(config.limits.max_body_bytes, 1_048_576);
        assert_eq!(config.rate_limit.per_participant_burst, 20);
        assert_eq!(config.default_effort, "medium");
        assert_eq!(config.default_lifecycle, TaskLifecycle::Conversation);
        assert_eq!(config.grpc.listen, None);
    }

    #[test]
    fn lifecycle_and_grpc_parse_and_are_checked() {
        let config = Config::from_toml(
            "default_lifecycle = \"task\"\n[grpc]\nlisten = \"127.0.0.1:0\"\nmax_connections = 3",
        )
        .expect("valid");
        assert_eq!(config.default_lifecycle, TaskLifecycle::Task);
        assert_eq!(
            config.grpc.listen,
            Some("127.0.0.1:0".parse().expect("addr"))
        );
        assert_eq!(config.grpc.max_connections, 3);
        let message = error("default_lifecycle = \"forever\"");
        assert!(message.contains("forever"), "{message}");
        let message = error("[grpc]\nmax_connections = 0");
        assert!(message.contains("grpc.max_connections"), "{message}");
        let mut exposed = Config::default();
        exposed.grpc.listen = Some("0.0.0.0:9".parse().expect("addr"));
        assert!(
            exposed.check_exposure().is_err(),
            "gRPC beyond loopback needs tokens"
        );
        assert_eq!(TaskLifecycle::from_name("task"), Some(TaskLifecycle::Task));
        assert_eq!(TaskLifecycle::from_name("Task"), None);
    }

    #[test]
    fn full_file_parses() {
        let config = Config::from_toml(
            r#"
            listen = "0.0.0.0:9000"
            plugins_dir = "/srv/plugins"
            cache_dir = "/var/cache/th"
            default_effort = "high"
            admins = ["root"]
            [models]
            default = "offline-large"
            [auth]
            tokens = { "tok-1" = "alice", "tok-2" = "bob" }
            [limits]
            max_body_bytes = 4096
            [rate_limit]
            per_participant_burst = 2
            per_participant_per_second = 0.5
            "#,
        )
        .expect("valid");
        assert_eq!(config.listen.port(), 9000);
        assert_eq!(config.cache_dir, Some(PathBuf::from("/var/cache/th")));
        assert_eq!(config.auth.tokens["tok-2"], "bob");
        assert_eq!(config.rate_limit.per_participant_per_second, 0.5);
        // Integers are accepted where a float is expected.
        let config =
            Config::from_toml("[rate_limit]\nper_participant_per_second = 3").expect("valid");
        assert_eq!(config.rate_limit.per_participant_per_second, 3.0);
    }

    #[test]
    fn unknown_keys_are_named() {
        let message = error("listne = \"127.0.0.1:1\"");
        assert!(message.contains("unknown field `listne`"), "{message}");
        let message = error("[models]\ndefualt = \"x\"");
        assert!(message.contains("unknown field `defualt`"), "{message}");
        let message = error("[server]\nport = 1");
        assert!(message.contains("unknown field `server`"), "{message}");
    }

    #[test]
    fn invalid_values_are_explained() {
        let cases = [
            ("listen = \"localhost\"", "listen"),
            ("listen = 8080", "listen"),
            (
                "[models]\ndefault = \"gpt\"",
                "`models.default`: `gpt` is not a configured model (offline-echo, offline-large)",
            ),
            (
                "default_effort = \"max\"",
                "`default_effort`: `max` is not an effort",
            ),
            ("admins = [\"\"]", "`admins[0]`"),
            (
                "[auth]\ntokens = { \"a b\" = \"alice\" }",
                "the token for `alice`",
            ),
            (
                "[auth]\ntokens = { \"t\" = \"\" }",
                "participant id cannot be empty",
            ),
            ("[limits]\nmax_body_bytes = 0", "`limits.max_body_bytes`"),
            ("[limits]\nmax_body_bytes = -1", "max_body_bytes"),
            (
                "[rate_limit]\nper_participant_burst = 0",
                "per_participant_burst",
            ),
            (
                "[rate_limit]\nper_participant_per_second = 0",
                "per_participant_per_second",
            ),
            (
                "[rate_limit]\nper_participant_per_second = nan",
                "per_participant_per_second",
            ),
        ];
        for (text, expected) in cases {
            let message = error(text);
            assert!(message.contains(expected), "{text}: {message}");
        }
    }

    #[test]
    fn the_plugins_section_is_read_and_checked() {
        let config = Config::from_toml(
            "[plugins.grants.probe]\nclocks = true\n[plugins.instances]\nper_plugin = 4",
        )
        .expect("valid");
        assert!(config.plugins.grants["probe"].clocks);
        assert!(!config.plugins.grants["probe"].random);
        assert_eq!(config.plugins.instances.per_plugin, 4);
        let message = error("[plugins.instances]\nbuiltin = 0");
        assert!(message.contains("`plugins.instances.builtin`"), "{message}");
        // Network is granted rule by rule, never as a switch.
        let message = error("[plugins.grants.probe]\nnetwork = true");
        assert!(message.contains("expected a sequence"), "{message}");
        let message = error("[plugins.grants.probe]\nnetwork = [\"ftp://x.example\"]");
        assert!(message.contains("the scheme is http or https"), "{message}");
        let message = error("[plugins.grants.probe]\nhttp = true");
        assert!(message.contains("unknown field `http`"), "{message}");
    }

    #[test]
    fn admins_need_tokens() {
        let message = error("admins = [\"root\"]");
        assert!(message.contains("`root`"), "{message}");
        assert!(message.contains("[auth]"), "{message}");
        assert!(message.contains("= \"root\" }"), "{message}");
        let config =
            Config::from_toml("admins = [\"root\"]\n[auth]\ntokens = { \"t\" = \"root\" }")
                .expect("admins with tokens");
        assert_eq!(config.admins, ["root"]);
        // The defaults are a working loopback setup without admins.
        assert!(Config::default().admins.is_empty());
    }

    #[test]
    fn names_origins_and_new_limits_are_checked() {
        let config = Config::from_toml(
            "[http]\npublic_names = [\"harness.example.com\", \"edge:9443\", \"10.0.0.5\"]\n\
             allowed_origins = [\"https://app.example.com\", \"http://localhost:3000\"]",
        )
        .expect("valid");
        assert_eq!(config.http.public_names.len(), 3);
        for (text, key) in [
            (
                "[http]\npublic_names = [\"http://x\"]",
                "http.public_names[0]",
            ),
            ("[http]\npublic_names = [\"a/b\"]", "http.public_names[0]"),
            (
                "[http]\npublic_names = [\"u@host\"]",
                "http.public_names[0]",
            ),
            (
                "[http]\nallowed_origins = [\"null\"]",
                "http.allowed_origins[0]",
            ),
            (
                "[http]\nallowed_origins = [\"https://a.example/\"]",
                "http.allowed_origins[0]",
            ),
            (
                "[http]\nallowed_origins = [\"https://a.example/x\"]",
                "http.allowed_origins[0]",
            ),
            (
                "[http]\nallowed_origins = [\"ftp://a.example\"]",
                "http.allowed_origins[0]",
            ),
            ("[limits]\nmax_connections = 0", "limits.max_connections"),
            (
                "[limits]\nmax_parts_per_message = 0",
                "limits.max_parts_per_message",
            ),
            ("[limits]\nmax_json_depth = 0", "limits.max_json_depth"),
            (
                "[limits]\nmax_json_values_per_message = 0",
                "limits.max_json_values_per_message",
            ),
            (
                "[limits]\ntls_handshake_timeout_secs = 0",
                "limits.tls_handshake_timeout_secs",
            ),
            (
                "[rate_limit]\nper_address_burst = 0",
                "rate_limit.per_address_burst",
            ),
            (
                "[rate_limit]\nper_address_per_second = -1",
                "rate_limit.per_address_per_second",
            ),
            ("[rate_limit]\nmax_buckets = 0", "rate_limit.max_buckets"),
            (
                "[push]\nmax_configs_per_task = 0",
                "push.max_configs_per_task",
            ),
            (
                "[push]\nmax_configs_per_participant = 0",
                "push.max_configs_per_participant",
            ),
        ] {
            let message = error(text);
            assert!(message.contains(key), "{text}: {message}");
        }
    }

    #[test]
    fn completion_limits_parse_and_are_checked() {
        let config = Config::from_toml("[completion]\nper_participant_burst = 3").expect("valid");
        assert_eq!(config.completion.per_participant_burst, 3);
        assert_eq!(config.completion.per_participant_per_second, 10.0);
        let message = error("[completion]\nper_participant_burst = 0");
        assert!(
            message.contains("`completion.per_participant_burst`"),
            "{message}"
        );
        let message = error("[completion]\nmax_text_bytes = 0");
        assert!(message.contains("`completion.max_text_bytes`"), "{message}");
        let message = error("[completion]\nper_participant_per_second = -1");
        assert!(
            message.contains("`completion.per_participant_per_second`"),
            "{message}"
        );
    }

    #[test]
    fn the_error_for_a_token_never_shows_it() {
        let message = error("[auth]\ntokens = { \"super secret\" = \"alice\" }");
        assert!(!message.contains("super secret"), "{message}");
        let config =
            Config::from_toml("[auth]\ntokens = { \"hidden-token\" = \"alice\" }").expect("valid");
        let debug = format!("{config:?}");
        assert!(!debug.contains("hidden-token"), "{debug}");
        assert!(debug.contains("alice"), "{debug}");
    }

    #[test]
    fn non_loopback_needs_tokens() {
        let addr = |s: &str| s.parse::<SocketAddr>().expect("address");
        for loopback in [
            "127.0.0.1:0",
            "127.1.2.3:80",
            "[::1]:8080",
            "[::ffff:127.0.0.1]:1",
        ] {
            assert!(check_exposure(addr(loopback), false).is_ok(), "{loopback}");
        }
        for exposed in ["0.0.0.0:8080", "192.168.1.2:80", "[::]:8080"] {
            let error = check_exposure(addr(exposed), false).expect_err(exposed);
            assert!(error.to_string().contains("refusing to listen"), "{error}");
            assert!(check_exposure(addr(exposed), true).is_ok(), "{exposed}");
        }
    }

    #[test]
    fn overrides_replace_file_values() {
        let mut config = Config::from_toml("listen = \"127.0.0.1:1\"").expect("valid");
        config.apply(Overrides {
            listen: Some("0.0.0.0:2".parse().expect("address")),
            plugins_dir: Some(PathBuf::from("elsewhere")),
            cache_dir: Some(PathBuf::from("/tmp/c")),
            no_cache: false,
        });
        assert_eq!(config.listen.port(), 2);
        assert_eq!(config.plugins_dir, PathBuf::from("elsewhere"));
        assert_eq!(config.cache_dir, Some(PathBuf::from("/tmp/c")));
        assert!(config.check_exposure().is_err());
        config.apply(Overrides {
            no_cache: true,
            ..Overrides::default()
        });
        assert_eq!(config.cache_dir, None);
    }

    #[test]
    fn the_store_lives_beside_the_configuration_file() {
        let config = Config::from_toml("").expect("valid");
        assert_eq!(
            config.store_options().location,
            StoreLocation::File(PathBuf::from(DEFAULT_STORE_FILE))
        );
        assert_eq!(
            config.store_options().sqlite,
            SqliteOptions::new(Synchronous::Normal)
        );
        assert_eq!(config.store.retention(), None);
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("th.toml");
        std::fs::write(
            &path,
            "[store]\npath = \"data/t.db\"\nsynchronous = \"full\"\nretain_terminal_days = 2\n\
             max_wal_mib = 8\n",
        )
        .expect("write");
        let config = Config::load(Some(&path)).expect("valid");
        let options = config.store_options();
        assert_eq!(
            options.location,
            StoreLocation::File(dir.path().join("data/t.db"))
        );
        assert_eq!(options.sqlite, SqliteOptions::bounded(Synchronous::Full, 8));
        assert_eq!(
            config.store.retention(),
            Some(Duration::from_secs(2 * 86_400))
        );
        let memory = Config::from_toml("[store]\npath = \":memory:\"").expect("valid");
        assert_eq!(memory.store_options().location, StoreLocation::Memory);
        let postgres = Config::from_toml(
            "[store]\nurl = \"postgres://tiny@db:5432/tiny\"\npassword_env = \"DB_PASS\"\n\
             max_connections = 3",
        )
        .expect("valid");
        assert_eq!(
            postgres.store_options().location,
            StoreLocation::Postgres(PostgresLocation {
                url: "postgres://tiny@db:5432/tiny".into(),
                password_env: Some("DB_PASS".into()),
                max_connections: 3,
            })
        );
        assert_eq!(
            redacted("postgres://tiny:s3cret@db:5432/tiny"),
            "postgres://tiny:***@db:5432/tiny"
        );
        assert_eq!(
            redacted("postgres://tiny@db/tiny"),
            "postgres://tiny@db/tiny"
        );
        for (text, key) in [
            ("[store]\nsynchronous = \"off\"", "synchronous"),
            ("[store]\nidle_timeout_secs = 0", "store.idle_timeout_secs"),
            ("[store]\nmax_wal_mib = 0", "store.max_wal_mib"),
            (
                "[store]\naccept_commit_delay_ms = 1001",
                "store.accept_commit_delay_ms",
            ),
            (
                "[store]\ncommit_interval_ms = 1001",
                "store.commit_interval_ms",
            ),
            ("[store]\nurl = \"mysql://db/x\"", "store.url"),
            (
                "[store]\nurl = \"postgres://db/x\"\npath = \"t.db\"",
                "store.url",
            ),
            ("[store]\nmax_connections = 0", "store.max_connections"),
            ("[store]\npath = \"\"", "store.path"),
            ("[push]\nmax_attempts = 0", "push.max_attempts"),
            ("[push]\nallow_privat = true", "allow_privat"),
            ("[tls]\ncert_file = \"c.pem\"", "tls.key_file"),
            ("[tls]\nkey_file = \"k.pem\"", "tls.cert_file"),
        ] {
            let message = error(text);
            assert!(message.contains(key), "{text}: {message}");
        }
        let push = Config::from_toml("[push]\nallow_private = true\ninitial_backoff_ms = 10")
            .expect("valid")
            .push_settings();
        assert!(push.allow_private);
        assert_eq!(push.initial_backoff, Duration::from_millis(10));
    }

    #[test]
    fn load_reads_the_given_file_or_fails() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("th.toml");
        std::fs::write(&path, "admins = [\"root\"]\nbogus = 1\n").expect("write");
        let message = Config::load(Some(&path))
            .expect_err("unknown key")
            .to_string();
        assert!(message.contains("th.toml"), "{message}");
        assert!(message.contains("bogus"), "{message}");
        let missing = dir.path().join("missing.toml");
        let message = Config::load(Some(&missing))
            .expect_err("missing")
            .to_string();
        assert!(message.contains("cannot read"), "{message}");
    }

    #[test]
    fn extra_ca_files_are_read_from_beside_the_file_and_must_hold_certificates() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("th.toml");
        std::fs::write(&path, "[tls]\nextra_ca_files = [\"ca/corp.pem\"]\n").expect("write");
        let message = Config::load(Some(&path))
            .expect_err("the CA file is missing")
            .to_string();
        assert!(message.contains("tls.extra_ca_files"), "{message}");
        assert!(message.contains("corp.pem"), "{message}");

        std::fs::create_dir(dir.path().join("ca")).expect("mkdir");
        let ca = rcgen::generate_simple_self_signed(vec!["ca.example".to_owned()]).expect("a CA");
        std::fs::write(dir.path().join("ca/corp.pem"), ca.cert.pem()).expect("write");
        let config = Config::load(Some(&path)).expect("valid");
        assert_ne!(config.extra_roots, ExtraRoots::default());
        assert_eq!(config.push_settings().extra_roots, config.extra_roots);
    }
}
