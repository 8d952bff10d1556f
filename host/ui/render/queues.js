// render/queues.js — the queue tree (GET /ws/v1/cluster/scheduler, nested in
// queues.queue) with YARN's bar per queue: capacity (dashed), used (green),
// used over capacity (orange), maximum (light); apps, users and pending;
// and, when the cluster has node labels, each queue's share and use of
// each label (capacities.queueCapacitiesByPartition).

import { el, figuresAt, table, num } from '../dom.js';
import { count, mb, percent } from '../format.js';

const SRC = '/ws/v1/cluster/scheduler';
const USERS_SHOWN = 3;

export function renderQueues(body, data) {
  const rows = [];
  walk(data.scheduler.schedulerInfo, '/scheduler/schedulerInfo', 0, rows);
  body.replaceChildren(legend(), table('queues', [
    'Queue', 'Capacity · used · max (of the cluster)', ['Capacity', 'num'], ['Used', 'num'],
    ['Used of capacity', 'num'], ['Max', 'num'], ['Apps', 'num'], 'Users (active · pending apps)',
    ['Pending', 'num'],
  ], rows), ...partitions(data.scheduler.schedulerInfo));
}

/** The per-label table (nothing when the cluster has no labels): every
 *  queue's share of each label it may use, and what it holds there. */
function partitions(root) {
  const rows = [];
  const visit = (queue, base, depth) => {
    (queue.capacities?.queueCapacitiesByPartition ?? []).forEach((capacity, i) => {
      if (capacity.partitionName === '') return; // the table above
      const usages = queue.resources?.resourceUsagesByPartition ?? [];
      const u = usages.findIndex((x) => x.partitionName === capacity.partitionName);
      const f = figuresAt(SRC, `${base}/capacities/queueCapacitiesByPartition/${i}`, capacity);
      const g = u < 0 ? null : figuresAt(SRC, `${base}/resources/resourceUsagesByPartition/${u}`, usages[u]);
      rows.push(el('tr', { 'data-key': `${queue.queuePath}/${capacity.partitionName}` },
        el('td', { class: 'queue-name', style: { paddingLeft: `${0.5 + depth * 1.2}em` }, title: queue.queuePath }, queue.queueName),
        el('td', { class: 'mono' }, capacity.partitionName),
        num(f('absoluteCapacity', percent)),
        num(f('absoluteUsedCapacity', percent)),
        num(f('absoluteMaxCapacity', percent)),
        num(g ? [g(['used', 'memory'], mb), ' · ', g(['used', 'vCores'], count), ' vc'] : '—'),
        num(g ? [g(['pending', 'memory'], mb), ' · ', g(['pending', 'vCores'], count), ' vc'] : '—')));
    });
    (queue.queues?.queue ?? []).forEach((child, i) => visit(child, `${base}/queues/queue/${i}`, depth + 1));
  };
  visit(root, '/scheduler/schedulerInfo', 0);
  if (rows.length === 0) return [];
  return [el('h3', null, 'Node labels (partitions)'), table('queue-partitions', [
    'Queue', 'Label', ['Capacity', 'num'], ['Used', 'num'], ['Max', 'num'], ['Holds', 'num'], ['Pending', 'num'],
  ], rows)];
}

function walk(queue, base, depth, rows) {
  rows.push(queueRow(queue, base, depth));
  (queue.queues?.queue ?? []).forEach((child, i) => walk(child, `${base}/queues/queue/${i}`, depth + 1, rows));
}

function queueRow(queue, base, depth) {
  const f = figuresAt(SRC, base, queue);
  return el('tr', { 'data-key': queue.queuePath, class: queue.state === 'RUNNING' ? null : 'muted' },
    el('td', { class: 'queue-name', style: { paddingLeft: `${0.5 + depth * 1.2}em` }, title: queue.queuePath },
      queue.queueName, queue.state === 'RUNNING' ? null : el('span', { class: 'badge' }, queue.state)),
    el('td', null, queueBar(queue)),
    num(f('absoluteCapacity', percent)),
    num(f('absoluteUsedCapacity', percent), by(queue)),
    num(f('usedCapacity', percent)),
    num(f('absoluteMaxCapacity', percent)),
    num(f('numApplications', count)),
    el('td', { class: 'users' }, users(queue, base)),
    num(f(['pendingResources', 'memory'], mb), ' · ', f(['pendingResources', 'vCores'], count), ' vc',
      queue.pendingResources?.gpus ? [' · ', f(['pendingResources', 'gpus'], count), ' gpu'] : null));
}

/** Which resource a queue's use is measured by (the one it uses the most
 *  of): " by vcores", so 100 % says what is full. */
function by(queue) {
  return queue.dominantResource
    ? el('span', { class: 'muted', title: 'its use is measured by the resource it uses the most of' }, ` ${queue.dominantResource}`)
    : null;
}

/** Every figure is a share of the cluster, so bars of all queues line up. */
function queueBar(queue) {
  const clamp = (x) => Math.max(0, Math.min(100, Number(x) || 0));
  const capacity = clamp(queue.absoluteCapacity);
  const used = clamp(queue.absoluteUsedCapacity);
  const maximum = clamp(queue.absoluteMaxCapacity);
  const over = Math.max(0, used - capacity);
  return el('div', {
    class: 'qbar',
    title: `capacity ${percent(capacity)}, used ${percent(used)}, maximum ${percent(maximum)} of the cluster`,
  },
  el('div', { class: 'qbar-max', style: { width: `${maximum}%` } }),
  el('div', { class: 'qbar-used', style: { width: `${Math.min(used, capacity)}%` } }),
  over > 0 ? el('div', { class: 'qbar-over', style: { left: `${capacity}%`, width: `${over}%` } }) : null,
  el('div', { class: 'qbar-capacity', style: { width: `${capacity}%` } }));
}

function users(queue, base) {
  const list = queue.users?.user ?? [];
  const shown = list.slice(0, USERS_SHOWN).map((user, i) => {
    const f = figuresAt(SRC, `${base}/users/user/${i}`, user);
    return el('span', { class: 'user' }, user.username, ' ',
      f('numActiveApplications', count, { title: 'active apps' }), '·',
      f('numPendingApplications', count, { title: 'pending apps' }));
  });
  if (list.length > USERS_SHOWN) shown.push(el('span', { class: 'more' }, `+${list.length - USERS_SHOWN} more`));
  return shown;
}

function legend() {
  const key = (cls, text) => el('span', { class: 'legend-item' }, el('span', { class: `legend-swatch ${cls}` }), text);
  return el('div', { class: 'legend' },
    key('qbar-capacity', 'Capacity'), key('qbar-used', 'Used'),
    key('qbar-over', 'Used (over capacity)'), key('qbar-max', 'Max capacity'));
}
