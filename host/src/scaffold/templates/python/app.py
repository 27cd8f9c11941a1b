"""The {{name}} tiny-harness plugin: `/{{command}} [text]`.

The harness validates the arguments against commands.json before the body
runs, then calls `Command.run` with the invocation (the command, its
arguments, the sender and a read-only view of the task). The body returns an
`Outcome`: a reply and, optionally, effects the task applies afterwards
(`Effect_SetModel`, `Effect_SetEffort`, `Effect_SpawnSubtask`). A
`CommandError_*` raised as `Err(...)` answers with an error instead.

componentize-py generates the `wit_world` package from wit/plugin.wit while
it builds; `componentize-py -d wit -w command-plugin bindings OUT` writes it
out for an editor.
"""

import json

from componentize_py_types import Err
from wit_world import exports
from wit_world.imports.types import CommandError_Usage, Invocation, Outcome, Reply

# The longest text `/{{command}}` repeats.
MAX_TEXT = 200


def argument(invocation: Invocation, name: str) -> str:
    """The parsed argument `name`, stripped; empty when it was not given."""
    return next((a.value.strip() for a in invocation.arguments if a.name == name), "")


class Command(exports.Command):
    def run(self, invocation: Invocation) -> Outcome:
        text = argument(invocation, "text")
        if len(text) > MAX_TEXT:
            # A usage error answers the participant with how to call the command.
            raise Err(CommandError_Usage(f"usage: /{{command}} [text] (at most {MAX_TEXT} characters)"))
        reply = f"Hello from {{name}}: {text}" if text else "Hello from {{name}}!"
        data = {"plugin": "{{name}}", "sender": invocation.sender.id, "text": text or None}
        return Outcome(Reply(reply, json.dumps(data, separators=(",", ":"))), [])
