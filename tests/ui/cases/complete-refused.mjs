// Complete is refused with its reason while a sub-task is open, then accepted once it
// has finished; a completed conversation offers no controls and takes no messages.

import { WAIT_MS, agentSays, assert, say, stateIs } from '../support.mjs';

export default async function completeRefused(t) {
  const page = await t.open('alice');
  await say(page, 'hello');
  await agentSays(page, 'You said: hello');
  await say(page, '/sub-task work for 5 seconds');
  await agentSays(page, 'Starting a sub-task: work for 5 seconds');
  const subtask = page.locator('#subtask-list .subtask', { hasText: 'work for 5 seconds' });
  await subtask.waitFor({ timeout: WAIT_MS });

  await page.getByRole('button', { name: 'Complete' }).click();
  const refusal = page.locator('#refusal');
  await refusal.getByText('Not completed:').waitFor({ timeout: WAIT_MS });
  const reason = await refusal.innerText();
  assert(/1 sub-task is still open/.test(reason), `the refusal gives the reason: ${reason}`);
  assert((await page.locator('#refusal').getAttribute('role')) === 'alert', 'announced as an alert');
  await stateIs(page, 'Waiting for your next message');
  await t.shot(page, 'refused');

  // The sub-task finishes on its own; the page hears of it without a reload.
  await subtask.filter({ hasText: 'completed' }).waitFor({ timeout: WAIT_MS });
  await page.getByRole('button', { name: 'Complete' }).click();
  await stateIs(page, 'Completed');
  assert(await refusal.isHidden(), 'the old refusal is gone');
  assert((await page.getByRole('button', { name: 'Complete' }).count()) === 0
    || await page.getByRole('button', { name: 'Complete' }).isHidden(), 'no Complete once completed');
  assert(await page.getByRole('combobox', { name: 'Message' }).isHidden(), 'no message box once completed');
  await page.getByText('it takes no more messages').waitFor({ timeout: WAIT_MS });
  await t.shot(page, 'completed');
}
