// views/app-page.js — one app (#/app/ID): its fields and diagnosis (GET
// /ws/v1/cluster/apps/{id}), its asks, its containers (…/containers) with
// their stdout/stderr (…/containers/{c}/logs/{stream}), and a kill button for
// its user and administrators. Reloads when the apps topic changes.

import { getJson, getText, sendJson, segment } from '../api.js';
import { badge, el, figuresAt, table, num } from '../dom.js';
import { count, credits, duration, mb, progress, time } from '../format.js';
import { mayKill } from '../identity.js';
import { describeError, showError, showNotice } from '../notice.js';
import { facts, pageHead, panel, reloadOn } from './panel.js';

const ENDED = new Set(['FINISHED', 'FAILED', 'KILLED']);
const LOG_TAIL_BYTES = 65536;
const text = String;
// YARN's LIFETIME timeout: an ISO time with a +hhmm offset, or UNLIMITED.
const LIFETIME = ['timeouts', 'timeout', 0];
const lifetimeEnd = (expiry) => (expiry === 'UNLIMITED' ? 'unlimited'
  : time(Date.parse(String(expiry).replace(/([+-]\d\d)(\d\d)$/, '$1:$2'))));
const lifetimeLeft = (seconds) => (seconds < 0 ? '—' : duration(seconds * 1000));

const FIELDS = [
  ['Name', 'name', text], ['User', 'user', text], ['Queue', 'queue', text], ['Project', 'project', text],
  ['State', 'state', text], ['Final status', 'finalStatus', text], ['Priority', 'priority', count],
  ['Type', 'applicationType', text], ['Tags', 'applicationTags', text],
  ['Node label', 'appNodeLabelExpression', text], ['Position in queue', 'positionInQueue', count],
  ['Submitted', 'submittedTime', time], ['Started', 'startedTime', time], ['Finished', 'finishedTime', time],
  ['Elapsed', 'elapsedTime', duration], ['Lifetime ends', [...LIFETIME, 'expiryTime'], lifetimeEnd],
  ['Lifetime left', [...LIFETIME, 'remainingTimeInSeconds'], lifetimeLeft],
  ['Progress', 'progress', progress], ['Credits', 'credits', credits],
  ['Memory', 'allocatedMB', mb], ['VCores', 'allocatedVCores', count], ['GPUs', 'allocatedGPUs', count],
  ['Running containers', 'runningContainers', count], ['Pending containers', 'pendingContainers', count],
  ['Finished containers', 'finishedContainers', count], ['Failed containers', 'failedContainers', count],
  ['Preempted containers', 'preemptedContainers', count], ['Lost containers', 'lostContainers', count],
  ['Exit status', 'exitStatus', count], ['MB-seconds', 'memorySeconds', count],
  ['VCore-seconds', 'vcoreSeconds', count], ['GPU-seconds', 'gpuSeconds', count],
];

export function mountAppPage(outlet, id) {
  const src = `/ws/v1/cluster/apps/${segment(id)}`;
  const head = el('div');
  const summary = panel('app', 'Application');
  const containers = panel('containers', 'Containers');
  const log = el('div', { class: 'log-viewer' });
  outlet.replaceChildren(head, summary.section, containers.section, log);
  head.replaceChildren(pageHead('Application ', el('span', { class: 'mono' }, id)));

  async function load() {
    let app;
    try {
      app = (await getJson(src)).app;
    } catch (error) {
      summary.body.replaceChildren(el('p', { class: 'error-text' }, describeError(error, `read application ${id}`)));
      return;
    }
    const f = figuresAt(src, '/app', app);
    head.replaceChildren(pageHead('Application ', el('span', { class: 'mono' }, app.id), ' ', badge(app.state),
      mayKill(app) && !ENDED.has(app.state) ? killButton(app, src, load) : null));
    summary.body.replaceChildren(
      facts(FIELDS.map(([label, key, format]) => [label, f(key, format)])),
      app.diagnostics !== undefined
        ? el('div', { class: 'diagnostics' }, el('h3', null, 'Diagnostics'), f('diagnostics', text, { class: 'pre' }))
        : null,
      asks(src, app.asks ?? []));
    await loadContainers(src, app.id, containers.body, log);
  }
  // Reloaded when this app's counts or state change, not at each tick of
  // its elapsed time.
  return reloadOn(['apps'], load, (_, body) => {
    const app = body?.apps?.app?.find((a) => a.id === id);
    return app ? [app.state, app.runningContainers, app.pendingContainers,
      app.finishedContainers, app.credits] : null;
  });
}

function asks(src, list) {
  const rows = list.map((ask, i) => {
    const f = figuresAt(src, `/app/asks/${i}`, ask);
    return el('tr', { 'data-key': String(i) },
      num(f('count', count)), num(f('pending', count)), num(f(['resources', 'memory_mb'], mb)),
      num(f(['resources', 'vcores'], count)), num(f(['resources', 'gpus'], count)),
      num(f('duration_ms', duration)), num(f('max_attempts', count)),
      // A gang: its minimum, and whether it has been placed whole.
      num(f(['gang', 'minimum'], count), ask.gang ? (ask.gang.placed ? ' placed' : ' waiting') : null),
      // Its partition: a node label, or the default one.
      el('td', { class: 'mono' }, ask.partition ? f('partition', text) : el('span', { class: 'muted' }, 'default')),
      // Its allocation tags and placement constraint, if any.
      el('td', { class: 'mono' }, (ask.allocation_tags ?? []).join(', ') || el('span', { class: 'muted' }, '—')),
      el('td', { class: 'mono' }, ask.placement_constraint ?? el('span', { class: 'muted' }, '—')),
      // Opportunistic asks may wait in a busy agent's queue.
      el('td', null, ask.execution_type ?? 'guaranteed'));
  });
  return el('div', null, el('h3', null, 'Asks'), table('asks', [['Containers', 'num'], ['Pending', 'num'],
    ['Memory', 'num'], ['VCores', 'num'], ['GPUs', 'num'], ['Duration', 'num'], ['Max attempts', 'num'],
    ['Gang (at least)', 'num'], 'Node label', 'Tags', 'Constraint', 'Execution type'], rows));
}

async function loadContainers(appSrc, appId, body, log) {
  const src = `${appSrc}/containers`;
  let list;
  try {
    list = (await getJson(src)).containers ?? [];
  } catch (error) {
    body.replaceChildren(el('p', { class: 'error-text' }, describeError(error, 'see its containers')));
    return;
  }
  if (list.length === 0) {
    body.replaceChildren(el('p', { class: 'muted' }, 'No containers yet.'));
    return;
  }
  // Newest first; the pointer keeps the body's index.
  const rows = list.map((container, index) => ({ container, index })).reverse().map(({ container, index }) => {
    const f = figuresAt(src, `/containers/${index}`, container);
    return el('tr', { 'data-key': container.id },
      el('td', { class: 'mono' }, container.id),
      el('td', { class: 'mono' }, el('a', { href: `#/node/${segment(container.node)}` }, container.node)),
      num(f('attempt', count)),
      el('td', null, f('startTimeMs', time)),
      el('td', null, f('finishTimeMs', time)),
      num(f('exitStatus', count)),
      el('td', { class: 'clip', title: container.diagnostics ?? '' }, container.diagnostics ?? ''),
      el('td', null, ['stdout', 'stderr'].map((stream) => logLink(appSrc, appId, container.id, stream, log))));
  });
  body.replaceChildren(table('containers', ['Container', 'Node', ['Attempt', 'num'], 'Started', 'Finished',
    ['Exit status', 'num'], 'Diagnostics', 'Logs'], rows));
}

/** A link to the log; clicking fetches it with the credentials and shows it. */
function logLink(appSrc, appId, containerId, stream, log) {
  const path = `${appSrc}/containers/${segment(containerId)}/logs/${stream}?tail=${LOG_TAIL_BYTES}`;
  return el('a', { href: path, class: 'log-link', onclick: async (event) => {
    event.preventDefault();
    const title = el('h3', null, `${containerId} ${stream} (last ${LOG_TAIL_BYTES / 1024} KiB)`);
    const close = el('button', { type: 'button', onclick: () => log.replaceChildren() }, 'Close');
    const content = el('pre', { class: 'log' }, 'loading…');
    log.replaceChildren(el('div', { class: 'panel' }, el('header', { class: 'panel-head' }, title, close), content));
    try {
      const text = await getText(path);
      content.textContent = text || '(empty)';
    } catch (error) {
      content.textContent = describeError(error, `read ${stream} of ${containerId} (app ${appId})`);
    }
    log.scrollIntoView({ behavior: 'smooth', block: 'start' });
  } }, stream);
}

function killButton(app, src, reload) {
  return el('button', { type: 'button', class: 'danger', onclick: async () => {
    if (!confirm(`Kill ${app.id} (${app.name})?`)) return;
    try {
      const answer = await sendJson('PUT', `${src}/state`, { state: 'KILLED' });
      showNotice(`${app.id} is ${answer?.state ?? 'KILLED'}.`, 'ok');
      reload();
    } catch (error) {
      showError(error, `kill ${app.id}`);
    }
  } }, 'Kill');
}
