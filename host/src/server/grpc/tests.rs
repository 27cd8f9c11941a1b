//! Every message the gRPC binding carries crosses the ProtoJSON boundary and
//! comes back unchanged: each sample sets every field its type has (all part
//! kinds, every security scheme and OAuth flow, timestamps, bytes, maps,
//! nested metadata), is read as the harness's type, converted to the
//! generated message, serialized by pbjson, and read back as the harness's
//! type, which must equal the original.

use std::fmt::Debug;

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use super::convert::answer;
use super::proto;
use crate::a2a::types::{self, *};

fn round_trip<T, P>(sample: Value)
where
    T: Serialize + DeserializeOwned + PartialEq + Debug,
    P: Serialize + DeserializeOwned,
{
    let ours: T = types::decode(&sample).unwrap_or_else(|error| panic!("{error}: {sample}"));
    let proto: P = answer(&ours).unwrap_or_else(|error| panic!("{error}: {sample}"));
    let wire = serde_json::to_value(&proto).expect("pbjson serializes");
    let back: T = super::convert::ours(&proto).unwrap_or_else(|error| panic!("{error}: {wire}"));
    assert_eq!(back, ours, "\nsample: {sample}\nthrough proto: {wire}");
    // Nothing set in the sample was dropped on the way.
    let again = serde_json::to_value(&back).expect("serializes");
    assert_eq!(again, serde_json::to_value(&ours).expect("serializes"));
}

fn message() -> Value {
    json!({
        "messageId": "m1",
        "contextId": "c1",
        "taskId": "t1",
        "role": "ROLE_USER",
        "parts": [
            {"text": "hello", "metadata": {"k": "v"}, "mediaType": "text/plain"},
            {"raw": "aGVsbG8=", "filename": "a.bin", "mediaType": "application/octet-stream"},
            {"url": "https://example.com/a.txt", "filename": "a.txt", "mediaType": "text/plain"},
            {"data": {"kind": "control", "action": "complete", "n": 1.5, "list": [1, "x", null, true]}}
        ],
        "metadata": {"lifecycle": "task", "nested": {"a": [1, 2]}},
        "extensions": ["https://example.com/ext/v1"],
        "referenceTaskIds": ["t0"]
    })
}

fn push_config() -> Value {
    json!({
        "tenant": "acme",
        "id": "p1",
        "taskId": "t1",
        "url": "https://hooks.example.com/a2a",
        "token": "tok",
        "authentication": {"scheme": "Bearer", "credentials": "secret"}
    })
}

fn task() -> Value {
    json!({
        "id": "t1",
        "contextId": "c1",
        "status": {
            "state": "TASK_STATE_INPUT_REQUIRED",
            "message": message(),
            "timestamp": "2026-12-01T10:30:00.123Z"
        },
        "artifacts": [{
            "artifactId": "reply-1",
            "name": "reply",
            "description": "the reply",
            "parts": [{"text": "hi"}],
            "metadata": {"x": 1},
            "extensions": ["https://example.com/ext/v1"]
        }],
        "history": [message()],
        "metadata": {"sub_state": "awaiting-next-message"}
    })
}

#[test]
fn requests_round_trip() {
    round_trip::<SendMessageRequest, proto::SendMessageRequest>(json!({
        "tenant": "acme",
        "message": message(),
        "configuration": {
            "acceptedOutputModes": ["text/plain"],
            "taskPushNotificationConfig": push_config(),
            "historyLength": 3,
            "returnImmediately": true
        },
        "metadata": {"m": true}
    }));
    round_trip::<GetTaskRequest, proto::GetTaskRequest>(
        json!({"tenant": "acme", "id": "t1", "historyLength": 2}),
    );
    round_trip::<ListTasksRequest, proto::ListTasksRequest>(json!({
        "tenant": "acme",
        "contextId": "c1",
        "status": "TASK_STATE_WORKING",
        "pageSize": 10,
        "pageToken": "abc",
        "historyLength": 1,
        "statusTimestampAfter": "2026-12-01T10:30:00.123Z",
        "includeArtifacts": true
    }));
    round_trip::<CancelTaskRequest, proto::CancelTaskRequest>(
        json!({"tenant": "acme", "id": "t1", "metadata": {"why": "done"}}),
    );
    round_trip::<SubscribeToTaskRequest, proto::SubscribeToTaskRequest>(
        json!({"tenant": "acme", "id": "t1"}),
    );
    round_trip::<TaskPushNotificationConfig, proto::TaskPushNotificationConfig>(push_config());
    round_trip::<GetTaskPushNotificationConfigRequest, proto::GetTaskPushNotificationConfigRequest>(
        json!({"tenant": "acme", "taskId": "t1", "id": "p1"}),
    );
    round_trip::<
        ListTaskPushNotificationConfigsRequest,
        proto::ListTaskPushNotificationConfigsRequest,
    >(json!({"tenant": "acme", "taskId": "t1", "pageSize": 5, "pageToken": "x"}));
    round_trip::<
        DeleteTaskPushNotificationConfigRequest,
        proto::DeleteTaskPushNotificationConfigRequest,
    >(json!({"tenant": "acme", "taskId": "t1", "id": "p1"}));
    round_trip::<GetExtendedAgentCardRequest, proto::GetExtendedAgentCardRequest>(
        json!({"tenant": "acme"}),
    );
}

#[test]
fn answers_round_trip() {
    round_trip::<Task, proto::Task>(task());
    round_trip::<Message, proto::Message>(message());
    round_trip::<SendMessageResponse, proto::SendMessageResponse>(json!({"task": task()}));
    round_trip::<SendMessageResponse, proto::SendMessageResponse>(json!({"message": message()}));
    round_trip::<StreamResponse, proto::StreamResponse>(json!({"task": task()}));
    round_trip::<StreamResponse, proto::StreamResponse>(json!({"message": message()}));
    round_trip::<StreamResponse, proto::StreamResponse>(json!({"statusUpdate": {
        "taskId": "t1",
        "contextId": "c1",
        "status": {"state": "TASK_STATE_COMPLETED", "timestamp": "2026-12-01T10:30:00Z"},
        "metadata": {"sub_state": "awaiting-answer"}
    }}));
    round_trip::<StreamResponse, proto::StreamResponse>(json!({"artifactUpdate": {
        "taskId": "t1",
        "contextId": "c1",
        "artifact": {"artifactId": "a", "parts": [{"text": "chunk"}]},
        "append": true,
        "lastChunk": true,
        "metadata": {"i": 2}
    }}));
    round_trip::<ListTasksResponse, proto::ListTasksResponse>(json!({
        "tasks": [task()],
        "nextPageToken": "n",
        "pageSize": 1,
        "totalSize": 7
    }));
    round_trip::<
        ListTaskPushNotificationConfigsResponse,
        proto::ListTaskPushNotificationConfigsResponse,
    >(json!({"configs": [push_config()], "nextPageToken": "n"}));
    for state in [
        "TASK_STATE_SUBMITTED",
        "TASK_STATE_WORKING",
        "TASK_STATE_INPUT_REQUIRED",
        "TASK_STATE_COMPLETED",
        "TASK_STATE_CANCELED",
        "TASK_STATE_FAILED",
        "TASK_STATE_REJECTED",
        "TASK_STATE_AUTH_REQUIRED",
    ] {
        round_trip::<TaskStatus, proto::TaskStatus>(json!({"state": state}));
    }
    round_trip::<Message, proto::Message>(
        json!({"messageId": "a", "role": "ROLE_AGENT", "parts": [{"text": "x"}]}),
    );
}

#[test]
fn the_agent_card_round_trips_with_every_security_scheme() {
    let flow_scopes = json!({"read": "Read", "write": "Write"});
    round_trip::<AgentCard, proto::AgentCard>(json!({
        "name": "tiny-harness",
        "description": "d",
        "supportedInterfaces": [
            {"url": "http://127.0.0.1:1", "protocolBinding": "JSONRPC", "protocolVersion": "1.0", "tenant": "t"},
            {"url": "127.0.0.1:2", "protocolBinding": "GRPC", "protocolVersion": "1.0"}
        ],
        "provider": {"url": "https://example.com", "organization": "Example"},
        "version": "0.1.0",
        "documentationUrl": "https://example.com/docs",
        "capabilities": {
            "streaming": true,
            "pushNotifications": true,
            "extensions": [{"uri": "https://x/v1", "description": "x", "required": true, "params": {"a": [1]}}],
            "extendedAgentCard": false
        },
        "securitySchemes": {
            "key": {"apiKeySecurityScheme": {"description": "k", "location": "header", "name": "X-Key"}},
            "bearer": {"httpAuthSecurityScheme": {"description": "b", "scheme": "Bearer", "bearerFormat": "JWT"}},
            "code": {"oauth2SecurityScheme": {"description": "o", "oauth2MetadataUrl": "https://e/m", "flows": {
                "authorizationCode": {"authorizationUrl": "https://e/a", "tokenUrl": "https://e/t",
                                      "refreshUrl": "https://e/r", "scopes": flow_scopes, "pkceRequired": true}}}},
            "client": {"oauth2SecurityScheme": {"flows": {
                "clientCredentials": {"tokenUrl": "https://e/t", "refreshUrl": "https://e/r", "scopes": flow_scopes}}}},
            "implicit": {"oauth2SecurityScheme": {"flows": {
                "implicit": {"authorizationUrl": "https://e/a", "refreshUrl": "https://e/r", "scopes": flow_scopes}}}},
            "password": {"oauth2SecurityScheme": {"flows": {
                "password": {"tokenUrl": "https://e/t", "refreshUrl": "https://e/r", "scopes": flow_scopes}}}},
            "device": {"oauth2SecurityScheme": {"flows": {
                "deviceCode": {"deviceAuthorizationUrl": "https://e/d", "tokenUrl": "https://e/t",
                               "refreshUrl": "https://e/r", "scopes": flow_scopes}}}},
            "oidc": {"openIdConnectSecurityScheme": {"description": "i", "openIdConnectUrl": "https://e/.well-known/openid-configuration"}},
            "mtls": {"mtlsSecurityScheme": {"description": "m"}}
        },
        "securityRequirements": [{"schemes": {"bearer": {"list": ["read"]}}}],
        "defaultInputModes": ["text/plain"],
        "defaultOutputModes": ["application/json"],
        "skills": [{
            "id": "s", "name": "S", "description": "sd", "tags": ["t"], "examples": ["e"],
            "inputModes": ["text/plain"], "outputModes": ["text/plain"],
            "securityRequirements": [{"schemes": {"bearer": {"list": []}}}]
        }],
        "signatures": [{"protected": "p", "signature": "s", "header": {"kid": "1"}}],
        "iconUrl": "https://example.com/icon.png"
    }));
}
