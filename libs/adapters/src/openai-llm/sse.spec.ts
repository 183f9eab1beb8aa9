import { SseDataParser } from './sse';

describe('SseDataParser', () => {
  const parseAll = (chunks: string[]) => {
    const p = new SseDataParser();
    const out = chunks.flatMap((c) => p.push(c));
    return out.concat(p.end());
  };

  it('parses LF, CRLF and CR line endings', () => {
    expect(parseAll(['data: a\n\ndata: b\r\n\r\ndata: c\r\rdata: d\n\n'])).toEqual(['a', 'b', 'c', 'd']);
  });

  it('gives the same events however the text is split, including a CRLF split across chunks', () => {
    const text = ': keep-alive\r\ndata: {"x":1}\r\n\r\nevent: message\r\nid: 7\r\ndata:{"y":2}\r\n\r\ndata: [DONE]\r\n\r\n';
    const whole = parseAll([text]);
    expect(whole).toEqual(['{"x":1}', '{"y":2}', '[DONE]']);
    for (let size = 1; size <= 7; size++) {
      const chunks: string[] = [];
      for (let i = 0; i < text.length; i += size) chunks.push(text.slice(i, i + size));
      expect(parseAll(chunks)).toEqual(whole);
    }
    // A lone CR at a chunk end followed by LF is one line ending, not a CR then an empty line.
    expect(parseAll(['data: a\r', '\ndata: b\r\n', '\r\n'])).toEqual(['a\nb']);
  });

  it('joins several data lines of one event and strips one leading space', () => {
    expect(parseAll(['data: line1\ndata:  line2\ndata\n\n'])).toEqual(['line1\n line2\n']);
  });

  it('ignores comments, other fields and events without data; flushes a last event without a blank line', () => {
    expect(parseAll([': comment\nevent: ping\n\nretry: 10\n\ndata: tail'])).toEqual(['tail']);
    expect(parseAll([''])).toEqual([]);
  });
});
