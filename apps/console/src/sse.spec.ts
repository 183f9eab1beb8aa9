import { createSseParser, readSse, type SseEvent } from './sse';

const parse = (chunks: string[]) => {
  const out: SseEvent[] = [];
  const p = createSseParser((e) => out.push(e));
  for (const c of chunks) p.push(c);
  p.end();
  return out;
};

describe('createSseParser', () => {
  it('parses the gateway’s delta and done events', () => {
    const text = 'event: delta\ndata: {"text":"Hel"}\n\nevent: delta\ndata: {"text":"lo"}\n\nevent: done\ndata: {"answer":"Hello"}\n\n';
    expect(parse([text])).toEqual([
      { event: 'delta', data: '{"text":"Hel"}' },
      { event: 'delta', data: '{"text":"lo"}' },
      { event: 'done', data: '{"answer":"Hello"}' },
    ]);
  });

  it('gives the same events however the stream is split, one character at a time included', () => {
    const text = 'event: delta\r\ndata: {"text":"a"}\r\n\r\nevent: done\rdata: {"x":1}\r\r';
    const whole = parse([text]);
    expect(whole).toEqual([
      { event: 'delta', data: '{"text":"a"}' },
      { event: 'done', data: '{"x":1}' },
    ]);
    expect(parse(text.split(''))).toEqual(whole);
    for (let i = 1; i < text.length; i++) expect(parse([text.slice(0, i), text.slice(i)])).toEqual(whole);
  });

  it('joins multi-line data with \\n, ignores comments, defaults the event name to message, drops one leading space only', () => {
    expect(parse([': keep-alive\n\ndata:  two\ndata:lines\nid: 7\n\n'])).toEqual([{ event: 'message', data: ' two\nlines', id: '7' }]);
  });

  it('does not dispatch an event without data, nor an unterminated last event', () => {
    expect(parse(['event: delta\n\n', 'event: done\ndata: {}'])).toEqual([]);
  });

  it('a field without a colon has an empty value', () => {
    expect(parse(['data\n\n'])).toEqual([{ event: 'message', data: '' }]);
  });
});

describe('readSse', () => {
  it('decodes UTF-8 split inside a multi-byte character', async () => {
    const bytes = new TextEncoder().encode('event: delta\ndata: {"text":"机翼"}\n\n');
    const cut = bytes.indexOf(0xe6) + 1; // inside the first Chinese character
    const body = new ReadableStream<Uint8Array>({
      start(c) {
        c.enqueue(bytes.slice(0, cut));
        c.enqueue(bytes.slice(cut));
        c.close();
      },
    });
    const out: SseEvent[] = [];
    await readSse(body, (e) => out.push(e));
    expect(out).toEqual([{ event: 'delta', data: '{"text":"机翼"}' }]);
  });
});
