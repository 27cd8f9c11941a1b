// The turn trace (CONVENTIONS.md): the hooks and commands that ran in a turn, with their
// executor, kind, duration and outcome, how long the turn waited on its model, and the
// tokens the model reported.

import { h } from './dom.js';

/** A collapsed trace for an agent message, or null when it carries none. */
export function renderTrace(message) {
  const trace = message && message.metadata && message.metadata.trace;
  if (!trace) return null;
  const steps = Array.isArray(trace.steps) ? trace.steps : [];
  const total = steps.reduce((sum, step) => sum + (Number(step.duration_us) || 0), 0);
  const summary = [];
  if (steps.length) summary.push(`${steps.length} step${steps.length === 1 ? '' : 's'}, ${milliseconds(total)}`);
  if (trace.model_us) summary.push(`model ${milliseconds(trace.model_us)}`);
  if (trace.usage) summary.push(tokens(trace.usage));
  if (!summary.length) return null;
  const title = `Turn trace: ${summary.join(', ')}`;
  if (!steps.length) return h('p', { class: 'trace' }, title);
  return h('details', { class: 'trace' },
    h('summary', {}, title),
    h('table', {},
      h('caption', { class: 'visually-hidden' }, 'What ran in this turn'),
      h('thead', {}, h('tr', {},
        ['Hook point', 'Executor', 'Kind', 'Duration', 'Outcome'].map((name) => h('th', { scope: 'col' }, name)))),
      h('tbody', {}, steps.map((step) => h('tr', { class: `outcome-${step.outcome}` },
        h('td', {}, step.point || ''),
        h('td', {}, step.executor || ''),
        h('td', {}, step.kind || ''),
        h('td', {}, milliseconds(step.duration_us)),
        h('td', {}, step.outcome || ''))))));
}

/** "120 in, 48 out tokens" */
export function tokens(usage) {
  return `${usage.input_tokens ?? 0} in, ${usage.output_tokens ?? 0} out tokens`;
}

function milliseconds(microseconds) {
  const us = Number(microseconds) || 0;
  return us < 1000 ? `${us} µs` : `${(us / 1000).toFixed(1)} ms`;
}
