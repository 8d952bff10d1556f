// render/prices.js — live prices (GET /ws/v1/quota/prices): the pricing
// policy, the multiplicators, and credits per second for one unit of each
// resource.

import { el, figuresAt } from '../dom.js';
import { count, multiplier, price, yesNo } from '../format.js';

const SRC = '/ws/v1/quota/prices';

export function renderPrices(body, data) {
  if (data.RemoteException) {
    body.replaceChildren(el('p', { class: 'error-text' }, `Prices unavailable: ${data.RemoteException.message}`));
    return;
  }
  const f = figuresAt(SRC, '', data);
  const row = (label, ...value) => el('div', { class: 'metric' }, el('dt', null, label), el('dd', null, value));
  body.replaceChildren(
    el('dl', { class: 'facts' },
      row('Pricing policy', data.pricing_policy ?? el('span', { class: 'muted' }, 'none')),
      row('Variable pricing', f('variable_pricing', yesNo))),
    el('div', { class: 'price-grid' },
      el('div', { class: 'metric-group' }, el('h3', null, 'Multiplicators'),
        el('dl', null,
          row('General', f(['multiplicators', 'general'], multiplier)),
          row('GPU', f(['multiplicators', 'gpu'], multiplier)))),
      el('div', { class: 'metric-group' }, el('h3', null, 'Credits per second'),
        el('dl', null,
          row(['per ', f(['units', 'vcore'], count), ' vcore'], f(['price_per_second', 'vcore'], price)),
          row(['per ', f(['units', 'memory_mb'], count), ' MB'], f(['price_per_second', 'memory'], price)),
          row(['per ', f(['units', 'gpu'], count), ' GPU'], f(['price_per_second', 'gpu'], price))))));
}
