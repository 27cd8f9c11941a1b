//! Model providers, by name.
//!
//! A [`Model`] streams typed events for a typed request (the contract's data
//! lives in [`crate::domain`]: [`ModelRequest`], [`ModelEvent`],
//! [`ModelError`]). Dropping the stream must stop the work and close any
//! connection: that is how a complete control or a cancellation cuts a
//! turn.
//!
//! [`Models`] holds the models the configuration names (`[models.<name>]`,
//! read into [`settings`] by `crate::config`); the names are what `/model`
//! may switch between. The embedded default is the deterministic offline
//! model, so the harness converses on a fresh machine with no network or
//! keys.
//!
//! Two thin adapters of our own reach real providers over streamed SSE:
//! [`OpenAiModel`] (Chat Completions: OpenAI, Ollama, vLLM, llama.cpp's
//! server) and [`AnthropicModel`] (Messages). They share the HTTP side
//! (`http`: the client, bounded answers, typed errors that name the
//! provider and never the key) and the retries (`retry`). [`fake`] is a
//! provider server speaking both protocols, for tests and benchmarks.

pub(crate) mod anthropic;
pub mod fake;
mod history;
pub(crate) mod http;
mod offline;
pub(crate) mod openai;
mod retry;
pub mod settings;
#[cfg(test)]
mod testing;

use std::collections::BTreeMap;
use std::fmt;
use std::pin::Pin;
use std::sync::Arc;

use futures_core::Stream;

pub use crate::domain::{
    ChatMessage, Effort, ModelError, ModelEvent, ModelRequest, Reasoning, StopReason, ToolCall,
    ToolOutput, ToolSpec, Usage,
};
pub use anthropic::{ANTHROPIC_VERSION, AnthropicModel};
pub use http::MAX_ANSWER_BYTES;
pub use offline::{MAX_WORK_SECONDS, OfflineModel};
pub use openai::OpenAiModel;
pub use retry::RetryPolicy;
use settings::{ModelSettings, ProviderSettings};

/// A model's streamed answer: events until [`ModelEvent::Stop`], or an error.
pub type ModelStream = Pin<Box<dyn Stream<Item = Result<ModelEvent, ModelError>> + Send>>;

/// A model provider.
pub trait Model: Send + Sync + 'static {
    /// Answer `request`, streaming. The stream ends after `Stop` or an error;
    /// dropping it cancels the request.
    fn stream(&self, request: ModelRequest) -> ModelStream;
}

/// The names of the offline models a configuration without `[models.*]`
/// offers; both are the same deterministic model.
pub const OFFLINE_MODELS: [&str; 2] = ["offline-echo", "offline-large"];

/// How many tokens of conversation an offline model takes per request.
const OFFLINE_CONTEXT_WINDOW: u64 = settings::defaults::OFFLINE_CONTEXT_WINDOW;

/// A configured model: the provider behind a name, and its limits.
#[derive(Clone)]
pub struct ModelEntry {
    /// The provider, reached through the configuration's settings.
    pub model: Arc<dyn Model>,
    /// The most tokens a request may carry (system prompt, conversation and
    /// tool schemas); older turns are left out to fit.
    pub context_window: u64,
    /// The most tokens an answer may take, sent with each request.
    pub max_output_tokens: Option<u32>,
}

impl fmt::Debug for ModelEntry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ModelEntry")
            .field("context_window", &self.context_window)
            .field("max_output_tokens", &self.max_output_tokens)
            .finish_non_exhaustive()
    }
}

/// The models a conversation may use, by name, and the default.
#[derive(Clone, Debug)]
pub struct Models {
    entries: BTreeMap<String, ModelEntry>,
    default: String,
}

/// Why the configured models cannot be served.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ModelsError {
    #[error(transparent)]
    UnknownDefault(#[from] UnknownDefault),
    /// An adapter could not be built (its HTTP client, its TLS roots).
    #[error("the model `{name}` cannot be set up: {problem}")]
    Setup { name: String, problem: String },
}

/// The default model is not among the configured ones.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("the default model `{default}` is not configured; configured models: {}", names.join(", "))]
pub struct UnknownDefault {
    pub default: String,
    pub names: Vec<String>,
}

impl Models {
    /// `entries` by name, `default` among them.
    pub fn new(
        entries: BTreeMap<String, ModelEntry>,
        default: String,
    ) -> Result<Self, UnknownDefault> {
        if !entries.contains_key(&default) {
            return Err(UnknownDefault {
                default,
                names: entries.keys().cloned().collect(),
            });
        }
        Ok(Models { entries, default })
    }

    /// The models of the configuration, `default` among them.
    pub fn build(models: &[ModelSettings], default: &str) -> Result<Self, ModelsError> {
        let entries = models
            .iter()
            .map(|settings| Ok((settings.name.clone(), entry(settings)?)))
            .collect::<Result<_, ModelsError>>()?;
        Ok(Models::new(entries, default.to_owned())?)
    }

    /// The embedded default: the offline models, `offline-echo` first.
    pub fn offline() -> Self {
        Self::only(Arc::new(OfflineModel::new()))
    }

    /// Every offline name served by `model` (tests substitute their own).
    pub fn only(model: Arc<dyn Model>) -> Self {
        let entries = OFFLINE_MODELS
            .iter()
            .map(|name| {
                let entry = ModelEntry {
                    model: Arc::clone(&model),
                    context_window: OFFLINE_CONTEXT_WINDOW,
                    max_output_tokens: None,
                };
                ((*name).to_owned(), entry)
            })
            .collect();
        Models {
            entries,
            default: OFFLINE_MODELS[0].to_owned(),
        }
    }

    /// The offline model under each of `names`, `default` among them (for
    /// tests that name their own models).
    pub fn offline_named(names: &[String], default: &str) -> Result<Self, UnknownDefault> {
        let model: Arc<dyn Model> = Arc::new(OfflineModel::new());
        let entries = names
            .iter()
            .map(|name| {
                let entry = ModelEntry {
                    model: Arc::clone(&model),
                    context_window: OFFLINE_CONTEXT_WINDOW,
                    max_output_tokens: None,
                };
                (name.clone(), entry)
            })
            .collect();
        Models::new(entries, default.to_owned())
    }

    pub fn get(&self, name: &str) -> Option<&ModelEntry> {
        self.entries.get(name)
    }

    /// The model a new conversation starts on.
    pub fn default_name(&self) -> &str {
        &self.default
    }

    /// Every configured name, in order: the `/model` allowlist.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.entries.keys().map(String::as_str)
    }
}

/// The adapter and limits of one configured model.
fn entry(settings: &ModelSettings) -> Result<ModelEntry, ModelsError> {
    let setup = |problem: String| ModelsError::Setup {
        name: settings.name.clone(),
        problem,
    };
    let name = settings.name.as_str();
    let max_output_tokens = settings.max_output_tokens;
    let model: Arc<dyn Model> = match &settings.provider {
        ProviderSettings::Offline => Arc::new(OfflineModel::new()),
        ProviderSettings::OpenAi(openai) => {
            Arc::new(OpenAiModel::new(name, openai, max_output_tokens).map_err(setup)?)
        }
        ProviderSettings::Anthropic(anthropic) => {
            Arc::new(AnthropicModel::new(name, anthropic, max_output_tokens).map_err(setup)?)
        }
    };
    Ok(ModelEntry {
        model,
        context_window: settings.context_window,
        max_output_tokens,
    })
}
