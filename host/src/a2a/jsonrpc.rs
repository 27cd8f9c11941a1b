//! JSON-RPC 2.0 framing for the A2A JSON-RPC binding (spec section 9).
//!
//! [`parse_request`] turns a raw request body into a [`JsonRpcRequest`] or a
//! [`RequestError`] that already knows the `id` to answer with, classifying failures the way
//! JSON-RPC 2.0 does:
//!
//! * -32700 parse error: the body is not JSON;
//! * -32600 invalid request: not an object (batches included), `jsonrpc` is not `"2.0"`,
//!   `method` missing or not a string, `id` missing or of the wrong type, or `params` neither
//!   an object, an array nor null;
//! * -32601 method not found: not one of the eleven A2A 1.0 methods ([`Method`]);
//! * -32602 invalid params: `params` is an array (A2A parameters are always by name), or,
//!   later, [`JsonRpcRequest::params`] cannot decode them into the method's request type.
//!
//! Decisions where JSON-RPC and A2A leave room:
//!
//! * **Notifications are refused** with -32600 and `"id": null`. JSON-RPC lets a client omit
//!   `id` to say it wants no answer, but every A2A method is a request whose result (or
//!   stream, whose events carry the `id`) is the point of the call; running a `SendMessage`
//!   whose failure nobody could ever see would be worse than answering once.
//! * **Batches are refused** with -32600. A2A defines none, and a batch cannot contain a
//!   streaming method.
//! * `"params": null` is treated like absent `params` (an empty request object), as ProtoJSON
//!   treats `null`. `GetExtendedAgentCard` is sent without `params` (spec 9.4.8).
//! * `"id": null` is accepted (JSON-RPC allows it, though discourages it) and echoed.
//!
//! The JSON-RPC error responses this module builds are bodies; which HTTP status carries them
//! is the server's choice (JSON-RPC over HTTP conventionally uses 200).

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::error::{A2aError, JsonRpcErrorObject};
use super::types;

/// The only `jsonrpc` version there is.
pub(crate) const JSONRPC_VERSION: &str = "2.0";

/// A JSON-RPC request id: a string, a number, or null.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(untagged)]
pub(crate) enum RequestId {
    /// A numeric id, echoed exactly as sent.
    Number(serde_json::Number),
    /// A string id.
    String(String),
    /// `null`: an explicit null id, or the id of a response to a request whose id could not
    /// be determined.
    Null,
}

/// The A2A 1.0 JSON-RPC methods (spec 5.3 and 9.4), PascalCase as in the gRPC service.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Method {
    /// `SendMessage`: params `SendMessageRequest`, result `SendMessageResponse`.
    SendMessage,
    /// `SendStreamingMessage`: params `SendMessageRequest`, SSE of `StreamResponse`.
    SendStreamingMessage,
    /// `GetTask`: params `GetTaskRequest`, result `Task`.
    GetTask,
    /// `ListTasks`: params `ListTasksRequest`, result `ListTasksResponse`.
    ListTasks,
    /// `CancelTask`: params `CancelTaskRequest`, result `Task`.
    CancelTask,
    /// `SubscribeToTask`: params `SubscribeToTaskRequest`, SSE of `StreamResponse`.
    SubscribeToTask,
    /// `CreateTaskPushNotificationConfig`: params and result `TaskPushNotificationConfig`.
    CreateTaskPushNotificationConfig,
    /// `GetTaskPushNotificationConfig`: params `GetTaskPushNotificationConfigRequest`.
    GetTaskPushNotificationConfig,
    /// `ListTaskPushNotificationConfigs`: params `ListTaskPushNotificationConfigsRequest`.
    ListTaskPushNotificationConfigs,
    /// `DeleteTaskPushNotificationConfig`: params `DeleteTaskPushNotificationConfigRequest`,
    /// result empty.
    DeleteTaskPushNotificationConfig,
    /// `GetExtendedAgentCard`: params `GetExtendedAgentCardRequest` (usually absent), result
    /// `AgentCard`.
    GetExtendedAgentCard,
}

impl Method {
    /// Every method.
    pub(crate) const ALL: [Method; 11] = [
        Method::SendMessage,
        Method::SendStreamingMessage,
        Method::GetTask,
        Method::ListTasks,
        Method::CancelTask,
        Method::SubscribeToTask,
        Method::CreateTaskPushNotificationConfig,
        Method::GetTaskPushNotificationConfig,
        Method::ListTaskPushNotificationConfigs,
        Method::DeleteTaskPushNotificationConfig,
        Method::GetExtendedAgentCard,
    ];

    /// The method name on the wire.
    pub(crate) const fn as_str(self) -> &'static str {
        match self {
            Method::SendMessage => "SendMessage",
            Method::SendStreamingMessage => "SendStreamingMessage",
            Method::GetTask => "GetTask",
            Method::ListTasks => "ListTasks",
            Method::CancelTask => "CancelTask",
            Method::SubscribeToTask => "SubscribeToTask",
            Method::CreateTaskPushNotificationConfig => "CreateTaskPushNotificationConfig",
            Method::GetTaskPushNotificationConfig => "GetTaskPushNotificationConfig",
            Method::ListTaskPushNotificationConfigs => "ListTaskPushNotificationConfigs",
            Method::DeleteTaskPushNotificationConfig => "DeleteTaskPushNotificationConfig",
            Method::GetExtendedAgentCard => "GetExtendedAgentCard",
        }
    }

    /// The method with this exact (case-sensitive) name.
    pub(crate) fn from_name(name: &str) -> Option<Method> {
        Method::ALL
            .into_iter()
            .find(|method| method.as_str() == name)
    }

    /// Whether the method answers with a Server-Sent Events stream rather than one response.
    pub(crate) const fn is_streaming(self) -> bool {
        matches!(self, Method::SendStreamingMessage | Method::SubscribeToTask)
    }
}

/// A well-formed JSON-RPC request for a known A2A method.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct JsonRpcRequest {
    /// The id to echo in the response (and in every event of a stream).
    pub(crate) id: RequestId,
    /// The method.
    pub(crate) method: Method,
    /// The parameters: always a JSON object (`{}` when the request had none).
    pub(crate) params: Value,
}

impl JsonRpcRequest {
    /// Decodes the parameters as `T` (the method's request type). A failure is -32602 with a
    /// message naming the field by its JSON path; see [`types::decode`]. Semantic checks
    /// (required fields) are the request type's `validate`.
    pub(crate) fn params<T: DeserializeOwned>(&self) -> Result<T, A2aError> {
        types::decode(&self.params)
    }

    /// A success response to this request.
    pub(crate) fn respond<'a, T: Serialize>(&'a self, result: &'a T) -> JsonRpcSuccess<'a, T> {
        success(&self.id, result)
    }

    /// An error response to this request.
    pub(crate) fn fail(&self, error: &A2aError) -> JsonRpcFailure {
        failure(self.id.clone(), error)
    }
}

/// A request that could not be accepted, with the id to answer with (`Null` when the id
/// could not be read).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct RequestError {
    /// The request's id, if it could be determined.
    pub(crate) id: RequestId,
    /// Why the request was refused.
    pub(crate) error: A2aError,
}

impl RequestError {
    fn new(id: RequestId, error: A2aError) -> Self {
        RequestError { id, error }
    }

    /// The error response to send.
    pub(crate) fn to_response(&self) -> JsonRpcFailure {
        failure(self.id.clone(), &self.error)
    }
}

/// A success response: `{"jsonrpc": "2.0", "id": ..., "result": ...}`. Also the shape of each
/// event of a JSON-RPC stream (spec 9.4.2).
#[derive(Debug, Serialize)]
pub(crate) struct JsonRpcSuccess<'a, T> {
    jsonrpc: &'static str,
    id: &'a RequestId,
    result: &'a T,
}

/// An error response: `{"jsonrpc": "2.0", "id": ..., "error": {...}}`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct JsonRpcFailure {
    jsonrpc: &'static str,
    id: RequestId,
    error: JsonRpcErrorObject,
}

impl JsonRpcFailure {
    /// The error object.
    pub(crate) fn error(&self) -> &JsonRpcErrorObject {
        &self.error
    }
}

/// Builds a success response.
pub(crate) fn success<'a, T: Serialize>(id: &'a RequestId, result: &'a T) -> JsonRpcSuccess<'a, T> {
    JsonRpcSuccess {
        jsonrpc: JSONRPC_VERSION,
        id,
        result,
    }
}

/// Builds an error response.
pub(crate) fn failure(id: RequestId, error: &A2aError) -> JsonRpcFailure {
    JsonRpcFailure {
        jsonrpc: JSONRPC_VERSION,
        id,
        error: error.to_jsonrpc(),
    }
}

/// Parses and checks a JSON-RPC request body. See the module documentation for the error
/// each failure produces.
pub(crate) fn parse_request(body: &[u8]) -> Result<JsonRpcRequest, RequestError> {
    let value: Value = serde_json::from_slice(body)
        .map_err(|e| RequestError::new(RequestId::Null, A2aError::JsonParse(e.to_string())))?;
    let object = match value {
        Value::Object(object) => object,
        Value::Array(_) => {
            return Err(invalid(
                RequestId::Null,
                "batch requests are not supported; send one request object per call",
            ));
        }
        other => {
            return Err(invalid(
                RequestId::Null,
                format!("the request must be a JSON object, got {}", kind(&other)),
            ));
        }
    };
    parse_object(object)
}

fn parse_object(mut object: Map<String, Value>) -> Result<JsonRpcRequest, RequestError> {
    // The id comes first so that every later error can be answered with it.
    let id = match object.remove("id") {
        None => {
            return Err(invalid(
                RequestId::Null,
                "`id` is required: A2A methods are requests, not notifications",
            ));
        }
        Some(Value::Null) => RequestId::Null,
        Some(Value::String(s)) => RequestId::String(s),
        Some(Value::Number(n)) => RequestId::Number(n),
        Some(other) => {
            return Err(invalid(
                RequestId::Null,
                format!(
                    "`id` must be a string, a number or null, got {}",
                    kind(&other)
                ),
            ));
        }
    };

    match object.get("jsonrpc") {
        Some(Value::String(v)) if v == JSONRPC_VERSION => {}
        Some(other) => {
            return Err(invalid(
                id,
                format!("`jsonrpc` must be \"2.0\", got {}", short(other)),
            ));
        }
        None => return Err(invalid(id, "`jsonrpc` is required and must be \"2.0\"")),
    }

    let method_name = match object.remove("method") {
        Some(Value::String(name)) => name,
        Some(other) => {
            return Err(invalid(
                id,
                format!("`method` must be a string, got {}", kind(&other)),
            ));
        }
        None => return Err(invalid(id, "`method` is required")),
    };

    let params = match object.remove("params") {
        None | Some(Value::Null) => Value::Object(Map::new()),
        Some(params @ Value::Object(_)) => params,
        Some(Value::Array(_)) => {
            // Valid JSON-RPC, so the method is checked first; but A2A has no positional
            // parameters.
            let Some(_) = Method::from_name(&method_name) else {
                return Err(RequestError::new(id, A2aError::MethodNotFound(method_name)));
            };
            return Err(RequestError::new(
                id,
                A2aError::invalid_field(
                    "params",
                    "params must be an object of named parameters, not an array",
                ),
            ));
        }
        Some(other) => {
            return Err(invalid(
                id,
                format!("`params` must be an object, got {}", kind(&other)),
            ));
        }
    };

    let Some(method) = Method::from_name(&method_name) else {
        return Err(RequestError::new(id, A2aError::MethodNotFound(method_name)));
    };

    Ok(JsonRpcRequest { id, method, params })
}

fn invalid(id: RequestId, message: impl Into<String>) -> RequestError {
    RequestError::new(id, A2aError::InvalidRequest(message.into()))
}

/// The JSON type of a value, for messages.
fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// A value for a message, shortened so that a hostile client cannot make us echo megabytes.
fn short(value: &Value) -> String {
    let text = value.to_string();
    if text.len() <= 40 {
        return text;
    }
    let mut end = 40;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &text[..end])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::a2a::error::code;
    use crate::a2a::types::{
        GetExtendedAgentCardRequest, GetTaskRequest, ListTasksRequest, SendMessageRequest,
        SendMessageResponse, StreamResponse, TaskState,
    };
    use serde_json::json;

    fn parse_err(body: &str) -> RequestError {
        match parse_request(body.as_bytes()) {
            Err(error) => error,
            Ok(request) => panic!("{body} should fail, parsed {request:?}"),
        }
    }

    fn parse_ok(body: &str) -> JsonRpcRequest {
        match parse_request(body.as_bytes()) {
            Ok(request) => request,
            Err(error) => panic!("{body} should parse: {error:?}"),
        }
    }

    // --- Examples from specification.md and extensions.md -------------------------------------

    #[test]
    fn spec_9_4_requests_parse() {
        let request = parse_ok(
            r#"{
              "jsonrpc": "2.0",
              "id": 2,
              "method": "GetTask",
              "params": {
                "id": "task-uuid",
                "historyLength": 10
              }
            }"#,
        );
        assert_eq!(request.id, RequestId::Number(2.into()));
        assert_eq!(request.method, Method::GetTask);
        let params: GetTaskRequest = request.params().expect("params");
        assert_eq!(params.id, "task-uuid");
        assert_eq!(params.history_length, Some(10));

        let request = parse_ok(
            r#"{
              "jsonrpc": "2.0",
              "id": 3,
              "method": "ListTasks",
              "params": {
                "contextId": "context-uuid",
                "status": "TASK_STATE_WORKING",
                "pageSize": 50,
                "pageToken": "cursor-token"
              }
            }"#,
        );
        let params: ListTasksRequest = request.params().expect("params");
        assert_eq!(params.status, Some(TaskState::Working));

        for (body, method) in [
            (
                r#"{"jsonrpc": "2.0", "id": 4, "method": "CancelTask", "params": {"id": "task-uuid"}}"#,
                Method::CancelTask,
            ),
            (
                r#"{"jsonrpc": "2.0", "id": 5, "method": "SubscribeToTask", "params": {"id": "task-uuid"}}"#,
                Method::SubscribeToTask,
            ),
        ] {
            assert_eq!(parse_ok(body).method, method);
        }

        // 9.4.8: no params at all.
        let request = parse_ok(r#"{"jsonrpc": "2.0", "id": 6, "method": "GetExtendedAgentCard"}"#);
        assert_eq!(request.method, Method::GetExtendedAgentCard);
        let params: GetExtendedAgentCardRequest = request.params().expect("empty params");
        assert_eq!(params, GetExtendedAgentCardRequest::default());
    }

    #[test]
    fn extensions_md_request_and_response() {
        let request = parse_ok(
            r#"{
              "jsonrpc": "2.0",
              "method": "SendMessage",
              "id": "1",
              "params": {
                "message": {
                  "messageId": "1",
                  "role": "ROLE_USER",
                  "parts": [{"text": "Oh magic 8-ball, will it rain today?"}]
                },
                "metadata": {
                  "https://example.com/ext/konami-code/v1/code": "motherlode"
                }
              }
            }"#,
        );
        assert_eq!(request.id, RequestId::String("1".into()));
        let params: SendMessageRequest = request.params().expect("params");
        params.validate().expect("valid");
        assert_eq!(
            params.metadata["https://example.com/ext/konami-code/v1/code"],
            json!("motherlode")
        );

        let expected = json!({
          "jsonrpc": "2.0",
          "id": "1",
          "result": {
            "message": {
              "messageId": "2",
              "role": "ROLE_AGENT",
              "parts": [{"text": "That's a bingo!"}]
            }
          }
        });
        let result: SendMessageResponse =
            serde_json::from_value(expected["result"].clone()).expect("result parses");
        let written = serde_json::to_value(request.respond(&result)).expect("serializes");
        assert_eq!(written, expected);
    }

    #[test]
    fn spec_9_5_task_not_found_response() {
        let response = failure(
            RequestId::Number(2.into()),
            &A2aError::TaskNotFound {
                task_id: "nonexistent-task-id".into(),
            },
        );
        assert_eq!(
            serde_json::to_value(&response).expect("serializes"),
            json!({
              "jsonrpc": "2.0",
              "id": 2,
              "error": {
                "code": -32001,
                "message": "Task not found: nonexistent-task-id",
                "data": [
                  {
                    "@type": "type.googleapis.com/google.rpc.ErrorInfo",
                    "reason": "TASK_NOT_FOUND",
                    "domain": "a2a-protocol.org",
                    "metadata": {
                      "taskId": "nonexistent-task-id"
                    }
                  }
                ]
              }
            })
        );
    }

    #[test]
    fn stream_events_are_success_envelopes() {
        let event: StreamResponse = serde_json::from_value(json!({
            "statusUpdate": {"taskId": "t", "contextId": "c", "status": {"state": "TASK_STATE_WORKING"}}
        }))
        .expect("event");
        let id = RequestId::Number(1.into());
        assert_eq!(
            serde_json::to_value(success(&id, &event)).expect("serializes"),
            json!({"jsonrpc": "2.0", "id": 1, "result": {
                "statusUpdate": {"taskId": "t", "contextId": "c", "status": {"state": "TASK_STATE_WORKING"}}
            }})
        );
    }

    // --- Methods -----------------------------------------------------------------------------

    #[test]
    fn method_names_round_trip_and_are_case_sensitive() {
        for method in Method::ALL {
            assert_eq!(Method::from_name(method.as_str()), Some(method));
        }
        assert_eq!(Method::from_name("sendMessage"), None);
        assert_eq!(Method::from_name("message/send"), None);
        let streaming: Vec<_> = Method::ALL
            .into_iter()
            .filter(|m| m.is_streaming())
            .collect();
        assert_eq!(
            streaming,
            [Method::SendStreamingMessage, Method::SubscribeToTask]
        );
    }

    // --- Framing errors ----------------------------------------------------------------------

    #[test]
    fn parse_errors() {
        for body in ["", "{", "{\"jsonrpc\": \"2.0\",}", "nul", "\u{feff}{}"] {
            let error = parse_err(body);
            assert_eq!(error.id, RequestId::Null, "{body}");
            assert_eq!(error.error.code(), code::JSON_PARSE, "{body}");
            assert!(
                error
                    .error
                    .to_string()
                    .starts_with("Invalid JSON payload: "),
                "{body}"
            );
        }
    }

    #[test]
    fn invalid_requests_without_a_usable_id() {
        let cases = [
            ("[]", "batch requests are not supported"),
            (
                r#"[{"jsonrpc": "2.0", "id": 1, "method": "GetTask"}]"#,
                "batch requests",
            ),
            ("1", "the request must be a JSON object, got a number"),
            ("\"x\"", "the request must be a JSON object, got a string"),
            ("null", "the request must be a JSON object, got null"),
            (
                r#"{"jsonrpc": "2.0", "method": "GetTask"}"#,
                "`id` is required",
            ),
            (
                r#"{"jsonrpc": "2.0", "id": true, "method": "GetTask"}"#,
                "`id` must be a string, a number or null, got a boolean",
            ),
            (
                r#"{"jsonrpc": "2.0", "id": {}, "method": "GetTask"}"#,
                "got an object",
            ),
            (
                r#"{"jsonrpc": "2.0", "id": [1], "method": "GetTask"}"#,
                "got an array",
            ),
        ];
        for (body, expected) in cases {
            let error = parse_err(body);
            assert_eq!(error.id, RequestId::Null, "{body}");
            assert_eq!(error.error.code(), code::INVALID_REQUEST, "{body}");
            assert!(
                error.error.to_string().contains(expected),
                "{body}: {}",
                error.error
            );
        }
    }

    #[test]
    fn invalid_requests_answered_with_their_id() {
        let cases = [
            (r#"{"id": 7, "method": "GetTask"}"#, "`jsonrpc` is required"),
            (
                r#"{"jsonrpc": "1.0", "id": 7, "method": "GetTask"}"#,
                "`jsonrpc` must be \"2.0\", got \"1.0\"",
            ),
            (
                r#"{"jsonrpc": 2.0, "id": 7, "method": "GetTask"}"#,
                "got 2.0",
            ),
            (r#"{"jsonrpc": "2.0", "id": 7}"#, "`method` is required"),
            (
                r#"{"jsonrpc": "2.0", "id": 7, "method": 5}"#,
                "`method` must be a string, got a number",
            ),
            (r#"{"jsonrpc": "2.0", "id": 7, "method": null}"#, "got null"),
            (
                r#"{"jsonrpc": "2.0", "id": 7, "method": "GetTask", "params": "x"}"#,
                "`params` must be an object, got a string",
            ),
            (
                r#"{"jsonrpc": "2.0", "id": 7, "method": "GetTask", "params": 1}"#,
                "got a number",
            ),
        ];
        for (body, expected) in cases {
            let error = parse_err(body);
            assert_eq!(error.id, RequestId::Number(7.into()), "{body}");
            assert_eq!(error.error.code(), code::INVALID_REQUEST, "{body}");
            assert!(
                error.error.to_string().contains(expected),
                "{body}: {}",
                error.error
            );
        }
    }

    #[test]
    fn long_values_are_not_echoed_in_full() {
        let body = format!(
            r#"{{"jsonrpc": "{}", "id": 1, "method": "GetTask"}}"#,
            "é".repeat(500)
        );
        let message = parse_err(&body).error.to_string();
        assert!(message.len() < 120, "{message}");
        assert!(message.ends_with('…'), "{message}");
    }

    #[test]
    fn method_not_found() {
        for name in ["message/send", "tasks/get", "sendMessage", "", "Foo"] {
            let body = json!({"jsonrpc": "2.0", "id": "a", "method": name}).to_string();
            let error = parse_err(&body);
            assert_eq!(error.id, RequestId::String("a".into()));
            assert_eq!(error.error, A2aError::MethodNotFound(name.to_owned()));
            assert_eq!(error.error.code(), code::METHOD_NOT_FOUND);
        }
        // An unknown method with positional params is still "method not found".
        let error = parse_err(r#"{"jsonrpc": "2.0", "id": 1, "method": "Nope", "params": []}"#);
        assert_eq!(error.error.code(), code::METHOD_NOT_FOUND);
    }

    #[test]
    fn invalid_params() {
        let error =
            parse_err(r#"{"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": ["t"]}"#);
        assert_eq!(error.error.code(), code::INVALID_PARAMS);
        assert_eq!(error.id, RequestId::Number(1.into()));

        let request =
            parse_ok(r#"{"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {}}"#);
        let error = request
            .params::<SendMessageRequest>()
            .expect_err("no message");
        assert_eq!(error.code(), code::INVALID_PARAMS);
        assert_eq!(error.to_string(), "Invalid parameters: message is required");

        let request = parse_ok(
            r#"{"jsonrpc": "2.0", "id": 1, "method": "SendMessage",
                "params": {"message": {"messageId": "m", "role": "ROLE_USER", "parts": [{"txt": "hi"}]}}}"#,
        );
        let error = request
            .params::<SendMessageRequest>()
            .expect_err("bad part");
        assert_eq!(
            error,
            A2aError::InvalidParams {
                message: "message.parts[0]: a part must have exactly one of `text`, `raw`, `url` or `data`, found 0".into(),
                field: Some("message.parts[0]".into()),
            }
        );
        let response = serde_json::to_value(request.fail(&error)).expect("serializes");
        assert_eq!(response["id"], json!(1));
        assert_eq!(response["error"]["code"], json!(-32602));
        assert_eq!(
            response["error"]["data"][1]["fieldViolations"][0]["field"],
            json!("message.parts[0]")
        );

        let request = parse_ok(
            r#"{"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": "t", "historyLength": "many"}}"#,
        );
        let error = request.params::<GetTaskRequest>().expect_err("bad number");
        assert_eq!(
            error.to_string(),
            "Invalid parameters: historyLength: \"many\" is not a 32-bit integer"
        );

        let request = parse_ok(
            r#"{"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": {"parts": [{"text": "x"}]}}}"#,
        );
        let params = request.params::<SendMessageRequest>().expect("decodes");
        let error = params.validate().expect_err("messageId missing");
        assert_eq!(
            error.to_string(),
            "Invalid parameters: message.messageId is required"
        );
    }

    #[test]
    fn ids_of_every_valid_type_are_echoed() {
        for (id, expected) in [
            (json!("abc"), RequestId::String("abc".into())),
            (json!(42), RequestId::Number(42.into())),
            (json!(-1), RequestId::Number((-1).into())),
            (
                json!(1.5),
                RequestId::Number(serde_json::Number::from_f64(1.5).expect("finite")),
            ),
            (Value::Null, RequestId::Null),
        ] {
            let body = json!({"jsonrpc": "2.0", "id": id.clone(), "method": "GetTask", "params": {"id": "t"}});
            let request = parse_ok(&body.to_string());
            assert_eq!(request.id, expected);
            let response = serde_json::to_value(request.respond(&json!({}))).expect("serializes");
            assert_eq!(response["id"], id);
        }
    }

    #[test]
    fn null_params_and_unknown_members_are_accepted() {
        let request = parse_ok(
            r#"{"jsonrpc": "2.0", "id": 1, "method": "GetExtendedAgentCard", "params": null, "extra": 1}"#,
        );
        assert_eq!(request.params, json!({}));
    }

    #[test]
    fn error_responses_from_request_errors() {
        let response = parse_err("{").to_response();
        let json = serde_json::to_value(&response).expect("serializes");
        assert_eq!(json["jsonrpc"], json!("2.0"));
        assert_eq!(json["id"], Value::Null);
        assert_eq!(json["error"]["code"], json!(-32700));
        assert_eq!(json["error"]["data"][0]["reason"], json!("JSON_PARSE"));
        assert_eq!(response.error().code, -32700);
    }
}
