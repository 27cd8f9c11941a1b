// The page's entry point: read the agent card, set up who is speaking, then route
// between the inbox and a conversation by the address's fragment:
// `#/` the inbox, `#/new` a new conversation, `#/tasks/<id>` a conversation.

import { agentCard } from './a2a.js';
import { Conversation } from './conversation.js';
import { byId } from './dom.js';
import { clearErrors, showError } from './errors.js';
import { identity } from './identity.js';
import { Inbox } from './inbox.js';

const COMMANDS_EXTENSION = 'https://tiny-harness.dev/extensions/commands/v1';

let inbox;
let conversation;

async function main() {
  let card;
  try {
    card = await agentCard();
  } catch (error) {
    showError('The agent card could not be read', error);
    return;
  }
  identity.configure(card);
  setUpIdentity();
  const extension = (card.capabilities.extensions || []).find((e) => e.uri === COMMANDS_EXTENSION);
  const params = (extension && extension.params) || {};
  inbox = new Inbox();
  conversation = new Conversation({
    commands: params.commands || [],
    completion: params.completion || null,
    inbox,
  });
  byId('new-conversation').addEventListener('click', () => {
    location.hash = '#/new';
  });
  window.addEventListener('hashchange', () => route({ moveFocus: true }));
  inbox.start();
  route({ moveFocus: false });
}

/** Shows what the fragment names; on a narrow screen, only that. */
function route({ moveFocus, again = false }) {
  // Other fragments (the skip link's `#message`) are places on the page, not routes.
  if (location.hash && !location.hash.startsWith('#/')) return;
  const match = location.hash.match(/^#\/tasks\/(.+)$/);
  if (match) {
    const taskId = decodeURIComponent(match[1]);
    document.body.dataset.view = 'conversation';
    inbox.select(taskId);
    conversation.open(taskId, { again });
  } else {
    document.body.dataset.view = location.hash === '#/new' ? 'conversation' : 'inbox';
    inbox.select(null);
    conversation.openNew();
  }
  if (moveFocus) {
    const target = document.body.dataset.view === 'conversation' ? byId('conversation') : byId('inbox');
    target.focus();
  }
}

/** The name field on loopback, the token field when the card asks for bearer tokens. */
function setUpIdentity() {
  const form = byId('identity');
  const name = byId('participant');
  const token = byId('token');
  const tokenMode = identity.mode === 'token';
  byId('participant-field').hidden = tokenMode;
  byId('token-field').hidden = !tokenMode;
  name.value = identity.name;
  token.value = identity.token;
  showSpeaker();
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    if (tokenMode) identity.setToken(token.value);
    else identity.setName(name.value);
    showSpeaker();
    clearErrors();
    inbox.refresh();
    route({ moveFocus: false, again: true });
  });
}

function showSpeaker() {
  byId('speaker').textContent = `Speaking as ${identity.label()}`;
}

main().catch((error) => showError('The page failed to start', error));
