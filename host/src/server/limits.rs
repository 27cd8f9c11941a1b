//! Budgets on the shape of a message, checked before it is accepted (`[limits]`).
//!
//! The body size limit bounds bytes, not cost: one 1 MB request of 80,000 tiny parts once
//! cost 215 MB of transient memory, because every part becomes a value of its own in the
//! task, its history, the hook contexts and the store. So a message may have at most
//! `max_parts_per_message` parts, and its JSON payloads (the message's and the request's
//! metadata, each part's metadata, data parts) may nest at most `max_json_depth` deep and
//! hold at most `max_json_values_per_message` values together. A message beyond a budget
//! is refused with InvalidParams naming the budget's key, before it costs a rate-limit
//! token, and nothing of it is kept.

use serde_json::Value;

use crate::a2a::error::A2aError;
use crate::a2a::types::{Metadata, PartContent, SendMessageRequest};

/// The budgets of one message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MessageLimits {
    /// Parts in one message.
    pub max_parts: usize,
    /// Nesting of any JSON payload: a scalar is depth 1, `{"a": 1}` depth 2.
    pub max_json_depth: usize,
    /// JSON values in all of the message's payloads together.
    pub max_json_values: usize,
}

impl MessageLimits {
    /// Whether `request`'s message fits; the error names the field and the key.
    pub(crate) fn check(&self, request: &SendMessageRequest) -> Result<(), A2aError> {
        let message = &request.message;
        let parts = message.parts.len();
        if parts > self.max_parts {
            return Err(A2aError::invalid_field(
                "message.parts",
                format!(
                    "message.parts has {parts} parts, more than the {} a message may have \
                     (`[limits] max_parts_per_message`)",
                    self.max_parts
                ),
            ));
        }
        let mut budget = Budget {
            limits: *self,
            values: 0,
        };
        budget.metadata("metadata", &request.metadata)?;
        budget.metadata("message.metadata", &message.metadata)?;
        for (index, part) in message.parts.iter().enumerate() {
            budget.metadata(&format!("message.parts[{index}].metadata"), &part.metadata)?;
            if let PartContent::Data(data) = &part.content {
                budget.value(&format!("message.parts[{index}].data"), data)?;
            }
        }
        Ok(())
    }
}

/// The values counted so far.
struct Budget {
    limits: MessageLimits,
    values: usize,
}

impl Budget {
    fn metadata(&mut self, field: &str, metadata: &Metadata) -> Result<(), A2aError> {
        if metadata.is_empty() {
            return Ok(());
        }
        self.values += 1;
        for value in metadata.values() {
            self.walk(field, value, 2)?;
        }
        Ok(())
    }

    fn value(&mut self, field: &str, value: &Value) -> Result<(), A2aError> {
        self.walk(field, value, 1)
    }

    /// Counts `value` and everything in it, `depth` being its own depth. Without recursion:
    /// the stack holds at most `max_json_depth` levels of siblings.
    fn walk(&mut self, field: &str, value: &Value, depth: usize) -> Result<(), A2aError> {
        let mut pending: Vec<(&Value, usize)> = vec![(value, depth)];
        while let Some((value, depth)) = pending.pop() {
            if depth > self.limits.max_json_depth {
                return Err(A2aError::invalid_field(
                    field,
                    format!(
                        "{field} nests deeper than {} levels (`[limits] max_json_depth`)",
                        self.limits.max_json_depth
                    ),
                ));
            }
            self.values += 1;
            if self.values > self.limits.max_json_values {
                return Err(A2aError::invalid_field(
                    field,
                    format!(
                        "the message's metadata and data parts hold more than {} JSON values \
                         (`[limits] max_json_values_per_message`), counting up to {field}",
                        self.limits.max_json_values
                    ),
                ));
            }
            match value {
                Value::Array(items) => pending.extend(items.iter().map(|item| (item, depth + 1))),
                Value::Object(members) => {
                    pending.extend(members.values().map(|member| (member, depth + 1)));
                }
                _ => {}
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::a2a::types::{Message, Part};
    use serde_json::json;

    const LIMITS: MessageLimits = MessageLimits {
        max_parts: 3,
        max_json_depth: 4,
        max_json_values: 20,
    };

    fn request(parts: Vec<Part>, metadata: Value) -> SendMessageRequest {
        let mut message = Message {
            parts,
            ..Message::default()
        };
        if let Value::Object(metadata) = metadata {
            message.metadata = metadata;
        }
        SendMessageRequest {
            tenant: None,
            message,
            configuration: None,
            metadata: Metadata::new(),
        }
    }

    fn refusal(request: &SendMessageRequest) -> String {
        LIMITS
            .check(request)
            .expect_err("over a budget")
            .to_string()
    }

    #[test]
    fn within_the_budgets_a_message_passes() {
        let parts = vec![
            Part::text("hi"),
            Part::data(json!({"a": [1, {"b": 2}]})),
            Part::text("there"),
        ];
        LIMITS
            .check(&request(parts, json!({"k": {"v": 1}})))
            .expect("fits");
    }

    #[test]
    fn too_many_parts_is_refused_naming_the_key() {
        let message = refusal(&request(vec![Part::text("x"); 4], json!({})));
        assert!(message.contains("4 parts"), "{message}");
        assert!(message.contains("max_parts_per_message"), "{message}");
    }

    #[test]
    fn deep_nesting_is_refused_wherever_it_is() {
        let deep = json!({"a": {"b": {"c": {"d": 1}}}});
        let message = refusal(&request(vec![Part::data(deep.clone())], json!({})));
        assert!(message.contains("message.parts[0].data"), "{message}");
        assert!(message.contains("max_json_depth"), "{message}");
        let message = refusal(&request(vec![Part::text("x")], json!({"m": deep})));
        assert!(message.contains("message.metadata"), "{message}");
        // Exactly at the limit passes: a scalar in three levels of data.
        LIMITS
            .check(&request(
                vec![Part::data(json!({"a": {"b": [1]}}))],
                json!({}),
            ))
            .expect("depth 4");
    }

    #[test]
    fn many_values_are_refused_across_payloads() {
        let half: Vec<Value> = (0..10).map(|n| json!(n)).collect();
        let parts = vec![Part::data(json!(half)), Part::data(json!(half))];
        let message = refusal(&request(parts, json!({})));
        assert!(message.contains("max_json_values_per_message"), "{message}");
        assert!(message.contains("message.parts[1].data"), "{message}");
    }
}
