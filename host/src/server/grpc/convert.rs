//! Between the generated prost messages and `a2a::types`, through ProtoJSON.
//!
//! The harness has one set of protocol types, `a2a::types`, whose serde
//! impls are ProtoJSON (the JSON bindings' wire format). The generated
//! messages have ProtoJSON serde impls too (pbjson), so a value crosses the
//! gRPC boundary as JSON: serialized by one side's impl, read by the other's.
//! Requests are then decoded and validated exactly as the JSON bindings'
//! parameters are ([`decode_params`]), so a wrong field is the same
//! InvalidParams naming the same JSON path. This costs a JSON tree per
//! message, which is small next to a turn; in exchange no field mapping is
//! written twice, and the round-trip tests (`tests.rs`) check every message
//! type the binding carries.
//!
//! One difference is protobuf's own: a number in a `google.protobuf.Value`
//! (data parts, metadata) is a double, so `1` arrives as `1.0`. Integral
//! doubles that JSON would have written as integers (within 2^53) are read
//! back as integers, so a data part sent over gRPC is stored, and shown over
//! the JSON bindings, exactly as the same part sent as JSON.

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use tonic::Status;

use crate::a2a::error::A2aError;
use crate::server::body::{Validate, decode_params};

/// A request message as the harness's request type, validated.
pub(crate) fn request<P, T>(proto: &P) -> Result<T, A2aError>
where
    P: Serialize,
    T: DeserializeOwned + Validate,
{
    decode_params(&as_json(proto)?)
}

/// A generated message as the harness's type, unvalidated.
#[cfg(test)]
pub(crate) fn ours<P, T>(proto: &P) -> Result<T, A2aError>
where
    P: Serialize,
    T: DeserializeOwned,
{
    crate::a2a::types::decode(&as_json(proto)?)
}

/// A generated message's ProtoJSON, its integral doubles as integers.
fn as_json<P: Serialize>(proto: &P) -> Result<Value, A2aError> {
    let mut json = serde_json::to_value(proto)
        .map_err(|error| A2aError::InvalidRequest(format!("unreadable message: {error}")))?;
    integral_numbers(&mut json);
    Ok(json)
}

/// The largest integer a double holds exactly.
const MAX_EXACT: f64 = 9_007_199_254_740_992.0;

fn integral_numbers(value: &mut Value) {
    match value {
        Value::Number(number) => {
            if let Some(float) = number.as_f64()
                && number.is_f64()
                && float.fract() == 0.0
                && float.abs() <= MAX_EXACT
            {
                // Exact: the value is integral and within 2^53.
                #[allow(clippy::cast_possible_truncation)]
                let integer = float as i64;
                *number = integer.into();
            }
        }
        Value::Array(items) => items.iter_mut().for_each(integral_numbers),
        Value::Object(fields) => fields.values_mut().for_each(integral_numbers),
        Value::Null | Value::Bool(_) | Value::String(_) => {}
    }
}

/// An answer as its generated message.
pub(crate) fn answer<T, P>(value: &T) -> Result<P, Status>
where
    T: Serialize,
    P: DeserializeOwned,
{
    let json = serde_json::to_value(value).map_err(internal)?;
    serde_json::from_value(json).map_err(internal)
}

/// Our own answers always convert; if one ever does not, say so plainly.
fn internal(error: serde_json::Error) -> Status {
    tracing::error!(%error, "an answer could not be converted to its gRPC message");
    Status::internal(format!("the answer could not be encoded: {error}"))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn integral_doubles_become_integers_and_the_rest_stay() {
        let mut value = json!({"a": 1.0, "b": [2.0, 2.5, -3.0], "c": {"d": 1e300}, "e": "1.0"});
        integral_numbers(&mut value);
        assert_eq!(
            value,
            json!({"a": 1, "b": [2, 2.5, -3], "c": {"d": 1e300}, "e": "1.0"})
        );
        assert_eq!(
            value.to_string(),
            r#"{"a":1,"b":[2,2.5,-3],"c":{"d":1e+300},"e":"1.0"}"#
        );
    }
}
