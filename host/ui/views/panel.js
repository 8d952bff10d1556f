// views/panel.js — a titled region of a page, and the glue that draws a live
// topic into it (one failed drawing says so in its region, not in the page).

import { el, waiting } from '../dom.js';
import { subscribe } from '../store.js';

export function panel(id, title, ...headerExtras) {
  const body = el('div', { class: 'panel-body' }, waiting());
  const section = el('section', { id, class: 'panel', 'aria-label': title },
    el('header', { class: 'panel-head' }, el('h2', null, title), headerExtras), body);
  return { section, body };
}

/** Draws `topic` into `body` with draw(data) at each change; returns unsubscribe. */
export function follow(topic, body, draw) {
  return subscribe(topic, (data) => {
    try {
      draw(data);
    } catch (error) {
      console.error(error);
      body.replaceChildren(el('p', { class: 'error-text' }, `Could not show this ${topic} data: ${error.message}`));
    }
  });
}

/** A detail page's own data: load() now and again whenever one of `topics`
 *  changes (with `key`, whenever what it picks out of the topic changed),
 *  never two at once. Returns the function that stops it. */
export function reloadOn(topics, load, key = null) {
  let running = null;
  let again = false;
  const run = () => {
    if (running) {
      again = true;
      return;
    }
    running = Promise.resolve(load()).catch(console.error).finally(() => {
      running = null;
      if (again) {
        again = false;
        run();
      }
    });
  };
  run();
  // Only when what `key` picks out of a topic changed (not at every
  // tick of running apps' clocks).
  const seen = new Map();
  const onTopic = (topic) => (body) => {
    if (key) {
      const picked = JSON.stringify(key(topic, body) ?? null);
      if (seen.get(topic) === picked) return;
      seen.set(topic, picked);
    }
    run();
  };
  const stops = topics.map((topic) => subscribe(topic, onTopic(topic), { now: false }));
  return () => stops.forEach((stop) => stop());
}

/** A definition list of figures: rows of [label, figure-or-text]. */
export const facts = (rows, extraClass = '') => el('dl', { class: `facts ${extraClass}`.trim() },
  rows.map(([label, value]) => el('div', { class: 'metric' }, el('dt', null, label), el('dd', null, value))));

/** A page's title line with a way back to the overview. */
export const pageHead = (...title) => el('div', { class: 'page-head' },
  el('a', { href: '#/', class: 'back' }, '← Overview'), el('h1', null, title));
