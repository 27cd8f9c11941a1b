// The {{name}} tiny-harness plugin: `/{{command}} [text]`.
//
// The harness validates the arguments against commands.json before the body
// runs, then calls `command.run` with the invocation (the command, its
// arguments, the sender and a read-only view of the task). The body returns
// a reply and, optionally, effects the task applies afterwards
// (`{ tag: "set-model", val: "..." }`, `set-effort`, `spawn-subtask`).
//
// WIT values in JavaScript: records are objects with camelCase keys,
// variants are `{ tag, val }`, and a `result` error is thrown.

// The longest text `/{{command}}` repeats.
const MAX_TEXT = 200;

function argument(invocation, name) {
  const found = invocation.arguments.find((arg) => arg.name === name);
  return found ? found.value.trim() : "";
}

export const command = {
  run(invocation) {
    const text = argument(invocation, "text");
    if (text.length > MAX_TEXT) {
      // A usage error answers the participant with how to call the command.
      throw { tag: "usage", val: `usage: /{{command}} [text] (at most ${MAX_TEXT} characters)` };
    }
    const reply = text ? `Hello from {{name}}: ${text}` : "Hello from {{name}}!";
    const data = { plugin: "{{name}}", sender: invocation.sender.id, text: text || null };
    return { reply: { text: reply, data: JSON.stringify(data) }, effects: [] };
  },
};
