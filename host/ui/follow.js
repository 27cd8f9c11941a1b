// Following a task live with SubscribeToTask. A subscription ends when a turn ends; the
// follower subscribes again until the task is finished. When the connection is lost (the
// server restarts, the network drops) it says so and subscribes again with a growing pause:
// the subscription starts with the whole Task, so nothing shown goes stale.

import { A2aError, ConnectionError, rpc, stream } from './a2a.js';
import { isTerminal } from './words.js';

const FIRST_RETRY_MS = 500;
const LONGEST_RETRY_MS = 8000;

/** A short breath between a turn's end and the next subscription, so a server that ends
 * subscriptions at once can never make this loop spin. */
const BETWEEN_TURNS_MS = 250;

/**
 * Follows task `taskId` until `stop()` or its end. `on.event(streamResponse)` gets every
 * event, `on.connection(state)` hears `lost` and `restored`, `on.ended()` that the task is
 * finished, `on.error(error)` a refusal that ends the following (the task is gone, or
 * this identity may not see it).
 */
export function follow(taskId, on) {
  const controller = new AbortController();
  const { signal } = controller;
  (async () => {
    let wait = FIRST_RETRY_MS;
    let lost = false;
    while (!signal.aborted) {
      try {
        let last = null;
        for await (const event of stream('SubscribeToTask', { id: taskId }, signal)) {
          if (lost) {
            lost = false;
            on.connection('restored');
          }
          wait = FIRST_RETRY_MS;
          last = event;
          on.event(event);
        }
        if (last === null) throw new ConnectionError('the stream closed before the task came');
        // The stream ended with the turn. Was that the task's end too?
        const task = await rpc('GetTask', { id: taskId, historyLength: 0 }, signal);
        if (isTerminal(task.status.state)) {
          on.ended();
          return;
        }
        await pause(BETWEEN_TURNS_MS, signal);
      } catch (error) {
        if (signal.aborted || error.name === 'AbortError') return;
        if (error instanceof A2aError) {
          // A finished task cannot be subscribed to: nothing more will come.
          if (error.reason === 'UNSUPPORTED_OPERATION') on.ended();
          else on.error(error);
          return;
        }
        if (!lost) {
          lost = true;
          on.connection('lost');
        }
        await pause(wait, signal);
        wait = Math.min(wait * 2, LONGEST_RETRY_MS);
      }
    }
  })();
  return { stop: () => controller.abort() };
}

function pause(ms, signal) {
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, ms);
    signal.addEventListener('abort', () => {
      clearTimeout(timer);
      resolve();
    }, { once: true });
  });
}
