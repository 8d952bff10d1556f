// sse.js — a parser of the text/event-stream format, as the WHATWG HTML
// standard defines it: lines end in CRLF, LF or CR; "event:" names the
// event, "data:" lines are joined with "\n", "id:" and "retry:" are
// remembered, lines starting with ":" are comments (keep-alives), and a
// blank line dispatches. Fed decoded text in chunks of any size.

export class SseParser {
  /** onEvent({type, data, lastEventId}); onRetry(milliseconds). */
  constructor(onEvent, onRetry = () => {}) {
    this.onEvent = onEvent;
    this.onRetry = onRetry;
    this.pieces = []; // the current line's text so far, across chunks
    this.skipLeadingLF = false; // the last chunk ended in CR: a LF next is its pair
    this.started = false;
    this.type = '';
    this.data = [];
    this.lastEventId = '';
  }

  push(chunk) {
    let text = chunk;
    if (this.skipLeadingLF && text.length > 0) {
      this.skipLeadingLF = false;
      if (text.charCodeAt(0) === 10) text = text.slice(1);
    }
    if (!this.started && text.length > 0) {
      this.started = true;
      if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
    }
    let start = 0;
    for (let i = 0; i < text.length; i += 1) {
      const c = text.charCodeAt(i);
      if (c !== 10 && c !== 13) continue;
      this.pieces.push(text.slice(start, i));
      this.line(this.pieces.join(''));
      this.pieces = [];
      if (c === 13) {
        if (i + 1 === text.length) this.skipLeadingLF = true;
        else if (text.charCodeAt(i + 1) === 10) i += 1;
      }
      start = i + 1;
    }
    if (start < text.length) this.pieces.push(text.slice(start));
  }

  line(line) {
    if (line === '') {
      this.dispatch();
      return;
    }
    if (line.startsWith(':')) return;
    const colon = line.indexOf(':');
    const field = colon < 0 ? line : line.slice(0, colon);
    let value = colon < 0 ? '' : line.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    if (field === 'event') this.type = value;
    else if (field === 'data') this.data.push(value);
    else if (field === 'id' && !value.includes('\0')) this.lastEventId = value;
    else if (field === 'retry' && /^\d+$/.test(value)) this.onRetry(Number(value));
  }

  dispatch() {
    const type = this.type || 'message';
    this.type = '';
    if (this.data.length === 0) return;
    const data = this.data.join('\n');
    this.data = [];
    this.onEvent({ type, data, lastEventId: this.lastEventId });
  }
}
