//! Executors served by a remote endpoint over JSON-RPC 2.0 on HTTP.
//!
//! The request is `{"jsonrpc": "2.0", "id": 1, "method": "<hook point>",
//! "params": {"context": <context>}}`. The result must be one of
//! `{"decision": "pass"}`, `{"decision": "replace", "context": <json>}` or
//! `{"decision": "abort", "reason": "refused|policy|invalid", "message": "..."}`.
//! Anything else (a transport failure, a non-2xx status, a JSON-RPC error, a
//! result of another shape) is a fault: the operation fails, it never passes.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use serde::Deserialize;
use serde_json::{Value, json};

use super::{
    Abort, AbortReason, BoxFuture, Decision, Executor, ExecutorFault, HookCall, HookPoint,
};
use crate::outbound;

/// An executor behind a URL.
pub struct RemoteExecutor {
    client: reqwest::Client,
    url: reqwest::Url,
    timeout: Duration,
    next_id: AtomicU64,
}

impl RemoteExecutor {
    /// `client` is shared between executors so connections are pooled.
    pub fn new(client: reqwest::Client, url: reqwest::Url, timeout: Duration) -> Self {
        RemoteExecutor {
            client,
            url,
            timeout,
            next_id: AtomicU64::new(1),
        }
    }

    async fn call(&self, point: HookPoint, context: &Value) -> Result<Decision, ExecutorFault> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let request = json!({
            "jsonrpc": "2.0",
            "id": id,
            "method": point.to_string(),
            "params": { "context": context },
        });
        let response = self
            .client
            .post(self.url.clone())
            .timeout(self.timeout)
            .json(&request)
            .send()
            .await
            .map_err(|err| self.transport_fault(err))?;
        let status = response.status();
        if !status.is_success() {
            return Err(ExecutorFault::Unreachable(format!(
                "{} answered HTTP {status}",
                self.url
            )));
        }
        let body: Value = response
            .json()
            .await
            .map_err(|err| self.transport_fault(err))?;
        parse_reply(&body, id)
    }

    fn transport_fault(&self, err: reqwest::Error) -> ExecutorFault {
        if err.is_timeout() {
            ExecutorFault::Timeout(self.timeout)
        } else if err.is_decode() {
            let err = outbound::describe(err);
            ExecutorFault::BadAnswer(format!("{} sent a body that is not JSON: {err}", self.url))
        } else {
            ExecutorFault::Unreachable(format!("{}: {}", self.url, outbound::describe(err)))
        }
    }
}

impl Executor for RemoteExecutor {
    fn execute<'a>(
        &'a self,
        call: HookCall<'a>,
        context: &'a Value,
    ) -> BoxFuture<'a, Result<Decision, ExecutorFault>> {
        Box::pin(self.call(call.point, context))
    }
}

/// The `result` member of a remote executor's reply.
#[derive(Deserialize)]
#[serde(tag = "decision", rename_all = "lowercase", deny_unknown_fields)]
enum RemoteDecision {
    Pass,
    Replace {
        context: Value,
    },
    Abort {
        reason: AbortReason,
        message: String,
    },
}

fn parse_reply(body: &Value, id: u64) -> Result<Decision, ExecutorFault> {
    let bad = |what: String| ExecutorFault::BadAnswer(what);
    if body.get("jsonrpc") != Some(&json!("2.0")) {
        return Err(bad("reply is not a JSON-RPC 2.0 response".into()));
    }
    if body.get("id") != Some(&json!(id)) {
        return Err(bad(format!("reply id does not match request id {id}")));
    }
    if let Some(error) = body.get("error") {
        return Err(ExecutorFault::Failed(format!("remote error: {error}")));
    }
    let result = body
        .get("result")
        .ok_or_else(|| bad("reply has neither result nor error".into()))?;
    let decision: RemoteDecision = serde_json::from_value(result.clone())
        .map_err(|err| bad(format!("result {result} is not a decision: {err}")))?;
    Ok(match decision {
        RemoteDecision::Pass => Decision::Pass,
        RemoteDecision::Replace { context } => Decision::Replace(context),
        RemoteDecision::Abort { reason, message } => Decision::Abort(Abort { reason, message }),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replies_of_every_shape_are_parsed_or_refused() {
        let ok = |result: Value| json!({"jsonrpc": "2.0", "id": 7, "result": result});
        assert_eq!(
            parse_reply(&ok(json!({"decision": "pass"})), 7),
            Ok(Decision::Pass)
        );
        assert_eq!(
            parse_reply(&ok(json!({"decision": "replace", "context": {"a": 1}})), 7),
            Ok(Decision::Replace(json!({"a": 1})))
        );
        assert_eq!(
            parse_reply(
                &ok(json!({"decision": "abort", "reason": "policy", "message": "no"})),
                7
            ),
            Ok(Decision::Abort(Abort {
                reason: AbortReason::Policy,
                message: "no".into()
            }))
        );
        for bad in [
            ok(json!({"decision": "maybe"})),
            ok(json!({"decision": "replace"})),
            ok(json!("pass")),
            json!({"jsonrpc": "2.0", "id": 8, "result": {"decision": "pass"}}),
            json!({"jsonrpc": "1.0", "id": 7, "result": {"decision": "pass"}}),
            json!({"jsonrpc": "2.0", "id": 7}),
        ] {
            assert!(
                matches!(parse_reply(&bad, 7), Err(ExecutorFault::BadAnswer(_))),
                "{bad}"
            );
        }
        let error = json!({"jsonrpc": "2.0", "id": 7, "error": {"code": -1, "message": "x"}});
        assert!(matches!(
            parse_reply(&error, 7),
            Err(ExecutorFault::Failed(_))
        ));
    }
}
