//! What ran during one turn: every executor a chain called, how long it took
//! and what it decided. A turn collects its steps in a [`Trace`] and the
//! task records them with the turn's reply (`metadata.trace`), so a renderer
//! can show the commands and hooks behind each answer, and how much of the
//! turn was spent waiting for its model.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::ExecutorKind;

/// How many steps one turn records; the rest are counted, not kept. A turn
/// of many tool rounds runs many chains, and a trace must not grow without
/// bound.
pub const MAX_TRACE_STEPS: usize = 256;

/// What one executor decided.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum StepOutcome {
    Pass,
    Replace,
    Abort,
    Fault,
}

/// One executor call.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TraceStep {
    /// The hook point, e.g. `command.invoked.in`.
    pub point: String,
    /// `plugin/hook-name`, or `harness/...` for the harness's own.
    pub executor: String,
    pub kind: String,
    /// The component file, the endpoint's URL, or `native`.
    pub source: String,
    pub duration_us: u64,
    pub outcome: StepOutcome,
}

/// The steps of one turn, shared by the chains the turn runs (some run
/// concurrently: parallel tool calls).
#[derive(Debug, Default)]
pub struct Trace {
    steps: Mutex<TraceSteps>,
    /// Nanoseconds spent in model requests, every round of the turn:
    /// summed finer than reported, so a stream of many quick chunks is not
    /// undercounted by a truncated microsecond each.
    model_ns: AtomicU64,
}

#[derive(Debug, Default)]
struct TraceSteps {
    kept: Vec<TraceStep>,
    dropped: u64,
}

/// A finished trace, as recorded with a turn's reply.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TraceRecord {
    pub steps: Vec<TraceStep>,
    /// Steps beyond [`MAX_TRACE_STEPS`], counted only.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub dropped_steps: u64,
    /// How long the turn waited for its model, over all its requests (from
    /// sending one to its last streamed event); zero when no model was asked.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub model_us: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl Trace {
    pub(crate) fn record(
        &self,
        point: String,
        executor: String,
        kind: &ExecutorKind,
        source: &str,
        took: Duration,
        outcome: StepOutcome,
    ) {
        // A panic elsewhere while holding the lock leaves a list of steps,
        // which is still a list of steps.
        let mut steps = self.steps.lock().unwrap_or_else(PoisonError::into_inner);
        if steps.kept.len() >= MAX_TRACE_STEPS {
            steps.dropped += 1;
            return;
        }
        steps.kept.push(TraceStep {
            point,
            executor,
            kind: kind.to_string(),
            source: source.to_owned(),
            duration_us: micros(took),
            outcome,
        });
    }

    /// One model request took `took`.
    pub(crate) fn record_model(&self, took: Duration) {
        let nanos = u64::try_from(took.as_nanos()).unwrap_or(u64::MAX);
        self.model_ns.fetch_add(nanos, Ordering::Relaxed);
    }

    /// Everything recorded so far.
    pub fn finish(&self) -> TraceRecord {
        let steps = self.steps.lock().unwrap_or_else(PoisonError::into_inner);
        TraceRecord {
            steps: steps.kept.clone(),
            dropped_steps: steps.dropped,
            model_us: self.model_ns.load(Ordering::Relaxed) / 1_000,
        }
    }
}

fn micros(took: Duration) -> u64 {
    u64::try_from(took.as_micros()).unwrap_or(u64::MAX)
}
