// Example tiny-harness plugin in JavaScript, built with componentize-qjs
// (QuickJS).
//
// - `/dice NdM`: rolls N dice of M sides (1 <= N <= 100, 2 <= M <= 1000).
// - `/echo <text>`: replies with the text.
// - A `command.invoked.pre` policy that refuses `/echo` when the text
//   contains the word "forbidden".
//
// WIT mapping: records are objects with camelCase keys, variants are
// `{ tag, val }`, and a `result` error is thrown.

import { getRandomBytes } from "wasi:random/random@0.2.12";

const DICE_USAGE = "usage: /dice NdM, e.g. /dice 2d6 (1-100 dice of 2-1000 sides)";
const ECHO_USAGE = "usage: /echo <text>";
const MALFORMED = "echo policy: malformed command.invoked context";

function argument(invocation, name) {
  const found = invocation.arguments.find((arg) => arg.name === name);
  return found ? found.value.trim() : "";
}

function reply(text, data = null) {
  return { reply: { text, data }, effects: [] };
}

// A uniform roll in 1..=sides (the bias of 32 random bits over at most 1000
// sides is negligible).
function roll(sides) {
  const [a, b, c, d] = getRandomBytes(4);
  return 1 + ((a * 2 ** 24 + b * 2 ** 16 + c * 2 ** 8 + d) % sides);
}

function dice(spec) {
  const match = /^([0-9]{1,4})d([0-9]{1,4})$/.exec(spec);
  const [count, sides] = match ? [Number(match[1]), Number(match[2])] : [0, 0];
  if (!(count >= 1 && count <= 100 && sides >= 2 && sides <= 1000)) {
    throw { tag: "usage", val: DICE_USAGE };
  }
  const rolls = Array.from({ length: count }, () => roll(sides));
  const total = rolls.reduce((sum, value) => sum + value, 0);
  const text = `${count}d${sides}: ${rolls.join(" + ")} = ${total}`;
  return reply(text, JSON.stringify({ rolls, total }));
}

function hasForbiddenWord(text) {
  return text.split(/[^A-Za-z0-9]+/).some((word) => word.toLowerCase() === "forbidden");
}

export const command = {
  run(invocation) {
    switch (invocation.command) {
      case "dice":
        return dice(argument(invocation, "spec"));
      case "echo": {
        const text = argument(invocation, "text");
        if (!text) throw { tag: "usage", val: ECHO_USAGE };
        return reply(text);
      }
      default:
        throw { tag: "failed", val: `no body for /${invocation.command}` };
    }
  },
};

export const hook = {
  handle(point, context) {
    if (point !== "command.invoked.pre") return { tag: "pass" };
    let name, text;
    try {
      ({ name, raw_arguments: text } = JSON.parse(context).command);
    } catch {
      // Not JSON, or no command object.
    }
    if (typeof name !== "string" || typeof text !== "string") {
      return { tag: "abort", val: { reason: "invalid", message: MALFORMED } };
    }
    if (name === "echo" && hasForbiddenWord(text)) {
      return { tag: "abort", val: { reason: "policy", message: "echo refuses forbidden words" } };
    }
    return { tag: "pass" };
  },
};

export const completion = {
  complete(_command, _partialArguments) {
    return [];
  },
};
