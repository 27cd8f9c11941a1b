//! The built-in plugin: the bodies of `/model`, `/effort`, `/sub-task` and
//! `/status`, and the role policy on `command.invoked.pre`.
//!
//! Bodies only describe changes as effects; the task validates them (the
//! model allowlist, the effort levels, a non-empty goal) and applies them.

mod commands;
mod policy;

use tiny_harness_plugin::{Command, CommandError, Decision, Hook, Invocation, Outcome};

struct Builtin;

impl Command for Builtin {
    fn run(invocation: Invocation) -> Result<Outcome, CommandError> {
        commands::run(&invocation)
    }
}

impl Hook for Builtin {
    fn handle(point: &str, context: &str) -> Decision {
        match point {
            policy::POINT => policy::check(context),
            _ => Decision::Pass,
        }
    }
}

tiny_harness_plugin::export_plugin!(Builtin: Command, Hook);
