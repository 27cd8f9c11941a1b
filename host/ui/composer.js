// The message box and its slash-command completion (an ARIA combobox). While the first
// word is typed after `/`, the commands of the card's commands extension that the
// participant's role may run are offered with their usage and description; after the
// name, the argument's declared values (enum arguments) and what the command's plugin
// suggests over the completion route.

import { complete } from './a2a.js';
import { h, replace } from './dom.js';
import { showError } from './errors.js';

/** How long typing pauses before the plugin is asked (each ask may run a plugin). */
const ASK_AFTER_MS = 120;

/** The most suggestions listed at once. */
const MAX_SHOWN = 12;

/** Whether `role` may run `command`, by the rule the harness enforces. */
export function mayRun(role, command) {
  if (role === 'watcher' || !role) return false;
  if (role === 'admin') return true;
  return (command.roles || []).includes(role);
}

export class Composer {
  constructor({ form, input, list, onSubmit }) {
    this.form = form;
    this.input = input;
    this.list = list;
    this.onSubmit = onSubmit;
    this.context = { commands: [], completion: null, taskId: null, role: null };
    this.options = [];
    this.active = -1;
    this.asking = null;
    this.timer = null;
    this.picked = null;
    input.addEventListener('input', () => this.update());
    input.addEventListener('keydown', (event) => this.key(event));
    input.addEventListener('blur', () => setTimeout(() => this.close(), 150));
    form.addEventListener('submit', (event) => {
      event.preventDefault();
      this.submit();
    });
  }

  /** What completion works from: the card's commands, the route, the task, the role. */
  setContext(context) {
    this.context = { ...this.context, ...context };
    // The conversation re-renders as events come: an open list stays open, brought up to date.
    if (!this.list.hidden) this.update();
  }

  submit() {
    const text = this.input.value.trim();
    if (!text) return;
    this.close();
    this.onSubmit(text);
  }

  clear() {
    this.input.value = '';
    this.close();
  }

  key(event) {
    const open = !this.list.hidden && this.options.length > 0;
    if (event.key === 'ArrowDown' && open) {
      event.preventDefault();
      this.activate((this.active + 1) % this.options.length);
    } else if (event.key === 'ArrowUp' && open) {
      event.preventDefault();
      this.activate((this.active - 1 + this.options.length) % this.options.length);
    } else if ((event.key === 'Enter' || event.key === 'Tab') && open && this.active >= 0) {
      event.preventDefault();
      this.pick(this.options[this.active]);
    } else if (event.key === 'Tab' && open && this.options.length === 1) {
      event.preventDefault();
      this.pick(this.options[0]);
    } else if (event.key === 'Escape' && open) {
      event.preventDefault();
      this.close();
    } else if (event.key === 'Enter' && !event.shiftKey) {
      event.preventDefault();
      this.submit();
    }
  }

  /** Recomputes the suggestions for the text as it is now. */
  update() {
    clearTimeout(this.timer);
    if (this.asking) this.asking.abort();
    const text = this.input.value;
    if (this.picked !== null && text === this.picked) return;
    this.picked = null;
    if (!text.startsWith('/')) {
      this.close();
      return;
    }
    const { commands, role } = this.context;
    const space = text.search(/\s/);
    if (space < 0) {
      const typed = text.slice(1);
      this.show(commands
        .filter((command) => command.name.startsWith(typed) && mayRun(role, command))
        .map((command) => ({
          kind: 'name',
          value: `/${command.name}`,
          usage: command.usage,
          description: command.description,
          takesArguments: (command.arguments || []).length > 0,
        })));
      return;
    }
    const name = text.slice(1, space);
    const command = commands.find((candidate) => candidate.name === name);
    if (!command || !mayRun(role, command)) {
      this.close();
      return;
    }
    const declared = declaredValues(command, text.slice(space));
    this.show(declared);
    this.timer = setTimeout(() => this.ask(text, declared), ASK_AFTER_MS);
  }

  /** Asks the command's plugin (through the completion route) what may follow. */
  async ask(text, declared) {
    const { completion, taskId } = this.context;
    // A server without the completion route: the declared values are all there is.
    if (!completion) return;
    const controller = new AbortController();
    this.asking = controller;
    try {
      const answer = await complete(completion, taskId, text, controller.signal);
      if (this.input.value !== text) return;
      const seen = new Set(declared.map((option) => option.value));
      const fromPlugin = answer.suggestions
        .filter((suggestion) => !seen.has(suggestion.value))
        .map((suggestion) => ({ kind: 'argument', ...suggestion }));
      this.show([...declared, ...fromPlugin]);
    } catch (error) {
      if (error.name !== 'AbortError') showError('Command completion failed', error);
    }
  }

  show(options) {
    this.options = options.slice(0, MAX_SHOWN);
    const exact = this.options.length === 1 && this.options[0].value === this.currentToken();
    if (this.options.length === 0 || exact) {
      this.close();
      return;
    }
    replace(this.list, this.options.map((option, index) => h('li', {
      id: `suggestion-${index}`,
      role: 'option',
      class: 'suggestion',
      'aria-selected': 'false',
      onmousedown: (event) => {
        event.preventDefault();
        this.pick(option);
      },
    },
    h('span', { class: 'value' }, option.value),
    option.usage && option.usage !== option.value ? h('span', { class: 'usage' }, option.usage) : null,
    option.description ? h('span', { class: 'description' }, option.description) : null)));
    this.list.hidden = false;
    this.input.setAttribute('aria-expanded', 'true');
    this.activate(-1);
  }

  activate(index) {
    this.active = index;
    [...this.list.children].forEach((item, at) => {
      item.setAttribute('aria-selected', String(at === index));
    });
    if (index >= 0) {
      this.input.setAttribute('aria-activedescendant', `suggestion-${index}`);
      this.list.children[index].scrollIntoView({ block: 'nearest' });
    } else {
      this.input.removeAttribute('aria-activedescendant');
    }
  }

  /** Puts a suggestion in the box: a command line for names, the argument otherwise. */
  pick(option) {
    const text = this.input.value;
    let next;
    if (option.kind === 'name') {
      next = option.takesArguments ? `${option.value} ` : option.value;
    } else {
      const start = text.length - this.currentToken().length;
      next = `${text.slice(0, start)}${option.value}`;
    }
    this.input.value = next;
    this.picked = next;
    this.close();
    this.input.focus();
    if (option.kind === 'name' && option.takesArguments) {
      this.picked = null;
      this.update();
    }
  }

  /** The word being typed: the text after the last space (all of it for a name). */
  currentToken() {
    const text = this.input.value;
    const space = Math.max(text.lastIndexOf(' '), text.lastIndexOf('\t'), text.lastIndexOf('\n'));
    return text.slice(space + 1);
  }

  close() {
    this.options = [];
    this.active = -1;
    this.list.hidden = true;
    this.list.replaceChildren();
    this.input.setAttribute('aria-expanded', 'false');
    this.input.removeAttribute('aria-activedescendant');
  }
}

/** The declared values (enum) of the argument being typed in `after` (text after the name). */
function declaredValues(command, after) {
  const words = after.trimStart().split(/\s+/);
  const partial = words.pop();
  const argument = (command.arguments || [])[words.length];
  if (!argument || argument.type !== 'enum') return [];
  return (argument.values || [])
    .filter((value) => value.startsWith(partial))
    .map((value) => ({ kind: 'argument', value, description: argument.description }));
}
