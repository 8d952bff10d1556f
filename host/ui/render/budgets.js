// render/budgets.js — every project's budget (GET /ws/v1/quota/budgets):
// credits left, used, credits spent in the last hour, hours left at that
// rate, state (low and exhausted highlighted when budgets are enforced;
// "unenforced" otherwise), and the rules in force.

import { segment } from '../api.js';
import { badge, el, figuresAt, table, num } from '../dom.js';
import { credits, hours, perHour } from '../format.js';

const SRC = '/ws/v1/quota/budgets';

export function renderBudgets(body, data) {
  const f = figuresAt(SRC, '', data);
  const rows = (data.projects ?? []).map((project, index) => {
    const g = figuresAt(SRC, `/projects/${index}`, project);
    return el('tr', { 'data-key': project.project, class: `budget-${project.state}` },
      el('td', null, el('a', { href: `#/project/${segment(project.project)}` }, project.project)),
      el('td', null, g('state', (s) => s, { class: `badge badge-${String(project.state).replace(/[^a-z]/g, '')}` })),
      num(g('remaining', credits)),
      num(g('total_used', credits)),
      num(g('burn_rate_per_hour', perHour)),
      num(g('hours_left', hours)));
  });
  body.replaceChildren(
    el('p', { class: 'facts-line' },
      'Enforcement ', f('enforce', String, { class: 'badge' }),
      ' · low below ', f('warn_credits', credits), ' · new projects get ', f('default_credits', credits)),
    rows.length
      ? table('budgets', ['Project', 'State', ['Remaining', 'num'], ['Used', 'num'], ['Last hour', 'num'], ['Left', 'num']], rows)
      : el('p', { class: 'muted' }, 'No projects yet.'));
}
