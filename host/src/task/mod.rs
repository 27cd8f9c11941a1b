//! Tasks: the conversation lifecycle and what the rest of the harness may see
//! of a task.

mod service;
mod view;

pub use service::{Caller, EventStream, TaskService, TaskSettings};
pub use view::{Participant, Role, SubtaskView, TaskView};
