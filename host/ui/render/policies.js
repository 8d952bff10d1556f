// render/policies.js — the policy panel (GET /ws/v1/policies: per kind, and
// per reservable queue as "sharing:QUEUE", the active version and history):
// active version, history, call figures and shadow when the body has them;
// for administrators, load a new version (.wasm upload) and roll back.

import { request, segment } from '../api.js';
import { isAdmin } from '../identity.js';
import { badge, el, figuresAt, pointer, table, num } from '../dom.js';
import { count, credits, nanos, time } from '../format.js';
import { showError, showNotice } from '../notice.js';

const SRC = '/ws/v1/policies';
const HISTORY_SHOWN = 6;

/** Mounts the panel into `body`; returns update(data). Each kind's card is
 *  kept across updates, so an administrator's half-filled form survives them. */
export function mountPolicies(body) {
  const cards = new Map(); // key → {card, info}
  return function update(data) {
    const keys = Object.keys(data).sort((a, b) => a.includes(':') - b.includes(':') || a.localeCompare(b));
    for (const key of cards.keys()) if (!keys.includes(key)) cards.delete(key);
    body.replaceChildren(...keys.map((key) => {
      if (!cards.has(key)) {
        const info = el('div');
        cards.set(key, { info, card: el('div', { class: 'policy', 'data-key': key }, info, isAdmin() ? adminActions(key) : null) });
      }
      const { card, info } = cards.get(key);
      info.replaceChildren(...policyInfo(key, data[key]));
      return card;
    }));
  };
}

function policyInfo(key, status) {
  const base = pointer(key);
  const f = figuresAt(SRC, base, status);
  const active = status.active;
  return [
    el('div', { class: 'policy-head' },
      el('h3', null, key),
      active
        ? el('span', { class: 'policy-active' }, el('strong', null, active.name), ' ', active.version,
          ' · v', f(['active', 'number'], count), ' · ', el('span', { class: 'muted', title: active.sha256 }, active.source),
          ' · loaded ', f(['active', 'loaded_at_ms'], time))
        : el('span', { class: 'muted' }, 'no version loaded')),
    callFigures(f, status),
    status.shadow ? shadow(figuresAt(SRC, `${base}/shadow`, status.shadow), status.shadow) : null,
    history(base, status.history ?? []),
  ].filter(Boolean);
}

/** Calls, failures, fallbacks and latency of the kind (every version
 *  since the server started): shown when the slot reports them. */
function callFigures(f, status) {
  const parts = [];
  if (status.stats) {
    parts.push('since start: calls ', f(['stats', 'calls'], count), ' · p99 ', f(['stats', 'p99_ns'], nanos),
      ' · mean ', f(['stats', 'mean_ns'], nanos));
  }
  if (status.failures !== undefined) parts.push(parts.length ? ' · ' : '', 'failures ', f('failures', count));
  if (status.fallbacks !== undefined) parts.push(parts.length ? ' · ' : '', 'fallbacks ', f('fallbacks', count));
  return parts.length ? el('p', { class: 'facts-line' }, parts) : null;
}

function shadow(f, report) {
  return el('p', { class: 'facts-line shadow' }, 'Shadow ', el('strong', null, report.shadow?.name ?? '?'), ' ',
    report.shadow?.version ?? '', ': calls ', f('calls', count), ' · failures ', f('failures', count),
    ' · differing ', f('differing', count), ' · p99 ', f(['latency', 'p99_ns'], nanos),
    (report.pricing?.projects ?? []).map((p, i) => [' · ', p.project, ' Δ ',
      f(['pricing', 'projects', i, 'difference'], credits)]));
}

function history(base, entries) {
  if (entries.length === 0) return null;
  const newestFirst = entries.map((entry, index) => ({ entry, index })).reverse();
  const rows = newestFirst.slice(0, HISTORY_SHOWN).map(({ entry, index }) => {
    const f = figuresAt(SRC, `${base}/history/${index}`, entry);
    return el('tr', { 'data-key': String(entry.number) },
      num(f('number', count)),
      el('td', null, entry.name, ' ', el('span', { class: 'muted' }, entry.version)),
      el('td', null, badge(entry.state)),
      el('td', { class: 'clip', title: `${entry.source}\nsha256 ${entry.sha256}` }, entry.source),
      el('td', null, f('loaded_at_ms', time)),
      el('td', { class: 'clip', title: entry.note ?? '' }, entry.note ?? ''));
  });
  const more = entries.length > HISTORY_SHOWN
    ? el('p', { class: 'muted' }, `${entries.length - HISTORY_SHOWN} older versions not shown`) : null;
  return el('div', null, table('history', [['#', 'num'], 'Policy', 'State', 'Source', 'Loaded', 'Note'], rows), more);
}

/** Upload a .wasm as the new active version; roll back to the previous one. */
function adminActions(key) {
  const [kind, queue] = key.split(/:(.*)/s);
  const file = el('input', { type: 'file', accept: '.wasm,application/wasm', 'aria-label': `${key} component` });
  const params = el('input', { type: 'text', placeholder: 'parameters: key=value&…', 'aria-label': `${key} parameters` });
  const load = el('button', { type: 'submit' }, 'Load version');
  const form = el('form', { class: 'inline-form', onsubmit: async (event) => {
    event.preventDefault();
    const component = file.files?.[0];
    if (!component) {
      showNotice('Choose a .wasm component to load.', 'error');
      return;
    }
    const query = new URLSearchParams(params.value.trim());
    if (queue !== undefined) query.set('queue', queue);
    const path = `${SRC}/${segment(kind)}${query.size ? `?${query}` : ''}`;
    load.disabled = true;
    showNotice(`Loading ${component.name} into ${key} (compiling can take a while)…`);
    try {
      await request('PUT', path, { body: component, contentType: 'application/wasm' });
      showNotice(`${component.name} is now the active ${key} policy.`, 'ok');
    } catch (error) {
      showError(error, `load a ${key} policy`);
    } finally {
      load.disabled = false;
    }
  } }, file, params, load);

  // A queue's own sharing policy has no rollback route.
  const rollback = queue === undefined ? el('button', { type: 'button', onclick: async () => {
    if (!confirm(`Roll the ${key} policy back to the version before it?`)) return;
    try {
      await request('POST', `${SRC}/${segment(kind)}/rollback`);
      showNotice(`The ${key} policy was rolled back.`, 'ok');
    } catch (error) {
      showError(error, `roll back the ${key} policy`);
    }
  } }, 'Roll back') : null;
  return el('div', { class: 'admin-actions' }, form, rollback);
}
