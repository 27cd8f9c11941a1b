"""A `/status` body in Python, replacing the built-in one without rebuilding
the harness.

The plugin declares no command: `/status` stays the built-in plugin's
declaration (its arguments, roles and usage). Its hooks.json adds an
executor on `command.invoked.in` for `status` at priority 500, lower than
the built-in body's 1000, so it runs first and sets the result; the built-in
body then sees a result and yields.

The component targets the `command-plugin` world: it exports only the typed
`command.run`.
"""

import json

from componentize_py_types import Err
from wit_world import exports
from wit_world.imports.types import CommandError_Failed, Invocation, Outcome, Reply, TaskView

# Terminal A2A states: a sub-task in one of these is no longer open.
TERMINAL = {
    "TASK_STATE_COMPLETED",
    "TASK_STATE_CANCELED",
    "TASK_STATE_CANCELLED",
    "TASK_STATE_FAILED",
    "TASK_STATE_REJECTED",
}


def role_name(role) -> str:
    """The lower-case role name (`reporter`, ...) of a WIT `role` enum value."""
    return role.name.lower()


def status(task: TaskView) -> Outcome:
    open_subtasks = [s for s in task.subtasks if s.state not in TERMINAL]
    sub_state = task.sub_state or "-"
    count = len(task.participants)
    text = (
        f"Status (from Python): {task.state} / {sub_state}, "
        f"model {task.model}, effort {task.effort}, "
        f"{count} participant(s), {len(open_subtasks)} open sub-task(s)"
    )
    data = {
        "source": "python",
        "state": task.state,
        "sub_state": task.sub_state,
        "model": task.model,
        "effort": task.effort,
        "participants": [{"id": p.id, "role": role_name(p.role)} for p in task.participants],
        "open_subtasks": [{"id": s.id, "goal": s.goal, "state": s.state} for s in open_subtasks],
        "turn_count": task.turn_count,
    }
    return Outcome(Reply(text, json.dumps(data, separators=(",", ":"))), [])


class Command(exports.Command):
    def run(self, invocation: Invocation) -> Outcome:
        # hooks.json binds this body to `status` only; anything else is a
        # manifest mistake worth saying so.
        if invocation.command != "status":
            raise Err(CommandError_Failed(f"no body for /{invocation.command}"))
        return status(invocation.task)
