// One conversation: its history, the turn streaming in, sub-tasks, artifacts, the turn
// traces, and the controls its participant may use (Send, Complete, Cancel; a watcher
// gets none of them). A turn ends on any final status update, INPUT_REQUIRED included.

import { A2aError, COMPLETE, complete, rpc, stream, userMessage } from './a2a.js';
import { Composer } from './composer.js';
import { byId, h, replace } from './dom.js';
import { showError } from './errors.js';
import { follow } from './follow.js';
import { markdown } from './markdown.js';
import { renderArtifact, renderParts } from './parts.js';
import { renderTrace, tokens } from './trace.js';
import { describe, describeTask, endsTurn, isTerminal, shortId, subStateOf } from './words.js';

export class Conversation {
  constructor({ commands, completion, inbox }) {
    this.commands = commands;
    this.completion = completion;
    this.inbox = inbox;
    this.el = {
      section: byId('conversation'),
      title: byId('conversation-title'),
      state: byId('conversation-state'),
      usage: byId('conversation-usage'),
      controls: byId('controls'),
      complete: byId('complete'),
      cancel: byId('cancel'),
      refusal: byId('refusal'),
      note: byId('role-note'),
      subtasks: byId('subtasks'),
      subtaskList: byId('subtask-list'),
      messages: byId('messages'),
      live: byId('live-turn'),
      artifacts: byId('artifacts'),
      artifactList: byId('artifact-list'),
      form: byId('composer'),
      input: byId('message'),
      send: byId('send'),
    };
    this.composer = new Composer({
      form: this.el.form,
      input: this.el.input,
      list: byId('suggestions'),
      onSubmit: (text) => this.send(text),
    });
    this.el.complete.addEventListener('click', () => this.complete());
    this.el.cancel.addEventListener('click', () => this.cancel());
    this.taskId = null;
    this.task = null;
    this.role = null;
    this.follower = null;
    this.sending = null;
    this.connection = 'ok';
    this.live = { progress: '', tools: [], reply: '' };
  }

  // --- Opening ---------------------------------------------------------------------------

  /** An empty conversation: the first message starts it. */
  async openNew() {
    this.leave();
    this.taskId = null;
    this.task = null;
    this.role = null;
    this.render();
    const role = await this.roleIn(null);
    if (this.taskId !== null) return;
    this.role = role;
    this.render();
  }

  /**
   * This participant's role in task `taskId` (or in a conversation they start), which the
   * completion route tells. Without it the page offers the controls and lets the server
   * decide: its refusals are shown.
   */
  async roleIn(taskId) {
    if (!this.completion) return 'reporter';
    try {
      return (await complete(this.completion, taskId, '')).role;
    } catch (error) {
      if (error.reason === 'TASK_NOT_FOUND') throw error;
      showError('Your role could not be read', error);
      return 'reporter';
    }
  }

  /** Task `taskId`: read it, learn this participant's role on it, and follow it live. */
  async open(taskId, { again = false } = {}) {
    if (!again && taskId === this.taskId && this.task) return;
    this.leave();
    this.taskId = taskId;
    this.task = null;
    this.role = null;
    this.render();
    try {
      const [task, role] = await Promise.all([rpc('GetTask', { id: taskId }), this.roleIn(taskId)]);
      if (this.taskId !== taskId) return;
      this.task = task;
      this.role = role;
    } catch (error) {
      if (this.taskId !== taskId) return;
      showError(`Conversation ${shortId(taskId)} could not be opened`, error);
      this.el.title.textContent = `Conversation ${shortId(taskId)} could not be opened`;
      return;
    }
    this.render();
    this.startFollowing();
  }

  /** Stops everything live for the conversation being left. */
  leave() {
    this.stopFollowing();
    if (this.sending) this.sending.abort();
    this.sending = null;
    this.clearLive();
    this.composer.clear();
    this.el.refusal.hidden = true;
  }

  startFollowing() {
    if (this.follower || !this.task || isTerminal(this.task.status.state)) return;
    const taskId = this.taskId;
    this.follower = follow(taskId, {
      event: (event) => this.onEvent(event),
      connection: (state) => {
        this.connection = state === 'lost' ? 'lost' : 'ok';
        this.renderState();
      },
      ended: () => {
        this.follower = null;
        this.reload();
      },
      error: (error) => {
        this.follower = null;
        showError('Following the conversation stopped', error);
      },
    });
  }

  stopFollowing() {
    if (this.follower) this.follower.stop();
    this.follower = null;
    this.connection = 'ok';
  }

  /** Reads the task again (artifacts, sub-tasks and traces after a turn). */
  async reload() {
    const taskId = this.taskId;
    if (!taskId) return;
    try {
      const task = await rpc('GetTask', { id: taskId });
      if (this.taskId !== taskId) return;
      this.task = task;
      this.render();
    } catch (error) {
      showError('The conversation could not be read again', error);
    }
  }

  // --- Events ----------------------------------------------------------------------------

  onEvent(event) {
    if (event.task) {
      this.task = event.task;
      this.render();
    } else if (event.statusUpdate) {
      this.onStatus(event.statusUpdate);
    } else if (event.artifactUpdate) {
      this.onArtifact(event.artifactUpdate);
    } else if (event.message && this.task) {
      this.remember(event.message);
      this.renderMessages();
    }
  }

  onStatus(update) {
    if (!this.task) return;
    this.task.status = update.status;
    const metadata = { ...(this.task.metadata || {}) };
    delete metadata.sub_state;
    const subState = subStateOf(update);
    if (subState) metadata.sub_state = subState;
    this.task.metadata = metadata;
    if (!endsTurn(update.status.state)) {
      this.onProgress(update);
      this.renderState();
      return;
    }
    // The turn's end: its message is the whole reply (deltas are not kept).
    this.clearLive();
    if (update.status.message) this.remember(update.status.message);
    this.render();
    this.inbox.refresh();
    this.reload();
  }

  /** A WORKING update: progress text, a piece of the reply, or a tool call and its result. */
  onProgress(update) {
    const message = update.status.message;
    const part = message && message.parts && message.parts[0];
    const kind = update.metadata && update.metadata.stream;
    if (!part) return;
    if (kind === 'text-delta' && typeof part.text === 'string') {
      this.live.reply += part.text;
    } else if (kind === 'tool-call' && part.data) {
      this.live.tools.push(`Calling ${part.data.name}(${JSON.stringify(part.data.arguments ?? {})})`);
    } else if (kind === 'tool-result' && part.data) {
      const answer = 'error' in part.data
        ? `failed: ${JSON.stringify(part.data.error)}`
        : `answered: ${JSON.stringify(part.data.result)}`;
      this.live.tools.push(`${part.data.name} ${answer}`);
    } else if (typeof part.text === 'string') {
      this.live.progress = part.text;
    }
    stayAtBottom(this.el.section, () => this.renderLive());
  }

  onArtifact(update) {
    if (!this.task) return;
    const artifacts = this.task.artifacts || (this.task.artifacts = []);
    const existing = artifacts.find((artifact) => artifact.artifactId === update.artifact.artifactId);
    if (existing && update.append) existing.parts.push(...update.artifact.parts);
    else if (existing) Object.assign(existing, update.artifact);
    else artifacts.push(update.artifact);
    this.renderArtifacts();
    // A sub-task's result comes as an artifact; its state in the list changed with it.
    if (update.artifact.metadata && update.artifact.metadata.subtask_id) this.reload();
  }

  /** Adds `message` to the history unless it is there already. */
  remember(message) {
    const history = this.task.history || (this.task.history = []);
    if (!history.some((known) => known.messageId === message.messageId)) history.push(message);
  }

  // --- Acting ----------------------------------------------------------------------------

  /** Sends `text` (a message or a command) and streams the turn it starts. */
  async send(text) {
    if (!this.mayWrite()) return;
    const startsTask = this.taskId === null;
    const message = userMessage([{ text }], this.taskId);
    this.stopFollowing();
    const controller = new AbortController();
    this.sending = controller;
    this.composer.clear();
    this.el.refusal.hidden = true;
    this.renderControls();
    let received = false;
    try {
      for await (const event of stream('SendStreamingMessage', { message }, controller.signal)) {
        if (!received && event.task && startsTask) {
          // The conversation exists now: give it its address without reopening it.
          this.taskId = event.task.id;
          history.replaceState(null, '', `#/tasks/${encodeURIComponent(this.taskId)}`);
          this.inbox.select(this.taskId);
        }
        received = true;
        this.onEvent(event);
      }
    } catch (error) {
      if (error.name === 'AbortError') return;
      if (!received) {
        this.composer.input.value = text;
        showError('Your message was not sent', error);
      } else if (!(error instanceof A2aError)) {
        this.connection = 'lost';
      } else {
        showError('The reply stream ended with an error', error);
      }
    } finally {
      if (this.sending === controller) {
        this.sending = null;
        this.renderControls();
        this.inbox.refresh();
        // Follow on from here; after a broken stream this resumes it.
        this.startFollowing();
      }
    }
  }

  /** Sends the control envelope; a refusal (open sub-tasks, a hook) is shown with its reason. */
  async complete() {
    const taskId = this.taskId;
    this.el.refusal.hidden = true;
    try {
      const result = await rpc('SendMessage', { message: userMessage([{ data: COMPLETE }], taskId) });
      const task = result.task;
      if (this.taskId !== taskId) return;
      if (task.status.state !== 'TASK_STATE_COMPLETED') {
        const reason = textOf(task.status.message) || describeTask(task);
        replace(this.el.refusal, h('strong', {}, 'Not completed: '), reason);
        this.el.refusal.hidden = false;
      }
      this.task = task;
      this.render();
    } catch (error) {
      showError('The conversation could not be completed', error);
    } finally {
      this.inbox.refresh();
    }
  }

  async cancel() {
    const taskId = this.taskId;
    if (!window.confirm('Cancel this conversation and its open sub-tasks? It cannot be reopened.')) return;
    try {
      const task = await rpc('CancelTask', { id: taskId });
      if (this.taskId !== taskId) return;
      this.task = task;
      this.render();
    } catch (error) {
      showError('The conversation could not be canceled', error);
    } finally {
      this.inbox.refresh();
    }
  }

  // --- What this participant may do ---------------------------------------------------------

  isDelegated() {
    return Boolean(this.task && this.task.metadata && this.task.metadata.parent_task_id);
  }

  isOpen() {
    return !this.task || !isTerminal(this.task.status.state);
  }

  mayAct() {
    return Boolean(this.role) && this.role !== 'watcher' && this.isOpen();
  }

  mayWrite() {
    return this.mayAct() && !this.isDelegated() && (this.taskId === null || this.task !== null);
  }

  isWorking() {
    return Boolean(this.sending) || (this.task && this.task.status.state === 'TASK_STATE_WORKING');
  }

  // --- Rendering -------------------------------------------------------------------------

  render() {
    stayAtBottom(this.el.section, () => this.renderAll());
  }

  renderAll() {
    this.renderHead();
    this.renderState();
    this.renderControls();
    this.renderSubtasks();
    this.renderMessages();
    this.renderLive();
    this.renderArtifacts();
    this.composer.setContext({
      commands: this.commands, completion: this.completion, taskId: this.taskId, role: this.role,
    });
  }

  renderHead() {
    const { title } = this.el;
    if (this.taskId === null) {
      title.textContent = 'New conversation';
    } else if (this.isDelegated()) {
      title.textContent = `Sub-task ${shortId(this.taskId)}`;
    } else {
      title.textContent = `Conversation ${shortId(this.taskId)}`;
    }
  }

  renderState() {
    const { state, usage } = this.el;
    if (!this.task) {
      state.textContent = this.taskId === null ? 'Type a message to start.' : 'Loading…';
      usage.hidden = true;
      return;
    }
    const words = describeTask(this.task);
    const lost = this.connection === 'lost' ? ' · connection lost, reconnecting…' : '';
    state.textContent = `${capitalize(words)}${lost}`;
    state.dataset.state = this.task.status.state;
    const totals = this.task.metadata && this.task.metadata.usage;
    usage.hidden = !totals;
    if (totals) usage.textContent = `${tokens(totals)} over ${totals.turns ?? '?'} turns`;
  }

  renderControls() {
    const { controls, complete, cancel, form, input, send, note } = this.el;
    const mayAct = this.mayAct() && this.taskId !== null;
    controls.hidden = !mayAct;
    complete.hidden = !mayAct || this.isDelegated();
    cancel.hidden = !mayAct;
    form.hidden = !this.mayWrite();
    const working = this.isWorking();
    send.disabled = working;
    input.setAttribute('aria-describedby', working ? 'working-note' : 'message-help');
    byId('working-note').hidden = !working || form.hidden;
    this.renderNote(note);
  }

  renderNote(note) {
    let children = null;
    if (this.role === 'watcher') {
      children = ['You are watching this conversation: you can read and follow it, but not write in it.'];
    } else if (this.task && isTerminal(this.task.status.state)) {
      children = [`This conversation is ${describeTask(this.task)}; it takes no more messages.`];
    } else if (this.isDelegated()) {
      const parent = this.task.metadata.parent_task_id;
      children = ['This is a sub-task of ',
        h('a', { href: `#/tasks/${encodeURIComponent(parent)}` }, `conversation ${shortId(parent)}`),
        ': it works on its goal on its own and reports back there.'];
    }
    note.hidden = children === null;
    if (children) replace(note, children);
  }

  renderSubtasks() {
    const subtasks = (this.task && this.task.metadata && this.task.metadata.subtasks) || [];
    this.el.subtasks.hidden = subtasks.length === 0;
    replace(this.el.subtaskList, subtasks.map((subtask) => h('li', { class: 'subtask' },
      h('a', { href: `#/tasks/${encodeURIComponent(subtask.id)}` }, subtask.goal || shortId(subtask.id)),
      h('span', { class: 'subtask-state', 'data-state': subtask.state }, describe(subtask.state)))));
  }

  renderMessages() {
    const history = (this.task && this.task.history) || [];
    replace(this.el.messages, history.map((message) => renderMessage(message)));
  }

  renderLive() {
    const { progress, tools, reply } = this.live;
    const working = this.task && this.task.status.state === 'TASK_STATE_WORKING';
    this.el.live.hidden = !working && !reply && tools.length === 0;
    this.el.live.setAttribute('aria-busy', String(Boolean(working)));
    replace(this.el.live,
      h('p', { class: 'progress' }, progress || 'The agent is working…'),
      tools.length ? h('ul', { class: 'tools' }, tools.map((line) => h('li', {}, line))) : null,
      reply ? h('div', { class: 'reply markdown' }, markdown(reply)) : null);
  }

  renderArtifacts() {
    const artifacts = (this.task && this.task.artifacts) || [];
    this.el.artifacts.hidden = artifacts.length === 0;
    replace(this.el.artifactList, artifacts.map(renderArtifact));
  }

  clearLive() {
    this.live = { progress: '', tools: [], reply: '' };
    this.el.live.hidden = true;
    this.el.live.replaceChildren();
  }
}

/** Runs `render`; a reader who was at the end of `pane` stays there as it grows. */
function stayAtBottom(pane, render) {
  const atBottom = pane.scrollTop + pane.clientHeight >= pane.scrollHeight - 80;
  render();
  if (atBottom) pane.scrollTop = pane.scrollHeight;
}

function renderMessage(message) {
  const agent = message.role === 'ROLE_AGENT';
  return h('li', { class: `message ${agent ? 'agent' : 'user'}` },
    h('p', { class: 'author' }, agent ? 'Agent' : 'Participant'),
    renderParts(message.parts, { asMarkdown: agent }),
    agent ? renderTrace(message) : null);
}

function textOf(message) {
  return ((message && message.parts) || []).map((part) => part.text || '').join('\n').trim();
}

function capitalize(text) {
  return text.charAt(0).toUpperCase() + text.slice(1);
}
