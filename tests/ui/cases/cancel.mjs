// Cancel (CancelTask) stops a running turn; the canceled conversation takes no messages.

import { assert, nextProgress, say, stateIs } from '../support.mjs';

export default async function cancel(t) {
  const page = await t.open('alice');
  await say(page, 'work for 30 seconds');
  await nextProgress(page);
  const taskId = decodeURIComponent(page.url().split('#/tasks/')[1]);
  // The harness's page asks for confirmation; the harness accepts every dialog.
  await page.getByRole('button', { name: 'Cancel' }).click();
  await stateIs(page, 'Canceled');
  const task = await t.client('alice').rpc('GetTask', { id: taskId });
  assert(task.status.state === 'TASK_STATE_CANCELED', `the task is canceled: ${task.status.state}`);
  assert(await page.getByRole('combobox', { name: 'Message' }).isHidden(), 'no message box once canceled');
  assert(await page.locator('#controls').isHidden(), 'no controls once canceled');
  assert((await page.locator('.message.agent', { hasText: 'Worked for 30 seconds' }).count()) === 0,
    'the turn did not run to its end');
  await t.shot(page, 'canceled');
}
