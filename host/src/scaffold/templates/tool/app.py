"""The {{name}} tiny-harness plugin: the tool `{{tool}}`, which the model may
call during a turn.

The harness checks the model's arguments against tools.json's
`input_schema` before the body runs (a mismatch goes back to the model, which
corrects its call), then calls `Tool.call`. The result is a JSON document the
model reads; a `ToolError_*` raised as `Err(...)` is read by the model too.

componentize-py generates the `wit_world` package from wit/plugin.wit while
it builds; `componentize-py -d wit -w tool-plugin bindings OUT` writes it out
for an editor.
"""

import json

from componentize_py_types import Err
from wit_world import exports
from wit_world.imports.types import ToolCall, ToolError_InvalidArguments

# The longest text `{{tool}}` takes, in characters.
MAX_TEXT = 10_000


class Tool(exports.Tool):
    def call(self, call: ToolCall) -> str:
        text = json.loads(call.arguments)["text"]
        if len(text) > MAX_TEXT:
            raise Err(ToolError_InvalidArguments(f"at most {MAX_TEXT} characters of text, please"))
        words = len(text.split())
        return json.dumps({"tool": "{{tool}}", "words": words, "text": text}, separators=(",", ":"))
