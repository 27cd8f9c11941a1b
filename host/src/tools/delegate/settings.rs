//! `[agents.<name>]`: another A2A agent the model may delegate tasks to,
//! offered as the tool `delegate_<name>`.
//!
//! ```toml
//! [agents.researcher]
//! url = "https://research.example.com"   # its agent card: <url>/.well-known/agent-card.json
//! description = "Finds and summarises sources on a topic."   # what the model reads
//! token_env = "RESEARCHER_TOKEN"         # Authorization: Bearer <the variable's value>
//! # allow_private = true                 # it is on loopback or a private network
//! ```
//!
//! Bounds, with their defaults: `timeout_secs` (600, one delegation from
//! the card to the answer), `max_concurrent` (4 delegations at once; more
//! wait within their timeout), `max_event_bytes` (1 MiB: the card, and each
//! event of the remote task's stream). `roles` and `approval` apply to its
//! tool.

use std::time::Duration;

use serde::Deserialize;

use crate::domain::Role;
use crate::secret::Secret;
use crate::tools::Approval;
use crate::tools::mcp::settings::check_url;
use crate::tools::settings::{
    KeyProblem, MAX_SOURCE_TIMEOUT_SECS, check_env_name, check_range, check_source_name,
    default_roles, read_secret,
};

/// The prefix of a delegate's tool name.
pub const TOOL_PREFIX: &str = "delegate_";

/// `[agents.<name>]`.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DelegateConfig {
    /// The agent's base URL; its card is at `/.well-known/agent-card.json`
    /// under it, and the card says where its JSON-RPC endpoint is.
    pub url: String,
    /// What the model is told the agent does. Default: a sentence naming it.
    pub description: Option<String>,
    /// The variable holding a bearer token for the agent.
    pub token_env: Option<String>,
    /// Whether the agent (its card's URL and its endpoint) may be on a
    /// loopback, private or link-local address. Default false, as for
    /// webhooks.
    #[serde(default)]
    pub allow_private: bool,
    #[serde(default = "default_roles")]
    pub roles: Vec<Role>,
    #[serde(default)]
    pub approval: Approval,
    #[serde(default = "defaults::timeout_secs")]
    pub timeout_secs: u64,
    #[serde(default = "defaults::max_concurrent")]
    pub max_concurrent: u32,
    #[serde(default = "defaults::max_event_bytes")]
    pub max_event_bytes: u64,
}

/// The defaults of the bounds, each with why.
pub mod defaults {
    /// Another agent may run tools and models of its own: minutes, not
    /// seconds.
    pub fn timeout_secs() -> u64 {
        600
    }
    /// Delegations to one agent at once (each holds a stream open).
    pub fn max_concurrent() -> u32 {
        4
    }
    /// The card, or one event of the stream (the final answer is one).
    pub fn max_event_bytes() -> u64 {
        1 << 20
    }
}

/// A delegate's settings, its token read from the environment.
#[derive(Clone, Debug, PartialEq)]
pub struct DelegateSettings {
    pub name: String,
    pub url: reqwest::Url,
    pub description: String,
    pub token: Option<Secret>,
    pub allow_private: bool,
    pub roles: Vec<Role>,
    pub approval: Approval,
    pub timeout: Duration,
    pub max_concurrent: usize,
    pub max_event_bytes: usize,
}

impl DelegateConfig {
    /// Check `[agents.<name>]`.
    pub fn validate(&self, name: &str) -> Result<(), KeyProblem> {
        let max = crate::tools::MAX_TOOL_NAME_CHARS - TOOL_PREFIX.len();
        check_source_name("agents", name, max)?;
        let key = |field: &str| format!("agents.{name}.{field}");
        check_url(&self.url).map_err(|problem| (key("url"), problem))?;
        if let Some(description) = &self.description
            && (description.trim().is_empty()
                || description.len() > crate::tools::MAX_TOOL_DESCRIPTION_BYTES)
        {
            return Err((
                key("description"),
                format!(
                    "must be 1 to {} bytes: the model reads it",
                    crate::tools::MAX_TOOL_DESCRIPTION_BYTES
                ),
            ));
        }
        if let Some(variable) = &self.token_env {
            check_env_name(key("token_env"), variable)?;
        }
        check_range(
            key("timeout_secs"),
            self.timeout_secs,
            1..=MAX_SOURCE_TIMEOUT_SECS,
        )?;
        check_range(key("max_concurrent"), self.max_concurrent.into(), 1..=256)?;
        check_range(
            key("max_event_bytes"),
            self.max_event_bytes,
            1024..=64 << 20,
        )
    }

    /// The settings of delegate `name`, its token read through `env`.
    pub fn settings(
        &self,
        name: &str,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<DelegateSettings, KeyProblem> {
        let url = reqwest::Url::parse(&self.url)
            .map_err(|error| (format!("agents.{name}.url"), error.to_string()))?;
        let token = self
            .token_env
            .as_deref()
            .map(|variable| read_secret(&format!("agents.{name}.token_env"), variable, env))
            .transpose()?;
        Ok(DelegateSettings {
            name: name.to_owned(),
            url,
            description: self.description.clone().unwrap_or_else(|| {
                format!(
                    "Delegate a self-contained task to the A2A agent `{name}` and wait for its \
                     answer. State the task completely: the agent sees nothing of this \
                     conversation."
                )
            }),
            token,
            allow_private: self.allow_private,
            roles: self.roles.clone(),
            approval: self.approval,
            timeout: Duration::from_secs(self.timeout_secs),
            max_concurrent: usize::try_from(self.max_concurrent).unwrap_or(1),
            max_event_bytes: usize::try_from(self.max_event_bytes).unwrap_or(usize::MAX),
        })
    }
}

#[cfg(test)]
mod tests {
    use crate::config::{Config, ConfigError};

    #[test]
    fn a_delegates_table_is_checked_key_by_key() {
        let cases = [
            (
                "[agents.x]\nurl = \"mailto:a@b\"",
                "agents.x.url",
                "not an http://",
            ),
            (
                "[agents.x]\nurl = \"http://h\"\ndescription = \" \"",
                "agents.x.description",
                "the model reads it",
            ),
            (
                "[agents.x]\nurl = \"http://h\"\ntimeout_secs = 601",
                "agents.x.timeout_secs",
                "from 1 to 600",
            ),
            (
                "[agents.x]\nurl = \"http://h\"\nmax_concurrent = 0",
                "agents.x.max_concurrent",
                "from 1 to 256",
            ),
            (
                "[agents.\"has space\"]\nurl = \"http://h\"",
                "agents.has space",
                "1 to 55",
            ),
        ];
        for (toml, key, says) in cases {
            match Config::from_toml(toml) {
                Err(ConfigError::Invalid {
                    key: got_key,
                    problem,
                }) => {
                    assert_eq!(got_key, key, "{toml}");
                    assert!(problem.contains(says), "{toml}: {problem}");
                }
                other => panic!("{toml}: not refused as invalid: {other:?}"),
            }
        }
        let config =
            Config::from_toml("[agents.peer]\nurl = \"https://peer.example\"").expect("valid");
        let settings = config.agents["peer"]
            .settings("peer", &|_| None)
            .expect("settings");
        assert!(settings.description.contains("`peer`") && !settings.allow_private);
    }
}
