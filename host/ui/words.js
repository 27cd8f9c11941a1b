// States and sub-states in plain words, and which conversations are waiting for you.

const STATES = {
  TASK_STATE_SUBMITTED: 'submitted, about to start',
  TASK_STATE_WORKING: 'the agent is working',
  TASK_STATE_INPUT_REQUIRED: 'waiting for you',
  TASK_STATE_AUTH_REQUIRED: 'waiting for an authorization',
  TASK_STATE_COMPLETED: 'completed',
  TASK_STATE_CANCELED: 'canceled',
  TASK_STATE_FAILED: 'failed',
  TASK_STATE_REJECTED: 'rejected',
};

// The status extension's sub-states (an unknown one means plain INPUT_REQUIRED).
const SUB_STATES = {
  'awaiting-answer': 'the agent asked you a question',
  'awaiting-approval': 'a tool call needs your approval',
  'awaiting-next-message': 'waiting for your next message',
};

const TERMINAL = new Set([
  'TASK_STATE_COMPLETED', 'TASK_STATE_CANCELED', 'TASK_STATE_FAILED', 'TASK_STATE_REJECTED',
]);

/** The sub-state a task, status update or message carries in its metadata. */
export function subStateOf(object) {
  return (object && object.metadata && object.metadata.sub_state) || null;
}

/** "the agent asked you a question", "completed", ... */
export function describe(state, subState) {
  if (state === 'TASK_STATE_INPUT_REQUIRED' && SUB_STATES[subState]) return SUB_STATES[subState];
  return STATES[state] || state.replace(/^TASK_STATE_/, '').toLowerCase().replace(/_/g, ' ');
}

/** The plain words for a task's current state. */
export function describeTask(task) {
  return describe(task.status.state, subStateOf(task));
}

export function isTerminal(state) {
  return TERMINAL.has(state);
}

/**
 * Whether a status update ends the turn: any state but SUBMITTED and WORKING, so
 * INPUT_REQUIRED ends it too (decision 007); nobody waits for COMPLETED.
 */
export function endsTurn(state) {
  return state !== 'TASK_STATE_WORKING' && state !== 'TASK_STATE_SUBMITTED';
}

/**
 * How urgently a task wants its participants, for the inbox order: a question first,
 * then an approval, then a reply waiting for the next message, then running work, then
 * finished conversations.
 */
export function urgency(task) {
  const state = task.status.state;
  if (state === 'TASK_STATE_INPUT_REQUIRED') {
    const subState = subStateOf(task);
    if (subState === 'awaiting-answer') return 0;
    if (subState === 'awaiting-approval') return 1;
    return 2;
  }
  if (state === 'TASK_STATE_AUTH_REQUIRED') return 1;
  if (isTerminal(state)) return 4;
  return 3;
}

/** "3 min ago" for an RFC 3339 timestamp. */
export function ago(timestamp, now = Date.now()) {
  if (!timestamp) return '';
  const seconds = Math.max(0, Math.round((now - Date.parse(timestamp)) / 1000));
  if (seconds < 60) return 'just now';
  const minutes = Math.round(seconds / 60);
  if (minutes < 60) return `${minutes} min ago`;
  const hours = Math.round(minutes / 60);
  if (hours < 48) return `${hours} h ago`;
  return `${Math.round(hours / 24)} days ago`;
}

/**
 * The last 8 characters of an id: enough to tell tasks apart on a screen. The last, as
 * the harness's ids are UUIDv7 and begin with their creation time.
 */
export function shortId(id) {
  return String(id).slice(-8);
}
