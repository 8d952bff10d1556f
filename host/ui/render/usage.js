// render/usage.js — fading use (GET /ws/v1/cluster/usage?limit=20): each
// queue's and the busiest users' resource-seconds, halved every
// weft.scheduler.usage.half-life-ms; reloaded when the queues' use changes.
// Plain text, not checked figures: the values fade between two reads.

import { getJson } from '../api.js';
import { el, table, num } from '../dom.js';
import { describeError } from '../notice.js';
import { reloadOn } from '../views/panel.js';

const SRC = '/ws/v1/cluster/usage?limit=20';
const whole = (x) => Math.round(x ?? 0).toLocaleString();

export function mountUsage(body) {
  async function load() {
    let usage;
    try {
      usage = (await getJson(SRC)).usage;
    } catch (error) {
      body.replaceChildren(el('p', { class: 'error-text' }, describeError(error, 'read the fading use')));
      return;
    }
    const hours = usage.halfLifeMs / 3600000;
    const row = (name, u) => el('tr', { 'data-key': name }, el('td', { class: 'mono' }, name),
      num(whole(u.memorySeconds)), num(whole(u.vcoreSeconds)), num(whole(u.gpuSeconds)));
    const headers = (first) => [first, ['MB-seconds', 'num'], ['Vcore-seconds', 'num'], ['GPU-seconds', 'num']];
    const users = usage.users.length === 0
      ? [el('p', { class: 'muted' }, 'No user has used anything yet.')]
      : [table('usage-users', headers('User'), usage.users.map((u) => row(u.user, u)))];
    if (usage.usersTotal > usage.users.length) {
      users.push(el('p', { class: 'muted' }, `The ${usage.users.length} busiest of ${usage.usersTotal} users.`));
    }
    body.replaceChildren(
      el('p', { class: 'muted' }, hours > 0 ? `Halved every ${hours.toLocaleString()} h.` : 'Not fading.'),
      el('div', { class: 'columns' },
        el('div', null, table('usage-queues', headers('Queue'), usage.queues.map((q) => row(q.queue, q)))),
        el('div', null, users)));
  }
  return reloadOn(['scheduler'], load);
}
