//! `[mcp.<name>]`: an MCP server whose tools the model may call.
//!
//! ```toml
//! [mcp.files]                        # a local server over stdio
//! command = "npx"
//! args = ["-y", "@modelcontextprotocol/server-filesystem", "/srv/docs"]
//! env = { LOG_LEVEL = "info" }       # set in its environment
//! inherit_env = ["HOME"]             # copied from the harness's (PATH always is)
//! # cwd = "servers"                  # relative to the configuration file's folder
//! tools = ["read_text_file", "list_directory"]   # the allowlist; offered as files__<tool>
//!
//! [mcp.search]                       # a remote server over streamable HTTP
//! url = "https://mcp.example.com/mcp"
//! token_env = "SEARCH_MCP_TOKEN"     # Authorization: Bearer <the variable's value>
//! headers = { "X-Team" = "docs" }
//! tools = ["search"]
//! ```
//!
//! Every other key is a bound with its default: `timeout_secs` (30, per
//! call), `connect_timeout_secs` (30, to start and list the tools),
//! `max_concurrent_calls` (4), `max_result_bytes` (1 MiB, one message from
//! the server), `max_restarts` (5 in a row without a call that worked),
//! `restart_backoff_ms` (500, doubling) up to `max_restart_backoff_secs`
//! (30). `roles` and `approval` apply to each of its tools.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use serde::Deserialize;

use crate::domain::Role;
use crate::tools::Approval;
use crate::tools::settings::{
    KeyProblem, MAX_SOURCE_TIMEOUT_SECS, check_env_name, check_range, check_source_name,
    default_roles,
};

/// The longest server name: `<server>__<tool>` must stay within the
/// providers' 64 characters with room for the tool's own name.
pub const MAX_SERVER_NAME_CHARS: usize = 24;

/// `[mcp.<name>]`.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct McpServerConfig {
    /// stdio: the program to start (looked up on `PATH`).
    pub command: Option<String>,
    /// stdio: its arguments.
    #[serde(default)]
    pub args: Vec<String>,
    /// stdio: variables set in its environment.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// stdio: variables copied from the harness's environment (when set).
    /// `PATH` always is; nothing else unless named here.
    #[serde(default)]
    pub inherit_env: Vec<String>,
    /// stdio: its working directory, relative to the configuration file's
    /// folder. Default: the harness's.
    pub cwd: Option<PathBuf>,
    /// Streamable HTTP: the server's endpoint.
    pub url: Option<String>,
    /// Streamable HTTP: headers sent with every request.
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// Streamable HTTP: the variable holding a bearer token.
    pub token_env: Option<String>,
    /// The server's tools the model may call, by the server's names.
    pub tools: Vec<String>,
    #[serde(default = "default_roles")]
    pub roles: Vec<Role>,
    #[serde(default)]
    pub approval: Approval,
    #[serde(default = "defaults::timeout_secs")]
    pub timeout_secs: u64,
    #[serde(default = "defaults::connect_timeout_secs")]
    pub connect_timeout_secs: u64,
    #[serde(default = "defaults::max_concurrent_calls")]
    pub max_concurrent_calls: u32,
    #[serde(default = "defaults::max_result_bytes")]
    pub max_result_bytes: u64,
    #[serde(default = "defaults::max_restarts")]
    pub max_restarts: u32,
    #[serde(default = "defaults::restart_backoff_ms")]
    pub restart_backoff_ms: u64,
    #[serde(default = "defaults::max_restart_backoff_secs")]
    pub max_restart_backoff_secs: u64,
}

/// The defaults of the bounds, each with why.
pub mod defaults {
    /// Long enough for a search or a file read; a tool that needs more says
    /// so in its server's table.
    pub fn timeout_secs() -> u64 {
        30
    }
    /// `npx -y` may download the server's package on its first start.
    pub fn connect_timeout_secs() -> u64 {
        30
    }
    /// Calls to one server at once; more wait for a free one (within their
    /// timeout), so one conversation's parallel calls cannot flood it.
    pub fn max_concurrent_calls() -> u32 {
        4
    }
    /// One message from the server (a tool result); the model reads it
    /// whole, so more would mostly cost tokens.
    pub fn max_result_bytes() -> u64 {
        1 << 20
    }
    /// Restarts in a row that end without a call that worked; then the
    /// server is given up on until the harness restarts.
    pub fn max_restarts() -> u32 {
        5
    }
    pub fn restart_backoff_ms() -> u64 {
        500
    }
    pub fn max_restart_backoff_secs() -> u64 {
        30
    }
}

/// How the harness reaches a server.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Transport {
    Stdio {
        command: String,
        args: Vec<String>,
        /// The whole environment the process starts with.
        env: BTreeMap<String, String>,
        cwd: Option<PathBuf>,
    },
    Http {
        url: String,
        headers: BTreeMap<String, String>,
        token: Option<crate::secret::Secret>,
    },
}

/// A server's settings, resolved: its environment read, paths made absolute.
#[derive(Clone, Debug, PartialEq)]
pub struct McpServerSettings {
    pub name: String,
    pub transport: Transport,
    pub tools: Vec<String>,
    pub roles: Vec<Role>,
    pub approval: Approval,
    pub timeout: Duration,
    pub connect_timeout: Duration,
    pub max_concurrent_calls: usize,
    pub max_result_bytes: usize,
    pub max_restarts: u32,
    pub restart_backoff: Duration,
    pub max_restart_backoff: Duration,
}

impl McpServerConfig {
    /// Check `[mcp.<name>]`.
    pub fn validate(&self, name: &str) -> Result<(), KeyProblem> {
        check_source_name("mcp", name, MAX_SERVER_NAME_CHARS)?;
        let key = |field: &str| format!("mcp.{name}.{field}");
        match (&self.command, &self.url) {
            (Some(_), Some(_)) => {
                return Err((
                    key("url"),
                    "a server is reached either by `command` (stdio) or by `url` (streamable \
                     HTTP), not both"
                        .into(),
                ));
            }
            (None, None) => {
                return Err((
                    format!("mcp.{name}"),
                    "needs `command` (a local server over stdio) or `url` (a remote server over \
                     streamable HTTP)"
                        .into(),
                ));
            }
            (Some(command), None) => {
                if command.trim().is_empty() {
                    return Err((key("command"), "cannot be empty".into()));
                }
                let http_only = [
                    ("headers", !self.headers.is_empty()),
                    ("token_env", self.token_env.is_some()),
                ];
                if let Some((field, _)) = http_only.iter().find(|(_, set)| *set) {
                    return Err((key(field), "is for servers reached by `url`".into()));
                }
            }
            (None, Some(url)) => {
                check_url(url).map_err(|problem| (key("url"), problem))?;
                let stdio_only = [
                    ("args", !self.args.is_empty()),
                    ("env", !self.env.is_empty()),
                    ("inherit_env", !self.inherit_env.is_empty()),
                    ("cwd", self.cwd.is_some()),
                ];
                if let Some((field, _)) = stdio_only.iter().find(|(_, set)| *set) {
                    return Err((key(field), "is for servers started by `command`".into()));
                }
            }
        }
        for variable in self.env.keys().chain(&self.inherit_env) {
            check_env_name(key("env"), variable)?;
        }
        if let Some(variable) = &self.token_env {
            check_env_name(key("token_env"), variable)?;
        }
        for header in self.headers.keys() {
            if reqwest::header::HeaderName::from_bytes(header.as_bytes()).is_err() {
                return Err((key("headers"), format!("`{header}` is not a header name")));
            }
        }
        if self.tools.is_empty() {
            return Err((
                key("tools"),
                "list the server's tools the model may call (nothing is offered by default)".into(),
            ));
        }
        if let Some(blank) = self.tools.iter().find(|tool| tool.trim().is_empty()) {
            return Err((key("tools"), format!("`{blank}` is not a tool name")));
        }
        check_range(
            key("timeout_secs"),
            self.timeout_secs,
            1..=MAX_SOURCE_TIMEOUT_SECS,
        )?;
        check_range(
            key("connect_timeout_secs"),
            self.connect_timeout_secs,
            1..=600,
        )?;
        check_range(
            key("max_concurrent_calls"),
            self.max_concurrent_calls.into(),
            1..=256,
        )?;
        check_range(
            key("max_result_bytes"),
            self.max_result_bytes,
            1024..=64 << 20,
        )?;
        check_range(key("max_restarts"), self.max_restarts.into(), 0..=1000)?;
        check_range(
            key("restart_backoff_ms"),
            self.restart_backoff_ms,
            1..=600_000,
        )?;
        check_range(
            key("max_restart_backoff_secs"),
            self.max_restart_backoff_secs,
            1..=3600,
        )
    }

    /// The settings of server `name`: a stdio server's environment made of
    /// `PATH`, `inherit_env` and `env` (nothing else of the harness's), an
    /// HTTP server's token read from `token_env`. `base` is the
    /// configuration file's folder.
    pub fn settings(
        &self,
        name: &str,
        base: Option<&std::path::Path>,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<McpServerSettings, KeyProblem> {
        let transport = match (&self.command, &self.url) {
            (Some(command), _) => {
                let mut environment = BTreeMap::new();
                for variable in
                    std::iter::once("PATH").chain(self.inherit_env.iter().map(String::as_str))
                {
                    if let Some(value) = env(variable) {
                        environment.insert(variable.to_owned(), value);
                    }
                }
                environment.extend(self.env.clone());
                let cwd = self.cwd.as_ref().map(|cwd| match base {
                    Some(base) if cwd.is_relative() => base.join(cwd),
                    _ => cwd.clone(),
                });
                Transport::Stdio {
                    command: command.clone(),
                    args: self.args.clone(),
                    env: environment,
                    cwd,
                }
            }
            (None, Some(url)) => {
                let token = self
                    .token_env
                    .as_deref()
                    .map(|variable| {
                        crate::tools::settings::read_secret(
                            &format!("mcp.{name}.token_env"),
                            variable,
                            env,
                        )
                    })
                    .transpose()?;
                Transport::Http {
                    url: url.clone(),
                    headers: self.headers.clone(),
                    token,
                }
            }
            (None, None) => {
                return Err((format!("mcp.{name}"), "needs `command` or `url`".into()));
            }
        };
        Ok(McpServerSettings {
            name: name.to_owned(),
            transport,
            tools: self.tools.clone(),
            roles: self.roles.clone(),
            approval: self.approval,
            timeout: Duration::from_secs(self.timeout_secs),
            connect_timeout: Duration::from_secs(self.connect_timeout_secs),
            max_concurrent_calls: usize::try_from(self.max_concurrent_calls).unwrap_or(1),
            max_result_bytes: usize::try_from(self.max_result_bytes).unwrap_or(usize::MAX),
            max_restarts: self.max_restarts,
            restart_backoff: Duration::from_millis(self.restart_backoff_ms),
            max_restart_backoff: Duration::from_secs(self.max_restart_backoff_secs),
        })
    }
}

/// An http(s) URL with a host and no credentials in it.
pub(crate) fn check_url(url: &str) -> Result<(), String> {
    let parsed = reqwest::Url::parse(url).map_err(|error| format!("`{url}`: {error}"))?;
    if !matches!(parsed.scheme(), "http" | "https") || parsed.host_str().is_none() {
        return Err(format!("`{url}` is not an http:// or https:// URL"));
    }
    if !parsed.username().is_empty() || parsed.password().is_some() {
        return Err("the URL cannot carry credentials; use `token_env`".into());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use crate::config::{Config, ConfigError};

    fn problem(toml: &str) -> (String, String) {
        match Config::from_toml(toml) {
            Err(ConfigError::Invalid { key, problem }) => (key, problem),
            other => panic!("{toml}: not refused as invalid: {other:?}"),
        }
    }

    #[test]
    fn a_server_is_reached_one_way_and_offers_only_what_is_listed() {
        let cases = [
            ("[mcp.x]\ntools = [\"a\"]", "mcp.x", "needs `command`"),
            (
                "[mcp.x]\ncommand = \"node\"\nurl = \"http://h/mcp\"\ntools = [\"a\"]",
                "mcp.x.url",
                "not both",
            ),
            (
                "[mcp.x]\ncommand = \"node\"\ntools = []",
                "mcp.x.tools",
                "nothing is offered by default",
            ),
            (
                "[mcp.x]\nurl = \"http://h/mcp\"\nargs = [\"a\"]\ntools = [\"a\"]",
                "mcp.x.args",
                "started by `command`",
            ),
            (
                "[mcp.x]\ncommand = \"node\"\ntoken_env = \"T\"\ntools = [\"a\"]",
                "mcp.x.token_env",
                "reached by `url`",
            ),
            (
                "[mcp.x]\nurl = \"ftp://h/mcp\"\ntools = [\"a\"]",
                "mcp.x.url",
                "not an http:// or https:// URL",
            ),
            (
                "[mcp.x]\nurl = \"http://me:pw@h/mcp\"\ntools = [\"a\"]",
                "mcp.x.url",
                "cannot carry credentials",
            ),
            (
                "[mcp.a-name-far-too-long-for-tools]\ncommand = \"node\"\ntools = [\"a\"]",
                "mcp.a-name-far-too-long-for-tools",
                "1 to 24",
            ),
            (
                "[mcp.x]\ncommand = \"node\"\ntools = [\"a\"]\ntimeout_secs = 0",
                "mcp.x.timeout_secs",
                "from 1 to 600",
            ),
            (
                "[mcp.x]\ncommand = \"node\"\ntools = [\"a\"]\nenv = { \"1BAD\" = \"v\" }",
                "mcp.x.env",
                "not an environment variable name",
            ),
        ];
        for (toml, key, says) in cases {
            let (got_key, got) = problem(toml);
            assert_eq!(got_key, key, "{toml}");
            assert!(got.contains(says), "{toml}: {got}");
        }
        let typo =
            Config::from_toml("[mcp.x]\ncommand = \"node\"\ntools = [\"a\"]\ntool = [\"b\"]");
        assert!(
            matches!(typo, Err(ConfigError::Parse(_))),
            "unknown keys are errors"
        );
    }

    #[test]
    fn a_stdio_servers_environment_is_path_inherit_env_and_env_only() {
        let config = Config::from_toml(
            "[mcp.x]\ncommand = \"node\"\ntools = [\"a\"]\ninherit_env = [\"HOME\"]\nenv = { LEVEL = \"1\" }",
        )
        .expect("valid");
        let env = |name: &str| match name {
            "PATH" => Some("/bin".to_owned()),
            "HOME" => Some("/home/h".to_owned()),
            _ => Some("secret".to_owned()),
        };
        let settings = config.mcp["x"].settings("x", None, &env).expect("settings");
        let super::Transport::Stdio { env, .. } = settings.transport else {
            panic!("stdio");
        };
        let names: Vec<&str> = env.keys().map(String::as_str).collect();
        assert_eq!(names, ["HOME", "LEVEL", "PATH"]);
    }

    #[test]
    fn a_token_variable_that_is_not_set_is_named() {
        let config = Config::from_toml(
            "[mcp.x]\nurl = \"https://h/mcp\"\ntools = [\"a\"]\ntoken_env = \"X_TOKEN\"",
        )
        .expect("valid");
        let (key, problem) = config.mcp["x"]
            .settings("x", None, &|_| None)
            .expect_err("unset");
        assert_eq!(key, "mcp.x.token_env");
        assert!(problem.contains("`X_TOKEN` is not set"), "{problem}");
    }
}
