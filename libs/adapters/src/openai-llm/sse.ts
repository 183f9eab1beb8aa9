/**
 * Incremental parser of the server-sent events wire format (WHATWG HTML §9.2): feed it decoded text
 * in chunks of any size; it returns the `data` of each complete event. Lines end in CRLF, LF or CR
 * (a CR at the end of a chunk waits for the next chunk, in case an LF follows); several `data:`
 * lines of one event are joined with "\n"; comments (":") and other fields (event, id, retry) are
 * ignored; a blank line ends an event.
 */
export class SseDataParser {
  private buffer = '';
  private data: string[] = [];
  private hasData = false;

  /** Adds text; returns the data of the events it completed. */
  push(text: string): string[] {
    this.buffer += text;
    const out: string[] = [];
    let start = 0;
    for (;;) {
      let i = start;
      while (i < this.buffer.length && this.buffer[i] !== '\n' && this.buffer[i] !== '\r') i++;
      if (i >= this.buffer.length) break;
      let next = i + 1;
      if (this.buffer[i] === '\r') {
        if (i + 1 >= this.buffer.length) break; // CR at the end: maybe CRLF split across chunks
        if (this.buffer[i + 1] === '\n') next = i + 2;
      }
      this.line(this.buffer.slice(start, i), out);
      start = next;
    }
    this.buffer = this.buffer.slice(start);
    return out;
  }

  /** Ends the stream: a last event not followed by a blank line is still returned (lenient). */
  end(): string[] {
    const out: string[] = [];
    if (this.buffer.length > 0) {
      const rest = this.buffer.replace(/\r$/, '');
      this.buffer = '';
      this.line(rest, out);
    }
    this.line('', out);
    return out;
  }

  private line(line: string, out: string[]): void {
    if (line === '') {
      if (this.hasData) out.push(this.data.join('\n'));
      this.data = [];
      this.hasData = false;
      return;
    }
    if (line.startsWith(':')) return;
    const colon = line.indexOf(':');
    const field = colon < 0 ? line : line.slice(0, colon);
    if (field !== 'data') return;
    let value = colon < 0 ? '' : line.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    this.data.push(value);
    this.hasData = true;
  }
}
