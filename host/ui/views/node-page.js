// views/node-page.js — one node (#/node/ID, GET /ws/v1/cluster/nodes/{id}):
// its fields and its allocation against capacity; reloads when the nodes
// topic changes.

import { getJson, segment } from '../api.js';
import { badge, el, figuresAt } from '../dom.js';
import { count, time } from '../format.js';
import { describeError } from '../notice.js';
import { resourceBars } from '../render/nodes.js';
import { facts, pageHead, panel, reloadOn } from './panel.js';

export function mountNodePage(outlet, id) {
  const src = `/ws/v1/cluster/nodes/${segment(id)}`;
  const head = el('div');
  const details = panel('node', 'Node');
  outlet.replaceChildren(head, details.section);
  head.replaceChildren(pageHead('Node ', el('span', { class: 'mono' }, id)));

  async function load() {
    let node;
    try {
      node = (await getJson(src)).node;
    } catch (error) {
      details.body.replaceChildren(el('p', { class: 'error-text' }, describeError(error, `read node ${id}`)));
      return;
    }
    const f = figuresAt(src, '/node', node);
    const [memory, vcores, gpus] = resourceBars(src, '/node', node);
    head.replaceChildren(pageHead('Node ', el('span', { class: 'mono' }, node.id), ' ', badge(node.state)));
    details.body.replaceChildren(
      facts([['Memory', memory], ['VCores', vcores], ['GPUs', gpus]], 'facts-bars'),
      facts([
        ['State', f('state', String)], ['Kind', f('kind', String)], ['Owner', f('owner', String)],
        ['Host', f('nodeHostName', String)], ['Log address', f('httpAddress', String)], ['Rack', f('rack', String)],
        ['Label', node.nodeLabels?.[0] ?? 'none (the default partition)'],
        ['Containers', f('numContainers', count)],
        ['Waiting in its queue (opportunistic)', f('numQueuedContainers', count)],
        ['Last heartbeat', f('lastHealthUpdate', time)],
        ['Health report', node.healthReport ? f('healthReport', String) : 'healthy'],
        ['Isolation', f('isolation', String)], ['Version', f('version', String)],
        ['Attributes', attributes(node)],
      ]));
  }
  return reloadOn(['nodes'], load);
}

/** Its attributes as prefix/name=value, or a dash. */
function attributes(node) {
  const list = node.nodeAttributesInfo?.nodeAttributeInfo ?? [];
  if (list.length === 0) return el('span', { class: 'muted' }, '—');
  return el('span', { class: 'mono' }, list.map((a) => `${a.prefix}/${a.name}=${a.value}`).join(' '));
}
