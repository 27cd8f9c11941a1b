//! Issue 8 item 3, rate limiting by who is really calling: a token's participant, and for
//! self-asserted ids the peer address as well, so rotating ids does not lift the limit.

use serde_json::{Value, json};

use crate::server::support::{CAST, Server, admin_config, text_message, token_of};

const LIMITS: &str = "\n[rate_limit]\nper_participant_burst = 20\nper_participant_per_second = 0.01\n\
    per_address_burst = 20\nper_address_per_second = 0.01\n";

fn reason(response: &Value) -> &str {
    response["error"]["data"][0]["reason"]
        .as_str()
        .unwrap_or("")
}

/// SendMessage as `who` (self-asserted), or with `token`; the JSON-RPC response.
async fn send(server: &Server, who: &str, token: Option<&str>) -> Value {
    let client = crate::support::http();
    let mut request = client
        .post(format!("{}/", server.base))
        .header("A2A-Version", "1.0")
        .header("X-Participant-Id", who);
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    request
        .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "SendMessage",
            "params": {"message": text_message(None, "hi")}}))
        .send()
        .await
        .expect("sent")
        .json()
        .await
        .expect("json")
}

#[tokio::test(flavor = "multi_thread")]
async fn issue_8_3_rotating_self_asserted_ids_do_not_lift_the_rate_limit() {
    let server = Server::start(LIMITS, None);
    let mut accepted = 0;
    for n in 0..200 {
        let response = send(&server, &format!("rotating-{n}"), None).await;
        match reason(&response) {
            "" => accepted += 1,
            "RATE_LIMITED" => {}
            other => panic!("{other}: {response}"),
        }
    }
    // The issue saw 200 of 200 go through; the address's bucket holds 20.
    assert_eq!(accepted, 20, "{accepted} of 200 rotating ids were accepted");
    let listed = server.client("rotating-0").ok("ListTasks", json!({})).await;
    assert_eq!(listed["tasks"].as_array().map(Vec::len), Some(1));
}

#[tokio::test(flavor = "multi_thread")]
async fn issue_8_3_with_tokens_each_participant_has_their_bucket_whatever_they_claim() {
    let server = Server::start(&format!("{}{LIMITS}", admin_config()), None);
    let alice = token_of("alice");
    // alice spends her 20, claiming a new id each time: the token decides.
    for n in 0..20 {
        let response = send(&server, &format!("someone-{n}"), Some(&alice)).await;
        assert_eq!(reason(&response), "", "{response}");
    }
    let refused = send(&server, "someone-else", Some(&alice)).await;
    assert_eq!(reason(&refused), "RATE_LIMITED", "{refused}");
    // Every other token holder, from the same address, still has theirs.
    for who in CAST.iter().filter(|who| **who != "alice") {
        let response = send(&server, who, Some(&token_of(who))).await;
        assert_eq!(reason(&response), "", "{who}: {response}");
    }
}
