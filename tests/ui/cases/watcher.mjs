// A watcher reads and follows a conversation live, but sees no Complete or Cancel and no
// message box.

import { WAIT_MS, agentSays, assert } from '../support.mjs';

export default async function watcher(t) {
  const alice = t.client('alice');
  const task = await alice.say('hello bob');
  await alice.sendData({ kind: 'task', payload: { participants: [{ id: 'bob', role: 'watcher' }] } }, task.id);

  const page = await t.open('bob', { fragment: `#/tasks/${task.id}` });
  await agentSays(page, 'You said: hello bob');
  await page.getByText('You are watching this conversation').waitFor({ timeout: WAIT_MS });
  for (const name of ['Complete', 'Cancel', 'Send']) {
    assert(await page.getByRole('button', { name, exact: true }).isHidden(), `a watcher has no ${name} button`);
  }
  assert(await page.getByRole('combobox', { name: 'Message' }).isHidden(), 'a watcher cannot type');

  // The watcher's page follows the conversation as alice goes on.
  await alice.say('more for bob', task.id);
  await agentSays(page, 'You said: more for bob');
  await t.shot(page, 'view');
}
