// notice.js — the one message strip under the header: errors (401 sign-in
// needed, 403 not allowed, others) and confirmations, dismissible.

import { el } from './dom.js';

let strip = null;

export function mountNotice(node) {
  strip = node;
}

export function showNotice(text, kind = 'info') {
  if (!strip) return;
  strip.replaceChildren(el('div', { class: `notice notice-${kind}`, role: kind === 'error' ? 'alert' : 'status' },
    el('span', null, text),
    el('button', { type: 'button', class: 'link', 'aria-label': 'dismiss', onclick: clearNotice }, '×')));
}

export function clearNotice() {
  strip?.replaceChildren();
}

/** A failed request, said plainly: what was being done, and why it failed. */
export function describeError(error, what) {
  if (error.status === 401) return `Sign-in needed to ${what}: ${error.message}`;
  if (error.status === 403) return `Not allowed to ${what}: ${error.message}`;
  const status = error.status ? ` (${error.status})` : '';
  return `Could not ${what}${status}: ${error.message}`;
}

export function showError(error, what) {
  showNotice(describeError(error, what), error.status === 401 || error.status === 403 ? 'auth' : 'error');
}
