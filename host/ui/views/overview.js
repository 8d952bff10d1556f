// views/overview.js — the main page (#/): cluster metrics, queues, their
// users' fading use, prices,
// budgets, apps, nodes, policies and the submit form, each drawn from the
// latest data of its live topic.

import { el } from '../dom.js';
import { mountApps } from '../render/apps.js';
import { renderBudgets } from '../render/budgets.js';
import { renderMetrics } from '../render/metrics.js';
import { renderNodes } from '../render/nodes.js';
import { mountPolicies } from '../render/policies.js';
import { renderPrices } from '../render/prices.js';
import { renderQueues } from '../render/queues.js';
import { renderSubmitForm } from '../render/submit.js';
import { mountUsage } from '../render/usage.js';
import { follow, panel } from './panel.js';

export function mountOverview(outlet) {
  const metrics = panel('metrics', 'Cluster metrics');
  const queues = panel('queues', 'Queues');
  const usage = panel('usage', 'Fading use');
  const prices = panel('prices', 'Prices');
  const budgets = panel('budgets', 'Budgets');
  const apps = panel('apps', 'Applications');
  const nodes = panel('nodes', 'Nodes');
  const policies = panel('policies', 'Policies');
  const submit = panel('submit', 'Submit an app');
  renderSubmitForm(submit.body);

  outlet.replaceChildren(el('div', { class: 'overview' },
    [metrics, queues, usage, prices, budgets, apps, nodes, policies, submit].map((p) => p.section)));

  const updateApps = mountApps(apps.body);
  const updatePolicies = mountPolicies(policies.body);
  const stops = [
    mountUsage(usage.body),
    follow('metrics', metrics.body, (data) => renderMetrics(metrics.body, data)),
    follow('scheduler', queues.body, (data) => renderQueues(queues.body, data)),
    follow('prices', prices.body, (data) => renderPrices(prices.body, data)),
    follow('budgets', budgets.body, (data) => renderBudgets(budgets.body, data)),
    follow('apps', apps.body, updateApps),
    follow('nodes', nodes.body, (data) => renderNodes(nodes.body, data)),
    follow('policies', policies.body, updatePolicies),
  ];
  return () => stops.forEach((stop) => stop());
}
