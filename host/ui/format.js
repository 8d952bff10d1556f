// format.js — how figures read: counts, memory, percentages, credits, prices,
// times and durations. Display only; the raw value stays in data-value.

export const count = (n) => Number(n).toLocaleString('en-US');

export function mb(n) {
  if (Math.abs(n) < 1024) return `${count(n)} MB`;
  const units = ['GB', 'TB', 'PB'];
  let value = n / 1024;
  let unit = 0;
  while (Math.abs(value) >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit += 1;
  }
  return `${value.toFixed(Math.abs(value) < 10 ? 2 : 1)} ${units[unit]}`;
}

export const percent = (n) => `${Number(n).toFixed(1)} %`;

export const credits = (n) =>
  Number(n).toLocaleString('en-US', { minimumFractionDigits: 2, maximumFractionDigits: 2 });

export const perHour = (n) => `${credits(n)} /h`;

/** A small price such as 0.0000123 credits per second, to 4 significant digits. */
export function price(n) {
  if (n === 0) return '0';
  return Math.abs(n) >= 0.001 ? Number(n.toPrecision(4)).toString() : n.toExponential(3);
}

export const multiplier = (n) => `×${Number(n).toFixed(3)}`;

export const yesNo = (b) => (b ? 'yes' : 'no');

const pad = (n) => String(n).padStart(2, '0');

/** Milliseconds since the epoch as local time; 0 is "never" (YARN's zero). */
export function time(ms) {
  if (!ms) return '—';
  const d = new Date(ms);
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ` +
    `${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
}

export const clock = (ms) => {
  const d = new Date(ms);
  return `${pad(d.getHours())}:${pad(d.getMinutes())}`;
};

export function duration(ms) {
  const s = Math.floor(ms / 1000);
  if (s < 60) return ms < 1000 ? `${ms} ms` : `${s}s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m}m ${pad(s % 60)}s`;
  const h = Math.floor(m / 60);
  if (h < 48) return `${h}h ${pad(m % 60)}m`;
  return `${Math.floor(h / 24)}d ${h % 24}h`;
}

export const hours = (h) => (h >= 48 ? `${(h / 24).toFixed(1)} d` : `${h.toFixed(1)} h`);

export function nanos(ns) {
  if (ns < 1e3) return `${ns} ns`;
  if (ns < 1e6) return `${(ns / 1e3).toFixed(1)} µs`;
  return `${(ns / 1e6).toFixed(2)} ms`;
}

export const progress = (p) => `${Number(p).toFixed(0)} %`;
