//! What a task rebuilt from the store does first: the decision after a
//! restart, from the record alone (so from the log alone).
//!
//! * Parked, finished or canceled tasks are exactly as they were: nothing.
//! * A delegated task that never started its goal starts it.
//! * A turn that was running when the process died:
//!   - a model turn (or a completion decision) is retried once: it only
//!     reads the task and its reply was never recorded, so running it again
//!     is safe; a second interruption ends the retries;
//!   - a one-shot task that was concluding (waiting for its sub-tasks, or
//!     for its `task.complete` decision) concludes again, every time: it
//!     runs nothing that is not safe to repeat, so no attempt is counted;
//!   - a command is never run again: its body may have had effects outside
//!     the harness (a remote executor deploying something), so the
//!     participants are told it was interrupted and the task parks.
//! * A task working without a recorded turn (data from an older build)
//!   parks with an explanation rather than staying `WORKING` forever.

use super::state::{Lifecycle, TaskRecord, Turn, TurnWork};
use crate::a2a::types::TaskState;

/// How many times a turn may run in all: the first run and one retry.
pub(crate) const MAX_ATTEMPTS: u32 = 2;

/// What to do with a task just rebuilt from the store.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Resume {
    Nothing,
    /// Start a delegated task's goal.
    StartGoal,
    /// Run the interrupted turn again, as this attempt.
    Retry(Turn),
    /// Do not run it again; tell the participants why.
    Interrupted {
        turn: Option<Turn>,
        why: String,
    },
}

pub(crate) fn plan(record: &TaskRecord) -> Resume {
    match record.state() {
        TaskState::Submitted if matches!(record.lifecycle, Lifecycle::Delegated { .. }) => {
            Resume::StartGoal
        }
        TaskState::Working => match &record.turn {
            Some(turn) => after_interruption(turn),
            None => Resume::Interrupted {
                turn: None,
                why: "The harness restarted while this task was working, and what it was \
                      doing was not recorded; nothing was run again. Send your message again \
                      if it still needs an answer."
                    .into(),
            },
        },
        _ => Resume::Nothing,
    }
}

fn after_interruption(turn: &Turn) -> Resume {
    match &turn.work {
        TurnWork::Conclude { .. } => Resume::Retry(turn.clone()),
        TurnWork::Command { text, sender } => Resume::Interrupted {
            turn: Some(turn.clone()),
            why: format!(
                "The command `{text}` (sent by {}) was interrupted by a restart of the harness \
                 before it finished. It was not run again, because its effects may not be safe \
                 to repeat; check whether it took effect and send it again if it should run.",
                sender.id
            ),
        },
        TurnWork::Model { .. } | TurnWork::Completion { .. } if turn.attempt < MAX_ATTEMPTS => {
            Resume::Retry(Turn {
                work: turn.work.clone(),
                attempt: turn.attempt + 1,
            })
        }
        TurnWork::Model { .. } | TurnWork::Completion { .. } => Resume::Interrupted {
            turn: Some(turn.clone()),
            why: format!(
                "This turn was interrupted by restarts of the harness {} times and was not \
                 retried again. Send your message again to try once more.",
                turn.attempt
            ),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::a2a::types::Timestamp;
    use crate::task::state::{Change, StatusChange};
    use crate::task::{Participant, Role};

    fn working(turn: Option<Turn>) -> TaskRecord {
        let mut record = TaskRecord::new(
            "t".into(),
            "c".into(),
            Lifecycle::Conversation,
            Vec::new(),
            "m".into(),
            "medium".into(),
        );
        let now = Timestamp::from_unix_millis(1);
        record.apply(Change::Status(StatusChange::working()), now);
        if let Some(turn) = turn {
            record.apply(Change::TurnStarted(turn), now);
        }
        record
    }

    #[test]
    fn model_turns_are_retried_once_and_commands_never() {
        let model = Turn::first(TurnWork::Model {
            sender: None,
            approval: None,
        });
        assert_eq!(
            plan(&working(Some(model))),
            Resume::Retry(Turn {
                work: TurnWork::Model {
                    sender: None,
                    approval: None,
                },
                attempt: 2
            })
        );
        let retried = Turn {
            work: TurnWork::Model {
                sender: None,
                approval: None,
            },
            attempt: 2,
        };
        assert!(matches!(
            plan(&working(Some(retried))),
            Resume::Interrupted { .. }
        ));
        let command = Turn::first(TurnWork::Command {
            text: "/deploy prod".into(),
            sender: Participant {
                id: "alice".into(),
                role: Role::Reporter,
            },
        });
        let Resume::Interrupted { why, .. } = plan(&working(Some(command))) else {
            panic!("a command is never repeated");
        };
        assert!(
            why.contains("`/deploy prod`") && why.contains("alice"),
            "{why}"
        );
        assert!(matches!(
            plan(&working(None)),
            Resume::Interrupted { turn: None, .. }
        ));
    }

    #[test]
    fn a_concluding_one_shot_task_concludes_again_after_any_number_of_restarts() {
        let conclude = Turn {
            work: TurnWork::Conclude {
                requested_by: Participant {
                    id: "alice".into(),
                    role: Role::Reporter,
                },
            },
            attempt: 7,
        };
        assert_eq!(
            plan(&working(Some(conclude.clone()))),
            Resume::Retry(conclude)
        );
    }

    #[test]
    fn parked_tasks_are_left_as_they_are() {
        let record = TaskRecord::new(
            "t".into(),
            "c".into(),
            Lifecycle::Conversation,
            Vec::new(),
            "m".into(),
            "medium".into(),
        );
        let mut parked = record.clone();
        let reply = parked.agent_message("hi", None);
        parked.apply(
            Change::Status(StatusChange::parked(
                reply,
                crate::task::state::SubState::AwaitingAnswer,
            )),
            Timestamp::from_unix_millis(1),
        );
        assert_eq!(plan(&parked), Resume::Nothing);
        assert_eq!(
            plan(&record),
            Resume::Nothing,
            "a conversation never sits in SUBMITTED"
        );
    }
}
