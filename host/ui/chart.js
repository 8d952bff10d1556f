// chart.js — a small line chart drawn as inline SVG: points over time, an
// area under the line, min/max labels on both axes, and each point a circle
// carrying its figure labels (data-src/-path/-value) and a tooltip.

const SVG = 'http://www.w3.org/2000/svg';

function svg(tag, attrs, text) {
  const node = document.createElementNS(SVG, tag);
  for (const [name, value] of Object.entries(attrs ?? {})) node.setAttribute(name, String(value));
  if (text !== undefined) node.textContent = text;
  return node;
}

/**
 * points: [{x, y, figure: {src, path, value}}] sorted by x;
 * formatX, formatY: labels; returns an <svg> element (or a note if < 1 point).
 */
export function lineChart(points, { width = 640, height = 200, formatX = String, formatY = String, label = '' } = {}) {
  const pad = { left: 64, right: 12, top: 10, bottom: 24 };
  const root = svg('svg', { viewBox: `0 0 ${width} ${height}`, class: 'chart', role: 'img', 'aria-label': label });
  if (points.length === 0) {
    root.append(svg('text', { x: width / 2, y: height / 2, 'text-anchor': 'middle', class: 'chart-empty' }, 'no data yet'));
    return root;
  }
  const xs = points.map((p) => p.x);
  const ys = points.map((p) => p.y);
  let [x0, x1] = [Math.min(...xs), Math.max(...xs)];
  let [y0, y1] = [Math.min(...ys), Math.max(...ys)];
  if (x0 === x1) [x0, x1] = [x0 - 1, x1 + 1];
  if (y0 === y1) [y0, y1] = [y0 - Math.max(1, Math.abs(y0) * 0.05), y1 + Math.max(1, Math.abs(y1) * 0.05)];
  const plotW = width - pad.left - pad.right;
  const plotH = height - pad.top - pad.bottom;
  const sx = (x) => pad.left + ((x - x0) / (x1 - x0)) * plotW;
  const sy = (y) => pad.top + (1 - (y - y0) / (y1 - y0)) * plotH;
  const bottom = pad.top + plotH;

  root.append(
    svg('line', { x1: pad.left, y1: bottom, x2: width - pad.right, y2: bottom, class: 'chart-axis' }),
    svg('line', { x1: pad.left, y1: pad.top, x2: pad.left, y2: bottom, class: 'chart-axis' }),
    svg('text', { x: pad.left - 6, y: pad.top + 4, 'text-anchor': 'end', class: 'chart-label' }, formatY(y1)),
    svg('text', { x: pad.left - 6, y: bottom, 'text-anchor': 'end', class: 'chart-label' }, formatY(y0)),
    svg('text', { x: pad.left, y: height - 6, 'text-anchor': 'start', class: 'chart-label' }, formatX(x0)),
    svg('text', { x: width - pad.right, y: height - 6, 'text-anchor': 'end', class: 'chart-label' }, formatX(x1)));

  const line = points.map((p, i) => `${i ? 'L' : 'M'}${sx(p.x).toFixed(1)},${sy(p.y).toFixed(1)}`).join(' ');
  const area = `${line} L${sx(points.at(-1).x).toFixed(1)},${bottom} L${sx(points[0].x).toFixed(1)},${bottom} Z`;
  root.append(svg('path', { d: area, class: 'chart-area' }), svg('path', { d: line, class: 'chart-line' }));

  for (const p of points) {
    const dot = svg('circle', { cx: sx(p.x).toFixed(1), cy: sy(p.y).toFixed(1), r: 2.5, class: 'chart-dot' });
    if (p.figure) {
      dot.setAttribute('data-src', p.figure.src);
      dot.setAttribute('data-path', p.figure.path);
      dot.setAttribute('data-value', JSON.stringify(p.figure.value));
    }
    dot.append(svg('title', {}, `${formatX(p.x)}: ${formatY(p.y)}`));
    root.append(dot);
  }
  return root;
}
