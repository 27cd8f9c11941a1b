// The inbox lists the participant's conversations across contexts, waiting for them first:
// the agent's question, then a reply awaiting the next message, then running work, then
// finished conversations; nobody else's; and it follows new ones live.

import { WAIT_MS, assert, inboxTexts, shortId } from '../support.mjs';

const COMPLETE = { kind: 'control', action: 'complete' };

export default async function inbox(t) {
  const alice = t.client('alice');
  const done = await alice.say('finish this one');
  await alice.sendData(COMPLETE, done.id);
  const question = await alice.say('please ask me something');
  const replied = await alice.say('hello there');
  // Same context as `replied`, another task: the inbox spans contexts and tasks.
  const sibling = (await alice.rpc('SendMessage', {
    message: {
      messageId: `m-sibling-${Date.now()}`, role: 'ROLE_USER', contextId: replied.contextId,
      parts: [{ text: 'work for 30 seconds' }],
    },
    configuration: { returnImmediately: true },
  })).task;
  const strangers = await t.client('carol').say('not for alice');

  const page = await t.open('alice');
  const items = page.locator('#inbox-list .inbox-item');
  await page.waitForFunction(() => document.querySelectorAll('#inbox-list .inbox-item').length === 4,
    null, { timeout: WAIT_MS });
  const texts = await inboxTexts(page);
  const expected = [
    [question, 'the agent asked you a question'],
    [replied, 'waiting for your next message'],
    [sibling, 'the agent is working'],
    [done, 'completed'],
  ];
  expected.forEach(([task, words], index) => {
    assert(texts[index].includes(shortId(task.id)), `item ${index} is ${shortId(task.id)}: ${texts}`);
    assert(texts[index].includes(words), `item ${index} says "${words}": ${texts[index]}`);
  });
  assert(!texts.join('\n').includes(shortId(strangers.id)), 'carol\'s conversation is not alice\'s');
  assert(texts[1].includes(`context ${shortId(replied.contextId)}`)
    && texts[2].includes(`context ${shortId(replied.contextId)}`), 'both tasks of one context are listed');
  await t.shot(page, 'ordered');

  // A new question goes to the top while the page is open.
  const later = await alice.say('ask me one more thing');
  await items.first().filter({ hasText: shortId(later.id) }).waitFor({ timeout: WAIT_MS });
  assert((await items.count()) === 5, 'the new conversation joined the list');
  await t.shot(page, 'live');
}
