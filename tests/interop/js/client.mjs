// Interoperability check: the official A2A JavaScript SDK (@a2a-js/sdk, npm)
// against a running tiny-harness.
//
// Usage: node client.mjs http://127.0.0.1:PORT [JSONRPC|HTTP+JSON]
//
// Drives the SDK's own client (card resolution, then the named binding's
// transport, with SSE for streams) through a conversation (send, stream, get,
// list, a command, completion with the control envelope, cancel), a one-shot
// task (metadata.lifecycle = "task") and an error, and exits non-zero with a
// message on the first mismatch. Prints `N passed, 0 failed` at the end.

import { randomUUID } from 'node:crypto';
import { CancelTaskRequest, GetTaskRequest, ListTasksRequest, Message, TaskState } from '@a2a-js/sdk';
import {
  ClientFactory,
  JsonRpcTransportFactory,
  RestTransportFactory,
} from '@a2a-js/sdk/client';
import { TaskNotFoundError } from '@a2a-js/sdk/errors';

const [url, binding = 'JSONRPC'] = process.argv.slice(2);
const PARTICIPANT = 'js-sdk';
let checks = 0;

function check(condition, what) {
  if (!condition) {
    console.log(`FAILED: ${what}`);
    process.exit(1);
  }
  checks += 1;
  console.log(`ok ${checks} - ${what}`);
}

// Every request names its participant (self-asserted on loopback).
function fetchAs(participant) {
  return (input, init = {}) => {
    const headers = new Headers(init.headers);
    headers.set('X-Participant-Id', participant);
    return fetch(input, { ...init, headers });
  };
}

// Requests are built from their ProtoJSON with the SDK's own `fromJSON`, as its
// transports expect complete messages (a plain `{pageSize: 10}` would send an
// unset enum as "UNRECOGNIZED").

// A user message from its ProtoJSON: one text part, or one data part.
function message({ text, taskId, data, metadata }) {
  const json = {
    messageId: randomUUID(),
    role: 'ROLE_USER',
    parts: [data !== undefined ? { data } : { text }],
  };
  if (taskId) json.taskId = taskId;
  if (metadata) json.metadata = metadata;
  return { message: Message.fromJSON(json) };
}

const statusText = (task) =>
  (task.status?.message?.parts ?? [])
    .map((part) => (part.content?.$case === 'text' ? part.content.value : ''))
    .join('');

const asTask = (result) => {
  check(result && result.status, 'the answer is a Task');
  return result;
};

const fetchImpl = fetchAs(PARTICIPANT);
const factory = new ClientFactory({
  transports: [new JsonRpcTransportFactory({ fetchImpl }), new RestTransportFactory({ fetchImpl })],
  preferredTransports: [binding],
});
const client = await factory.createFromUrl(url);

let task = asTask(await client.sendMessage(message({ text: `hello over ${binding}` })));
check(task.status.state === TaskState.TASK_STATE_INPUT_REQUIRED, 'send parks the task in INPUT_REQUIRED');
check(task.metadata?.sub_state === 'awaiting-next-message', 'sub_state is in Task.metadata');
check(statusText(task).includes(`hello over ${binding}`), 'the reply echoes the message');
const taskId = task.id;

const events = [];
for await (const event of client.sendMessageStream(message({ text: 'work for 1 seconds', taskId }))) {
  events.push(event);
}
check(events[0]?.payload?.$case === 'task', 'a stream starts with the Task');
const last = events.at(-1)?.payload;
check(
  last?.$case === 'statusUpdate' && last.value.status.state === TaskState.TASK_STATE_INPUT_REQUIRED,
  'a stream ends when the turn parks',
);

const fetched = await client.getTask(GetTaskRequest.fromJSON({ id: taskId, historyLength: 2 }));
check(fetched.id === taskId && fetched.history.length === 2, 'get returns the task with historyLength');

const listed = await client.listTasks(ListTasksRequest.fromJSON({ pageSize: 10 }));
check(listed.tasks.some((t) => t.id === taskId), 'list includes the conversation');

task = asTask(await client.sendMessage(message({ text: '/status', taskId })));
check(statusText(task).includes('State: TASK_STATE'), 'a command runs on the harness');
check(task.status.state === TaskState.TASK_STATE_INPUT_REQUIRED, 'the task parks after a command');

const control = { kind: 'control', action: 'complete' };
task = asTask(await client.sendMessage(message({ taskId, data: control })));
check(task.status.state === TaskState.TASK_STATE_COMPLETED, 'the control envelope completes the conversation');

const other = asTask(await client.sendMessage(message({ text: 'one more' })));
const canceled = await client.cancelTask(CancelTaskRequest.fromJSON({ id: other.id }));
check(canceled.status.state === TaskState.TASK_STATE_CANCELED, 'cancel cancels');

const oneShot = asTask(await client.sendMessage(message({ text: 'just once', metadata: { lifecycle: 'task' } })));
check(oneShot.status.state === TaskState.TASK_STATE_COMPLETED, 'a one-shot task completes on its own');
const reply = oneShot.artifacts.find((artifact) => artifact.artifactId === 'reply-1');
check(
  reply && reply.parts[0].content.value === statusText(oneShot),
  'its reply is both the status message and an artifact',
);

try {
  await client.getTask(GetTaskRequest.fromJSON({ id: 'no-such-task' }));
  check(false, 'an unknown task is an error');
} catch (error) {
  check(error instanceof TaskNotFoundError, `an unknown task is TaskNotFoundError (${error?.constructor?.name})`);
}

console.log(`${checks} passed, 0 failed`);
