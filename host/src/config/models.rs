//! `[models]`: the models conversations may use, by name.
//!
//! ```toml
//! [models]
//! default = "gpt"                   # the model a new conversation starts on
//!
//! [models.gpt]
//! provider = "openai"               # openai | anthropic | offline
//! base_url = "https://api.openai.com/v1"
//! model = "gpt-5-mini"              # the provider's name for it
//! api_key_env = "OPENAI_API_KEY"    # or api_key = "..." in the file
//! reasoning_effort = { low = "low", medium = "medium", high = "high" }
//! context_window = 400000
//! max_output_tokens = 16000
//!
//! [models.claude]
//! provider = "anthropic"
//! model = "claude-sonnet-4-5"
//! api_key_env = "ANTHROPIC_API_KEY"
//! thinking_budget = { medium = 4096, high = 16000 }
//! max_output_tokens = 32000
//! ```
//!
//! The names of the tables are the `/model` allowlist. With no table, the
//! embedded offline models `offline-echo` and `offline-large` are served,
//! so a fresh machine needs no configuration. Every table may also set
//! `connect_timeout_secs` (10), `read_timeout_secs` (120), `max_attempts`
//! (4), `initial_backoff_ms` (500), `max_backoff_secs` (30) and
//! `retry_budget_secs` (60).
//!
//! Keys are read from the environment when the server starts
//! ([`ModelsConfig::settings`]), never printed: a missing variable is an
//! error naming the variable.

use std::collections::BTreeMap;
use std::fmt;
use std::time::Duration;

use serde::Deserialize;
use serde::de::{self, MapAccess, Visitor};

use super::{ConfigError, invalid};
use crate::model::settings::{
    AnthropicSettings, HttpSettings, MaxTokensField, ModelSettings, OpenAiSettings, PerEffort,
    ProviderSettings, defaults,
};
use crate::model::{OFFLINE_MODELS, RetryPolicy};
use crate::outbound::ExtraRoots;
use crate::secret::Secret;

/// The most characters of a model's name.
pub const MAX_MODEL_NAME_CHARS: usize = 64;

/// `[models]`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ModelsConfig {
    /// `default`: the model a new conversation starts on. Required with
    /// tables; `offline-echo` without.
    pub default: Option<String>,
    /// `[models.<name>]` by name; none means the embedded offline models.
    pub entries: BTreeMap<String, ModelConfig>,
}

/// Which protocol a model is reached by.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ProviderKind {
    /// OpenAI Chat Completions (OpenAI, Ollama, vLLM, llama.cpp's server).
    OpenAi,
    /// The Anthropic Messages API.
    Anthropic,
    /// The deterministic offline model.
    Offline,
}

/// `[models.<name>]`.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelConfig {
    pub provider: ProviderKind,
    /// Default `https://api.openai.com/v1` (openai; requests go to
    /// `<base_url>/chat/completions`) or `https://api.anthropic.com`
    /// (anthropic; `<base_url>/v1/messages`).
    pub base_url: Option<String>,
    /// The provider's name for the model. Required but for offline.
    pub model: Option<String>,
    /// The environment variable holding the API key.
    pub api_key_env: Option<String>,
    /// The API key itself (prefer `api_key_env`).
    pub api_key: Option<Secret>,
    /// openai: the `reasoning_effort` sent at each effort level (a level
    /// left out, or the whole table, sends none: models without reasoning).
    pub reasoning_effort: Option<PerEffort<String>>,
    /// anthropic: the extended-thinking `budget_tokens` at each effort
    /// level (at least 1024 and below `max_output_tokens`; a level left out
    /// does not think).
    pub thinking_budget: Option<PerEffort<u32>>,
    /// openai: `max_completion_tokens` (default) or `max_tokens` (Ollama,
    /// llama.cpp) carries `max_output_tokens`.
    pub max_tokens_field: Option<MaxTokensField>,
    /// The most tokens a request may carry. Default 128000 (openai),
    /// 200000 (anthropic) or 1024 (offline).
    pub context_window: Option<u64>,
    /// The most tokens an answer may take. Default: the provider's own
    /// (openai), 8192 (anthropic, which requires one).
    pub max_output_tokens: Option<u32>,
    pub connect_timeout_secs: Option<u64>,
    /// The longest silence waiting for the answer or its next piece.
    pub read_timeout_secs: Option<u64>,
    /// Attempts per request, the first included (1 to 10).
    pub max_attempts: Option<u32>,
    pub initial_backoff_ms: Option<u64>,
    /// The longest wait between attempts, a `Retry-After` included.
    pub max_backoff_secs: Option<u64>,
    /// The longest time to go on retrying one request.
    pub retry_budget_secs: Option<u64>,
}

// `[models]` mixes one plain key (`default`) with a table per model; a
// derive cannot say that and still name an unknown key.
impl<'de> Deserialize<'de> for ModelsConfig {
    fn deserialize<D: de::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_map(ModelsVisitor)
    }
}

struct ModelsVisitor;

impl<'de> Visitor<'de> for ModelsVisitor {
    type Value = ModelsConfig;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a `default` model name and `[models.<name>]` tables")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<ModelsConfig, A::Error> {
        let mut config = ModelsConfig::default();
        while let Some(key) = map.next_key::<String>()? {
            match key.as_str() {
                "default" => config.default = Some(map.next_value()?),
                "selectable" => {
                    return Err(de::Error::custom(
                        "`models.selectable` is gone: the names of the `[models.<name>]` tables \
                         are the models `/model` may switch to. Remove `selectable` and add a \
                         table per model, e.g. `[models.offline-echo]` with `provider = \
                         \"offline\"` (with no table at all, offline-echo and offline-large are \
                         served)",
                    ));
                }
                _ => {
                    // A typo of `default` must read as one, not as a model
                    // that is not a table.
                    let value: toml::Value = map.next_value()?;
                    if !value.is_table() {
                        return Err(de::Error::custom(format!(
                            "unknown field `{key}` of [models]: `default` names the default \
                             model, and each model is a `[models.<name>]` table"
                        )));
                    }
                    let entry: ModelConfig = value
                        .try_into()
                        .map_err(|error| de::Error::custom(format!("[models.{key}]: {error}")))?;
                    config.entries.insert(key, entry);
                }
            }
        }
        Ok(config)
    }
}

impl ModelsConfig {
    /// The model a new conversation starts on.
    pub fn default_name(&self) -> &str {
        self.default.as_deref().unwrap_or(OFFLINE_MODELS[0])
    }

    /// The `/model` allowlist: the tables' names, or the embedded offline
    /// models.
    pub fn names(&self) -> Vec<String> {
        if self.entries.is_empty() {
            OFFLINE_MODELS
                .iter()
                .map(|name| (*name).to_owned())
                .collect()
        } else {
            self.entries.keys().cloned().collect()
        }
    }

    pub(super) fn validate(&self) -> Result<(), ConfigError> {
        for (name, entry) in &self.entries {
            check_name(name)?;
            entry.validate(&format!("models.{name}"))?;
        }
        let names = self.names();
        match &self.default {
            None if !self.entries.is_empty() => Err(invalid(
                "models.default",
                format!(
                    "name the model new conversations start on, one of {}",
                    names.join(", ")
                ),
            )),
            Some(default) if !names.contains(default) => Err(invalid(
                "models.default",
                format!(
                    "`{default}` is not a configured model ({}); add a `[models.{default}]` table or pick one of them",
                    names.join(", ")
                ),
            )),
            _ => Ok(()),
        }
    }

    /// Every model's settings, keys read from the environment through
    /// `env` (`std::env::var` in the server). Fails naming the variable
    /// that is not set, never a value.
    pub fn settings(
        &self,
        extra_roots: &ExtraRoots,
        env: impl Fn(&str) -> Option<String>,
    ) -> Result<Vec<ModelSettings>, ConfigError> {
        if self.entries.is_empty() {
            return Ok(OFFLINE_MODELS
                .iter()
                .map(|name| ModelSettings {
                    name: (*name).to_owned(),
                    provider: ProviderSettings::Offline,
                    context_window: defaults::OFFLINE_CONTEXT_WINDOW,
                    max_output_tokens: None,
                })
                .collect());
        }
        self.entries
            .iter()
            .map(|(name, entry)| entry.settings(name, extra_roots, &env))
            .collect()
    }
}

/// A model name is one word `/model` can take.
fn check_name(name: &str) -> Result<(), ConfigError> {
    let valid = !name.is_empty()
        && name.chars().count() <= MAX_MODEL_NAME_CHARS
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-' | ':'));
    if valid {
        Ok(())
    } else {
        Err(invalid(
            &format!("models.{name}"),
            format!(
                "a model name is 1 to {MAX_MODEL_NAME_CHARS} of A-Z a-z 0-9 . _ - : (it is what `/model <name>` takes)"
            ),
        ))
    }
}

impl ModelConfig {
    fn validate(&self, key: &str) -> Result<(), ConfigError> {
        let field = |name: &str| format!("{key}.{name}");
        let not_for = |name: &str, why: &str| Err(invalid(&field(name), why.to_owned()));
        match self.provider {
            ProviderKind::Offline => {
                let remote_only = [
                    ("base_url", self.base_url.is_some()),
                    ("model", self.model.is_some()),
                    ("api_key_env", self.api_key_env.is_some()),
                    ("api_key", self.api_key.is_some()),
                    ("reasoning_effort", self.reasoning_effort.is_some()),
                    ("thinking_budget", self.thinking_budget.is_some()),
                    ("max_tokens_field", self.max_tokens_field.is_some()),
                    ("connect_timeout_secs", self.connect_timeout_secs.is_some()),
                    ("read_timeout_secs", self.read_timeout_secs.is_some()),
                    ("max_attempts", self.max_attempts.is_some()),
                    ("initial_backoff_ms", self.initial_backoff_ms.is_some()),
                    ("max_backoff_secs", self.max_backoff_secs.is_some()),
                    ("retry_budget_secs", self.retry_budget_secs.is_some()),
                ];
                if let Some((name, _)) = remote_only.iter().find(|(_, set)| *set) {
                    return not_for(name, "the offline model is not reached over the network");
                }
            }
            ProviderKind::OpenAi => {
                if self.thinking_budget.is_some() {
                    return not_for(
                        "thinking_budget",
                        "is for provider \"anthropic\"; an openai model maps effort with reasoning_effort",
                    );
                }
            }
            ProviderKind::Anthropic => {
                if self.reasoning_effort.is_some() {
                    return not_for(
                        "reasoning_effort",
                        "is for provider \"openai\"; an anthropic model maps effort with thinking_budget",
                    );
                }
                if self.max_tokens_field.is_some() {
                    return not_for(
                        "max_tokens_field",
                        "is for provider \"openai\"; anthropic always sends max_tokens",
                    );
                }
                if self.api_key.is_none() && self.api_key_env.is_none() {
                    return not_for(
                        "api_key_env",
                        "an anthropic model needs a key: name the environment variable that holds it (or set api_key)",
                    );
                }
            }
        }
        if self.provider != ProviderKind::Offline {
            self.validate_remote(key)?;
        }
        if self.context_window == Some(0) {
            return not_for("context_window", "must be at least 1");
        }
        if self.max_output_tokens == Some(0) {
            return not_for("max_output_tokens", "must be at least 1");
        }
        Ok(())
    }

    fn validate_remote(&self, key: &str) -> Result<(), ConfigError> {
        let field = |name: &str| format!("{key}.{name}");
        if self
            .model
            .as_deref()
            .is_none_or(|model| model.trim().is_empty())
        {
            return Err(invalid(
                &field("model"),
                "name the provider's model (e.g. gpt-5-mini, claude-sonnet-4-5, qwen3:4b)",
            ));
        }
        if let Some(url) = &self.base_url {
            parse_base_url(url).map_err(|problem| invalid(&field("base_url"), problem))?;
        }
        match (&self.api_key_env, &self.api_key) {
            (Some(_), Some(_)) => {
                return Err(invalid(
                    &field("api_key"),
                    "set api_key_env or api_key, not both",
                ));
            }
            (Some(name), None) if !valid_env_name(name) => {
                return Err(invalid(
                    &field("api_key_env"),
                    "an environment variable's name: not empty, without `=` or spaces",
                ));
            }
            (None, Some(key)) if key.expose().trim().is_empty() => {
                return Err(invalid(&field("api_key"), "cannot be empty"));
            }
            _ => {}
        }
        if let Some(efforts) = &self.reasoning_effort
            && let Some((effort, _)) = efforts.iter().find(|(_, value)| value.trim().is_empty())
        {
            return Err(invalid(
                &field(&format!("reasoning_effort.{effort}")),
                "cannot be empty; leave the level out to send none",
            ));
        }
        if let Some(budgets) = &self.thinking_budget {
            let max = self
                .max_output_tokens
                .unwrap_or(defaults::ANTHROPIC_MAX_OUTPUT_TOKENS);
            for (effort, budget) in budgets.iter() {
                if *budget < defaults::MIN_THINKING_BUDGET || *budget >= max {
                    return Err(invalid(
                        &field(&format!("thinking_budget.{effort}")),
                        format!(
                            "{budget} must be at least {} and below max_output_tokens ({max}), as Anthropic requires",
                            defaults::MIN_THINKING_BUDGET
                        ),
                    ));
                }
            }
        }
        let positive = [
            ("connect_timeout_secs", self.connect_timeout_secs),
            ("read_timeout_secs", self.read_timeout_secs),
            ("max_backoff_secs", self.max_backoff_secs),
            ("retry_budget_secs", self.retry_budget_secs),
        ];
        if let Some((name, _)) = positive.iter().find(|(_, value)| *value == Some(0)) {
            return Err(invalid(&field(name), "must be at least 1"));
        }
        if let Some(attempts) = self.max_attempts
            && !(1..=10).contains(&attempts)
        {
            return Err(invalid(&field("max_attempts"), "must be from 1 to 10"));
        }
        Ok(())
    }

    /// The settings of model `name`, its key read through `env`.
    fn settings(
        &self,
        name: &str,
        extra_roots: &ExtraRoots,
        env: &impl Fn(&str) -> Option<String>,
    ) -> Result<ModelSettings, ConfigError> {
        let key = format!("models.{name}");
        let (provider, context_window, max_output_tokens) = match self.provider {
            ProviderKind::Offline => (
                ProviderSettings::Offline,
                defaults::OFFLINE_CONTEXT_WINDOW,
                self.max_output_tokens,
            ),
            ProviderKind::OpenAi => (
                ProviderSettings::OpenAi(OpenAiSettings {
                    base_url: self.base_url(&key, defaults::OPENAI_BASE_URL)?,
                    model: self.model.clone().unwrap_or_default(),
                    api_key: self.api_key(&key, env)?,
                    reasoning_effort: self.reasoning_effort.clone().unwrap_or_default(),
                    max_tokens_field: self.max_tokens_field.unwrap_or_default(),
                    http: self.http(extra_roots),
                }),
                defaults::OPENAI_CONTEXT_WINDOW,
                self.max_output_tokens,
            ),
            ProviderKind::Anthropic => {
                let api_key = self.api_key(&key, env)?.ok_or_else(|| {
                    invalid(
                        &format!("{key}.api_key_env"),
                        "an anthropic model needs a key",
                    )
                })?;
                (
                    ProviderSettings::Anthropic(AnthropicSettings {
                        base_url: self.base_url(&key, defaults::ANTHROPIC_BASE_URL)?,
                        model: self.model.clone().unwrap_or_default(),
                        api_key,
                        thinking_budget: self.thinking_budget.clone().unwrap_or_default(),
                        http: self.http(extra_roots),
                    }),
                    defaults::ANTHROPIC_CONTEXT_WINDOW,
                    Some(
                        self.max_output_tokens
                            .unwrap_or(defaults::ANTHROPIC_MAX_OUTPUT_TOKENS),
                    ),
                )
            }
        };
        Ok(ModelSettings {
            name: name.to_owned(),
            provider,
            context_window: self.context_window.unwrap_or(context_window),
            max_output_tokens,
        })
    }

    fn base_url(&self, key: &str, default: &str) -> Result<reqwest::Url, ConfigError> {
        parse_base_url(self.base_url.as_deref().unwrap_or(default))
            .map_err(|problem| invalid(&format!("{key}.base_url"), problem))
    }

    /// The key: from the file, from the named variable, or none.
    fn api_key(
        &self,
        key: &str,
        env: &impl Fn(&str) -> Option<String>,
    ) -> Result<Option<Secret>, ConfigError> {
        if let Some(secret) = &self.api_key {
            return Ok(Some(secret.clone()));
        }
        let Some(variable) = &self.api_key_env else {
            return Ok(None);
        };
        match env(variable) {
            Some(value) if !value.trim().is_empty() => Ok(Some(Secret::new(value.trim()))),
            _ => Err(invalid(
                &format!("{key}.api_key_env"),
                format!(
                    "the environment variable `{variable}` is not set (or is empty); export it before starting the server"
                ),
            )),
        }
    }

    fn http(&self, extra_roots: &ExtraRoots) -> HttpSettings {
        let retry = RetryPolicy::default();
        HttpSettings {
            connect_timeout: self
                .connect_timeout_secs
                .map_or(defaults::CONNECT_TIMEOUT, Duration::from_secs),
            read_timeout: self
                .read_timeout_secs
                .map_or(defaults::READ_TIMEOUT, Duration::from_secs),
            retry: RetryPolicy {
                max_attempts: self.max_attempts.unwrap_or(retry.max_attempts),
                initial_backoff: self
                    .initial_backoff_ms
                    .map_or(retry.initial_backoff, Duration::from_millis),
                max_backoff: self
                    .max_backoff_secs
                    .map_or(retry.max_backoff, Duration::from_secs),
                budget: self
                    .retry_budget_secs
                    .map_or(retry.budget, Duration::from_secs),
            },
            extra_roots: extra_roots.clone(),
        }
    }
}

/// An http or https URL with a host and no query or fragment.
fn parse_base_url(text: &str) -> Result<reqwest::Url, String> {
    let url =
        reqwest::Url::parse(text).map_err(|error| format!("`{text}` is not a URL: {error}"))?;
    if !matches!(url.scheme(), "http" | "https") || url.host_str().is_none() {
        return Err(format!("`{text}` is not an http or https URL"));
    }
    if url.query().is_some() || url.fragment().is_some() {
        return Err(format!("`{text}` cannot have a query or a fragment"));
    }
    Ok(url)
}

fn valid_env_name(name: &str) -> bool {
    !name.is_empty()
        && !name
            .chars()
            .any(|c| c == '=' || c == '\0' || c.is_whitespace())
}

#[cfg(test)]
mod tests;
