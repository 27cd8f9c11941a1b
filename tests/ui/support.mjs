// What every browser case shares: launching Debian's chromium, a page per participant,
// waiting for what a person would see, screenshots, and a small A2A client for setting
// things up behind the page's back.

import { mkdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { chromium } from 'playwright-core';

const CHROMIUM = process.env.CHROMIUM || '/usr/bin/chromium';

/** How long a case waits for something to show up; generous, for a loaded 2-core machine. */
export const WAIT_MS = Number(process.env.UI_WAIT_MS || 30000);

const ARTIFACTS = resolve(process.env.UI_ARTIFACTS
  || join(import.meta.dirname, '..', '..', 'target', 'ui-artifacts'));

/** Headless chromium with the flags this closed network needs (no background traffic). */
export function launch() {
  return chromium.launch({
    executablePath: CHROMIUM,
    // Playwright gives every launch a fresh, empty profile (its own --user-data-dir).
    args: [
      '--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync',
    ],
  });
}

export class Harness {
  constructor(browser, base, caseName) {
    this.browser = browser;
    this.base = base.replace(/\/$/, '');
    this.caseName = caseName;
    this.pages = [];
    this.logs = [];
    this.pageErrors = [];
    mkdirSync(ARTIFACTS, { recursive: true });
  }

  /**
   * A page of /ui in a browser context of its own (its own storage), speaking as
   * `participant`, who is set through the page's name field as a person would.
   */
  async open(participant, { width = 1100, height = 760, fragment = '' } = {}) {
    const context = await this.browser.newContext({ viewport: { width, height } });
    const page = await context.newPage();
    page.on('console', (message) => this.logs.push(`[${participant}] console.${message.type()}: ${message.text()}`));
    page.on('pageerror', (error) => this.pageErrors.push(`[${participant}] ${error.stack || error}`));
    page.on('dialog', (dialog) => dialog.accept());
    this.pages.push({ participant, page });
    await page.goto(`${this.base}/ui`);
    // The page is ready once it has read the card and says who it speaks as; a name typed
    // before then would be overwritten, and a click would find no handler yet.
    await page.getByText(/^Speaking as /).waitFor({ timeout: WAIT_MS });
    await page.getByLabel('Your name').fill(participant);
    await page.getByRole('button', { name: 'Use' }).click();
    await page.getByText(`Speaking as ${participant}`).waitFor({ timeout: WAIT_MS });
    // Only now, so the page never asks for the task as anybody else.
    if (fragment) await page.evaluate((hash) => { location.hash = hash; }, fragment);
    return page;
  }

  /** A screenshot under target/ui-artifacts, named after the case. */
  async shot(page, name) {
    const path = join(ARTIFACTS, `${this.caseName}-${name}.png`);
    await page.screenshot({ path });
    return path;
  }

  async shootAll(name) {
    for (const { participant, page } of this.pages) {
      try {
        await this.shot(page, `${name}-${participant}`);
      } catch (error) {
        console.error(`no screenshot of ${participant}'s page: ${error}`);
      }
    }
  }

  /** An uncaught exception in a page is a bug even when everything else looked right. */
  checkNoPageErrors() {
    if (this.pageErrors.length) throw new Error(`uncaught errors in the page:\n${this.pageErrors.join('\n')}`);
  }

  printLogs() {
    if (this.logs.length) console.error(this.logs.join('\n'));
    if (this.pageErrors.length) console.error(this.pageErrors.join('\n'));
  }

  /** An A2A client speaking as `participant` (self-asserted, loopback). */
  client(participant) {
    return new Client(this.base, participant);
  }
}

let nextId = 1;

export class Client {
  constructor(base, participant) {
    this.base = base;
    this.participant = participant;
  }

  async rpc(method, params) {
    const response = await fetch(`${this.base}/`, {
      method: 'POST',
      headers: {
        'Content-Type': 'application/json',
        'A2A-Version': '1.0',
        'X-Participant-Id': this.participant,
      },
      body: JSON.stringify({ jsonrpc: '2.0', id: nextId++, method, params }),
    });
    const body = await response.json();
    if (body.error) throw new Error(`${method}: ${JSON.stringify(body.error)}`);
    return body.result;
  }

  /** Sends `text` (continuing `taskId` when given) and returns the task after the turn. */
  async say(text, taskId) {
    const message = { messageId: `m-${Date.now()}-${nextId++}`, role: 'ROLE_USER', parts: [{ text }] };
    if (taskId) message.taskId = taskId;
    return (await this.rpc('SendMessage', { message })).task;
  }

  async sendData(data, taskId) {
    const message = { messageId: `m-${Date.now()}-${nextId++}`, role: 'ROLE_USER', taskId, parts: [{ data }] };
    return (await this.rpc('SendMessage', { message })).task;
  }
}

/** Fails with `message` unless `condition` holds. */
export function assert(condition, message) {
  if (!condition) throw new Error(`assertion failed: ${message}`);
}

/** The texts of the inbox's items, top to bottom. */
export async function inboxTexts(page) {
  return page.locator('#inbox-list .inbox-item').allInnerTexts();
}

/** The message box (the combobox labelled "Message"). */
export function messageBox(page) {
  return page.getByRole('combobox', { name: 'Message' });
}

/** Types `text` into the message box and sends it with Enter. */
export async function say(page, text) {
  const box = messageBox(page);
  await box.fill(text);
  await box.press('Enter');
}

/** Waits for an agent message containing `text`. */
export function agentSays(page, text) {
  return page.locator('#messages .message.agent', { hasText: text }).waitFor({ timeout: WAIT_MS });
}

/** Waits until the conversation's state line reads `text` (a string or RegExp). */
export function stateIs(page, text) {
  return page.locator('#conversation-state', { hasText: text }).waitFor({ timeout: WAIT_MS });
}

/** Waits for the live turn to show progress other than `previous`; returns its text. */
export async function nextProgress(page, previous = '') {
  const handle = await page.waitForFunction((before) => {
    const live = document.getElementById('live-turn');
    const text = live && !live.hidden ? live.innerText : '';
    return /Working: [0-9.]+ of \d+ seconds/.test(text) && text !== before ? text : false;
  }, previous, { timeout: WAIT_MS });
  return handle.jsonValue();
}

/** The first 8 characters of an id, as the page shows it. */
export function shortId(id) {
  return id.slice(-8);
}
