// The stream and trace conventions of the agent loop (CONVENTIONS.md), which the offline
// model does not emit yet: the page is fed a crafted stream for a real task (Playwright
// answers the page's own requests) and must show reply pieces as Markdown, tool calls and
// their results while the turn runs; then, on INPUT_REQUIRED, the whole reply, its turn
// trace and token usage, and artifacts (Markdown text, data as JSON, files as links). No
// text from the stream may become markup.

import { WAIT_MS, agentSays, assert, say, stateIs } from '../support.mjs';

const HOSTILE = '<img src=x onerror="window.pwned=1"><script>window.pwned=2</script>';

export default async function conventions(t) {
  const alice = t.client('alice');
  const task = await alice.say('hello');
  const page = await t.open('alice', { fragment: `#/tasks/${task.id}` });
  await agentSays(page, 'You said: hello');

  const ids = { taskId: task.id, contextId: task.contextId };
  const working = (text, stream, data) => ({
    statusUpdate: {
      ...ids,
      status: {
        state: 'TASK_STATE_WORKING',
        message: { messageId: `w-${Math.random()}`, role: 'ROLE_AGENT', parts: [data ? { data } : { text }] },
      },
      metadata: stream ? { stream } : {},
    },
  });
  const reply = {
    messageId: 'reply-1', role: 'ROLE_AGENT', taskId: task.id,
    parts: [{ text: `Hello **world**, see [the docs](https://example.com/docs) ${HOSTILE}` }],
    metadata: {
      sub_state: 'awaiting-next-message',
      trace: {
        steps: [
          { point: 'llm.invoked.in', executor: 'native/offline', kind: 'native', duration_us: 1200, outcome: 'replace' },
          { point: 'tool.invoked.in', executor: 'search/body', kind: 'wasm', duration_us: 87, outcome: 'pass' },
        ],
        model_us: 4200,
        usage: { input_tokens: 120, output_tokens: 48 },
      },
    },
  };
  const artifact = {
    artifactId: 'a-1', name: 'report',
    parts: [
      { text: '# Findings\n- one\n- two `code`' },
      { data: { hits: 2 } },
      { url: 'https://example.com/report.pdf', filename: 'report.pdf', mediaType: 'application/pdf' },
      { url: 'javascript:alert(1)', filename: 'evil' },
    ],
  };
  const final = {
    statusUpdate: {
      ...ids,
      status: { state: 'TASK_STATE_INPUT_REQUIRED', message: reply },
      metadata: { sub_state: 'awaiting-next-message' },
    },
  };
  const parked = (history) => ({
    ...task,
    status: { state: 'TASK_STATE_INPUT_REQUIRED', message: reply },
    history,
    artifacts: [artifact],
    metadata: { sub_state: 'awaiting-next-message', usage: { input_tokens: 360, output_tokens: 96, turns: 3 } },
  });
  const sse = (events, id) => events.map((result) => `data: ${JSON.stringify({ jsonrpc: '2.0', id, result })}\n\n`).join('');

  let releaseFinal;
  const finalAllowed = new Promise((resolve) => { releaseFinal = resolve; });
  let subscriptions = 0;
  let history = task.history;
  await page.route((url) => new URL(url).pathname === '/', async (route) => {
    const call = route.request().postDataJSON();
    if (call.method === 'SendStreamingMessage') {
      history = [...task.history, call.params.message, reply];
      const turn = [
        { task: { ...task, status: { state: 'TASK_STATE_WORKING' }, history: [...task.history, call.params.message] } },
        working('Hello **wor', 'text-delta'),
        working(`ld** ${HOSTILE}`, 'text-delta'),
        working(null, 'tool-call', { id: 'c1', name: 'search', arguments: { q: 'tiny' } }),
        working(null, 'tool-result', { id: 'c1', name: 'search', result: { hits: 2 } }),
        { artifactUpdate: { ...ids, artifact } },
      ];
      // The stream stops here, mid-turn; the page follows on with SubscribeToTask.
      return route.fulfill({ status: 200, contentType: 'text/event-stream', body: sse(turn, call.id) });
    }
    if (call.method === 'SubscribeToTask') {
      subscriptions += 1;
      if (subscriptions > 1) return; // A parked conversation's subscription: open, quiet.
      await finalAllowed;
      const events = [{ task: { ...task, status: { state: 'TASK_STATE_WORKING' }, history: history.slice(0, -1) } }, final];
      return route.fulfill({ status: 200, contentType: 'text/event-stream', body: sse(events, call.id) });
    }
    if (call.method === 'GetTask') {
      return route.fulfill({ status: 200, contentType: 'application/json',
        body: JSON.stringify({ jsonrpc: '2.0', id: call.id, result: parked(history) }) });
    }
    return route.continue();
  });

  await say(page, 'search for it');
  const live = page.locator('#live-turn');
  await live.locator('strong', { hasText: 'world' }).waitFor({ timeout: WAIT_MS });
  await live.getByText('Calling search({"q":"tiny"})').waitFor({ timeout: WAIT_MS });
  await live.getByText('search answered: {"hits":2}').waitFor({ timeout: WAIT_MS });
  await stateIs(page, 'The agent is working');
  await t.shot(page, 'streaming');
  releaseFinal();

  await agentSays(page, 'Hello world, see the docs');
  await stateIs(page, 'Waiting for your next message');
  assert(await live.isHidden(), 'the live turn closes at the turn\'s end');
  const message = page.locator('#messages .message.agent').last();
  assert((await message.locator('strong').innerText()) === 'world', 'Markdown in the reply');
  assert((await message.locator('a').getAttribute('href')) === 'https://example.com/docs', 'a link');
  const trace = message.locator('details.trace');
  assert((await trace.locator('summary').innerText()) === 'Turn trace: 2 steps, 1.3 ms, model 4.2 ms, 120 in, 48 out tokens',
    `the trace summary: ${await trace.locator('summary').innerText()}`);
  await trace.locator('summary').click();
  await trace.getByRole('cell', { name: 'tool.invoked.in' }).waitFor({ timeout: WAIT_MS });
  assert((await trace.locator('tbody tr').count()) === 2, 'one row per step');
  await page.locator('#conversation-usage', { hasText: '360 in, 96 out tokens over 3 turns' }).waitFor({ timeout: WAIT_MS });

  const report = page.getByRole('article', { name: 'Artifact report' });
  await report.getByRole('heading', { name: 'Findings' }).waitFor({ timeout: WAIT_MS });
  assert((await report.locator('li').count()) === 2, 'a Markdown list');
  assert((await report.locator('pre.data').innerText()).includes('"hits": 2'), 'data as JSON');
  assert((await report.getByRole('link', { name: 'File: report.pdf' }).getAttribute('href'))
    === 'https://example.com/report.pdf', 'a file as a link');
  assert((await report.locator('a[href^="javascript:"]').count()) === 0, 'no javascript: link');

  assert(await page.evaluate(() => window.pwned === undefined), 'no text became a script');
  assert((await page.locator('#conversation img, #conversation script').count()) === 0, 'no text became markup');
  await t.shot(page, 'trace');
}
