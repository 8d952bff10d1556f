// views/project-page.js — one project (#/project/NAME, GET
// /ws/v1/quota/projects/{project}): its budget, a chart of credits used over
// the last hour, use per day and user, grants, and for administrators a grant
// form (POST …/grant). Reloads when the budgets topic changes.

import { getJson, sendJson, segment } from '../api.js';
import { lineChart } from '../chart.js';
import { el, figuresAt, table, num } from '../dom.js';
import { clock, credits, hours, perHour, time } from '../format.js';
import { isAdmin } from '../identity.js';
import { describeError, showError, showNotice } from '../notice.js';
import { facts, pageHead, panel, reloadOn } from './panel.js';

export function mountProjectPage(outlet, name) {
  const src = `/ws/v1/quota/projects/${segment(name)}`;
  const budget = panel('project', 'Budget');
  const chart = panel('project-history', 'Credits used (last hour)');
  const daily = panel('project-daily', 'Use per day and user');
  const grants = panel('project-grants', 'Grants');
  const grantForm = isAdmin() ? grantFormFor(name, src, () => load()) : null;
  outlet.replaceChildren(pageHead('Project ', name), budget.section, chart.section,
    el('div', { class: 'columns' }, daily.section, grants.section));
  if (grantForm) grants.section.append(grantForm);

  async function load() {
    let project;
    try {
      project = await getJson(src);
    } catch (error) {
      budget.body.replaceChildren(el('p', { class: 'error-text' }, describeError(error, `read project ${name}`)));
      return;
    }
    const f = figuresAt(src, '', project);
    budget.section.className = `panel budget-${project.state}`;
    budget.body.replaceChildren(facts([
      ['State', f('state', String, { class: `badge badge-${String(project.state).replace(/[^a-z]/g, '')}` })],
      ['Remaining', f('remaining', credits)], ['Used', f('total_used', credits)],
      ['Spent in the last hour', f('burn_rate_per_hour', perHour)], ['Hours left', f('hours_left', hours)],
      ['Enforcement', f('enforce', String)],
    ]));
    const points = (project.history ?? []).map((point, i) => ({
      x: point.at_ms,
      y: point.total_used,
      figure: { src, path: `/history/${i}/total_used`, value: point.total_used },
    }));
    chart.body.replaceChildren(lineChart(points, { width: 1200, height: 220, formatX: clock, formatY: credits, label: 'credits used over time' }));
    daily.body.replaceChildren(table('daily', ['Day', 'User', ['Credits', 'num']], (project.daily ?? []).map((row, i) => {
      const g = figuresAt(src, `/daily/${i}`, row);
      return el('tr', { 'data-key': `${row.day} ${row.user}` }, el('td', null, row.day), el('td', null, row.user), num(g('credits', credits)));
    })));
    grants.body.replaceChildren(table('grants', ['When', 'By', ['Credits', 'num']], (project.grants ?? []).map((row, i) => {
      const g = figuresAt(src, `/grants/${i}`, row);
      return el('tr', null, el('td', null, g('at_ms', time)), el('td', null, row.granted_by), num(g('credits', credits)));
    })));
  }
  return reloadOn(['budgets'], load);
}

function grantFormFor(name, src, reload) {
  const amount = el('input', { type: 'number', min: 0.01, step: 'any', required: true, placeholder: 'credits', 'aria-label': 'credits to grant' });
  const button = el('button', { type: 'submit' }, 'Grant');
  return el('form', { class: 'inline-form grant-form', onsubmit: async (event) => {
    event.preventDefault();
    const creditsToGrant = Number(amount.value);
    if (!(creditsToGrant > 0)) return;
    button.disabled = true;
    try {
      const after = await sendJson('POST', `${src}/grant`, { credits: creditsToGrant });
      showNotice(`Granted ${credits(creditsToGrant)} credits to ${name}: ${credits(after.remaining)} left.`, 'ok');
      amount.value = '';
      reload();
    } catch (error) {
      showError(error, `grant credits to ${name}`);
    } finally {
      button.disabled = false;
    }
  } }, el('h3', null, 'Grant credits'), amount, button);
}
