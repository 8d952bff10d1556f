// router.js — hash routes (#/, #/app/ID, #/node/ID, #/project/NAME) to views.
// A view is mount(outlet, param) → cleanup; the previous view's cleanup (its
// subscriptions) runs before the next one mounts.

import { el } from './dom.js';

/** routes: [[RegExp with at most one group, mount], …]. */
export function startRouter(outlet, routes) {
  let cleanup = null;

  function show() {
    cleanup?.();
    cleanup = null;
    const hash = location.hash || '#/';
    for (const [pattern, mount] of routes) {
      const match = hash.match(pattern);
      if (!match) continue;
      let param;
      try {
        param = match[1] === undefined ? undefined : decodeURIComponent(match[1]);
      } catch {
        break; // a malformed escape: no such page
      }
      cleanup = mount(outlet, param) ?? null;
      return;
    }
    outlet.replaceChildren(el('p', { class: 'error-text' }, 'No such page. ', el('a', { href: '#/' }, 'Back to the overview')));
  }

  window.addEventListener('hashchange', () => {
    show();
    window.scrollTo(0, 0);
  });
  show();
  return { refresh: show };
}
