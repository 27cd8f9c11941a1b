// Slash-command completion: names with usage and descriptions from the card, /status
// picked from the list with the keyboard; an enum argument's declared values; argument
// values from a plugin's completion export over the completion route (the greeter fixture).

import { WAIT_MS, agentSays, assert, messageBox, say } from '../support.mjs';

export default async function completion(t) {
  const page = await t.open('alice');
  await say(page, 'hello');
  await agentSays(page, 'You said: hello');

  const box = messageBox(page);
  const list = page.getByRole('listbox', { name: 'Commands' });
  await box.fill('/st');
  const status = list.getByRole('option', { name: /\/status/ });
  await status.waitFor({ timeout: WAIT_MS });
  assert((await list.getByRole('option').count()) === 1, 'only /status starts with /st');
  assert((await status.innerText()).includes("Show this conversation's state"), 'with its description');
  assert((await box.getAttribute('aria-expanded')) === 'true', 'the combobox says it is open');
  await t.shot(page, 'names');
  await box.press('ArrowDown');
  assert((await status.getAttribute('aria-selected')) === 'true', 'arrow keys move the selection');
  await box.press('Enter');
  assert((await box.inputValue()) === '/status', `picked: ${await box.inputValue()}`);
  assert(await list.isHidden(), 'the list closes after a pick');
  await box.press('Enter');
  await agentSays(page, 'Participants: alice (reporter)');

  // Every command for a reporter, with its usage line.
  await box.fill('/');
  await list.getByRole('option', { name: /\/sub-task.*\/sub-task <goal>/ }).waitFor({ timeout: WAIT_MS });
  assert((await list.getByRole('option').count()) >= 4, 'every built-in command is offered');
  await t.shot(page, 'every-command');

  // An enum argument completes from its declared values.
  await box.fill('/effort ');
  await list.getByRole('option', { name: 'medium' }).waitFor({ timeout: WAIT_MS });
  await box.fill('/effort h');
  await list.getByRole('option', { name: 'high' }).waitFor({ timeout: WAIT_MS });
  await box.press('Tab');
  assert((await box.inputValue()) === '/effort high', `picked: ${await box.inputValue()}`);

  // A plugin's completion export, through POST /tasks/{id}/commands:complete.
  const asked = page.waitForRequest((request) => request.url().endsWith('/commands:complete')
    && request.postDataJSON().text === '/greet w');
  await box.fill('/greet w');
  await asked;
  const world = list.getByRole('option', { name: 'world' });
  await world.waitFor({ timeout: WAIT_MS });
  await world.click();
  assert((await box.inputValue()) === '/greet world', `picked: ${await box.inputValue()}`);
  await box.press('Enter');
  await agentSays(page, 'Hello, world!');
  await t.shot(page, 'arguments');
}
