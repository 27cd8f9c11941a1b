// A small, safe Markdown renderer: paragraphs (line breaks kept), headings, lists, block
// quotes, fenced code, rules, and inline code, emphasis, strong and links. It builds DOM
// nodes; no text ever becomes HTML, and links are kept only for http, https and mailto.

import { h } from './dom.js';

const SAFE_LINK = /^(https?:|mailto:)/i;

/** `text` as Markdown, rendered into a fragment. */
export function markdown(text) {
  const fragment = document.createDocumentFragment();
  for (const block of blocks(String(text).replace(/\r\n?/g, '\n').split('\n'))) {
    fragment.append(block);
  }
  return fragment;
}

function blocks(lines) {
  const out = [];
  let i = 0;
  while (i < lines.length) {
    const line = lines[i];
    const fence = line.match(/^\s*(```|~~~)(.*)$/);
    if (fence) {
      const body = [];
      i += 1;
      while (i < lines.length && !lines[i].trimStart().startsWith(fence[1])) body.push(lines[i++]);
      i += 1; // the closing fence (or the end)
      const language = fence[2].trim();
      out.push(h('pre', {}, h('code', { 'data-language': language || null }, body.join('\n'))));
      continue;
    }
    if (!line.trim()) {
      i += 1;
      continue;
    }
    const heading = line.match(/^(#{1,6})\s+(.*)$/);
    if (heading) {
      // Headings inside a message sit under the page's own h1 and h2.
      const level = Math.min(6, heading[1].length + 2);
      out.push(h(`h${level}`, {}, inline(heading[2])));
      i += 1;
      continue;
    }
    if (/^\s*([-*_])(\s*\1){2,}\s*$/.test(line)) {
      out.push(h('hr'));
      i += 1;
      continue;
    }
    if (/^\s*>/.test(line)) {
      const quoted = [];
      while (i < lines.length && /^\s*>/.test(lines[i])) quoted.push(lines[i++].replace(/^\s*> ?/, ''));
      out.push(h('blockquote', {}, blocks(quoted)));
      continue;
    }
    const item = listItem(line);
    if (item) {
      const list = h(item.ordered ? 'ol' : 'ul');
      while (i < lines.length) {
        const next = listItem(lines[i]);
        if (!next || next.ordered !== item.ordered) break;
        list.append(h('li', {}, inline(next.text)));
        i += 1;
      }
      out.push(list);
      continue;
    }
    // The first line always belongs to the paragraph, so the loop always advances.
    const paragraph = [lines[i++]];
    while (i < lines.length && lines[i].trim() && !startsBlock(lines[i])) paragraph.push(lines[i++]);
    const p = h('p');
    paragraph.forEach((text, index) => {
      if (index > 0) p.append(h('br'));
      p.append(inline(text));
    });
    out.push(p);
  }
  return out;
}

function listItem(line) {
  const bullet = line.match(/^\s*[-*+]\s+(.*)$/);
  if (bullet) return { ordered: false, text: bullet[1] };
  const numbered = line.match(/^\s*\d{1,9}[.)]\s+(.*)$/);
  if (numbered) return { ordered: true, text: numbered[1] };
  return null;
}

function startsBlock(line) {
  return /^\s*(```|~~~|#{1,6}\s|>)/.test(line) || listItem(line) !== null;
}

// Inline spans, earliest match first: code (its content literal), links, strong, emphasis.
const INLINE = [
  { kind: 'code', pattern: /`([^`]+)`/ },
  { kind: 'link', pattern: /\[([^\]]+)\]\(([^)\s]+)\)/ },
  { kind: 'strong', pattern: /\*\*(.+?)\*\*|__(.+?)__/ },
  { kind: 'em', pattern: /\*([^*\s][^*]*?)\*|\b_([^_\s][^_]*?)_\b/ },
];

function inline(text) {
  const fragment = document.createDocumentFragment();
  let rest = text;
  while (rest) {
    let first = null;
    for (const { kind, pattern } of INLINE) {
      const match = pattern.exec(rest);
      if (match && (!first || match.index < first.match.index)) first = { kind, match };
    }
    if (!first) {
      fragment.append(rest);
      break;
    }
    const { kind, match } = first;
    fragment.append(rest.slice(0, match.index));
    fragment.append(span(kind, match));
    rest = rest.slice(match.index + match[0].length);
  }
  return fragment;
}

function span(kind, match) {
  switch (kind) {
    case 'code':
      return h('code', {}, match[1]);
    case 'link':
      if (!SAFE_LINK.test(match[2])) return document.createTextNode(match[0]);
      return h('a', { href: match[2], rel: 'noopener noreferrer', target: '_blank' }, inline(match[1]));
    case 'strong':
      return h('strong', {}, inline(match[1] || match[2]));
    default:
      return h('em', {}, inline(match[1] || match[2]));
  }
}
