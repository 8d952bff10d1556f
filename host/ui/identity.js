// identity.js — who the server says the page speaks as (GET /ws/v1/whoami:
// {user, admin, authentication}), what that lets the page offer, and the
// sign-in control in the header that changes the credentials.

import { getJson } from './api.js';
import { credentials, setCredentials, isHeaderSafe } from './credentials.js';
import { el } from './dom.js';
import { showError, showNotice } from './notice.js';

/** known: whoami answered; error: why not (401: sign-in needed). */
let current = { user: null, admin: false, authentication: null, known: false, error: null };
const listeners = new Set();

export const identity = () => current;

export function onIdentityChange(listener) {
  listeners.add(listener);
  return () => listeners.delete(listener);
}

export async function refreshIdentity() {
  try {
    const who = await getJson('/ws/v1/whoami');
    current = { user: who.user, admin: who.admin === true, authentication: who.authentication, known: true, error: null };
  } catch (error) {
    // Without whoami nobody is shown admin actions; the server checks anyway.
    const c = credentials();
    current = { user: c?.kind === 'user' ? c.value : null, admin: false, authentication: null, known: false, error };
    if (error.status === 401) showError(error, 'see the cluster');
    else if (error.status !== 404) showError(error, 'ask the server who you are');
  }
  for (const listener of listeners) listener(current);
  return current;
}

/** The app's user and administrators may kill it. */
export const mayKill = (app) => current.admin || (current.user !== null && current.user === app.user);

export const isAdmin = () => current.admin;

/** The sign-in control: who you are, and a form to be someone else. */
export function renderSignIn(container) {
  const c = credentials();
  const who = current.user ?? (current.error?.status === 401 ? 'not signed in' : 'unknown');
  const summary = el('summary', { class: 'who' },
    el('span', { class: 'who-user' }, who),
    current.admin ? el('span', { class: 'badge badge-admin' }, 'admin') : null,
    current.authentication ? el('span', { class: 'who-mode' }, current.authentication) : null);

  const kind = el('select', { name: 'kind', 'aria-label': 'sign in with' },
    el('option', { value: 'user' }, 'user name'),
    el('option', { value: 'token' }, 'token'));
  kind.value = c?.kind ?? (current.authentication === 'token' ? 'token' : 'user');
  const value = el('input', { name: 'value', autocomplete: 'off', required: true, placeholder: 'name or token', 'aria-label': 'user name or token' });
  const syncType = () => { value.type = kind.value === 'token' ? 'password' : 'text'; };
  kind.addEventListener('change', syncType);
  syncType();

  const form = el('form', { class: 'signin-form', onsubmit: (event) => {
    event.preventDefault();
    const text = value.value.trim();
    if (!text || !isHeaderSafe(text)) {
      showNotice('A user name or token is printable ASCII (no accents or control characters).', 'error');
      return;
    }
    setCredentials({ kind: kind.value, value: text });
  } }, kind, value, el('button', { type: 'submit' }, 'Sign in'),
  c ? el('button', { type: 'button', onclick: () => setCredentials(null) }, 'Sign out') : null);

  const details = el('details', { class: 'signin' }, summary, form);
  if (current.error?.status === 401) details.open = true;
  container.replaceChildren(details);
}
