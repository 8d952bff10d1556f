// live.js — the live stream: GET /ws/v1/events read with fetch() and a stream
// reader (EventSource cannot send the auth header), framed by sse.js; each
// topic's JSON goes to the store. It reconnects with backoff when the stream
// ends, errs or stalls, and keeps the indicator at "live" or "reconnecting".

import { errorOf } from './api.js';
import { authHeaders } from './credentials.js';
import { SseParser } from './sse.js';
import { TOPICS, publish } from './store.js';

const EVENTS_PATH = '/ws/v1/events';
const FIRST_DELAY_MS = 500;
const MAX_DELAY_MS = 15000;
/** No byte for this long (events or keep-alive comments): the stream is dead. */
const STALL_MS = 45000;

export class LiveStream {
  /** hooks: onRefused(ApiError) for 401/403, onDown(error) at each failure. */
  constructor(indicator, hooks = {}) {
    this.indicator = indicator;
    this.hooks = hooks;
    this.generation = 0;
    this.controller = null;
    this.timer = 0;
    this.serverRetryMs = null;
    this.delayMs = FIRST_DELAY_MS;
  }

  /** (Re)connects now, e.g. after the credentials changed. */
  start() {
    this.stop();
    this.delayMs = this.serverRetryMs ?? FIRST_DELAY_MS;
    this.connect(++this.generation);
  }

  stop() {
    this.generation += 1;
    clearTimeout(this.timer);
    this.controller?.abort();
    this.controller = null;
  }

  setState(state, detail) {
    this.indicator.dataset.liveState = state;
    this.indicator.title = detail;
    this.indicator.querySelector('.live-text').textContent = state === 'live' ? 'live' : 'reconnecting…';
  }

  async connect(generation) {
    const controller = new AbortController();
    this.controller = controller;
    let stall = 0;
    const watch = () => {
      clearTimeout(stall);
      stall = setTimeout(() => controller.abort(), STALL_MS);
    };
    let failure = null;
    try {
      watch();
      const response = await fetch(EVENTS_PATH, {
        headers: { ...authHeaders(), Accept: 'text/event-stream' },
        cache: 'no-store',
        signal: controller.signal,
      });
      if (!response.ok) throw await errorOf(response);
      if (!response.body) throw new Error('the browser gave no stream body');
      this.setState('live', 'receiving live updates');
      const parser = new SseParser((event) => this.receive(event), (ms) => { this.serverRetryMs = ms; });
      const reader = response.body.getReader();
      const decoder = new TextDecoder();
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        watch();
        parser.push(decoder.decode(value, { stream: true }));
      }
      parser.push(decoder.decode());
      failure = new Error('the server ended the stream');
    } catch (error) {
      failure = controller.signal.aborted && generation === this.generation
        ? new Error(`no data for ${STALL_MS / 1000}s`) : error;
    } finally {
      clearTimeout(stall);
    }
    if (generation !== this.generation) return; // stopped or restarted meanwhile
    this.retryLater(generation, failure);
  }

  receive(event) {
    // `cut` (what the server cut to keep topics within its bound) has no
    // endpoint of its own; every other topic is one's body.
    if (!(event.type in TOPICS) && event.type !== 'cut') return;
    let body;
    try {
      body = JSON.parse(event.data);
    } catch {
      console.warn(`live: event ${event.type} is not JSON`);
      return;
    }
    this.delayMs = this.serverRetryMs ?? FIRST_DELAY_MS; // it works: next failure retries soon
    publish(event.type, body);
  }

  retryLater(generation, failure) {
    const delay = Math.min(MAX_DELAY_MS, this.delayMs) * (0.8 + 0.4 * Math.random());
    this.delayMs = Math.min(MAX_DELAY_MS, this.delayMs * 2);
    this.setState('reconnecting', `${failure?.message ?? 'disconnected'}; retrying in ${(delay / 1000).toFixed(1)}s`);
    if (failure?.status === 401 || failure?.status === 403) this.hooks.onRefused?.(failure);
    this.hooks.onDown?.(failure);
    this.timer = setTimeout(() => {
      if (generation === this.generation) this.connect(generation);
    }, delay);
  }
}
