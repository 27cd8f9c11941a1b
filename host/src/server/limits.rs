//! Budgets on the shape of a message, checked before it is accepted (`[limits]`).
//!
//! The body size limit bounds bytes, not cost: one 1 MB request of 80,000 tiny parts once
//! cost 215 MB of transient memory, because every part becomes a value of its own in the
//! parsed JSON, the task, its history, the hook contexts and the store. So a message may
//! have at most `max_parts_per_message` parts, and its JSON payloads (the values inside the
//! message's and the request's metadata and each part's metadata, and data parts) may nest
//! at most `max_json_depth` deep and hold at most `max_json_values_per_message` values
//! together. A message beyond a budget is refused with InvalidParams naming the budget's
//! key, before it costs a rate-limit token, and nothing of it is kept.
//!
//! Two checks apply the same budgets:
//!
//! * [`MessageLimits::scan`] reads a JSON body (JSON-RPC or HTTP+JSON) before it is parsed
//!   into values, allocating nothing per value, and stops at the first budget exceeded: the
//!   parsed form of a megabyte of tiny objects is itself tens of megabytes.
//! * [`MessageLimits::check`] checks the decoded request, whatever binding it came by.

use std::fmt;

use serde::de::{self, DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::Value;

use crate::a2a::error::A2aError;
use crate::a2a::jsonrpc::RequestId;
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
            return Err(too_many_parts(&parts.to_string(), *self));
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

/// Where in a request body a value is, as far as the budgets care.
#[derive(Clone, Debug)]
enum Place {
    /// The body itself.
    Root,
    /// JSON-RPC `params`: the request.
    Request,
    /// The request's `message`.
    Message,
    /// `message.parts`.
    Parts,
    /// One part.
    Part(usize),
    /// A metadata object (`field`): depth 1, not counted itself.
    Metadata(String),
    /// Inside a payload (`field`), at `depth`.
    Payload { field: String, depth: usize },
    /// Anywhere else: not budgeted here.
    Elsewhere,
}

/// What a scan found, besides a refusal.
struct Scanner {
    limits: MessageLimits,
    values: usize,
    /// The JSON-RPC id, if the body had one, to answer a refusal with.
    id: Option<RequestId>,
    refusal: Option<A2aError>,
}

impl MessageLimits {
    /// Reads `body` (a JSON-RPC request or an HTTP+JSON SendMessageRequest) without
    /// building it, and refuses a message beyond a budget, with the JSON-RPC id if there is
    /// one. A body that is not JSON passes: the parser will say what is wrong with it.
    pub(crate) fn scan(&self, body: &[u8]) -> Result<(), (Option<RequestId>, A2aError)> {
        let mut scanner = Scanner {
            limits: *self,
            values: 0,
            id: None,
            refusal: None,
        };
        let mut json = serde_json::Deserializer::from_slice(body);
        let _ = Node {
            scanner: &mut scanner,
            place: Place::Root,
        }
        .deserialize(&mut json);
        match scanner.refusal {
            Some(refusal) => Err((scanner.id, refusal)),
            None => Ok(()),
        }
    }
}

impl Scanner {
    /// Stop the scan with `refusal`.
    fn refuse<E: de::Error>(&mut self, refusal: A2aError) -> E {
        self.refusal = Some(refusal);
        E::custom("over a budget")
    }
}

/// One value of the body, where it is.
struct Node<'s> {
    scanner: &'s mut Scanner,
    place: Place,
}

impl<'de> DeserializeSeed<'de> for Node<'_> {
    type Value = ();

    fn deserialize<D: de::Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl Node<'_> {
    /// Count this value if it is in a payload (a metadata object itself is not).
    fn enter<E: de::Error>(&mut self) -> Result<(), E> {
        if let Place::Payload { field, depth } = &self.place {
            let (field, depth) = (field.clone(), *depth);
            let limits = self.scanner.limits;
            if depth > limits.max_json_depth {
                return Err(self.scanner.refuse(too_deep(&field, limits)));
            }
            self.scanner.values += 1;
            if self.scanner.values > limits.max_json_values {
                return Err(self.scanner.refuse(too_many_values(&field, limits)));
            }
        }
        Ok(())
    }

    /// The place of a member `key` of an object here.
    fn member(&self, key: Key) -> Place {
        match (&self.place, key) {
            (Place::Root, Key::Params) => Place::Request,
            (Place::Root | Place::Request, Key::Message) => Place::Message,
            (Place::Message, Key::Parts) => Place::Parts,
            (Place::Root | Place::Request, Key::Metadata) => Place::Metadata("metadata".into()),
            (Place::Message, Key::Metadata) => Place::Metadata("message.metadata".into()),
            (Place::Part(index), Key::Metadata) => {
                Place::Metadata(format!("message.parts[{index}].metadata"))
            }
            (Place::Part(index), Key::Data) => payload(format!("message.parts[{index}].data"), 1),
            (Place::Metadata(field), _) => payload(field.clone(), 2),
            (Place::Payload { field, depth }, _) => payload(field.clone(), depth + 1),
            _ => Place::Elsewhere,
        }
    }

    /// The place of the element at `index` of an array here.
    fn element(&self, index: usize) -> Place {
        match &self.place {
            Place::Parts => Place::Part(index),
            Place::Payload { field, depth } => payload(field.clone(), depth + 1),
            _ => Place::Elsewhere,
        }
    }
}

/// Inside a payload: a data part's value is depth 1, a metadata object's members depth 2.
fn payload(field: String, depth: usize) -> Place {
    Place::Payload { field, depth }
}

impl<'de> Visitor<'de> for Node<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E: de::Error>(mut self, _: bool) -> Result<(), E> {
        self.enter()
    }

    fn visit_i64<E: de::Error>(mut self, _: i64) -> Result<(), E> {
        self.enter()
    }

    fn visit_u64<E: de::Error>(mut self, _: u64) -> Result<(), E> {
        self.enter()
    }

    fn visit_f64<E: de::Error>(mut self, _: f64) -> Result<(), E> {
        self.enter()
    }

    fn visit_str<E: de::Error>(mut self, _: &str) -> Result<(), E> {
        self.enter()
    }

    fn visit_unit<E: de::Error>(mut self) -> Result<(), E> {
        self.enter()
    }

    fn visit_seq<A: SeqAccess<'de>>(mut self, mut seq: A) -> Result<(), A::Error> {
        self.enter()?;
        let mut index = 0;
        loop {
            let place = self.element(index);
            let element = Node {
                scanner: self.scanner,
                place,
            };
            if seq.next_element_seed(element)?.is_none() {
                return Ok(());
            }
            index += 1;
            if matches!(self.place, Place::Parts) && index > self.scanner.limits.max_parts {
                // Count the rest without reading them, to say how many there are.
                while seq.next_element::<IgnoredAny>()?.is_some() {
                    index += 1;
                }
                let limits = self.scanner.limits;
                return Err(self
                    .scanner
                    .refuse(too_many_parts(&index.to_string(), limits)));
            }
        }
    }

    fn visit_map<A: MapAccess<'de>>(mut self, mut map: A) -> Result<(), A::Error> {
        self.enter()?;
        while let Some(key) = map.next_key::<Key>()? {
            if matches!(self.place, Place::Root) && key == Key::Id {
                let id: Value = map.next_value()?;
                self.scanner.id = match id {
                    Value::String(id) => Some(RequestId::String(id)),
                    Value::Number(id) => Some(RequestId::Number(id)),
                    _ => Some(RequestId::Null),
                };
                continue;
            }
            let place = self.member(key);
            map.next_value_seed(Node {
                scanner: self.scanner,
                place,
            })?;
        }
        Ok(())
    }
}

/// The member names the budgets care about; any other is `Other`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Key {
    Id,
    Params,
    Message,
    Parts,
    Metadata,
    Data,
    Other,
}

impl<'de> de::Deserialize<'de> for Key {
    fn deserialize<D: de::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_str(KeyVisitor)
    }
}

struct KeyVisitor;

impl Visitor<'_> for KeyVisitor {
    type Value = Key;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a member name")
    }

    fn visit_str<E: de::Error>(self, key: &str) -> Result<Key, E> {
        Ok(match key {
            "id" => Key::Id,
            "params" => Key::Params,
            "message" => Key::Message,
            "parts" => Key::Parts,
            "metadata" => Key::Metadata,
            "data" => Key::Data,
            _ => Key::Other,
        })
    }
}

fn too_many_parts(count: &str, limits: MessageLimits) -> A2aError {
    A2aError::invalid_field(
        "message.parts",
        format!(
            "message.parts has {count} parts, more than the {} a message may have \
             (`[limits] max_parts_per_message`)",
            limits.max_parts
        ),
    )
}

fn too_deep(field: &str, limits: MessageLimits) -> A2aError {
    A2aError::invalid_field(
        field,
        format!(
            "{field} nests deeper than {} levels (`[limits] max_json_depth`)",
            limits.max_json_depth
        ),
    )
}

fn too_many_values(field: &str, limits: MessageLimits) -> A2aError {
    A2aError::invalid_field(
        field,
        format!(
            "the message's metadata and data parts hold more than {} JSON values \
             (`[limits] max_json_values_per_message`), counting up to {field}",
            limits.max_json_values
        ),
    )
}

/// The values counted so far.
struct Budget {
    limits: MessageLimits,
    values: usize,
}

impl Budget {
    /// A metadata object is depth 1; its members (counted) are depth 2.
    fn metadata(&mut self, field: &str, metadata: &Metadata) -> Result<(), A2aError> {
        for value in metadata.values() {
            self.walk(field, value, 2)?;
        }
        Ok(())
    }

    fn value(&mut self, field: &str, value: &Value) -> Result<(), A2aError> {
        self.walk(field, value, 1)
    }

    /// Counts one value at `depth` of `field`.
    fn count(&mut self, field: &str, depth: usize) -> Result<(), A2aError> {
        if depth > self.limits.max_json_depth {
            return Err(too_deep(field, self.limits));
        }
        self.values += 1;
        if self.values > self.limits.max_json_values {
            return Err(too_many_values(field, self.limits));
        }
        Ok(())
    }

    /// Counts `value` and everything in it, `depth` being its own depth. Without recursion:
    /// the stack holds at most `max_json_depth` levels of siblings.
    fn walk(&mut self, field: &str, value: &Value, depth: usize) -> Result<(), A2aError> {
        let mut pending: Vec<(&Value, usize)> = vec![(value, depth)];
        while let Some((value, depth)) = pending.pop() {
            self.count(field, depth)?;
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

    fn scanned(body: Value) -> Result<(), (Option<RequestId>, A2aError)> {
        LIMITS.scan(body.to_string().as_bytes())
    }

    #[test]
    fn the_scan_refuses_what_the_check_refuses_and_says_how_many_parts() {
        let parts: Vec<Value> = (0..10).map(|_| json!({"text": "x"})).collect();
        let rpc = json!({"jsonrpc": "2.0", "id": 7, "method": "SendMessage",
            "params": {"message": {"parts": parts}}});
        let (id, refused) = scanned(rpc).expect_err("10 parts");
        assert_eq!(id, Some(RequestId::Number(7.into())));
        assert!(refused.to_string().contains("10 parts"), "{refused}");
        let rest = json!({"message": {"parts": [{"data": {"a": {"b": {"c": {"d": 1}}}}}]}});
        let (id, refused) = scanned(rest).expect_err("too deep");
        assert_eq!(id, None);
        assert!(
            refused
                .to_string()
                .contains("message.parts[0].data nests deeper"),
            "{refused}"
        );
        let values = json!({"message": {"parts": [{"text": "x"}],
            "metadata": {"a": (0..25).collect::<Vec<_>>()}}});
        let (_, refused) = scanned(values).expect_err("too many values");
        assert!(
            refused.to_string().contains("message.metadata"),
            "{refused}"
        );
        // At the limits exactly, and elsewhere in the body, nothing is refused.
        scanned(
            json!({"message": {"parts": [{"data": {"a": {"b": [1]}}}, {"text": "y"}],
            "metadata": {"k": {"v": 1}}}, "configuration": {"x": [[[[[[1]]]]]]}}),
        )
        .expect("fits");
        LIMITS.scan(b"{not json").expect("the parser's to refuse");
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
