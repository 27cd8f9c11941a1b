//! The {{name}} tiny-harness plugin: the tool `{{tool}}`, which the model
//! may call during a turn.
//!
//! The harness checks the model's arguments against tools.json's
//! `input_schema` before the body runs (a mismatch goes back to the model,
//! which corrects its call), then calls `Tool::call`. The result is a JSON
//! document the model reads; a `ToolError` is read by the model too.

use serde_json::{Value, json};
use tiny_harness_plugin::{Tool, ToolCall, ToolError};

/// The longest text `{{tool}}` takes, in bytes.
const MAX_TEXT_BYTES: usize = 10_000;

struct Plugin;

impl Tool for Plugin {
    fn call(call: ToolCall) -> Result<String, ToolError> {
        // `call.arguments` fits tools.json's schema: `{"text": "..."}`.
        let arguments: Value = serde_json::from_str(&call.arguments)
            .map_err(|error| ToolError::InvalidArguments(error.to_string()))?;
        let text = arguments["text"].as_str().unwrap_or_default();
        if text.len() > MAX_TEXT_BYTES {
            return Err(ToolError::InvalidArguments(format!(
                "at most {MAX_TEXT_BYTES} bytes of text, please"
            )));
        }
        let words = text.split_whitespace().count();
        Ok(json!({ "tool": "{{tool}}", "words": words, "text": text }).to_string())
    }
}

// `Tool` only: the other exports keep the SDK's defaults.
tiny_harness_plugin::export_plugin!(Plugin: Tool);
