//! What the configuration says about each model (`[models.<name>]`): the
//! provider behind the name, how to reach it, and how effort maps to its
//! reasoning control. `crate::config` reads and checks the file (and the
//! keys' environment variables) into these; [`super::Models::build`] turns
//! them into adapters.

use std::time::Duration;

use serde::Deserialize;

pub use super::http::HttpSettings;
use crate::domain::Effort;
use crate::secret::Secret;

/// A value per effort level; a level left out means "nothing" (the
/// provider's control is not sent at that level).
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PerEffort<T> {
    #[serde(default = "none")]
    pub low: Option<T>,
    #[serde(default = "none")]
    pub medium: Option<T>,
    #[serde(default = "none")]
    pub high: Option<T>,
}

// `#[serde(default)]` would require `T: Default`.
fn none<T>() -> Option<T> {
    None
}

impl<T> Default for PerEffort<T> {
    fn default() -> Self {
        PerEffort {
            low: None,
            medium: None,
            high: None,
        }
    }
}

impl<T> PerEffort<T> {
    pub fn get(&self, effort: Effort) -> Option<&T> {
        match effort {
            Effort::Low => self.low.as_ref(),
            Effort::Medium => self.medium.as_ref(),
            Effort::High => self.high.as_ref(),
        }
    }

    /// Every level's value, with its level.
    pub fn iter(&self) -> impl Iterator<Item = (Effort, &T)> {
        Effort::ALL
            .into_iter()
            .filter_map(|effort| Some((effort, self.get(effort)?)))
    }
}

/// One configured model.
#[derive(Clone, Debug, PartialEq)]
pub struct ModelSettings {
    /// The name conversations use (`/model <name>`).
    pub name: String,
    pub provider: ProviderSettings,
    /// The most tokens a request may carry.
    pub context_window: u64,
    /// The most tokens an answer may take, when the request does not say.
    pub max_output_tokens: Option<u32>,
}

/// The provider behind a model name.
#[derive(Clone, Debug, PartialEq)]
pub enum ProviderSettings {
    /// The deterministic offline model.
    Offline,
    /// OpenAI Chat Completions, or a server speaking it (Ollama, vLLM,
    /// llama.cpp's server).
    OpenAi(OpenAiSettings),
    /// The Anthropic Messages API.
    Anthropic(AnthropicSettings),
}

impl ProviderSettings {
    /// `openai`, `anthropic` or `offline`, as the configuration names it.
    pub fn kind(&self) -> &'static str {
        match self {
            ProviderSettings::Offline => "offline",
            ProviderSettings::OpenAi(_) => "openai",
            ProviderSettings::Anthropic(_) => "anthropic",
        }
    }
}

/// The request field that caps an OpenAI-compatible answer's length.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MaxTokensField {
    /// OpenAI's current field; its reasoning models refuse `max_tokens`.
    #[default]
    MaxCompletionTokens,
    /// The older field, which Ollama and llama.cpp's server read.
    MaxTokens,
}

impl MaxTokensField {
    pub fn as_str(self) -> &'static str {
        match self {
            MaxTokensField::MaxCompletionTokens => "max_completion_tokens",
            MaxTokensField::MaxTokens => "max_tokens",
        }
    }
}

/// How to reach an OpenAI-compatible server.
#[derive(Clone, Debug, PartialEq)]
pub struct OpenAiSettings {
    /// Up to and including the API version: `https://api.openai.com/v1`;
    /// requests go to `<base_url>/chat/completions`.
    pub base_url: reqwest::Url,
    /// The provider's name for the model.
    pub model: String,
    /// Sent as `Authorization: Bearer`; local servers need none.
    pub api_key: Option<Secret>,
    /// `reasoning_effort` per effort level; none at a level sends none.
    pub reasoning_effort: PerEffort<String>,
    pub max_tokens_field: MaxTokensField,
    pub http: HttpSettings,
}

/// How to reach the Anthropic Messages API.
#[derive(Clone, Debug, PartialEq)]
pub struct AnthropicSettings {
    /// Without the API path: `https://api.anthropic.com`; requests go to
    /// `<base_url>/v1/messages`.
    pub base_url: reqwest::Url,
    pub model: String,
    /// Sent as `x-api-key`.
    pub api_key: Secret,
    /// Extended thinking's `budget_tokens` per effort level; none at a level
    /// means no extended thinking.
    pub thinking_budget: PerEffort<u32>,
    pub http: HttpSettings,
}

/// The defaults a `[models.<name>]` table starts from.
pub mod defaults {
    use super::Duration;

    pub const OPENAI_BASE_URL: &str = "https://api.openai.com/v1";
    pub const ANTHROPIC_BASE_URL: &str = "https://api.anthropic.com";
    /// Context windows when the table gives none: what current models of
    /// each provider have at least.
    pub const OPENAI_CONTEXT_WINDOW: u64 = 128_000;
    pub const ANTHROPIC_CONTEXT_WINDOW: u64 = 200_000;
    /// The offline models answer from the newest message (and the last
    /// tool round): a window of a few turns is all they need, and a turn
    /// then reads the same few messages at any length of conversation.
    pub const OFFLINE_CONTEXT_WINDOW: u64 = 1_024;
    /// Anthropic requires `max_tokens` on every request.
    pub const ANTHROPIC_MAX_OUTPUT_TOKENS: u32 = 8_192;
    /// Anthropic's smallest thinking budget.
    pub const MIN_THINKING_BUDGET: u32 = 1_024;
    pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
    pub const READ_TIMEOUT: Duration = Duration::from_secs(120);
}
