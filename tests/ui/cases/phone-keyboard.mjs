// At phone width one pane shows at a time, and everything works from the keyboard alone:
// starting a conversation, sending, and completing it, through labelled controls.

import { WAIT_MS, agentSays, assert, stateIs } from '../support.mjs';

/** Presses Tab until the focused element has `name` as its text (at most 40 presses). */
async function tabTo(page, name) {
  for (let i = 0; i < 40; i += 1) {
    await page.keyboard.press('Tab');
    const focused = await page.evaluate(() => (document.activeElement && document.activeElement.innerText) || '');
    if (focused.trim() === name) return;
  }
  throw new Error(`Tab never reached "${name}"`);
}

export default async function phoneKeyboard(t) {
  const page = await t.open('alice', { width: 390, height: 844 });
  assert(await page.locator('#conversation').isHidden(), 'a phone shows the inbox alone first');
  await tabTo(page, 'New conversation');
  await page.keyboard.press('Enter');
  const box = page.getByRole('combobox', { name: 'Message' });
  await box.waitFor({ timeout: WAIT_MS });
  assert(await page.locator('#inbox').isHidden(), 'then the conversation alone');
  await box.focus();
  await page.keyboard.type('hello from a phone');
  await page.keyboard.press('Enter');
  await agentSays(page, 'You said: hello from a phone');
  await t.shot(page, 'conversation');

  await tabTo(page, 'Complete');
  await page.keyboard.press('Enter');
  await stateIs(page, 'Completed');
  await tabTo(page, '← Inbox');
  await page.keyboard.press('Enter');
  await page.locator('#inbox-list .inbox-item', { hasText: 'completed' }).waitFor({ timeout: WAIT_MS });
  await t.shot(page, 'inbox');
}
