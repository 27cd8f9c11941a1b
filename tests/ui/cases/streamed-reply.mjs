// Send a message and see the reply stream in: progress while the turn runs, then the
// whole reply, and the turn's end shown on INPUT_REQUIRED (never waiting for COMPLETED).

import { agentSays, assert, nextProgress, say, stateIs } from '../support.mjs';

export default async function streamedReply(t) {
  const page = await t.open('alice');
  // Held subscriptions: the turn's end must come from SendStreamingMessage's own
  // INPUT_REQUIRED update, not from a later SubscribeToTask snapshot.
  await page.route((url) => new URL(url).pathname === '/', (route) => {
    if (route.request().postDataJSON().method === 'SubscribeToTask') return undefined;
    return route.continue();
  });
  await say(page, 'work for 3 seconds');
  const first = await nextProgress(page);
  const second = await nextProgress(page, first);
  assert(first !== second, 'progress updates stream in while the turn runs');
  await stateIs(page, 'The agent is working');
  await t.shot(page, 'streaming');

  await agentSays(page, 'Worked for 3 seconds.');
  await stateIs(page, 'Waiting for your next message');
  assert(await page.locator('#live-turn').isHidden(), 'the live turn closes when the turn ends');
  assert(/#\/tasks\/[0-9a-f-]{36}$/.test(page.url()), `the conversation has an address: ${page.url()}`);
  const taskId = decodeURIComponent(page.url().split('#/tasks/')[1]);
  const task = await t.client('alice').rpc('GetTask', { id: taskId });
  assert(task.status.state === 'TASK_STATE_INPUT_REQUIRED', 'the task parked, it did not complete');
  await page.locator(`#inbox-list a[data-task="${taskId}"]`, { hasText: 'waiting for your next message' })
    .waitFor({ timeout: 30000 });
  await t.shot(page, 'reply');
}
