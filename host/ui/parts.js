// Message and artifact parts: text (Markdown from the agent, plain from people), data as
// JSON, files as links (by URL, or the bytes themselves as a download).

import { h } from './dom.js';
import { markdown } from './markdown.js';

const SAFE_URL = /^https?:/i;

/** The parts of a message or artifact; `asMarkdown` for the agent's own text. */
export function renderParts(parts, { asMarkdown }) {
  return (parts || []).map((part) => renderPart(part, asMarkdown));
}

function renderPart(part, asMarkdown) {
  if (typeof part.text === 'string') {
    return asMarkdown
      ? h('div', { class: 'part text markdown' }, markdown(part.text))
      : h('div', { class: 'part text plain' }, part.text);
  }
  if ('data' in part) {
    const envelope = describeEnvelope(part.data);
    if (envelope) return h('p', { class: 'part envelope' }, envelope);
    return h('pre', { class: 'part data', 'aria-label': 'Data' },
      h('code', {}, JSON.stringify(part.data, null, 2)));
  }
  if (typeof part.url === 'string') return fileLink(part, part.url);
  if (typeof part.raw === 'string') return fileLink(part, bytesUrl(part));
  return h('p', { class: 'part unknown' }, 'A part this page cannot show.');
}

/** A participant's control or task envelope in words, or null for other data. */
function describeEnvelope(data) {
  if (!data || typeof data !== 'object') return null;
  if (data.kind === 'control' && data.action === 'complete') return 'Asked to complete the conversation.';
  const participants = data.kind === 'task' && data.payload && data.payload.participants;
  if (Array.isArray(participants)) {
    const who = participants.map((p) => `${p.id} (${p.role})`).join(', ');
    return `Changed the participants: ${who}.`;
  }
  return null;
}

function fileLink(part, href) {
  const name = part.filename || (part.url ? part.url.split('/').pop() : 'file');
  const type = part.mediaType ? ` (${part.mediaType})` : '';
  if (!href || (part.url && !SAFE_URL.test(part.url))) {
    return h('p', { class: 'part file' }, `File ${name}${type}: ${part.url || 'no content'}`);
  }
  return h('p', { class: 'part file' },
    h('a', { href, download: part.raw ? name : null, rel: 'noopener noreferrer', target: '_blank' },
      `File: ${name}`),
    type);
}

/** A blob URL for a part's base64 bytes, typed as a download so it never renders inline. */
function bytesUrl(part) {
  try {
    const bytes = Uint8Array.from(atob(part.raw), (c) => c.charCodeAt(0));
    return URL.createObjectURL(new Blob([bytes], { type: 'application/octet-stream' }));
  } catch {
    return null;
  }
}

/** An artifact: its name, description and parts. */
export function renderArtifact(artifact) {
  const title = artifact.name || artifact.artifactId || 'Artifact';
  return h('article', { class: 'artifact', 'aria-label': `Artifact ${title}` },
    h('h4', {}, title),
    artifact.description ? h('p', { class: 'muted' }, artifact.description) : null,
    renderParts(artifact.parts, { asMarkdown: true }));
}
