//! A tool's `input_schema`, compiled once when the tool is declared, and the
//! check every call's arguments pass before the tool's body runs.
//!
//! The validator is boon (JSON Schema drafts 4, 6, 7, 2019-09 and 2020-12;
//! a schema without `$schema` is read as 2020-12, what OpenAI and Anthropic
//! document for tool inputs). A schema may `$ref` only within itself and the
//! standard metaschemas: boon is given no loader, so no `$ref` reads a file
//! or the network. `format` is an annotation, not an assertion, as the
//! drafts say by default.
//!
//! A mismatch is told to the model in a few lines it can act on, each the
//! JSON pointer into its arguments and what is wrong there:
//! `invalid arguments: at /sides: must be >=2, but got 1`.

use std::fmt;
use std::sync::Arc;

use serde_json::Value;

/// Where a tool's schema is filed in its compiler: its only document.
const SCHEMA_URL: &str = "tool:///input_schema.json";

/// At most this many problems are listed; the model fixes those first.
const MAX_PROBLEMS: usize = 8;

/// A compiled input schema.
#[derive(Clone)]
pub struct ArgumentSchema {
    compiled: Arc<Compiled>,
}

struct Compiled {
    schemas: boon::Schemas,
    index: boon::SchemaIndex,
}

impl ArgumentSchema {
    /// Compile `schema`; the error says why it is not a usable JSON Schema.
    pub fn compile(schema: &Value) -> Result<Self, String> {
        let mut compiler = boon::Compiler::new();
        compiler.set_default_draft(boon::Draft::V2020_12);
        compiler.use_loader(Box::new(NoLoader));
        compiler
            .add_resource(SCHEMA_URL, schema.clone())
            .map_err(|error| not_a_schema(&error))?;
        let mut schemas = boon::Schemas::new();
        let index = compiler
            .compile(SCHEMA_URL, &mut schemas)
            .map_err(|error| not_a_schema(&error))?;
        Ok(ArgumentSchema {
            compiled: Arc::new(Compiled { schemas, index }),
        })
    }

    /// Check a call's arguments; the error lists what is wrong, for the
    /// model to correct.
    pub fn check(&self, arguments: &Value) -> Result<(), String> {
        let Compiled { schemas, index } = &*self.compiled;
        let error = match schemas.validate(arguments, *index) {
            Ok(()) => return Ok(()),
            Err(error) => error,
        };
        let mut problems = Vec::new();
        leaves(&error, &mut problems);
        let total = problems.len();
        problems.truncate(MAX_PROBLEMS);
        let mut text = problems.join("; ");
        if total > MAX_PROBLEMS {
            text.push_str(&format!("; and {} more", total - MAX_PROBLEMS));
        }
        Err(text)
    }
}

/// Why a schema does not compile, with its causes (boon's own message for
/// a refused `$ref` is only "error loading <url>"; ours says why).
fn not_a_schema(error: &boon::CompileError) -> String {
    let mut text = format!("input_schema is not a JSON Schema: {error}");
    let mut cause = std::error::Error::source(error);
    while let Some(current) = cause {
        text.push_str(&format!(": {current}"));
        cause = current.source();
    }
    text
}

/// The most specific problems under `error`: its leaves, each as
/// `at /pointer: what`.
fn leaves(error: &boon::ValidationError<'_, '_>, out: &mut Vec<String>) {
    if error.causes.is_empty() {
        let location = error.instance_location.to_string();
        let location = if location.is_empty() { "/" } else { &location };
        out.push(format!("at {location}: {}", error.kind));
        return;
    }
    for cause in &error.causes {
        leaves(cause, out);
    }
}

impl fmt::Debug for ArgumentSchema {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ArgumentSchema")
    }
}

/// boon's default loader reads `file://` URLs; a plugin's schema must reach
/// nothing but itself.
struct NoLoader;

impl boon::UrlLoader for NoLoader {
    fn load(&self, url: &str) -> Result<Value, Box<dyn std::error::Error>> {
        Err(format!("`{url}`: a tool's schema may refer only to itself").into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn dice() -> ArgumentSchema {
        ArgumentSchema::compile(&json!({
            "type": "object",
            "properties": {
                "sides": { "type": "integer", "minimum": 2, "maximum": 100 },
                "count": { "type": "integer", "minimum": 1 }
            },
            "required": ["sides"],
            "additionalProperties": false
        }))
        .expect("a schema")
    }

    #[test]
    fn arguments_that_fit_pass_and_others_say_where_and_why() {
        let schema = dice();
        assert_eq!(schema.check(&json!({ "sides": 6 })), Ok(()));
        assert_eq!(schema.check(&json!({ "sides": 20, "count": 3 })), Ok(()));
        for (arguments, expected) in [
            (json!({ "sides": 1 }), "at /sides: must be >=2"),
            (
                json!({ "sides": "six" }),
                "at /sides: want integer, but got string",
            ),
            (json!({}), "at /: missing properties 'sides'"),
            (
                json!({ "sides": 6, "colour": "red" }),
                "additionalProperties 'colour' not allowed",
            ),
            (json!("6"), "at /: want object, but got string"),
        ] {
            let error = schema.check(&arguments).expect_err("refused");
            assert!(error.contains(expected), "{arguments}: {error}");
        }
        // Several problems, each listed.
        let error = schema
            .check(&json!({ "sides": 1, "count": 0 }))
            .expect_err("refused");
        assert!(
            error.contains("/sides") && error.contains("/count"),
            "{error}"
        );
    }

    #[test]
    fn a_schema_that_is_not_one_is_refused_at_declaration() {
        for schema in [
            json!({ "type": "objekt" }),
            json!({ "properties": { "a": { "minimum": "two" } } }),
            json!({ "$schema": "https://example.com/not-a-metaschema" }),
        ] {
            let error = ArgumentSchema::compile(&schema).expect_err("refused");
            assert!(
                error.starts_with("input_schema is not a JSON Schema"),
                "{schema}: {error}"
            );
        }
    }

    #[test]
    fn a_schema_reaches_no_file_and_no_network() {
        for reference in ["file:///etc/passwd", "https://example.com/schema.json"] {
            let error =
                ArgumentSchema::compile(&json!({ "$ref": reference })).expect_err("refused");
            assert!(
                error.contains("may refer only to itself"),
                "{reference}: {error}"
            );
        }
        // Within itself is fine.
        let schema = ArgumentSchema::compile(&json!({
            "$defs": { "n": { "type": "integer" } },
            "type": "object",
            "properties": { "a": { "$ref": "#/$defs/n" } }
        }))
        .expect("a schema");
        assert!(schema.check(&json!({ "a": "x" })).is_err());
        assert!(schema.check(&json!({ "a": 1 })).is_ok());
    }
}
