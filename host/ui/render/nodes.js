// render/nodes.js — the nodes table (GET /ws/v1/cluster/nodes): state, kind,
// rack, node label, containers, memory / vcores / GPUs allocated against capacity as bars,
// the last heartbeat and the health report.

import { segment } from '../api.js';
import { badge, el, figuresAt, table, num, usageBar } from '../dom.js';
import { count, mb, time } from '../format.js';

const SRC = '/ws/v1/cluster/nodes';

export function renderNodes(body, data) {
  const nodes = data.nodes?.node ?? [];
  if (nodes.length === 0) {
    body.replaceChildren(el('p', { class: 'muted' }, 'No nodes registered.'));
    return;
  }
  const withGpus = nodes.some((n) => n.usedGPUs + n.availableGPUs > 0);
  const rows = nodes.map((node, index) => nodeRow(node, index, withGpus));
  body.replaceChildren(table('nodes', ['Node', 'State', 'Kind', 'Rack', 'Label', ['Containers', 'num'], 'Memory', 'VCores',
    withGpus ? 'GPUs' : null, 'Last heartbeat', 'Health'].filter(Boolean), rows));
}

/** The three resource bars of a node at `base` in the body of `src`. */
export function resourceBars(src, base, node, withGpus = true) {
  const f = figuresAt(src, base, node);
  const bar = (usedKey, freeKey, format) => usageBar(node[usedKey], node[freeKey],
    [f(usedKey, format, { title: 'allocated' }), ' used · ', f(freeKey, format, { title: 'available' }), ' free']);
  return [
    bar('usedMemoryMB', 'availMemoryMB', mb),
    bar('usedVirtualCores', 'availableVirtualCores', count),
    withGpus ? bar('usedGPUs', 'availableGPUs', count) : null,
  ];
}

function nodeRow(node, index, withGpus) {
  const base = `/nodes/node/${index}`;
  const f = figuresAt(SRC, base, node);
  const [memory, vcores, gpus] = resourceBars(SRC, base, node, withGpus);
  return el('tr', { 'data-key': node.id, class: node.state === 'RUNNING' ? null : `state-${node.state.toLowerCase()}` },
    el('td', { class: 'mono' }, el('a', { href: `#/node/${segment(node.id)}` }, node.id)),
    el('td', null, badge(node.state)),
    el('td', null, node.kind),
    el('td', { class: 'mono' }, f('rack', String)),
    el('td', { class: 'mono' }, node.nodeLabels?.[0] ?? el('span', { class: 'muted' }, '—')),
    num(f('numContainers', count)),
    el('td', null, memory),
    el('td', null, vcores),
    withGpus ? el('td', null, gpus) : null,
    el('td', null, f('lastHealthUpdate', time)),
    el('td', null, node.healthReport ? node.healthReport : el('span', { class: 'muted' }, node.state === 'RUNNING' ? 'healthy' : '—')));
}
