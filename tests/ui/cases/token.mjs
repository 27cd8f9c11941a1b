// With `[auth] tokens` the card declares a bearer scheme: the page asks for a token instead
// of a name, sends it as `Authorization: Bearer`, and keeps it in this tab's sessionStorage
// only: never in a cookie, never in localStorage.

import { WAIT_MS, agentSays, assert, say } from '../support.mjs';

export default async function token(t) {
  const context = await t.browser.newContext({ viewport: { width: 1100, height: 760 } });
  const page = await context.newPage();
  page.on('pageerror', (error) => t.pageErrors.push(String(error)));
  t.pages.push({ participant: 'token', page });
  await page.goto(`${t.base}/ui`);
  const field = page.getByLabel('Access token');
  await field.waitFor({ timeout: WAIT_MS });
  await page.getByText(/^Speaking as /).waitFor({ timeout: WAIT_MS });
  assert(await page.getByLabel('Your name').isHidden(), 'no name field when tokens are required');

  // Without a token every request is refused, and the page says so.
  await page.locator('#errors', { hasText: 'Authentication required' }).first().waitFor({ timeout: WAIT_MS });

  await field.fill('tok-alice');
  await page.getByRole('button', { name: 'Use' }).click();
  const sent = page.waitForRequest((request) => request.method() === 'POST'
    && request.headers().authorization === 'Bearer tok-alice');
  await say(page, 'hello with a token');
  await sent;
  await agentSays(page, 'You said: hello with a token');

  const stored = await page.evaluate(() => ({
    cookie: document.cookie,
    session: sessionStorage.getItem('tiny-harness.token'),
    local: Object.keys(localStorage).map((key) => localStorage.getItem(key)),
  }));
  assert(stored.cookie === '', `no cookie: ${stored.cookie}`);
  assert(stored.session === 'tok-alice', 'the token is in sessionStorage');
  assert(!stored.local.includes('tok-alice'), 'and not in localStorage');
  assert((await context.cookies()).length === 0, 'the browser holds no cookie for the site');
  await t.shot(page, 'signed-in');
}
