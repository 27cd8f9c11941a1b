// A reload in the middle of a turn picks the stream up again with SubscribeToTask: progress
// keeps coming, and the turn ends with its reply.

import { agentSays, assert, nextProgress, say, stateIs } from '../support.mjs';

export default async function reloadResume(t) {
  const page = await t.open('alice');
  await say(page, 'work for 6 seconds');
  await nextProgress(page);
  const subscribed = page.waitForRequest((request) => request.method() === 'POST'
    && (request.postData() || '').includes('"SubscribeToTask"'));
  await page.reload();
  await page.getByText('Speaking as alice').waitFor();
  await subscribed;
  await stateIs(page, 'The agent is working');
  const first = await nextProgress(page);
  const second = await nextProgress(page, first);
  assert(first !== second, 'progress streams again after the reload');
  await t.shot(page, 'resumed');
  await agentSays(page, 'Worked for 6 seconds.');
  await stateIs(page, 'Waiting for your next message');
}
