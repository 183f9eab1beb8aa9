import { join } from 'node:path';
import { DEFAULT_PARSE_LIMITS, type ParseLimits } from '@rag/domain';
import { buildDocx, paragraphsXml } from '../document-parsers/testing/docx-fixture';
import { buildPdf } from '../document-parsers/testing/pdf-fixture';
import { HANG_MIME } from './testing/hang.worker';
import { WorkerDocumentParser, type WorkerParserOptions } from './worker-parser.adapter';

const parsers: WorkerDocumentParser[] = [];
function parser(opts: Omit<Partial<WorkerParserOptions>, 'limits'> & { limits?: Partial<ParseLimits> } = {}): WorkerDocumentParser {
  const p = new WorkerDocumentParser({
    workers: 1,
    timeoutMs: 30_000,
    maxMemoryMb: 512,
    ...opts,
    limits: { ...DEFAULT_PARSE_LIMITS, ...opts.limits },
  });
  parsers.push(p);
  return p;
}
afterAll(async () => {
  await Promise.all(parsers.map((p) => p.close()));
});

describe('WorkerDocumentParser', () => {
  it('parses an ordinary DOCX and PDF in a worker thread', async () => {
    const p = parser();
    const docx = await buildDocx([{ kind: 'heading', level: 1, text: 'Travel Policy' }, { kind: 'paragraph', text: 'Keep receipts.' }]);
    expect(await p.parse({ bytes: docx, mimeType: 'application/vnd.openxmlformats-officedocument.wordprocessingml.document' })).toEqual({
      ok: true,
      title: 'Travel Policy',
      blocks: [
        { type: 'heading', level: 1, text: 'Travel Policy' },
        { type: 'paragraph', text: 'Keep receipts.' },
      ],
    });
    const pdf = buildPdf([{ paragraphs: [{ lines: ['Shock tubes measure', 'test times.'] }] }], { title: 'Shock' });
    expect(await p.parse({ bytes: pdf, mimeType: 'application/pdf' })).toEqual({
      ok: true,
      title: 'Shock',
      pages: 1,
      blocks: [{ type: 'paragraph', text: 'Shock tubes measure test times.' }],
    });
  });

  it('stops a parse stuck past the time limit (terminating its thread) while the event loop keeps serving; the next document parses', async () => {
    const p = parser({ workerFile: join(__dirname, 'testing/hang.worker.ts'), timeoutMs: 8000, inlineMaxBytes: 0 });
    const started = new Promise<void>((resolve) => p.onWorkerMessage((m) => (m as { hangStarted?: boolean }).hangStarted && resolve()));
    const events: string[] = [];
    const stuck = p.parse({ bytes: Buffer.from('spin'), mimeType: HANG_MIME }).then((r) => {
      events.push('parse settled');
      return r;
    });
    await started;
    // the worker spins in a busy loop; this thread still runs timers and I/O (an in-thread parse would block them)
    await new Promise((resolve) => setTimeout(resolve, 10));
    events.push('timer ran during the parse');
    expect(await stuck).toEqual({ ok: false, code: 'timeout', reason: 'parsing took longer than 8000 ms and was stopped (RAG_PARSE_TIMEOUT_MS)' });
    expect(events).toEqual(['timer ran during the parse', 'parse settled']);
    // the only worker was terminated; a new one takes the next document
    const next = await p.parse({ bytes: Buffer.from('# Still here\n\nParsing continues.'), mimeType: 'text/markdown' });
    expect(next).toMatchObject({ ok: true, title: 'Still here' });
  });

  it('parses small plain-text and Markdown documents on the calling thread; larger ones and other types in a worker', async () => {
    const p = parser({ workerFile: join(__dirname, 'testing/hang.worker.ts'), inlineMaxBytes: 64 });
    const inWorker: string[] = [];
    p.onWorkerMessage((m) => {
      const started = (m as { taskStarted?: string }).taskStarted;
      if (started) inWorker.push(started);
    });
    const small = await p.parse({ bytes: Buffer.from('Shock tubes measure test times.'), mimeType: 'text/plain' });
    const md = await p.parse({ bytes: Buffer.from('# Title\n\nBody.'), mimeType: 'text/markdown' });
    expect(inWorker).toEqual([]); // the pool has not even started a thread for them
    expect(small).toMatchObject({ ok: true, blocks: [{ type: 'paragraph', text: 'Shock tubes measure test times.' }] });
    expect(md).toMatchObject({ ok: true, title: 'Title' });
    // the same outcome a worker gives, including the limits: over the text limit fails the same way on either path
    const longText = 'x '.repeat(40); // 80 bytes: over inlineMaxBytes
    expect(await p.parse({ bytes: Buffer.from(longText), mimeType: 'text/plain' })).toMatchObject({ ok: true, blocks: [{ type: 'paragraph' }] });
    const html = await p.parse({ bytes: Buffer.from('<h1>Hi</h1>'), mimeType: 'text/html' });
    expect(html).toMatchObject({ ok: true });
    // A worker's `taskStarted` message and its task's result come back on different ports: under load the message can
    // arrive after the result (seen in a CI run), so wait for it rather than assume the order.
    await vi.waitFor(() => expect(inWorker).toEqual(['text/plain', 'text/html']));
    const limited = parser({ inlineMaxBytes: 64, limits: { maxTextBytes: 10 } });
    const tooLong = await limited.parse({ bytes: Buffer.from('far more than ten bytes of text'), mimeType: 'text/plain' });
    expect(tooLong).toMatchObject({ ok: false, code: 'too_large' });
  });

  it('a parse waiting for a worker is not timed while it waits', async () => {
    const p = parser({ workerFile: join(__dirname, 'testing/hang.worker.ts'), timeoutMs: 8000, inlineMaxBytes: 0 });
    const stuck = p.parse({ bytes: Buffer.from('spin'), mimeType: HANG_MIME });
    // queued behind the stuck one for its whole time limit, then parsed by the replacement worker
    const queued = p.parse({ bytes: Buffer.from('Queued text.'), mimeType: 'text/plain' });
    expect(await stuck).toMatchObject({ ok: false, code: 'timeout' });
    expect(await queued).toMatchObject({ ok: true, blocks: [{ type: 'paragraph', text: 'Queued text.' }] });
  });

  it('stops a parse that exhausts the worker heap: out_of_memory, and the pool goes on', async () => {
    // mammoth needs ~75× the XML in memory: 8 MB of XML cannot be converted in a 64 MB heap
    const p = parser({ maxMemoryMb: 64 });
    const bytes = await buildDocx([], { bodyXml: paragraphsXml(8 * 1024 * 1024) });
    expect(await p.parse({ bytes, mimeType: 'application/vnd.openxmlformats-officedocument.wordprocessingml.document' })).toEqual({
      ok: false,
      code: 'out_of_memory',
      reason: 'parsing needed more than 64 MB of memory and was stopped (RAG_PARSE_MAX_MEMORY_MB)',
    });
    expect(await p.parse({ bytes: Buffer.from('After the crash.'), mimeType: 'text/plain' })).toMatchObject({ ok: true });
  });

  it('applies the parse limits in the worker and names the setting', async () => {
    const p = parser({ limits: { maxTextBytes: 1024 } });
    expect(await p.parse({ bytes: Buffer.from('word '.repeat(500)), mimeType: 'text/plain' })).toEqual({
      ok: false,
      code: 'too_large',
      reason: 'the document has more than 1 KiB of text (RAG_MAX_TEXT_BYTES)',
    });
    expect(await p.parse({ bytes: Buffer.from('x'), mimeType: 'image/png' })).toMatchObject({ ok: false, code: 'unsupported_media_type' });
  });

  it('closing rejects a parse in flight instead of reporting the document as failed', async () => {
    const p = new WorkerDocumentParser({ workers: 1, timeoutMs: 60_000, maxMemoryMb: 256, limits: DEFAULT_PARSE_LIMITS, workerFile: join(__dirname, 'testing/hang.worker.ts') });
    const started = new Promise<void>((resolve) => p.onWorkerMessage(() => resolve()));
    const stuck = p.parse({ bytes: Buffer.from('spin'), mimeType: HANG_MIME });
    await started;
    const rejected = expect(stuck).rejects.toThrow(/closed while parsing/);
    await p.close();
    await rejected;
  });
});

describe('WorkerDocumentParser pools in sequence', () => {
  it('a second pool parses after the first closed (each with fresh workers)', async () => {
    // regression: a native TypeScript loader in the workers segfaulted the process on the second pool's first parse
    for (const round of [1, 2]) {
      const p = new WorkerDocumentParser({ workers: 1, timeoutMs: 30_000, maxMemoryMb: 256, limits: DEFAULT_PARSE_LIMITS });
      expect(await p.parse({ bytes: Buffer.from(`# Round ${round}`), mimeType: 'text/markdown' })).toMatchObject({ ok: true, title: `Round ${round}` });
      await p.close();
    }
  });
});
