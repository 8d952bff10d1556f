// credentials.js — who the page speaks as: a user name (simple mode, header
// X-Weft-User) or a bearer token (token mode, Authorization: Bearer), kept in
// sessionStorage for this tab only.

const KEY = 'weft.credentials';
const listeners = new Set();

/** {kind: "user" | "token", value} or null (the server's default user). */
export function credentials() {
  try {
    const saved = JSON.parse(sessionStorage.getItem(KEY));
    if (saved && ['user', 'token'].includes(saved.kind) && typeof saved.value === 'string' && saved.value) {
      return saved;
    }
  } catch {
    // Unreadable: as if signed out.
  }
  return null;
}

export function setCredentials(next) {
  if (next) sessionStorage.setItem(KEY, JSON.stringify({ kind: next.kind, value: next.value }));
  else sessionStorage.removeItem(KEY);
  for (const listener of listeners) listener(credentials());
}

export function onCredentialsChange(listener) {
  listeners.add(listener);
  return () => listeners.delete(listener);
}

/** Headers that carry the credentials; fetch refuses non-Latin-1 values, so
 *  the sign-in form lets through printable ASCII only. */
export function authHeaders() {
  const c = credentials();
  if (!c) return {};
  return c.kind === 'token' ? { Authorization: `Bearer ${c.value}` } : { 'X-Weft-User': c.value };
}

export const isHeaderSafe = (text) => /^[\x20-\x7e]+$/.test(text);
