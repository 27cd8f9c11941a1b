// The inbox: the participant's conversations across every context, those waiting for
// them first (a question, then an approval, then a reply awaiting the next message), then
// running work, then finished ones; most recent first within each group. Delegated
// sub-tasks are listed under their parent's conversation, not here.
//
// It stays current by asking again every few seconds (ListTasks; cheap, read from the
// store) and right after anything this page does.

import { rpc } from './a2a.js';
import { byId, h, replace } from './dom.js';
import { showError } from './errors.js';
import { ago, describeTask, shortId, urgency } from './words.js';

const REFRESH_MS = 3000;

/** Tasks per page of ListTasks, and how many waiting conversations are fetched apart. */
const PAGE_SIZE = 50;
const WAITING_PAGE_SIZE = 100;

/** The first line of the task's status message: what the agent said last. */
function preview(task) {
  const parts = (task.status.message && task.status.message.parts) || [];
  const text = parts.map((part) => part.text || '').join(' ').trim();
  return text.split('\n')[0].slice(0, 140);
}

/** `tasks` in inbox order; the sort is stable, so ListTasks's recency order stays within a group. */
export function inboxOrder(tasks) {
  return tasks
    .filter((task) => !(task.metadata && task.metadata.parent_task_id))
    .sort((a, b) => urgency(a) - urgency(b));
}

export class Inbox {
  constructor() {
    this.list = byId('inbox-list');
    this.status = byId('inbox-status');
    this.more = byId('inbox-more');
    this.pages = 1;
    this.current = null;
    this.timer = null;
    this.failing = false;
    this.more.addEventListener('click', () => {
      this.pages += 1;
      this.refresh();
    });
  }

  start() {
    this.refresh();
  }

  /** Marks the open conversation. */
  select(taskId) {
    this.current = taskId;
    for (const link of this.list.querySelectorAll('a[data-task]')) {
      if (link.dataset.task === taskId) link.setAttribute('aria-current', 'page');
      else link.removeAttribute('aria-current');
    }
  }

  async refresh() {
    clearTimeout(this.timer);
    try {
      const { tasks, more } = await this.fetch();
      this.render(inboxOrder(tasks), more);
      this.failing = false;
    } catch (error) {
      // Said once per outage, not every few seconds.
      if (!this.failing) showError('The inbox could not be read', error);
      this.failing = true;
      this.status.textContent = 'The inbox could not be read; trying again.';
    } finally {
      this.timer = setTimeout(() => this.refresh(), REFRESH_MS);
    }
  }

  /** Every waiting conversation, then as many pages of the rest as were asked for. */
  async fetch() {
    const waiting = await rpc('ListTasks', {
      status: 'TASK_STATE_INPUT_REQUIRED', pageSize: WAITING_PAGE_SIZE, historyLength: 0,
    });
    const seen = new Map(waiting.tasks.map((task) => [task.id, task]));
    let pageToken;
    let more = false;
    for (let page = 0; page < this.pages; page += 1) {
      const params = { pageSize: PAGE_SIZE, historyLength: 0 };
      if (pageToken) params.pageToken = pageToken;
      const result = await rpc('ListTasks', params);
      for (const task of result.tasks) if (!seen.has(task.id)) seen.set(task.id, task);
      pageToken = result.nextPageToken;
      more = Boolean(pageToken);
      if (!more) break;
    }
    return { tasks: [...seen.values()], more };
  }

  render(tasks, more) {
    this.more.hidden = !more;
    const waiting = tasks.filter((task) => urgency(task) <= 2).length;
    this.status.textContent = tasks.length === 0
      ? 'No conversations yet.'
      : `${tasks.length} conversation${tasks.length === 1 ? '' : 's'}, ${waiting} waiting for you.`;
    replace(this.list, tasks.map((task) => this.item(task)));
    this.select(this.current);
  }

  item(task) {
    const subtasks = (task.metadata && task.metadata.subtasks) || [];
    const open = subtasks.filter((subtask) => !/COMPLETED|CANCELED|FAILED|REJECTED/.test(subtask.state));
    const rank = urgency(task);
    return h('li', { class: `inbox-item urgency-${rank}` },
      h('a', { href: `#/tasks/${encodeURIComponent(task.id)}`, 'data-task': task.id },
        h('span', { class: 'inbox-state' }, describeTask(task)),
        h('span', { class: 'inbox-preview' }, preview(task) || 'No reply yet'),
        h('span', { class: 'inbox-meta' },
          `task ${shortId(task.id)} · context ${shortId(task.contextId)} · ${ago(task.status.timestamp)}`,
          open.length ? ` · ${open.length} sub-task${open.length === 1 ? '' : 's'} open` : '')));
  }
}
