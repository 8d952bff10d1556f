// render/apps.js — the apps table (GET /ws/v1/cluster/apps): id, name, user,
// queue, project, state, containers, resources, credits; for apps that wait,
// the reason and queue position from GET /ws/v1/cluster/apps/{id} (the list
// does not carry them). A state filter and a text filter stay across updates.

import { getJson, segment } from '../api.js';
import { badge, el, figure, figuresAt, table, num } from '../dom.js';
import { count, credits, mb } from '../format.js';
import { subscribe } from '../store.js';

const SRC = '/ws/v1/cluster/apps';
const ENDED = new Set(['FINISHED', 'FAILED', 'KILLED']);
/** At most this many waiting apps get their diagnosis fetched per update. */
const DIAGNOSED_MAX = 25;
const DIAGNOSE_GAP_MS = 2000;

export const appSrc = (id) => `${SRC}/${segment(id)}`;
const isWaiting = (app) => !ENDED.has(app.state) && app.pendingContainers > 0;

/** Mounts the table with its filters into `body`; returns update(data). */
export function mountApps(body) {
  const diagnoses = new Map(); // app id → {diagnostics, positionInQueue} of GET …/apps/{id}
  let latest = null;
  let fetching = null;
  let cut = null;
  subscribe('cut', (body) => { cut = body; draw(); });

  const stateFilter = el('select', { 'aria-label': 'filter by state', onchange: () => draw() },
    ['all', 'active', 'ACCEPTED', 'RUNNING', 'FINISHED', 'FAILED', 'KILLED']
      .map((s) => el('option', { value: s }, s)));
  const textFilter = el('input', { type: 'search', placeholder: 'filter id, name, user, queue, project', oninput: () => draw(), 'aria-label': 'filter apps' });
  const shown = el('span', { class: 'muted' });
  const holder = el('div', { class: 'scroll' });
  body.replaceChildren(el('div', { class: 'toolbar' }, stateFilter, textFilter, shown), holder);

  function matches(app) {
    const state = stateFilter.value;
    if (state === 'active' && ENDED.has(app.state)) return false;
    if (state !== 'all' && state !== 'active' && app.state !== state) return false;
    const text = textFilter.value.trim().toLowerCase();
    return !text || [app.id, app.name, app.user, app.queue, app.project]
      .some((field) => String(field).toLowerCase().includes(text));
  }

  function draw() {
    if (!latest) return;
    const apps = latest.apps?.app ?? [];
    // Newest first; the index in the body stays the JSON pointer's.
    const rows = apps.map((app, index) => ({ app, index }))
      .filter(({ app }) => matches(app))
      .sort((a, b) => b.app.submittedTime - a.app.submittedTime || b.index - a.index)
      .map(({ app, index }) => appRow(app, index, diagnoses.get(app.id)));
    // The live stream keeps each topic within a bound: with many apps it
    // carries only the newest (its `cut` topic says how many).
    const limit = cut?.apps_limit;
    const newest = limit && limit < 1000 && apps.length >= limit ? ` (the newest ${limit}: the live list is cut to ${Math.round(cut.max_bytes / 1024)} KiB)` : '';
    shown.textContent = `${rows.length} of ${apps.length}${newest}`;
    holder.replaceChildren(table('apps', ['Id', 'Name', 'User', 'Queue', 'Project', 'State',
      ['Running', 'num'], ['Pending', 'num'], ['Memory', 'num'], ['VCores', 'num'], ['Credits', 'num'],
      'Waiting because'], rows));
  }

  /** Diagnoses of the waiting apps, one request at a time in the background. */
  async function diagnose(apps) {
    const waiting = apps.filter(isWaiting).slice(0, DIAGNOSED_MAX);
    const wanted = new Set(waiting.map((a) => a.id));
    for (const id of diagnoses.keys()) if (!wanted.has(id)) diagnoses.delete(id);
    for (const app of waiting) {
      try {
        const detail = (await getJson(appSrc(app.id))).app;
        diagnoses.set(app.id, { diagnostics: detail.diagnostics, positionInQueue: detail.positionInQueue });
      } catch {
        diagnoses.delete(app.id); // ended or gone meanwhile: the next update says
      }
    }
    draw();
  }

  /** What the diagnoses depend on: which apps wait, for how many containers,
   *  and what runs (not running apps' clocks, which tick every update). */
  const waitingKey = (data) => JSON.stringify((data.apps?.app ?? [])
    .filter((app) => !ENDED.has(app.state))
    .map((app) => [app.id, app.pendingContainers, app.runningContainers]));
  let diagnosedFor = null;

  /** Diagnoses follow the list when what they depend on changed, at most
   *  one pass per DIAGNOSE_GAP_MS. */
  async function diagnoseLatest() {
    while (waitingKey(latest) !== diagnosedFor) {
      diagnosedFor = waitingKey(latest);
      const started = Date.now();
      await diagnose(latest.apps?.app ?? []);
      await new Promise((resolve) => setTimeout(resolve, Math.max(0, DIAGNOSE_GAP_MS - (Date.now() - started))));
    }
  }

  return function update(data) {
    latest = data;
    draw();
    if (waitingKey(data) !== diagnosedFor) {
      fetching ??= diagnoseLatest().finally(() => { fetching = null; });
    }
  };
}

function appRow(app, index, diagnosis) {
  const f = figuresAt(SRC, `/apps/app/${index}`, app);
  const href = `#/app/${segment(app.id)}`;
  return el('tr', { 'data-key': app.id, class: `state-${app.state.toLowerCase()}` },
    el('td', { class: 'mono' }, el('a', { href }, app.id)),
    el('td', { class: 'clip', title: app.name }, app.name),
    el('td', null, app.user),
    el('td', null, app.queue),
    el('td', null, el('a', { href: `#/project/${segment(app.project)}` }, app.project)),
    el('td', null, badge(app.state)),
    num(f('runningContainers', count)),
    num(f('pendingContainers', count)),
    num(f('allocatedMB', mb)),
    num(f('allocatedVCores', count)),
    num(f('credits', credits)),
    el('td', { class: 'reason' }, reason(app, index, diagnosis)));
}

function reason(app, index, diagnosis) {
  if (diagnosis && isWaiting(app)) {
    const src = appSrc(app.id);
    return [
      diagnosis.positionInQueue !== undefined
        ? [figure(src, '/app/positionInQueue', diagnosis.positionInQueue, (p) => `position ${p} in its queue`,
          { class: 'position', title: 'apps of its queue served before it, plus one (by priority, then submission)' }), ': ']
        : null,
      diagnosis.diagnostics !== undefined
        ? figure(src, '/app/diagnostics', diagnosis.diagnostics, String, { class: 'text', title: diagnosis.diagnostics }) : null,
    ];
  }
  if (app.diagnostics !== undefined) {
    return figure(SRC, `/apps/app/${index}/diagnostics`, app.diagnostics, String, { class: 'text', title: app.diagnostics });
  }
  return isWaiting(app) ? el('span', { class: 'muted' }, 'open the app for the reason') : null;
}
