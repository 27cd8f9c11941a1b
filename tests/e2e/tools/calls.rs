//! Tools called by the model: the schema refuses arguments and the model's
//! corrected call runs; hostile bodies are stopped with a specific error
//! and the next call works; a 0.1.0 command beside them; `/status` tokens.

use serde_json::json;

use super::support::{LocalServer, ToolServer, turn, use_tool};

#[tokio::test(flavor = "multi_thread")]
async fn the_schema_refuses_arguments_the_model_then_corrects() {
    let local = LocalServer::start().await;
    let server = ToolServer::start(local.port);
    let alice = server.client("alice");

    let (id, reply) = turn(&alice, None, &use_tool("shout", json!({ "text": "" }))).await;
    assert!(
        reply.starts_with("Tool shout failed: invalid arguments: at /text:"),
        "{reply}"
    );
    let (_, reply) = turn(
        &alice,
        Some(&id),
        &use_tool("shout", json!({ "txt": "hi" })),
    )
    .await;
    assert!(
        reply.contains("missing properties 'text'") && reply.contains("'txt' not allowed"),
        "{reply}"
    );
    // The corrected call reaches the body.
    let (_, reply) = turn(
        &alice,
        Some(&id),
        &use_tool("shout", json!({ "text": "hi" })),
    )
    .await;
    assert!(reply.starts_with("Tool shout answered: HI!\n"), "{reply}");
}

#[tokio::test(flavor = "multi_thread")]
async fn hostile_tools_are_stopped_and_the_next_call_works() {
    let local = LocalServer::start().await;
    let server = ToolServer::start(local.port);
    let alice = server.client("alice");
    let shout = use_tool("shout", json!({ "text": "still here" }));

    let (id, reply) = turn(&alice, None, &use_tool("spin", json!({}))).await;
    assert!(reply.starts_with("Tool spin failed:"), "{reply}");
    assert!(
        reply.contains("tool-kit/spin-body timed out after 300 ms"),
        "{reply}"
    );
    let (_, reply) = turn(&alice, Some(&id), &shout).await;
    assert!(
        reply.starts_with("Tool shout answered: STILL HERE!\n"),
        "{reply}"
    );

    let (_, reply) = turn(&alice, Some(&id), &use_tool("hog", json!({}))).await;
    assert!(reply.starts_with("Tool hog failed:"), "{reply}");
    assert!(reply.contains("ran out of memory (limit"), "{reply}");
    let (_, reply) = turn(&alice, Some(&id), &shout).await;
    assert!(
        reply.starts_with("Tool shout answered: STILL HERE!\n"),
        "{reply}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_0_1_0_component_runs_beside_0_2_0_tools_and_status_shows_tokens() {
    let local = LocalServer::start().await;
    let server = ToolServer::start(local.port);
    let alice = server.client("alice");
    let log = server.log();
    assert!(
        log.contains("tool-kit") && log.contains("legacy"),
        "both load: {log}"
    );

    let (id, reply) = turn(&alice, None, &use_tool("shout", json!({ "text": "a" }))).await;
    assert!(reply.starts_with("Tool shout answered: A!\n"), "{reply}");
    let (_, reply) = turn(&alice, Some(&id), "/legacy").await;
    assert_eq!(
        reply,
        "legacy 0.1.0 sees model offline-echo, effort medium, 1 turn(s)"
    );

    // A second turn, so the last turn's tokens differ from the total.
    turn(
        &alice,
        Some(&id),
        "and now something much longer than before",
    )
    .await;
    let task = alice.get_task(&id).await;
    let usage = &task["metadata"]["usage"];
    let (input, output) = (
        usage["input_tokens"].as_u64().expect("input tokens"),
        usage["output_tokens"].as_u64().expect("output tokens"),
    );
    assert_eq!(usage["turns"], 2, "{usage}");
    let (_, reply) = turn(&alice, Some(&id), "/status").await;
    assert!(
        reply.contains("Model: offline-echo (effort medium)"),
        "{reply}"
    );
    let tokens = reply
        .lines()
        .find(|line| line.starts_with("Tokens: "))
        .unwrap_or_else(|| panic!("a Tokens line: {reply}"));
    let total = format!("Tokens: {input} in, {output} out in total; last turn ");
    assert!(tokens.starts_with(&total), "{tokens} vs {usage}");
    let last = tokens.trim_start_matches(&total);
    assert_ne!(last, format!("{input} in, {output} out"), "{tokens}");
}
