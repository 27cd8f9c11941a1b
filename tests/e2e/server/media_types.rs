//! Media types on the real binary: what each binding answers with, the 415
//! for a body that is not JSON, and the agent card's cache validators.

use serde_json::{Value, json};

use super::support::{Server, text_message};

fn content_type(response: &reqwest::Response) -> String {
    response
        .headers()
        .get("content-type")
        .and_then(|value| value.to_str().ok())
        .unwrap_or_default()
        .to_owned()
}

#[tokio::test]
async fn http_json_answers_are_application_json_and_other_bodies_get_415() {
    let server = Server::with_defaults();
    let http = crate::support::http();
    let post = |path: &str, content_type: &str, body: String| {
        http.post(format!("{}{path}", server.base))
            .header("A2A-Version", "1.0")
            .header("X-Participant-Id", "alice")
            .header("Content-Type", content_type)
            .body(body)
    };
    let send = json!({"message": text_message(None, "hello")}).to_string();
    // Both JSON types are accepted; the answer is application/json either way.
    for declared in ["application/json", "application/a2a+json"] {
        let response = post("/message:send", declared, send.clone())
            .send()
            .await
            .expect("sent");
        assert_eq!(response.status(), 200, "{declared}");
        assert_eq!(content_type(&response), "application/json", "{declared}");
    }
    // An error too.
    let response = http
        .get(format!("{}/tasks/no-such-task", server.base))
        .header("A2A-Version", "1.0")
        .send()
        .await
        .expect("sent");
    assert_eq!(response.status(), 404);
    assert_eq!(content_type(&response), "application/json");

    // A valid body labelled text/plain: 415 with the google.rpc.Status body (AIP-193).
    let response = post("/message:send", "text/plain", send.clone())
        .send()
        .await
        .expect("sent");
    assert_eq!(response.status(), 415);
    assert_eq!(content_type(&response), "application/json");
    let body: Value = response.json().await.expect("json");
    assert_eq!(body["error"]["code"], json!(415), "{body}");
    assert_eq!(body["error"]["status"], json!("INVALID_ARGUMENT"), "{body}");
    let info = &body["error"]["details"][0];
    assert_eq!(
        info["@type"],
        json!("type.googleapis.com/google.rpc.ErrorInfo")
    );
    assert_eq!(info["reason"], json!("CONTENT_TYPE_NOT_SUPPORTED"));
    assert_eq!(info["domain"], json!("a2a-protocol.org"));
    assert_eq!(info["metadata"]["mediaType"], json!("text/plain"));

    // JSON-RPC: the same error as -32005.
    let rpc = json!({"jsonrpc": "2.0", "id": 1, "method": "SendMessage",
        "params": {"message": text_message(None, "hello")}});
    let response = post("/", "text/plain", rpc.to_string())
        .send()
        .await
        .expect("sent");
    assert_eq!(content_type(&response), "application/json");
    let body: Value = response.json().await.expect("json");
    assert_eq!(body["error"]["code"], json!(-32005), "{body}");
    assert_eq!(
        body["error"]["data"][0]["reason"],
        json!("CONTENT_TYPE_NOT_SUPPORTED")
    );

    // Streams are text/event-stream.
    let response = post("/message:stream", "application/json", send)
        .send()
        .await
        .expect("sent");
    assert!(content_type(&response).starts_with("text/event-stream"));
    super::support::read_sse(response).await;
}

#[tokio::test]
async fn the_card_has_last_modified_and_answers_if_modified_since() {
    let server = Server::with_defaults();
    let http = crate::support::http();
    let card = format!("{}/.well-known/agent-card.json", server.base);
    let first = http.get(&card).send().await.expect("card");
    assert_eq!(first.status(), 200);
    assert_eq!(content_type(&first), "application/json");
    let header = |name: &str| {
        first
            .headers()
            .get(name)
            .and_then(|value| value.to_str().ok())
            .unwrap_or_default()
            .to_owned()
    };
    let (etag, modified) = (header("etag"), header("last-modified"));
    assert!(header("cache-control").contains("max-age"));
    assert!(!etag.is_empty());
    let since = httpdate::parse_http_date(&modified).expect("Last-Modified is an HTTP date");

    let unchanged = http
        .get(&card)
        .header("If-Modified-Since", &modified)
        .send()
        .await
        .expect("card");
    assert_eq!(unchanged.status(), 304);
    assert_eq!(
        unchanged.headers()["last-modified"].to_str().ok(),
        Some(modified.as_str())
    );
    let before = httpdate::fmt_http_date(since - std::time::Duration::from_secs(60));
    let changed = http
        .get(&card)
        .header("If-Modified-Since", before)
        .send()
        .await
        .expect("card");
    assert_eq!(changed.status(), 200);
    let by_tag = http
        .get(&card)
        .header("If-None-Match", &etag)
        .send()
        .await
        .expect("card");
    assert_eq!(by_tag.status(), 304);
}
