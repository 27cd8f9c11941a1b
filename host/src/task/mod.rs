//! Tasks: the conversation lifecycle and what the rest of the harness may see
//! of a task.
//!
//! A task a participant starts is a conversation (decision 007): each turn
//! ends in `INPUT_REQUIRED` with a `sub_state` in metadata, and it stays open
//! until a participant completes it (a control envelope) or cancels it.
//! Tasks the agent delegates complete on their own.
//!
//! * `service`: the API the A2A bindings call; `env`: what every task
//!   shares (settings, registries, models, store).
//! * `actor`: one Tokio task per task, owning its lifecycle; `inbox`: what
//!   it is asked; `job`: the turn it runs, which it can cut; `directory`:
//!   the running actors, and starting one from the store when a task is
//!   needed; `recovery`: what a task does first after a restart.
//! * `classify`: what a message is; `access`: who may do what;
//!   `participants`: task events that change participants.
//! * `agent`: the agent loop of a model turn; `transcript`: the history as
//!   a model sees it, fitted to its window; `tools`: the tools a turn offers
//!   and `tool.invoked`; `turn`: command turns; `effects`: checking what
//!   commands ask for; `completion`: the `task.complete` decision;
//!   `subtasks`: delegated tasks; `screen`: the `request.received` and
//!   `task.created` policy points; `notify`: notification hooks; `suggest`:
//!   command completion for renderers.
//! * `lifecycle`: what accepting a message and ending a turn do to a task
//!   (start a turn, park, complete, conclude, fail), as decisions over the
//!   task with no I/O, which the actor carries out; `state`: a task as a plain value and the only way
//!   it changes;
//!   `journal`: those changes on their way to the store (`crate::store`),
//!   committed before anyone hears of them; `events`: the streams clients
//!   read; `listing`: `ListTasks`.

pub(crate) mod access;
mod actor;
pub(crate) mod agent;
pub(crate) mod classify;
pub(crate) mod completion;
mod directory;
mod effects;
pub(crate) mod env;
pub(crate) mod events;
pub(crate) mod inbox;
pub(crate) mod job;
pub(crate) mod journal;
pub(crate) mod lifecycle;
mod listing;
mod notify;
pub(crate) mod participants;
pub(crate) mod recovery;
mod reply_stream;
mod screen;
mod service;
pub(crate) mod state;
pub(crate) mod subtasks;
mod suggest;
mod tools;
pub(crate) mod transcript;
pub(crate) mod turn;

#[cfg(test)]
mod tests;

pub use env::{AgentSettings, TaskLifecycle, TaskLimits, TaskSettings};
pub use service::{Caller, Durability, EventStream, TaskService};
pub use state::LIFECYCLE_KEY;
pub use suggest::Completion;
// Re-exported for embedding programs that reach them through `task`.
pub use crate::domain::{Participant, Role, SubtaskView, TaskView};
