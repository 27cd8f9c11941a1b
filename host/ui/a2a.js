// The page's A2A client: JSON-RPC 2.0 at `POST /`, SSE for the streaming methods, and the
// harness's command completion route. Same origin, so no CORS; every request carries the
// identity headers and a JSON content type.

import { identity } from './identity.js';
import { dataEvents } from './sse.js';

/** An error the server answered with: its JSON-RPC code, message and ErrorInfo reason. */
export class A2aError extends Error {
  constructor(code, message, reason) {
    super(message);
    this.name = 'A2aError';
    this.code = code;
    this.reason = reason;
  }
}

/** The server could not be reached, or a stream broke off: worth retrying. */
export class ConnectionError extends Error {
  constructor(message) {
    super(message);
    this.name = 'ConnectionError';
  }
}

let nextId = 1;

function fromRpc(error) {
  const info = (error.data || []).find((detail) => detail && detail.reason);
  return new A2aError(error.code, error.message, info ? info.reason : undefined);
}

async function post(path, body, signal, accept = 'application/json') {
  try {
    return await fetch(path, {
      method: 'POST',
      headers: { ...identity.headers(), Accept: accept },
      body: JSON.stringify(body),
      signal,
      cache: 'no-store',
    });
  } catch (error) {
    if (error.name === 'AbortError') throw error;
    throw new ConnectionError(`the server cannot be reached (${error.message})`);
  }
}

async function json(response) {
  try {
    return await response.json();
  } catch {
    throw new A2aError(-32603, `the server answered HTTP ${response.status} without JSON`);
  }
}

/** One JSON-RPC call; resolves with its `result`, rejects with an A2aError. */
export async function rpc(method, params, signal) {
  const response = await post('/', { jsonrpc: '2.0', id: nextId++, method, params }, signal);
  const body = await json(response);
  if (body.error) throw fromRpc(body.error);
  return body.result;
}

/**
 * A streaming JSON-RPC call (SendStreamingMessage, SubscribeToTask): yields each
 * StreamResponse (`{task}`, `{statusUpdate}`, `{artifactUpdate}`, `{message}`) until the
 * server closes the stream. A refusal before the stream starts comes back as plain JSON.
 */
export async function* stream(method, params, signal) {
  const request = { jsonrpc: '2.0', id: nextId++, method, params };
  const response = await post('/', request, signal, 'text/event-stream');
  const type = response.headers.get('content-type') || '';
  if (!type.startsWith('text/event-stream')) {
    const body = await json(response);
    throw body.error ? fromRpc(body.error) : new A2aError(-32603, 'expected an event stream');
  }
  try {
    for await (const event of dataEvents(response)) {
      if (event.error) throw fromRpc(event.error);
      yield event.result;
    }
  } catch (error) {
    if (error.name === 'AbortError' || error instanceof A2aError) throw error;
    throw new ConnectionError(`the stream broke off (${error.message})`);
  }
}

/**
 * What may follow `text`: `{role, suggestions: [{value, description}]}`, checked against
 * the caller's role on task `taskId` (or in a conversation they would start).
 */
export async function complete(completion, taskId, text, signal) {
  const path = taskId
    ? completion.taskPath.replace('{id}', encodeURIComponent(taskId))
    : completion.path;
  const response = await post(path, { text }, signal);
  const body = await json(response);
  if (!response.ok) {
    const error = body.error || {};
    const info = (error.details || []).find((detail) => detail && detail.reason);
    throw new A2aError(error.code || response.status, error.message || 'completion failed',
      info ? info.reason : error.status);
  }
  return body;
}

/** The public agent card. */
export async function agentCard() {
  let response;
  try {
    response = await fetch('/.well-known/agent-card.json', { cache: 'no-cache' });
  } catch (error) {
    throw new ConnectionError(`the server cannot be reached (${error.message})`);
  }
  if (!response.ok) throw new A2aError(response.status, 'the agent card could not be read');
  return response.json();
}

/** A user message with the given parts, continuing `taskId` when set. */
export function userMessage(parts, taskId) {
  const message = { messageId: newId(), role: 'ROLE_USER', parts };
  if (taskId) message.taskId = taskId;
  return message;
}

/** A random id (crypto.randomUUID exists only in secure contexts; plain http is not one). */
function newId() {
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  return Array.from(bytes, (byte) => byte.toString(16).padStart(2, '0')).join('');
}

/** The control envelope that completes a conversation (decision 007). */
export const COMPLETE = { kind: 'control', action: 'complete' };
