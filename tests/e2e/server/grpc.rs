//! The gRPC binding on the real binary, found through the agent card as a
//! client would: a conversation (park, stream, get, list, subscribe,
//! complete with the envelope, cancel), a one-shot task, the error mapping
//! with its ErrorInfo details, and bearer authentication from metadata.

use std::time::Duration;

use prost::Message as _;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use tiny_harness::server::grpc::proto::a2a_service_client::A2aServiceClient;
use tiny_harness::server::grpc::rpc;
use tokio_stream::StreamExt;
use tonic::transport::Channel;
use tonic::{Code, Request, Status};

use super::support::{DEFAULT_CONFIG, Server, complete_control, state, status_text, sub_state};

const GRPC: &str = "[grpc]\nlisten = \"127.0.0.1:0\"\n";

/// A gRPC client speaking as one participant, connected to the card's GRPC interface.
struct Grpc {
    client: A2aServiceClient<Channel>,
    metadata: Vec<(&'static str, String)>,
}

async fn grpc_url(server: &Server) -> String {
    let card: Value = crate::support::http()
        .get(format!("{}/.well-known/agent-card.json", server.base))
        .send()
        .await
        .expect("card")
        .json()
        .await
        .expect("json");
    let interfaces = card["supportedInterfaces"].as_array().expect("interfaces");
    let grpc = interfaces
        .iter()
        .find(|interface| interface["protocolBinding"] == json!("GRPC"))
        .unwrap_or_else(|| panic!("no GRPC interface on {card}"));
    let url = grpc["url"].as_str().expect("url").to_owned();
    assert!(!url.contains("://"), "a bare host:port: {url}");
    url
}

impl Grpc {
    async fn connect(server: &Server, metadata: Vec<(&'static str, String)>) -> Grpc {
        let url = grpc_url(server).await;
        let channel = Channel::from_shared(format!("http://{url}"))
            .expect("uri")
            .connect_timeout(Duration::from_secs(10))
            .connect()
            .await
            .expect("connected");
        Grpc {
            client: A2aServiceClient::new(channel),
            metadata,
        }
    }

    async fn as_participant(server: &Server, participant: &str) -> Grpc {
        let metadata = vec![
            ("a2a-version", "1.0".to_owned()),
            ("x-participant-id", participant.to_owned()),
        ];
        Grpc::connect(server, metadata).await
    }

    /// A request built from its ProtoJSON, with this client's metadata.
    fn request<P: DeserializeOwned>(&self, json: Value) -> Request<P> {
        let message = serde_json::from_value(json).expect("a valid message");
        let mut request = Request::new(message);
        for (key, value) in &self.metadata {
            request
                .metadata_mut()
                .insert(*key, value.parse().expect("metadata value"));
        }
        request
    }
}

fn as_json<P: Serialize>(message: &P) -> Value {
    serde_json::to_value(message).expect("ProtoJSON")
}

fn message(task_id: Option<&str>, text: &str) -> Value {
    let mut message = json!({
        "messageId": uuid::Uuid::new_v4().to_string(),
        "role": "ROLE_USER",
        "parts": [{"text": text}],
    });
    if let Some(task_id) = task_id {
        message["taskId"] = json!(task_id);
    }
    message
}

/// The ErrorInfo `reason` a status carries in its details.
fn reason(status: &Status) -> String {
    let details = rpc::Status::decode(status.details()).expect("a google.rpc.Status");
    let info = details
        .details
        .iter()
        .find(|any| any.type_url == "type.googleapis.com/google.rpc.ErrorInfo")
        .expect("an ErrorInfo");
    let info = rpc::ErrorInfo::decode(info.value.as_ref()).expect("ErrorInfo");
    assert_eq!(info.domain, "a2a-protocol.org");
    info.reason
}

#[tokio::test]
async fn a_conversation_over_grpc() {
    let server = Server::start(&format!("{DEFAULT_CONFIG}{GRPC}"), None);
    let mut alice = Grpc::as_participant(&server, "alice").await;

    let sent = alice
        .client
        .send_message(alice.request(json!({"message": message(None, "hello grpc")})))
        .await
        .expect("sent")
        .into_inner();
    let task = as_json(&sent)["task"].clone();
    assert_eq!(state(&task), "TASK_STATE_INPUT_REQUIRED", "{task}");
    assert_eq!(sub_state(&task), Some("awaiting-next-message"));
    assert!(
        status_text(&task).contains("You said: hello grpc"),
        "{task}"
    );
    let id = task["id"].as_str().expect("id").to_owned();

    // A streamed turn: the Task first, then updates until the turn parks.
    let mut stream = alice
        .client
        .send_streaming_message(
            alice.request(json!({"message": message(Some(&id), "work for 1 seconds")})),
        )
        .await
        .expect("streaming")
        .into_inner();
    let mut events = Vec::new();
    while let Some(event) = stream.next().await {
        events.push(as_json(&event.expect("an event")));
    }
    assert!(events[0]["task"].is_object(), "{events:?}");
    let last = events.last().expect("events");
    assert_eq!(
        last["statusUpdate"]["status"]["state"],
        json!("TASK_STATE_INPUT_REQUIRED"),
        "{events:?}"
    );
    assert!(events.len() > 3, "progress was streamed: {events:?}");

    let fetched = alice
        .client
        .get_task(alice.request(json!({"id": id, "historyLength": 2})))
        .await
        .expect("got")
        .into_inner();
    assert_eq!(fetched.history.len(), 2);
    let listed = alice
        .client
        .list_tasks(alice.request(json!({"pageSize": 10})))
        .await
        .expect("listed")
        .into_inner();
    assert!(listed.tasks.iter().any(|task| task.id == id));

    // Subscribe, then complete with the envelope from the same client: the
    // subscription sees the completion and closes.
    let mut subscription = alice
        .client
        .subscribe_to_task(alice.request(json!({"id": id})))
        .await
        .expect("subscribed")
        .into_inner();
    let first = as_json(&subscription.next().await.expect("first").expect("ok"));
    assert_eq!(first["task"]["id"], json!(id));
    let complete = json!({"message": {
        "messageId": "complete-1", "role": "ROLE_USER", "taskId": id,
        "parts": [{"data": complete_control()}],
    }});
    let completed = alice
        .client
        .send_message(alice.request(complete))
        .await
        .expect("completed")
        .into_inner();
    assert_eq!(state(&as_json(&completed)["task"]), "TASK_STATE_COMPLETED");
    let mut rest = Vec::new();
    while let Some(event) = subscription.next().await {
        rest.push(as_json(&event.expect("an event")));
    }
    assert_eq!(
        rest.last().expect("events")["statusUpdate"]["status"]["state"],
        json!("TASK_STATE_COMPLETED"),
        "{rest:?}"
    );

    // Another conversation, canceled.
    let sent = alice
        .client
        .send_message(alice.request(json!({"message": message(None, "to cancel")})))
        .await
        .expect("sent")
        .into_inner();
    let other = as_json(&sent)["task"]["id"]
        .as_str()
        .expect("id")
        .to_owned();
    let canceled = alice
        .client
        .cancel_task(alice.request(json!({"id": other})))
        .await
        .expect("canceled")
        .into_inner();
    assert_eq!(state(&as_json(&canceled)), "TASK_STATE_CANCELED");
}

#[tokio::test]
async fn a_one_shot_task_and_data_parts_over_grpc() {
    let server = Server::start(&format!("{DEFAULT_CONFIG}{GRPC}"), None);
    let mut alice = Grpc::as_participant(&server, "alice").await;
    let mut first = message(None, "do it once");
    first["metadata"] = json!({"lifecycle": "task", "count": 3});
    let sent = alice
        .client
        .send_message(alice.request(json!({"message": first})))
        .await
        .expect("sent")
        .into_inner();
    let task = as_json(&sent)["task"].clone();
    assert_eq!(state(&task), "TASK_STATE_COMPLETED", "{task}");
    assert_eq!(task["artifacts"][0]["artifactId"], json!("reply-1"));
    assert_eq!(
        task["artifacts"][0]["parts"][0]["text"].as_str(),
        Some(status_text(&task).as_str())
    );
    // An integer sent in a protobuf Struct (a double) reads back as the integer over JSON-RPC.
    let id = task["id"].as_str().expect("id");
    let over_json = server.client("alice").get_task(id).await;
    assert_eq!(
        over_json["history"][0]["metadata"]["count"].to_string(),
        "3"
    );
}

#[tokio::test]
async fn grpc_errors_carry_the_a2a_codes_and_error_info() {
    let server = Server::start(&format!("{DEFAULT_CONFIG}{GRPC}"), None);
    let mut alice = Grpc::as_participant(&server, "alice").await;

    // A2A-Version: missing (0.3) or unknown is UNIMPLEMENTED with VERSION_NOT_SUPPORTED.
    for version in [None, Some("99.0")] {
        let mut metadata = vec![("x-participant-id", "alice".to_owned())];
        if let Some(version) = version {
            metadata.push(("a2a-version", version.to_owned()));
        }
        let mut old = Grpc::connect(&server, metadata).await;
        let request = old.request(json!({"message": message(None, "hi")}));
        let status = old.client.send_message(request).await.expect_err("refused");
        assert_eq!(
            status.code(),
            Code::Unimplemented,
            "{version:?}: {status:?}"
        );
        assert_eq!(reason(&status), "VERSION_NOT_SUPPORTED");
    }

    let status = alice
        .client
        .get_task(alice.request(json!({"id": "no-such-task"})))
        .await
        .expect_err("missing");
    assert_eq!(status.code(), Code::NotFound);
    assert_eq!(reason(&status), "TASK_NOT_FOUND");

    let status = alice
        .client
        .send_message(alice.request(json!({"message": {"messageId": "m", "role": "ROLE_USER"}})))
        .await
        .expect_err("no parts");
    assert_eq!(status.code(), Code::InvalidArgument);
    assert_eq!(reason(&status), "INVALID_PARAMS");
    let details = rpc::Status::decode(status.details()).expect("details");
    assert!(
        details
            .details
            .iter()
            .any(|any| any.type_url.ends_with("google.rpc.BadRequest")),
        "a BadRequest names the field"
    );

    let status = alice
        .client
        .get_extended_agent_card(alice.request(json!({})))
        .await
        .expect_err("no extended card");
    assert_eq!(status.code(), Code::Unimplemented);
    assert_eq!(reason(&status), "UNSUPPORTED_OPERATION");

    // A finished task takes no more messages; canceling it again is FAILED_PRECONDITION.
    let sent = alice
        .client
        .send_message(alice.request(json!({"message": message(None, "hi")})))
        .await
        .expect("sent")
        .into_inner();
    let id = as_json(&sent)["task"]["id"]
        .as_str()
        .expect("id")
        .to_owned();
    alice
        .client
        .cancel_task(alice.request(json!({"id": id})))
        .await
        .expect("canceled");
    let status = alice
        .client
        .send_message(alice.request(json!({"message": message(Some(&id), "more")})))
        .await
        .expect_err("terminal");
    assert_eq!(status.code(), Code::Unimplemented);
    assert_eq!(reason(&status), "UNSUPPORTED_OPERATION");
    let status = alice
        .client
        .cancel_task(alice.request(json!({"id": id})))
        .await
        .expect_err("terminal");
    assert_eq!(status.code(), Code::FailedPrecondition);
    assert_eq!(reason(&status), "TASK_NOT_CANCELABLE");

    // Someone else's task does not exist for them.
    let mut bob = Grpc::as_participant(&server, "bob").await;
    let status = bob
        .client
        .get_task(bob.request(json!({"id": id})))
        .await
        .expect_err("hidden");
    assert_eq!(status.code(), Code::NotFound);
}

#[tokio::test]
async fn grpc_needs_the_bearer_token_in_metadata_when_tokens_are_configured() {
    let config =
        format!("{DEFAULT_CONFIG}[auth]\ntokens = {{ \"tok-alice\" = \"alice\" }}\n{GRPC}");
    let server = Server::start(&config, None);
    for authorization in [None, Some("Bearer wrong"), Some("Basic YTpi")] {
        let mut metadata = vec![("a2a-version", "1.0".to_owned())];
        if let Some(authorization) = authorization {
            metadata.push(("authorization", authorization.to_owned()));
        }
        let mut anonymous = Grpc::connect(&server, metadata).await;
        let status = anonymous
            .client
            .list_tasks(anonymous.request(json!({})))
            .await
            .expect_err("refused");
        assert_eq!(status.code(), Code::Unauthenticated, "{authorization:?}");
        assert_eq!(reason(&status), "UNAUTHENTICATED");
    }
    let metadata = vec![
        ("a2a-version", "1.0".to_owned()),
        ("authorization", "Bearer tok-alice".to_owned()),
        // Ignored with tokens: the token says who calls.
        ("x-participant-id", "mallory".to_owned()),
    ];
    let mut alice = Grpc::connect(&server, metadata).await;
    let sent = alice
        .client
        .send_message(alice.request(json!({"message": message(None, "hi")})))
        .await
        .expect("authenticated")
        .into_inner();
    let id = as_json(&sent)["task"]["id"]
        .as_str()
        .expect("id")
        .to_owned();
    let tasks = alice
        .client
        .list_tasks(alice.request(json!({})))
        .await
        .expect("listed")
        .into_inner();
    assert!(tasks.tasks.iter().any(|task| task.id == id));
}

#[tokio::test(flavor = "multi_thread")]
async fn grpc_speaks_tls_with_the_served_certificate() {
    use tonic::transport::{Certificate, ClientTlsConfig};

    let dir = tempfile::tempdir().expect("tempdir");
    let ca = crate::support::PrivateCa::issue(dir.path());
    let config = format!(
        "{DEFAULT_CONFIG}{GRPC}[tls]\ncert_file = \"{}\"\nkey_file = \"{}\"\n",
        ca.cert_file.display(),
        ca.key_file.display()
    );
    let server = Server::start(&config, None);
    let card: Value = ca
        .client()
        .get(format!("{}/.well-known/agent-card.json", server.base))
        .send()
        .await
        .expect("card")
        .json()
        .await
        .expect("json");
    let url = card["supportedInterfaces"][2]["url"]
        .as_str()
        .expect("a GRPC url");
    let tls = ClientTlsConfig::new()
        .ca_certificate(Certificate::from_pem(
            std::fs::read(&ca.ca_file).expect("the CA"),
        ))
        .domain_name("localhost");
    let channel = Channel::from_shared(format!("https://{url}"))
        .expect("uri")
        .tls_config(tls)
        .expect("tls")
        .connect()
        .await
        .expect("a TLS connection");
    let mut alice = Grpc {
        client: A2aServiceClient::new(channel),
        metadata: vec![
            ("a2a-version", "1.0".to_owned()),
            ("x-participant-id", "alice".to_owned()),
        ],
    };
    let sent = alice
        .client
        .send_message(alice.request(json!({"message": message(None, "over tls")})))
        .await
        .expect("sent")
        .into_inner();
    assert_eq!(state(&as_json(&sent)["task"]), "TASK_STATE_INPUT_REQUIRED");

    // Plain HTTP/2 to the TLS listener gets nowhere.
    let plain = Channel::from_shared(format!("http://{url}"))
        .expect("uri")
        .connect_timeout(Duration::from_secs(5))
        .timeout(Duration::from_secs(5))
        .connect_lazy();
    let mut plain = Grpc {
        client: A2aServiceClient::new(plain),
        metadata: alice.metadata.clone(),
    };
    let refused = plain
        .client
        .list_tasks(plain.request(json!({})))
        .await
        .expect_err("not without TLS");
    assert_ne!(refused.code(), Code::Ok);
}

#[tokio::test]
async fn grpc_connections_beyond_the_limit_wait_for_a_slot() {
    let config = format!("{DEFAULT_CONFIG}{GRPC}max_connections = 1\n");
    let server = Server::start(&config, None);
    let mut first = Grpc::as_participant(&server, "alice").await;
    first
        .client
        .list_tasks(first.request(json!({})))
        .await
        .expect("the first connection is served");

    // While the first connection stays open, a second is not served at all.
    let url = grpc_url(&server).await;
    let second = Channel::from_shared(format!("http://{url}"))
        .expect("uri")
        .timeout(Duration::from_secs(2))
        .connect_lazy();
    let mut second = Grpc {
        client: A2aServiceClient::new(second),
        metadata: first.metadata.clone(),
    };
    let waited = second
        .client
        .list_tasks(second.request(json!({})))
        .await
        .expect_err("no slot while the first is open");
    assert!(
        matches!(
            waited.code(),
            Code::Cancelled | Code::DeadlineExceeded | Code::Unavailable
        ),
        "{waited:?}"
    );

    // Once both close (the waiting one may be the next accepted), a slot is free.
    drop(first);
    drop(second);
    let mut third = Grpc::as_participant(&server, "alice").await;
    tokio::time::timeout(
        Duration::from_secs(30),
        third.client.list_tasks(third.request(json!({}))),
    )
    .await
    .expect("served once the slot is free")
    .expect("listed");
}
