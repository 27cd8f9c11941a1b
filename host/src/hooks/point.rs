//! Hook points: `<operation>.<phase>`, e.g. `command.invoked.pre`.

use std::fmt;
use std::str::FromStr;

/// When an executor runs relative to the operation's body.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Phase {
    /// Before the body: may rewrite the input or refuse the operation.
    Pre,
    /// The body itself.
    In,
    /// After the body: may rewrite the output.
    Post,
}

impl Phase {
    /// The phase's name as it appears in a hook point.
    pub fn as_str(self) -> &'static str {
        match self {
            Phase::Pre => "pre",
            Phase::In => "in",
            Phase::Post => "post",
        }
    }
}

/// The operations the harness runs through hook chains.
///
/// The catalogue is closed on purpose: a typo in a hooks.json `point` is a
/// load error, not an executor that silently never runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Operation {
    /// A participant's message reached the harness (not commands or controls).
    RequestReceived,
    /// A task was created.
    TaskCreated,
    /// A task changed state.
    TaskStateChanged,
    /// A participant asked to complete a task.
    TaskComplete,
    /// A registered command was invoked.
    CommandInvoked,
    /// The model is about to be (or was) called.
    LlmInvoked,
    /// A tool is about to be (or was) called.
    ToolInvoked,
    /// A delegated sub-task was spawned.
    SubtaskSpawned,
}

impl Operation {
    /// Every operation, in catalogue order.
    pub const ALL: [Operation; 8] = [
        Operation::RequestReceived,
        Operation::TaskCreated,
        Operation::TaskStateChanged,
        Operation::TaskComplete,
        Operation::CommandInvoked,
        Operation::LlmInvoked,
        Operation::ToolInvoked,
        Operation::SubtaskSpawned,
    ];

    /// The phases at which this operation runs executors. An executor at
    /// any other phase would never run, so the loader refuses it.
    ///
    /// Notifications (`task.created`, `task.state_changed`,
    /// `subtask.spawned`) have no body of their own to replace; the state
    /// change itself has no `pre`, since nothing may stop a task from
    /// changing state once its lifecycle decided it.
    pub fn phases(self) -> &'static [Phase] {
        match self {
            Operation::RequestReceived | Operation::TaskCreated | Operation::SubtaskSpawned => {
                &[Phase::Pre, Phase::Post]
            }
            Operation::TaskStateChanged => &[Phase::Post],
            Operation::TaskComplete
            | Operation::CommandInvoked
            | Operation::LlmInvoked
            | Operation::ToolInvoked => &[Phase::Pre, Phase::In, Phase::Post],
        }
    }

    /// The operation's name as it appears in a hook point.
    pub fn as_str(self) -> &'static str {
        match self {
            Operation::RequestReceived => "request.received",
            Operation::TaskCreated => "task.created",
            Operation::TaskStateChanged => "task.state_changed",
            Operation::TaskComplete => "task.complete",
            Operation::CommandInvoked => "command.invoked",
            Operation::LlmInvoked => "llm.invoked",
            Operation::ToolInvoked => "tool.invoked",
            Operation::SubtaskSpawned => "subtask.spawned",
        }
    }
}

/// One place in an operation where executors run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct HookPoint {
    pub operation: Operation,
    pub phase: Phase,
}

impl HookPoint {
    pub const fn new(operation: Operation, phase: Phase) -> Self {
        HookPoint { operation, phase }
    }

    /// Whether the harness ever runs executors at this point.
    pub fn runs(self) -> bool {
        self.operation.phases().contains(&self.phase)
    }
}

impl fmt::Display for HookPoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.operation.as_str(), self.phase.as_str())
    }
}

/// A string that is not a known hook point.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown hook point `{0}`: expected `<operation>.<pre|in|post>` with operation one of {ops}", ops = known_operations())]
pub struct UnknownHookPoint(pub String);

fn known_operations() -> String {
    Operation::ALL
        .iter()
        .map(|op| op.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

impl FromStr for HookPoint {
    type Err = UnknownHookPoint;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let unknown = || UnknownHookPoint(s.to_owned());
        let (operation, phase) = s.rsplit_once('.').ok_or_else(unknown)?;
        let phase = match phase {
            "pre" => Phase::Pre,
            "in" => Phase::In,
            "post" => Phase::Post,
            _ => return Err(unknown()),
        };
        let operation = Operation::ALL
            .into_iter()
            .find(|op| op.as_str() == operation)
            .ok_or_else(unknown)?;
        Ok(HookPoint { operation, phase })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_point_round_trips_through_its_name() {
        for operation in Operation::ALL {
            for phase in [Phase::Pre, Phase::In, Phase::Post] {
                let point = HookPoint::new(operation, phase);
                assert_eq!(point.to_string().parse::<HookPoint>(), Ok(point));
            }
        }
    }

    #[test]
    fn the_catalogue_says_which_phases_run() {
        let runs = |point: &str| point.parse::<HookPoint>().expect("known").runs();
        assert!(runs("command.invoked.pre") && runs("tool.invoked.in") && runs("llm.invoked.post"));
        assert!(runs("task.created.pre") && runs("subtask.spawned.post"));
        assert!(!runs("task.created.in") && !runs("task.state_changed.pre"));
        assert!(!runs("request.received.in") && !runs("subtask.spawned.in"));
        for operation in Operation::ALL {
            assert!(
                operation.phases().contains(&Phase::Post),
                "{}",
                operation.as_str()
            );
        }
    }

    #[test]
    fn unknown_points_are_rejected_with_the_catalogue() {
        for bad in [
            "command.invoked",
            "command.invoked.during",
            "nope.pre",
            "",
            ".pre",
        ] {
            let err = bad.parse::<HookPoint>().unwrap_err();
            assert_eq!(err.0, bad);
            assert!(err.to_string().contains("command.invoked"), "{err}");
        }
    }
}
