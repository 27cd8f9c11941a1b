// Errors are shown, never swallowed: each one stays in the alert region until dismissed.

import { byId, h } from './dom.js';

/** The most errors shown at once; older ones give way. */
const MAX_SHOWN = 5;

/** Shows `error` as "<what>: <message> (<reason>)" in the page's alert region. */
export function showError(what, error) {
  const region = byId('errors');
  const reason = error && error.reason ? ` (${error.reason})` : '';
  const message = (error && error.message) || String(error);
  const item = h('div', { class: 'error' },
    h('p', {}, h('strong', {}, `${what}: `), message, reason),
    h('button', {
      type: 'button',
      class: 'dismiss',
      'aria-label': `Dismiss: ${what}`,
      onclick: () => item.remove(),
    }, '×'));
  region.append(item);
  while (region.children.length > MAX_SHOWN) region.firstElementChild.remove();
  console.error(what, error);
}

/** Removes every shown error (after the identity changes, say). */
export function clearErrors() {
  byId('errors').replaceChildren();
}
