// store.js — the latest body of each live topic (each exactly what its GET
// endpoint answers), and the views that want to hear when one changes.

/** Topic → the GET endpoint whose body it carries. */
export const TOPICS = {
  metrics: '/ws/v1/cluster/metrics',
  scheduler: '/ws/v1/cluster/scheduler',
  apps: '/ws/v1/cluster/apps',
  nodes: '/ws/v1/cluster/nodes',
  prices: '/ws/v1/quota/prices',
  budgets: '/ws/v1/quota/budgets',
  policies: '/ws/v1/policies',
};

const latest = new Map();
const listeners = new Map();

export function publish(topic, body) {
  latest.set(topic, body);
  for (const listener of listeners.get(topic) ?? []) listener(body);
}

export const latestOf = (topic) => latest.get(topic);

/** Calls `listener(body)` at each change, at most once per animation frame,
 *  and now if the topic has data (unless `now` is false). Returns the
 *  unsubscribe function. */
export function subscribe(topic, listener, { now = true } = {}) {
  let frame = 0;
  const onChange = () => {
    if (frame) return;
    frame = requestAnimationFrame(() => {
      frame = 0;
      listener(latest.get(topic));
    });
  };
  if (!listeners.has(topic)) listeners.set(topic, new Set());
  listeners.get(topic).add(onChange);
  if (now && latest.has(topic)) listener(latest.get(topic));
  return () => {
    cancelAnimationFrame(frame);
    listeners.get(topic).delete(onChange);
  };
}
