//! The Temporal engine: each task is a Temporal workflow, so any of several
//! servers can serve any task and a turn survives the worker that ran it.
//!
//! The embedded engine (one actor per task over the SQLite log) stays the
//! default. This one runs the same lifecycle: the workflow applies the
//! decisions of `task::lifecycle` to its own copy of the task, exactly as
//! the actor does, and only the effects differ (`docs/temporal-engine.md`
//! §8):
//!
//! * `workflow`: one `TaskWorkflow` per task (workflow id = task id). Every
//!   message is an Update whose validator checks the sender's role and the
//!   envelope against the task as it is, so a refusal leaves no history; the
//!   handler accepts it, and runs its turn.
//! * `activities`: what touches the world, on any worker: a turn (the model
//!   and its tools, a command body, the completion decision) and the
//!   projection of each step into the task store, which serves GetTask,
//!   ListTasks and stream replay with no worker alive. A command body may
//!   have had effects outside, so it is never retried.
//! * `engine`: the client (update-with-start, cancellation) and the worker
//!   a server process runs; `front`: what the task service hands a message
//!   or a cancellation to when its tasks run here.
//! * `side_channel`: the streams' events, tailed from the store, and the
//!   live-only text of a model turn, which never enters the workflow.

// The Temporal macros generate public items (activity and workflow markers)
// that name these modules' types.
#![allow(unreachable_pub)]

mod activities;
pub mod dev_server;
mod engine;
mod front;
mod refusal;
mod side_channel;
pub(crate) mod workflow;

pub use engine::{RunDescription, RunningActivity, TemporalEngine, TemporalOptions};
pub use front::TemporalFront;
