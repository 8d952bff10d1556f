// dom.js — building DOM nodes safely. Strings always become text nodes (never
// HTML), so names and users from the server cannot inject markup. "Figures"
// are spans that show a formatted value and carry data-src / data-path /
// data-value: the /ws/v1 endpoint, the JSON pointer into its body, and the raw
// JSON value, so a test can compare every number with the API.

/** An element: `props` are attributes (class, data-*, …), `on…` listeners,
 *  `style` as an object; children are nodes, strings, numbers or arrays. */
export function el(tag, props, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(props ?? {})) {
    if (value === undefined || value === null || value === false) continue;
    if (name === 'style') Object.assign(node.style, value);
    else if (name.startsWith('on') && typeof value === 'function') {
      node.addEventListener(name.slice(2), value);
    } else node.setAttribute(name, value === true ? '' : String(value));
  }
  append(node, children);
  return node;
}

export function append(node, children) {
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

/** A JSON pointer (RFC 6901) from its reference tokens. */
export function pointer(...tokens) {
  return tokens.map((t) => '/' + String(t).replaceAll('~', '~0').replaceAll('/', '~1')).join('');
}

/** A figure: `value` formatted, labelled with where it comes from. A value
 *  the body does not have (undefined) is a plain dash with no labels. */
export function figure(src, path, value, format = String, props = {}) {
  if (value === undefined) return el('span', { class: 'fig missing' }, '—');
  const text = value === null ? '—' : format(value);
  return el('span', {
    ...props,
    class: ['fig', props.class].filter(Boolean).join(' '),
    'data-src': src,
    'data-path': path,
    'data-value': JSON.stringify(value),
  }, text);
}

/** Figures of one object at `base` in the body of `src`:
 *  `f('usedMemoryMB', mb)` or `f(['resourcesUsed', 'memory'], mb)`. */
export function figuresAt(src, base, object) {
  return (key, format, props) => {
    const keys = [key].flat();
    const value = keys.reduce((o, k) => (o === null || o === undefined ? undefined : o[k]), object);
    return figure(src, base + pointer(...keys), value, format, props);
  };
}

export function badge(text, kind = String(text).toLowerCase()) {
  return el('span', { class: `badge badge-${kind.replace(/[^a-z0-9-]/g, '')}` }, text);
}

/** A table: headers as "text" or ["text", "class"], rows as <tr> nodes. */
export function table(className, headers, rows) {
  const head = headers.map((h) => {
    const [text, cls] = Array.isArray(h) ? h : [h, null];
    return el('th', { class: cls }, text);
  });
  return el('table', { class: `grid ${className}` },
    el('thead', null, el('tr', null, head)),
    el('tbody', null, rows));
}

/** A table cell for numbers (right-aligned). */
export const num = (...children) => el('td', { class: 'num' }, children);

/** A horizontal bar of `used` out of `used + free`, with its figures beside. */
export function usageBar(used, free, label) {
  const total = used + free;
  const share = total > 0 ? Math.min(100, (100 * used) / total) : 0;
  return el('div', { class: 'usage' },
    el('div', { class: 'usage-bar', title: `${share.toFixed(1)} % allocated` },
      el('div', { class: share >= 90 ? 'usage-fill full' : 'usage-fill', style: { width: `${share}%` } })),
    el('span', { class: 'usage-text' }, label));
}

/** A section's body, waiting for its first data. */
export const waiting = () => el('p', { class: 'waiting' }, 'waiting for data…');
