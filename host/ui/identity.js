// Who the page speaks as. On loopback without tokens a participant names themself (the
// `X-Participant-Id` header); with `[auth] tokens` the card declares a bearer scheme and
// the page asks for a token, kept in this tab's sessionStorage only (never a cookie, so
// no other site can make the browser send it).

const NAME_KEY = 'tiny-harness.participant';
const TOKEN_KEY = 'tiny-harness.token';

/** The participant id the server assumes when a loopback request names nobody. */
export const DEFAULT_NAME = 'local';

export const identity = {
  /** `name` (self-asserted) or `token` (bearer). */
  mode: 'name',
  name: localStorage.getItem(NAME_KEY) || DEFAULT_NAME,
  token: sessionStorage.getItem(TOKEN_KEY) || '',

  /** Picks the mode the agent card asks for. */
  configure(card) {
    this.mode = card.securitySchemes && card.securitySchemes.bearer ? 'token' : 'name';
  },

  setName(name) {
    this.name = name.trim() || DEFAULT_NAME;
    localStorage.setItem(NAME_KEY, this.name);
  },

  setToken(token) {
    this.token = token.trim();
    if (this.token) sessionStorage.setItem(TOKEN_KEY, this.token);
    else sessionStorage.removeItem(TOKEN_KEY);
  },

  /** Who the page speaks as, for people. */
  label() {
    return this.mode === 'token' ? (this.token ? 'your token' : 'nobody yet') : this.name;
  },

  /** The headers every request carries: JSON, the protocol version, who is asking. */
  headers() {
    const headers = { 'Content-Type': 'application/json', 'A2A-Version': '1.0' };
    if (this.mode === 'token') {
      if (this.token) headers.Authorization = `Bearer ${this.token}`;
    } else {
      headers['X-Participant-Id'] = this.name;
    }
    return headers;
  },
};
