// render/metrics.js — YARN's cluster metrics row (GET /ws/v1/cluster/metrics):
// apps by state, containers, memory / vcores / GPUs, nodes.

import { el, figuresAt } from '../dom.js';
import { count, mb } from '../format.js';

const SRC = '/ws/v1/cluster/metrics';

const GROUPS = [
  ['Apps', [['Submitted', 'appsSubmitted'], ['Pending', 'appsPending'], ['Running', 'appsRunning'],
    ['Completed', 'appsCompleted'], ['Killed', 'appsKilled'], ['Failed', 'appsFailed']]],
  ['Containers', [['Allocated', 'containersAllocated'], ['Pending', 'containersPending']]],
  ['Memory', [['Used', 'allocatedMB', mb], ['Total', 'totalMB', mb], ['Available', 'availableMB', mb]]],
  ['VCores', [['Used', 'allocatedVirtualCores'], ['Total', 'totalVirtualCores'], ['Available', 'availableVirtualCores']]],
  ['GPUs', [['Used', 'allocatedGPUs'], ['Total', 'totalGPUs']]],
  ['Nodes', [['Active', 'activeNodes'], ['Lost', 'lostNodes'], ['Unhealthy', 'unhealthyNodes'], ['Total', 'totalNodes']]],
];

export function renderMetrics(body, data) {
  const f = figuresAt(SRC, '/clusterMetrics', data.clusterMetrics);
  body.replaceChildren(el('div', { class: 'metrics' }, GROUPS.map(([title, items]) =>
    el('div', { class: 'metric-group' },
      el('h3', null, title),
      el('dl', null, items.map(([label, key, format = count]) =>
        el('div', { class: 'metric' }, el('dt', null, label), el('dd', null, f(key, format)))))))));
}
