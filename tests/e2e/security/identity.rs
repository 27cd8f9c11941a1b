//! Issue 8 item 1, identity: a self-asserted id is never an admin; admin rights need a
//! bearer token mapped to an admin id; with tokens, no header or metadata changes who the
//! token says the caller is; the defaults stay a working loopback setup.

use serde_json::json;

use crate::server::support::{DEFAULT_CONFIG, Server, status_text, text_message};
use crate::support::{Started, start_server};

/// Start the real binary on `config`; it must refuse. Returns what it said.
fn refused_start(config: &str) -> String {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("tiny-harness.toml");
    std::fs::write(&path, config).expect("write");
    let plugins = dir.path().join("plugins");
    std::fs::create_dir_all(&plugins).expect("mkdir");
    match start_server(&path, &plugins, "warn", None) {
        Started::Exited { status, log } => {
            assert!(!status.success(), "{status}: {log}");
            assert!(
                !dir.path().join("tiny-harness.db").exists(),
                "the refused server touched the store"
            );
            log
        }
        Started::Serving(mut spawned) => {
            let _ = spawned.child.kill();
            let _ = spawned.child.wait();
            panic!("the server started on:\n{config}");
        }
    }
}

#[test]
fn issue_8_1_admins_without_tokens_refuse_to_start_and_say_how_to_fix_it() {
    let said = refused_start(&format!("admins = [\"root\"]\n{DEFAULT_CONFIG}"));
    assert!(said.contains("`root`"), "{said}");
    assert!(said.contains("[auth]"), "{said}");
    assert!(said.contains("tokens = {"), "{said}");
    assert!(said.contains("remove `admins`"), "{said}");
}

#[tokio::test(flavor = "multi_thread")]
async fn issue_8_1_admin_by_header_or_metadata_is_refused_with_tokens() {
    let server = Server::with_admin();
    let alice = server.client("alice");
    let bob = server.client("bob");
    let secret = bob.say(None, "bob's secret").await;
    let secret = secret["id"].as_str().expect("id").to_owned();

    // alice's token, claiming to be root by header and by metadata.
    let mut claim = text_message(None, "/plugins");
    claim["metadata"] = json!({"participantId": "root"});
    let as_root = alice
        .http
        .post(format!("{}/", server.base))
        .bearer_auth("tok-alice")
        .header("A2A-Version", "1.0")
        .header("X-Participant-Id", "root")
        .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "SendMessage",
            "params": {"message": claim}}))
        .send()
        .await
        .expect("sent")
        .json::<serde_json::Value>()
        .await
        .expect("json");
    let task = &as_root["result"]["task"];
    let refused = status_text(task);
    assert!(
        refused.contains("admin"),
        "/plugins ran for a claim: {as_root}"
    );
    // The task is alice's, not root's: root does not see it listed as theirs...
    let listed = server.client("root").ok("ListTasks", json!({})).await;
    let ids: Vec<&str> = listed["tasks"]
        .as_array()
        .expect("tasks")
        .iter()
        .filter_map(|t| t["id"].as_str())
        .collect();
    assert!(
        ids.contains(&secret.as_str()),
        "root is an admin with its token"
    );
    // ...and alice, whatever she claims, cannot read or cancel bob's task.
    for method in ["GetTask", "CancelTask"] {
        let response: serde_json::Value = alice
            .http
            .post(format!("{}/", server.base))
            .bearer_auth("tok-alice")
            .header("A2A-Version", "1.0")
            .header("X-Participant-Id", "root")
            .json(&json!({"jsonrpc": "2.0", "id": 2, "method": method,
                "params": {"id": secret}}))
            .send()
            .await
            .expect("sent")
            .json()
            .await
            .expect("json");
        assert_eq!(response["error"]["code"], -32001, "{method}: {response}");
    }
    // Without a token, a claim gets nowhere at all.
    let anonymous = alice
        .http
        .post(format!("{}/", server.base))
        .header("A2A-Version", "1.0")
        .header("X-Participant-Id", "root")
        .json(&json!({"jsonrpc": "2.0", "id": 3, "method": "ListTasks", "params": {}}))
        .send()
        .await
        .expect("sent");
    assert_eq!(anonymous.status(), 401);
    // root with its token runs /plugins.
    let report = server.client("root").say(None, "/plugins").await;
    assert!(status_text(&report).contains("builtin"), "{report}");
}

#[tokio::test(flavor = "multi_thread")]
async fn issue_8_1_the_defaults_stay_a_working_loopback_setup() {
    let server = Server::with_defaults();
    let alice = server.client("alice");
    let task = alice.say(None, "hello").await;
    let id = task["id"].as_str().expect("id");
    assert!(status_text(&task).contains("You said: hello"), "{task}");
    assert_eq!(alice.get_task(id).await["id"], id);
    // Without admins nobody is one: a claim of `root` is an ordinary participant.
    let root = server.client("root");
    let response = root.rpc("GetTask", json!({"id": id})).await;
    assert_eq!(response["error"]["code"], -32001, "{response}");
    assert!(status_text(&root.say(None, "/plugins").await).contains("admin"));
}

#[tokio::test(flavor = "multi_thread")]
async fn issue_8_8_participant_ids_are_checked_by_one_rule_wherever_they_enter() {
    let server = Server::with_defaults();
    let http = crate::support::http();
    let send = |who: Option<String>, metadata: serde_json::Value| {
        let mut message = text_message(None, "hi");
        message["metadata"] = metadata;
        let mut request = http
            .post(format!("{}/", server.base))
            .header("A2A-Version", "1.0");
        if let Some(who) = who {
            request = request.header("X-Participant-Id", who);
        }
        request
            .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "SendMessage",
                "params": {"message": message}}))
            .send()
    };
    // The issue's 5,000-character id, by header.
    let response: serde_json::Value = send(Some("x".repeat(5000)), json!({}))
        .await
        .expect("sent")
        .json()
        .await
        .expect("json");
    assert_eq!(response["error"]["code"], -32600, "{response}");
    let said = response["error"]["message"].as_str().unwrap_or("");
    assert!(said.contains("X-Participant-Id"), "{said}");
    assert!(said.contains("at most 128 characters"), "{said}");
    // The issue's " bob\n", by metadata.
    let response: serde_json::Value = send(None, json!({"participantId": " bob\n"}))
        .await
        .expect("sent")
        .json()
        .await
        .expect("json");
    assert_eq!(response["error"]["code"], -32602, "{response}");
    let said = response["error"]["message"].as_str().unwrap_or("");
    assert!(said.contains("message.metadata.participantId"), "{said}");
    let listed = server.client("local").ok("ListTasks", json!({})).await;
    assert_eq!(listed["totalSize"], 0, "nothing was accepted: {listed}");

    // In the configuration: the token map and the admins.
    let said = refused_start("[auth]\ntokens = { \"t0k\" = \" bob\\n\" }\n");
    assert!(said.contains("the token for"), "{said}");
    assert!(
        !said.contains("t0k"),
        "the token itself is never shown: {said}"
    );
    let long = "y".repeat(5000);
    let said = refused_start(&format!(
        "admins = [\"{long}\"]\n[auth]\ntokens = {{ \"t0k\" = \"root\" }}\n"
    ));
    assert!(said.contains("admins[0]"), "{said}");
    assert!(said.contains("at most 128 characters"), "{said}");
}
