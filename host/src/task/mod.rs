//! Tasks: the conversation lifecycle and what the rest of the harness may see
//! of a task.

mod view;

pub use view::{Participant, Role, SubtaskView, TaskView};
