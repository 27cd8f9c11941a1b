//! Network by grant: a granted request reaches the local server; a request
//! to a host the grant does not name is an error value the guest sees,
//! logged with the plugin's name, and sends nothing.

use serde_json::json;

use super::support::{LOCAL_BODY, LocalServer, ToolServer, turn, use_tool};

#[tokio::test(flavor = "multi_thread")]
async fn a_granted_request_goes_out_and_an_ungranted_one_is_refused() {
    let local = LocalServer::start().await;
    let server = ToolServer::start(local.port);
    let alice = server.client("alice");
    let port = local.port;

    let granted = json!({ "url": format!("http://127.0.0.1:{port}/greeting") });
    let (id, reply) = turn(&alice, None, &use_tool("fetch", granted)).await;
    assert!(reply.starts_with("Tool fetch answered:"), "{reply}");
    assert!(reply.contains("\"status\":200"), "{reply}");
    assert!(reply.contains(LOCAL_BODY), "{reply}");
    assert_eq!(local.requests(), 1);

    // The same server under another name: not what the grant says.
    let ungranted = json!({ "url": format!("http://localhost:{port}/secret") });
    let (_, reply) = turn(&alice, Some(&id), &use_tool("fetch", ungranted)).await;
    assert!(reply.starts_with("Tool fetch failed:"), "{reply}");
    assert!(reply.contains("HttpRequestDenied"), "{reply}");
    assert_eq!(local.requests(), 1, "nothing was sent");
    let log = server.log();
    let refusal = log
        .lines()
        .find(|line| line.contains("a plugin's HTTP request was refused"))
        .unwrap_or_else(|| panic!("the refusal is logged: {log}"));
    assert!(refusal.contains("tool-kit"), "{refusal}");
    assert!(
        !refusal.contains("/secret"),
        "no path in the log: {refusal}"
    );

    // A refused request costs the plugin nothing: the next granted one goes.
    let again = json!({ "url": format!("http://127.0.0.1:{port}/again") });
    let (_, reply) = turn(&alice, Some(&id), &use_tool("fetch", again)).await;
    assert!(reply.contains(LOCAL_BODY), "{reply}");
    assert_eq!(local.requests(), 2);
}
