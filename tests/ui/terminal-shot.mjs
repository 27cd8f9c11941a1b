// A picture of a terminal capture (the text `tmux capture-pane` printed), for the README:
//
//   node tests/ui/terminal-shot.mjs target/ui-artifacts/chat-completion.txt docs/screenshots/chat.png
//
// The terminal tests (tests/e2e/renderers/chat.rs) save their captures in target/ui-artifacts.

import { readFileSync } from 'node:fs';
import { launch } from './support.mjs';

const [from, to] = process.argv.slice(2);
if (!from || !to) {
  console.error('usage: node tests/ui/terminal-shot.mjs CAPTURE.txt OUT.png');
  process.exit(2);
}
const text = readFileSync(from, 'utf8').replace(/\s+$/, '\n');
const browser = await launch();
try {
  const page = await browser.newPage({ viewport: { width: 1000, height: 200 } });
  await page.setContent('<!doctype html><body style="margin:0;background:#1d1f21">'
    + '<pre id="t" style="margin:0;padding:14px 18px;color:#e0e0e0;'
    + 'font:14px/1.4 \'DejaVu Sans Mono\',monospace;white-space:pre-wrap;width:fit-content"></pre></body>');
  // As text, never as markup.
  await page.evaluate((content) => { document.getElementById('t').textContent = content; }, text);
  await page.locator('#t').screenshot({ path: to });
} finally {
  await browser.close();
}
