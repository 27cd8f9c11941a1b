// Building DOM nodes without HTML strings: every text goes in as a text node, so nothing
// a participant, a plugin or the model writes can become markup.

/**
 * An element: `h('a', {href: '#/', class: 'back'}, 'Inbox')`. Attributes named `on…`
 * with a function become event listeners; `null`, `undefined` and `false` are left out;
 * children may be strings, nodes, arrays of them, or nothing.
 */
export function h(tag, attributes = {}, ...children) {
  const element = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) {
    if (value === null || value === undefined || value === false) continue;
    if (name.startsWith('on') && typeof value === 'function') {
      element.addEventListener(name.slice(2), value);
    } else if (value === true) {
      element.setAttribute(name, '');
    } else {
      element.setAttribute(name, String(value));
    }
  }
  append(element, children);
  return element;
}

/** Appends strings (as text) and nodes, flattening arrays. */
export function append(parent, children) {
  for (const child of [children].flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    parent.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return parent;
}

/** Replaces every child of `element`. */
export function replace(element, ...children) {
  element.replaceChildren();
  return append(element, children);
}

/** `element` by id; a missing one is a bug in index.html, so say which. */
export function byId(id) {
  const element = document.getElementById(id);
  if (!element) throw new Error(`index.html has no element #${id}`);
  return element;
}
