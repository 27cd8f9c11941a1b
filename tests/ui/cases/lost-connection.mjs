// The server goes away in the middle of a turn and comes back: the page says the
// connection is lost, subscribes again (SubscribeToTask) and shows the turn's end.
//
// The test driving this case (tests/e2e/ui.rs) restarts the server when this prints
// `ui-control: restart`, and answers `restarted` on standard input.

import { createInterface } from 'node:readline';
import { agentSays, nextProgress, say, stateIs } from '../support.mjs';

export default async function lostConnection(t) {
  const page = await t.open('alice');
  await say(page, 'work for 4 seconds');
  await nextProgress(page);
  console.log('ui-control: restart');
  await stateIs(page, 'connection lost, reconnecting');
  await t.shot(page, 'lost');
  await restarted();
  // The interrupted model turn runs once more after the restart (see the README).
  await nextProgress(page);
  await agentSays(page, 'Worked for 4 seconds.');
  await stateIs(page, 'Waiting for your next message');
}

function restarted() {
  return new Promise((resolve) => {
    const lines = createInterface({ input: process.stdin });
    lines.on('line', (line) => {
      if (line.trim() === 'restarted') {
        lines.close();
        // Nothing more comes in; an open stdin would keep node running.
        process.stdin.destroy();
        resolve();
      }
    });
  });
}
