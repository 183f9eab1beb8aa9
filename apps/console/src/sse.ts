/** One server-sent event: its `event:` name (default `message`) and its `data:` lines joined with `\n`. */
export interface SseEvent {
  event: string;
  data: string;
  id?: string;
}

/**
 * An incremental parser of `text/event-stream` (the WHATWG HTML "event stream interpretation"): feed it decoded text in
 * chunks of any size (an event, a line or a CRLF may be split across chunks); it calls `onEvent` once per complete event.
 * Lines end with CRLF, LF or CR; `:` lines are comments; a field without `:` has an empty value; one space after the
 * colon is dropped; an event with no `data:` line is not dispatched; `end()` drops an unterminated last event, as a
 * browser's EventSource does.
 */
export function createSseParser(onEvent: (e: SseEvent) => void): { push(text: string): void; end(): void } {
  let buffer = '';
  let event = '';
  let data: string[] = [];
  let id: string | undefined;
  let sawData = false;
  // A chunk that ended in CR: an LF at the start of the next chunk belongs to the same line end.
  let pendingCr = false;

  const line = (l: string) => {
    if (l === '') {
      if (sawData) onEvent({ event: event || 'message', data: data.join('\n'), ...(id !== undefined ? { id } : {}) });
      event = '';
      data = [];
      sawData = false;
      return;
    }
    if (l.startsWith(':')) return;
    const colon = l.indexOf(':');
    const field = colon < 0 ? l : l.slice(0, colon);
    let value = colon < 0 ? '' : l.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    if (field === 'event') event = value;
    else if (field === 'data') {
      data.push(value);
      sawData = true;
    } else if (field === 'id' && !value.includes('\0')) id = value;
  };

  return {
    push(text: string) {
      if (pendingCr && text.startsWith('\n')) text = text.slice(1);
      pendingCr = false;
      buffer += text;
      for (;;) {
        const m = /\r\n|\r|\n/.exec(buffer);
        if (!m) break;
        // A CR at the very end may be the first half of a CRLF: wait for the next chunk, then treat it as a line end.
        if (m[0] === '\r' && m.index === buffer.length - 1) {
          line(buffer.slice(0, m.index));
          buffer = '';
          pendingCr = true;
          break;
        }
        line(buffer.slice(0, m.index));
        buffer = buffer.slice(m.index + m[0].length);
      }
    },
    end() {
      buffer = '';
      data = [];
      sawData = false;
    },
  };
}

/** Reads a fetch body as an event stream, calling `onEvent` per event; resolves when the stream ends. */
export async function readSse(body: ReadableStream<Uint8Array>, onEvent: (e: SseEvent) => void, signal?: AbortSignal): Promise<void> {
  const parser = createSseParser(onEvent);
  const reader = body.getReader();
  const decoder = new TextDecoder();
  try {
    for (;;) {
      if (signal?.aborted) break;
      const { value, done } = await reader.read();
      if (done) break;
      parser.push(decoder.decode(value, { stream: true }));
    }
    parser.push(decoder.decode());
  } finally {
    parser.end();
    reader.releaseLock();
  }
}
