//! What an executor is: something that takes a hook point and a JSON context
//! and decides to pass, replace the context, or abort the operation.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{HookPoint, Trace};

/// A boxed, sendable future, so executors of different kinds share one trait
/// object type.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// Why an executor stopped an operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AbortReason {
    /// The sender may not do this.
    Refused,
    /// A policy forbids it.
    Policy,
    /// The input is not acceptable.
    Invalid,
}

impl fmt::Display for AbortReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            AbortReason::Refused => "refused",
            AbortReason::Policy => "policy",
            AbortReason::Invalid => "invalid",
        })
    }
}

/// An executor's typed refusal of an operation.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Abort {
    pub reason: AbortReason,
    pub message: String,
}

/// An executor's answer.
#[derive(Clone, Debug, PartialEq)]
pub enum Decision {
    /// Leave the context as it is.
    Pass,
    /// Continue with this context instead.
    Replace(Value),
    /// Stop the operation.
    Abort(Abort),
}

/// An executor that could not give an answer. Unlike an [`Abort`], this is a
/// fault: the operation fails, and nothing passes through silently.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ExecutorFault {
    #[error("timed out after {} ms", .0.as_millis())]
    Timeout(Duration),
    #[error("ran out of memory (limit {limit_bytes} bytes)")]
    OutOfMemory { limit_bytes: u64 },
    #[error("trapped: {0}")]
    Trap(String),
    #[error("remote executor unreachable: {0}")]
    Unreachable(String),
    #[error("answered out of shape: {0}")]
    BadAnswer(String),
    #[error("failed: {0}")]
    Failed(String),
}

/// What the harness itself says about one executor call. Unlike the
/// context, which every earlier executor in the chain may replace, no
/// executor can change these: isolation decisions (such as which task's warm
/// instance a component may reuse) rest on them.
#[derive(Clone, Copy, Debug)]
pub struct HookCall<'a> {
    pub point: HookPoint,
    /// The task the operation belongs to, if any.
    pub task_id: Option<&'a str>,
    /// Where the chain records what each executor did, when the operation
    /// is part of a traced turn.
    pub trace: Option<&'a Trace>,
}

impl<'a> HookCall<'a> {
    pub fn new(point: HookPoint, task_id: Option<&'a str>) -> Self {
        HookCall {
            point,
            task_id,
            trace: None,
        }
    }

    /// The same call, recording its steps in `trace`.
    pub fn traced(self, trace: &'a Trace) -> Self {
        HookCall {
            trace: Some(trace),
            ..self
        }
    }

    /// The same call at another point of the same operation.
    pub fn at(self, point: HookPoint) -> Self {
        HookCall { point, ..self }
    }
}

impl fmt::Display for HookCall<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.point.fmt(f)
    }
}

/// Runs one hook point's logic. Implemented by Wasm components, remote
/// JSON-RPC endpoints and native Rust closures.
pub trait Executor: Send + Sync + 'static {
    /// Decide on `context` for `call`.
    fn execute<'a>(
        &'a self,
        call: HookCall<'a>,
        context: &'a Value,
    ) -> BoxFuture<'a, Result<Decision, ExecutorFault>>;
}

/// Where an executor came from, for messages and the load report.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ExecutorKind {
    Wasm,
    Remote,
    Native,
}

impl fmt::Display for ExecutorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ExecutorKind::Wasm => "wasm",
            ExecutorKind::Remote => "remote",
            ExecutorKind::Native => "native",
        })
    }
}
