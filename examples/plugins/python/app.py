"""Example tiny-harness plugin in Python, built with componentize-py.

- `/dice NdM`: rolls N dice of M sides (1 <= N <= 100, 2 <= M <= 1000).
- `/echo <text>`: replies with the text.
- A `command.invoked.pre` policy that refuses `/echo` when the text contains
  the word "forbidden".
"""

import json
import random
import re

from componentize_py_types import Err
from wit_world import exports
from wit_world.imports.types import (
    Abort,
    AbortReason,
    CommandError_Failed,
    CommandError_Usage,
    Decision,
    Decision_Abort,
    Decision_Pass,
    Invocation,
    Outcome,
    Reply,
    Suggestion,
)

DICE_USAGE = "usage: /dice NdM, e.g. /dice 2d6 (1-100 dice of 2-1000 sides)"
ECHO_USAGE = "usage: /echo <text>"
DICE = re.compile(r"([0-9]{1,4})d([0-9]{1,4})")
WORD = re.compile(r"[A-Za-z0-9]+")

# The component is snapshotted after import, so a module-level `random.Random`
# would roll the same numbers in every fresh instance; SystemRandom reads
# wasi:random on every call.
RNG = random.SystemRandom()


def argument(invocation: Invocation, name: str) -> str:
    """The parsed argument `name`, stripped; empty when missing."""
    return next((a.value.strip() for a in invocation.arguments if a.name == name), "")


def dice(spec: str) -> Outcome:
    match = DICE.fullmatch(spec)
    count, sides = (int(match[1]), int(match[2])) if match else (0, 0)
    if not (1 <= count <= 100 and 2 <= sides <= 1000):
        raise Err(CommandError_Usage(DICE_USAGE))
    rolls = [RNG.randint(1, sides) for _ in range(count)]
    total = sum(rolls)
    text = f"{count}d{sides}: {' + '.join(map(str, rolls))} = {total}"
    data = json.dumps({"rolls": rolls, "total": total}, separators=(",", ":"))
    return Outcome(Reply(text, data), [])


def has_forbidden_word(text: str) -> bool:
    return any(word.lower() == "forbidden" for word in WORD.findall(text))


class Command(exports.Command):
    def run(self, invocation: Invocation) -> Outcome:
        if invocation.command == "dice":
            return dice(argument(invocation, "spec"))
        if invocation.command == "echo":
            text = argument(invocation, "text")
            if not text:
                raise Err(CommandError_Usage(ECHO_USAGE))
            return Outcome(Reply(text, None), [])
        raise Err(CommandError_Failed(f"no body for /{invocation.command}"))


class Hook(exports.Hook):
    def handle(self, point: str, context: str) -> Decision:
        if point != "command.invoked.pre":
            return Decision_Pass()
        try:
            command = json.loads(context)["command"]
            name, text = command["name"], command["raw_arguments"]
            if not isinstance(name, str) or not isinstance(text, str):
                raise TypeError
        except (ValueError, KeyError, TypeError):
            return abort(AbortReason.INVALID, "echo policy: malformed command.invoked context")
        if name == "echo" and has_forbidden_word(text):
            return abort(AbortReason.POLICY, "echo refuses forbidden words")
        return Decision_Pass()


class Completion(exports.Completion):
    def complete(self, command: str, partial_arguments: str) -> list[Suggestion]:
        return []


def abort(reason: AbortReason, message: str) -> Decision:
    return Decision_Abort(Abort(reason, message))
