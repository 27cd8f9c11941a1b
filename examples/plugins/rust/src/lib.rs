//! Example tiny-harness plugin in Rust, built with the guest SDK.
//!
//! - `/dice NdM`: rolls N dice of M sides (1 <= N <= 100, 2 <= M <= 1000).
//! - `/echo <text>`: replies with the text.
//! - A `command.invoked.pre` policy that refuses `/echo` when the text
//!   contains the word "forbidden".
//! - The tool `word_count` (tools.json): counts the words of `text`.

use serde_json::Value;
use tiny_harness_plugin::{
    Command, CommandError, Decision, Hook, Invocation, Outcome, Tool, ToolCall, ToolError,
};

const DICE_USAGE: &str = "usage: /dice NdM, e.g. /dice 2d6 (1-100 dice of 2-1000 sides)";
const ECHO_USAGE: &str = "usage: /echo <text>";

struct Example;

impl Command for Example {
    fn run(invocation: Invocation) -> Result<Outcome, CommandError> {
        match invocation.command.as_str() {
            "dice" => dice(invocation.arg("spec").unwrap_or_default()),
            "echo" => match invocation.arg("text") {
                Some(text) => Ok(Outcome::reply(text)),
                None => Err(CommandError::Usage(ECHO_USAGE.into())),
            },
            other => Err(CommandError::Failed(format!("no body for /{other}"))),
        }
    }
}

impl Hook for Example {
    fn handle(point: &str, context: &str) -> Decision {
        if point != "command.invoked.pre" {
            return Decision::Pass;
        }
        let Ok(context) = serde_json::from_str::<Value>(context) else {
            return Decision::invalid("echo policy: malformed command.invoked context");
        };
        let field = |name| context["command"][name].as_str();
        match (field("name"), field("raw_arguments")) {
            (Some("echo"), Some(text)) if has_forbidden_word(text) => {
                Decision::policy("echo refuses forbidden words")
            }
            (Some(_), Some(_)) => Decision::Pass,
            _ => Decision::invalid("echo policy: malformed command.invoked context"),
        }
    }
}

/// The longest text `word_count` takes, in bytes.
const MAX_TEXT_BYTES: usize = 100_000;

impl Tool for Example {
    fn call(call: ToolCall) -> Result<String, ToolError> {
        if call.name != "word_count" {
            return Err(ToolError::Failed(format!("no tool `{}` here", call.name)));
        }
        // The harness checked the arguments against tools.json's schema:
        // `text` is there, and a string.
        let arguments: Value = serde_json::from_str(&call.arguments)
            .map_err(|error| ToolError::InvalidArguments(error.to_string()))?;
        let text = arguments["text"].as_str().unwrap_or_default();
        if text.len() > MAX_TEXT_BYTES {
            return Err(ToolError::InvalidArguments(format!(
                "at most {MAX_TEXT_BYTES} bytes, please"
            )));
        }
        let words = text.split_whitespace().count();
        Ok(serde_json::json!({ "words": words }).to_string())
    }
}

tiny_harness_plugin::export_plugin!(Example: Command, Hook, Tool);

/// Rolls `NdM` dice and replies "2d6: 3 + 5 = 8" with data
/// `{"rolls":[3,5],"total":8}`.
fn dice(spec: &str) -> Result<Outcome, CommandError> {
    let usage = || CommandError::Usage(DICE_USAGE.into());
    let (count, sides) = parse_dice(spec).ok_or_else(usage)?;
    let rolls = (0..count)
        .map(|_| roll(sides))
        .collect::<Result<Vec<u32>, _>>()?;
    let total: u32 = rolls.iter().sum();
    let shown: Vec<String> = rolls.iter().map(u32::to_string).collect();
    let text = format!("{count}d{sides}: {} = {total}", shown.join(" + "));
    let data = serde_json::json!({ "rolls": rolls, "total": total });
    Ok(Outcome::reply(text).with_data(data.to_string()))
}

/// `NdM` as `(N, M)` when both are 1-4 digits and in range.
fn parse_dice(spec: &str) -> Option<(u32, u32)> {
    let (count, sides) = spec.split_once('d')?;
    let number = |digits: &str| match digits.len() {
        1..=4 if digits.bytes().all(|b| b.is_ascii_digit()) => digits.parse::<u32>().ok(),
        _ => None,
    };
    let (count, sides) = (number(count)?, number(sides)?);
    ((1..=100).contains(&count) && (2..=1000).contains(&sides)).then_some((count, sides))
}

/// A uniform roll in `1..=sides`, from wasi:random.
fn roll(sides: u32) -> Result<u32, CommandError> {
    let random =
        getrandom::u64().map_err(|e| CommandError::Failed(format!("no randomness: {e}")))?;
    // The modulo bias of a 64-bit value over at most 1000 sides is negligible.
    Ok(1 + (random % u64::from(sides)) as u32)
}

/// Whether `text` has "forbidden" as a word (ASCII letters and digits,
/// case-insensitive).
fn has_forbidden_word(text: &str) -> bool {
    text.split(|c: char| !c.is_ascii_alphanumeric())
        .any(|word| word.eq_ignore_ascii_case("forbidden"))
}
