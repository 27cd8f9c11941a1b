"""Example tiny-harness tool in Python, built with componentize-py.

`word_count`: counts the words of `text` (the same tool as the Rust
example's). The harness has already checked the arguments against the
`input_schema` in tools.json, so `text` is a string; a tool error is raised
as `componentize_py_types.Err(ToolError_...)` and the model reads it.
"""

import json
import re

from componentize_py_types import Err
from wit_world import exports
from wit_world.imports.types import ToolCall, ToolError_Failed, ToolError_InvalidArguments

WORD = re.compile(r"\S+")
MAX_TEXT_CHARS = 100_000


class Tool(exports.Tool):
    def call(self, call: ToolCall) -> str:
        if call.name != "word_count":
            raise Err(ToolError_Failed(f"no tool `{call.name}` here"))
        text = json.loads(call.arguments)["text"]
        if len(text) > MAX_TEXT_CHARS:
            raise Err(ToolError_InvalidArguments(f"at most {MAX_TEXT_CHARS} characters, please"))
        words = len(WORD.findall(text))
        return json.dumps({"words": words}, separators=(",", ":"))
