//! What the model reads for an MCP tool's answer, and the names MCP tools
//! are offered under.

use rmcp::model::CallToolResult;
use serde_json::{Value, json};

use crate::domain::ToolResult;
use crate::tools::{MAX_TOOL_DESCRIPTION_BYTES, is_valid_tool_name};

/// `<server>__<tool>`: the server's name keeps tools of two servers (and
/// plugins' tools) apart. Characters the providers refuse (MCP allows `.`
/// and `/`) become `_`; `None` when the result is still not a valid name
/// (too long).
pub(crate) fn offered_name(server: &str, tool: &str) -> Option<String> {
    let tool: String = tool
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    let name = format!("{server}__{tool}");
    is_valid_tool_name(&name).then_some(name)
}

/// The server's description of a tool, within what a declaration may carry
/// (cut at a character boundary, marked), or a sentence naming it.
pub(crate) fn description(server: &str, tool: &str, given: Option<&str>) -> String {
    let given = given.map(str::trim).filter(|text| !text.is_empty());
    let Some(text) = given else {
        return format!("The tool `{tool}` of the MCP server `{server}`.");
    };
    if text.len() <= MAX_TOOL_DESCRIPTION_BYTES {
        return text.to_owned();
    }
    const MARK: &str = " [...]";
    let mut end = MAX_TOOL_DESCRIPTION_BYTES - MARK.len();
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}{MARK}", &text[..end])
}

/// The tool result the model reads: the text when the answer is only text
/// (most tools), otherwise the content blocks (and structured content) as
/// JSON; an answer the server marked as an error is a tool error.
pub(crate) fn tool_result(server: &str, tool: &str, result: &CallToolResult) -> ToolResult {
    let blocks: Vec<Value> = result
        .content
        .iter()
        .filter_map(|block| serde_json::to_value(block).ok())
        .collect();
    let texts: Vec<&str> = blocks
        .iter()
        .filter(|block| block["type"] == "text")
        .filter_map(|block| block["text"].as_str())
        .collect();
    let only_text = !blocks.is_empty() && texts.len() == blocks.len();
    if result.is_error == Some(true) {
        let message = if texts.is_empty() {
            format!("the tool `{tool}` of the MCP server `{server}` reported an error")
        } else {
            texts.join("\n")
        };
        return ToolResult::Error(message);
    }
    if only_text && result.structured_content.is_none() {
        return ToolResult::Output(Value::String(texts.join("\n")));
    }
    let mut answer = json!({ "content": blocks });
    if let Some(structured) = &result.structured_content {
        answer["structuredContent"] = structured.clone();
    }
    ToolResult::Output(answer)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_namespaced_and_fit_the_providers_rule() {
        assert_eq!(
            offered_name("fs", "read_file").as_deref(),
            Some("fs__read_file")
        );
        assert_eq!(
            offered_name("fs", "get-env").as_deref(),
            Some("fs__get-env")
        );
        assert_eq!(
            offered_name("fs", "files/read.v2").as_deref(),
            Some("fs__files_read_v2")
        );
        assert_eq!(offered_name("fs", &"x".repeat(61)), None);
    }

    #[test]
    fn long_descriptions_are_cut_on_a_character_boundary() {
        let long = "é".repeat(MAX_TOOL_DESCRIPTION_BYTES);
        let cut = description("fs", "read", Some(&long));
        assert!(cut.len() <= MAX_TOOL_DESCRIPTION_BYTES && cut.ends_with("[...]"));
        assert_eq!(
            description("fs", "read", Some("  ")),
            "The tool `read` of the MCP server `fs`."
        );
    }

    #[test]
    fn text_answers_are_text_errors_are_errors_and_the_rest_is_json() {
        let text: CallToolResult = serde_json::from_value(json!({
            "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]
        }))
        .expect("a result");
        assert_eq!(
            tool_result("s", "t", &text),
            ToolResult::Output(json!("a\nb"))
        );
        let failed: CallToolResult = serde_json::from_value(json!({
            "content": [{"type": "text", "text": "no such file"}], "isError": true
        }))
        .expect("a result");
        assert_eq!(
            tool_result("s", "t", &failed),
            ToolResult::Error("no such file".into())
        );
        let image: CallToolResult = serde_json::from_value(json!({
            "content": [{"type": "image", "data": "AAAA", "mimeType": "image/png"}]
        }))
        .expect("a result");
        let ToolResult::Output(answer) = tool_result("s", "t", &image) else {
            panic!("an output");
        };
        assert_eq!(answer["content"][0]["mimeType"], "image/png");
    }
}
