import { askReducer, highlightSupport, initialAsk, routeOf, segmentAnswer, sourceOf, timingBars, traceUrl, uploadIdOf, visibleRoutes, type AskState } from './state';

const ev = (event: string, data: unknown) => ({ type: 'event' as const, event: { event, data: typeof data === 'string' ? data : JSON.stringify(data) } });
const done = { answer: 'Swept wings delay transition [1].', refused: false, citations: [{ ref: 1, document_id: 'wing', chunk_id: 'wing#v1#0', title: 'Wings', text: 't', score: 0.9 }], degraded: [], timings_ms: { embed: 2, total: 10 }, trace_id: 'abc' };

describe('askReducer', () => {
  const run = (actions: Parameters<typeof askReducer>[1][]) => actions.reduce<AskState>(askReducer, initialAsk);

  it('appends deltas while streaming, then the done answer replaces the text', () => {
    const s1 = run([{ type: 'start', question: 'q' }, ev('delta', { text: 'Swept ' }), ev('delta', { text: 'wings' })]);
    expect(s1).toMatchObject({ phase: 'streaming', text: 'Swept wings', answer: null });
    const s2 = askReducer(s1, ev('done', done));
    expect(s2).toMatchObject({ phase: 'done', text: done.answer, traceId: 'abc' });
    expect(s2.answer?.citations[0]?.ref).toBe(1);
    // Events after the end change nothing.
    expect(askReducer(s2, ev('delta', { text: 'late' }))).toBe(s2);
  });

  it('an error event is an error with the API’s code, message and trace id', () => {
    const s = run([{ type: 'start', question: 'q' }, ev('delta', { text: 'x' }), ev('error', { error: { code: 'unavailable', message: 'llm down' }, trace_id: 't1' })]);
    expect(s).toMatchObject({ phase: 'error', error: { code: 'unavailable', message: 'llm down' }, traceId: 't1' });
  });

  it('a stream that ends without done, malformed JSON, or a done that is not an answer are errors', () => {
    expect(run([{ type: 'start', question: 'q' }, ev('delta', { text: 'x' }), { type: 'ended' }]).phase).toBe('error');
    expect(run([{ type: 'start', question: 'q' }, ev('delta', '{oops')]).error?.code).toBe('bad_stream');
    expect(run([{ type: 'start', question: 'q' }, ev('done', { answer: 1 })]).error?.code).toBe('bad_stream');
    // After done, `ended` keeps the answer.
    expect(run([{ type: 'start', question: 'q' }, ev('done', done), { type: 'ended' }]).phase).toBe('done');
  });

  it('keeps statements when the API returns them, and feedback applies only to a finished answer', () => {
    const s = run([{ type: 'start', question: 'q' }, ev('done', { ...done, statements: [{ text: 'a', status: 'supported' }] })]);
    expect(s.answer?.statements).toEqual([{ text: 'a', status: 'supported' }]);
    expect(askReducer(s, { type: 'feedback', state: 'down' }).feedback).toBe('down');
    expect(run([{ type: 'start', question: 'q' }, { type: 'feedback', state: 'up' }]).feedback).toBe('none');
  });

  it('a new question resets the previous answer and feedback', () => {
    const s = run([{ type: 'start', question: 'q' }, ev('done', done), { type: 'feedback', state: 'up' }, { type: 'start', question: 'q2' }]);
    expect(s).toMatchObject({ phase: 'streaming', question: 'q2', text: '', answer: null, feedback: 'none' });
  });
});

describe('segmentAnswer', () => {
  it('splits [n], [n][m] and [n, m] markers out of the text', () => {
    expect(segmentAnswer('A [1]. B [2][3] and C [1, 4].')).toEqual([
      { kind: 'text', text: 'A ' },
      { kind: 'ref', ref: 1, text: '[1]' },
      { kind: 'text', text: '. B ' },
      { kind: 'ref', ref: 2, text: '[2]' },
      { kind: 'ref', ref: 3, text: '[3]' },
      { kind: 'text', text: ' and C ' },
      { kind: 'ref', ref: 1, text: '[1]' },
      { kind: 'ref', ref: 4, text: '[4]' },
      { kind: 'text', text: '.' },
    ]);
    expect(segmentAnswer('no refs [x]')).toEqual([{ kind: 'text', text: 'no refs [x]' }]);
  });
});

describe('highlightSupport', () => {
  const chunk = 'Wind tunnels are loud. Swept wings delay the boundary layer transition at high speed. Rivets matter too.';
  it('marks the chunk sentence that supports the claim citing it', () => {
    const parts = highlightSupport(chunk, 'Transition is delayed by swept wings [1]. Noise is unrelated [2].', 1);
    expect(parts.filter((p) => p.mark).map((p) => p.text.trim())).toEqual(['Swept wings delay the boundary layer transition at high speed.']);
    expect(parts.map((p) => p.text).join('')).toBe(chunk);
  });
  it('marks nothing when no claim cites the chunk', () => {
    expect(highlightSupport(chunk, 'Swept wings delay transition [2].', 1).some((p) => p.mark)).toBe(false);
  });
  it('matches Chinese by characters', () => {
    const parts = highlightSupport('今天天气很好。后掠翼可以推迟转捩。', '后掠翼推迟转捩[1]。', 1);
    expect(parts.filter((p) => p.mark).map((p) => p.text)).toEqual(['后掠翼可以推迟转捩。']);
  });
});

describe('routes', () => {
  it('shows only the pages the scopes can use', () => {
    expect(visibleRoutes(['query'])).toEqual(['ask']);
    expect(visibleRoutes(['ingest'])).toEqual(['overview', 'documents', 'sources']);
    expect(visibleRoutes(['admin', 'ingest', 'query'])).toEqual(['overview', 'ask', 'documents', 'sources', 'access']);
    expect(visibleRoutes([])).toEqual([]);
  });
  it('a hidden or unknown route falls back to the first visible page; a document id is the parameter', () => {
    expect(routeOf('#/access', ['ask'])).toEqual({ route: 'ask' });
    expect(routeOf('', ['overview', 'ask'])).toEqual({ route: 'overview' });
    expect(routeOf('#/documents/upload%3Aa.md', ['documents'])).toEqual({ route: 'documents', param: 'upload:a.md' });
    expect(routeOf('#/ask', [])).toEqual({ route: null });
  });
});

describe('helpers', () => {
  it('orders timing stages along the pipeline and sizes them against the total', () => {
    expect(timingBars({ total: 100, generate: 50, embed: 10, fuse: 5, custom: 1 })).toEqual([
      { stage: 'embed', ms: 10, pct: 10 },
      { stage: 'fuse', ms: 5, pct: 5 },
      { stage: 'generate', ms: 50, pct: 50 },
      { stage: 'custom', ms: 1, pct: 1 },
    ]);
  });
  it('derives upload ids, sources and trace links', () => {
    expect(uploadIdOf('My report #2.pdf')).toBe('upload:My_report_2.pdf');
    expect(sourceOf('confluence:site:1')).toBe('confluence');
    expect(sourceOf('wing')).toBe('api');
    expect(traceUrl('https://t/x?id={trace_id}&q={trace_id}', 'a b')).toBe('https://t/x?id=a%20b&q=a%20b');
    expect(traceUrl(null, 'a')).toBeNull();
  });
});
