import { buildPdf } from '../../libs/adapters/src/document-parsers/testing/pdf-fixture';
import { api, removeDir, startServer, waitForStatus, type Server } from './harness';

interface Answer {
  answer: string;
  refused: boolean;
  citations: { ref: number; document_id: string; chunk_id: string; text: string }[];
  degraded: string[];
  timings_ms: Record<string, number>;
  trace_id: string;
}

const WING = `Boundary layer transition on swept wings.
The laminar boundary layer on a swept wing becomes unstable at lower Reynolds numbers than on an unswept wing, because crossflow vortices amplify disturbances near the leading edge.
Suction through a porous surface delays transition and keeps the boundary layer laminar over most of the chord.`;

const HEAT = `Heat transfer in hypersonic flow.
At hypersonic speeds the stagnation point heat transfer rate varies with the square root of the nose radius inverse, so blunt bodies are used to reduce heating.
Ablative heat shields absorb the remaining heat load by pyrolysis and surface recession.`;

describe('gateway API (embedded platform, end to end)', () => {
  let server: Server;

  beforeAll(async () => {
    server = await startServer();
  });
  afterAll(async () => {
    await server?.stop();
    removeDir(server.dataDir);
  });

  it('serves health, readiness, metrics, OpenAPI docs and the web console (built by `npm run build`)', async () => {
    expect((await api(server, 'GET', '/healthz')).status).toBe(200);
    expect((await api(server, 'GET', '/readyz')).body.status).toBe('ready');
    const metrics = await api<string>(server, 'GET', '/metrics');
    expect(metrics.body).toContain('rag_stage_duration_seconds');
    const openapi = await api(server, 'GET', '/docs/openapi.json');
    expect(Object.keys(openapi.body.paths as object)).toContain('/v1/query');
    const page = await api<string>(server, 'GET', '/');
    expect(page.status, 'the console is built into dist/console by `npm run build`').toBe(200);
    expect(page.headers.get('content-type')).toContain('text/html');
    expect(page.body).toContain('<div id="app">');
  });

  it('ingests JSON, batch and base64 PDF documents, then answers with citations of real chunks', async () => {
    const a = await api(server, 'POST', '/v1/documents', { id: 'wing', title: 'Swept wings', text: WING, metadata: { topic: 'transition', year: 1961 } });
    expect(a.status).toBe(202);
    expect(a.body).toMatchObject({ document_id: 'wing', version: 1, status: 'queued' });

    const batch = await api(server, 'POST', '/v1/documents:batch', {
      documents: [{ id: 'heat', title: 'Hypersonic heating', text: HEAT, metadata: { topic: 'heat', year: 1965 } }, { id: 'broken' }],
    });
    expect(batch.status).toBe(202);
    const b = batch.body as { accepted: { document_id: string }[]; rejected: { index: number; error: { message: string } }[] };
    expect(b.accepted.map((x) => x.document_id)).toEqual(['heat']);
    expect(b.rejected[0]).toMatchObject({ index: 1 });
    expect(b.rejected[0]!.error.message).toMatch(/text or content_base64/);

    const pdf = buildPdf(
      [
        { paragraphs: [{ lines: ['Shock tube measurements.'] }, { lines: ['The shock tube produces a uniform flow behind the incident shock wave.'] }] },
        { paragraphs: [{ lines: ['Page two explains that the test time of a shock tube is limited by the arrival of the contact surface.'] }] },
      ],
      { title: 'Shock tubes' },
    );
    // Anonymous local mode takes JSON only (a multipart form is what a cross-site page can forge: 403 without a key,
    // see local-mode.e2e.spec.ts); the same PDF goes as content_base64.
    const form = new FormData();
    form.append('file', new Blob([new Uint8Array(pdf)], { type: 'application/pdf' }), 'shock.pdf');
    form.append('id', 'shock');
    expect((await api(server, 'POST', '/v1/documents', form)).status).toBe(403);
    const up = await api(server, 'POST', '/v1/documents', { id: 'shock', content_base64: Buffer.from(pdf).toString('base64'), mime_type: 'application/pdf' });
    expect(up.status).toBe(202);

    for (const id of ['wing', 'heat', 'shock']) expect((await waitForStatus(server, id)).status).toBe('indexed');
    const shock = await api(server, 'GET', '/v1/documents/shock');
    expect(shock.body.chunks).toBeGreaterThan(0);

    const q = await api<Answer>(server, 'POST', '/v1/query', { question: 'What limits the test time of a shock tube?' });
    expect(q.status).toBe(200);
    expect(q.body.refused).toBe(false);
    expect(q.body.citations.length).toBeGreaterThan(0);
    expect(q.body.citations[0]!.document_id).toBe('shock');
    expect(q.body.citations[0]!.chunk_id).toMatch(/^shock#v1#\d+$/);
    expect(q.body.answer).toMatch(/contact surface/);
    expect(q.body.answer).toMatch(/\[\d+\]/);
    expect(q.body.timings_ms.total).toBeGreaterThan(0);
    expect(q.body.trace_id).toMatch(/^[0-9a-f]{32}$/);

    const r = await api<{ results: { document_id: string }[] }>(server, 'POST', '/v1/retrieve', { query: 'crossflow vortices swept wing', top_k: 2 });
    expect(r.body.results[0]!.document_id).toBe('wing');
    const filtered = await api<{ results: { document_id: string }[] }>(server, 'POST', '/v1/retrieve', {
      query: 'crossflow vortices swept wing',
      filters: { topic: 'heat' },
    });
    expect(filtered.body.results.map((x) => x.document_id)).toEqual(['heat']);
    const ranged = await api<{ results: { document_id: string }[] }>(server, 'POST', '/v1/retrieve', { query: 'boundary layer heat', filters: { year: { gte: 1962 } } });
    expect(new Set(ranged.body.results.map((x) => x.document_id))).toEqual(new Set(['heat']));
  });

  it('refuses a question the corpus cannot answer', async () => {
    const q = await api<Answer>(server, 'POST', '/v1/query', { question: 'What is the best recipe for sourdough bread?' });
    expect(q.status).toBe(200);
    expect(q.body.refused).toBe(true);
    expect(q.body.citations).toEqual([]);
  });

  it('streams an answer as server-sent events', async () => {
    const res = await fetch(server.url + '/v1/query', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ question: 'How do ablative heat shields absorb heat?', stream: true }),
    });
    expect(res.headers.get('content-type')).toContain('text/event-stream');
    const text = await res.text();
    expect(text).toContain('event: delta');
    const done = /event: done\ndata: (.*)\n/.exec(text);
    expect(done).not.toBeNull();
    const answer = JSON.parse(done![1]!) as Answer;
    expect(answer.citations[0]!.document_id).toBe('heat');
  });

  it('skips unchanged content, replaces changed content, and deletes from every store', async () => {
    const again = await api(server, 'POST', '/v1/documents', { id: 'wing', title: 'Swept wings', text: WING, metadata: { topic: 'transition', year: 1961 } });
    expect(again.body).toMatchObject({ document_id: 'wing', version: 1, status: 'indexed', unchanged: true });

    const changed = WING.replace('Suction through a porous surface', 'Wall cooling with liquid nitrogen');
    const v2 = await api(server, 'POST', '/v1/documents', { id: 'wing', title: 'Swept wings', text: changed, metadata: { topic: 'transition', year: 1961 } });
    expect(v2.body).toMatchObject({ version: 2, status: 'queued' });
    const doc = await waitForStatus(server, 'wing', 'indexed');
    expect(doc.version).toBe(2);
    await new Promise((r) => setTimeout(r, 100));
    const after = await api<{ results: { chunk_id: string; text: string }[] }>(server, 'POST', '/v1/retrieve', { query: 'porous suction liquid nitrogen wall cooling', top_k: 10 });
    const wingChunks = after.body.results.filter((x) => x.chunk_id.startsWith('wing#'));
    expect(wingChunks.length).toBeGreaterThan(0);
    expect(wingChunks.every((x) => x.chunk_id.startsWith('wing#v2#'))).toBe(true);
    expect(wingChunks.some((x) => x.text.includes('porous'))).toBe(false);

    expect((await api(server, 'DELETE', '/v1/documents/heat')).status).toBe(202);
    expect((await waitForStatus(server, 'heat', 'deleted')).chunks).toBe(0);
    const gone = await api<{ results: { document_id: string }[] }>(server, 'POST', '/v1/retrieve', { query: 'ablative heat shields hypersonic', top_k: 10 });
    expect(gone.body.results.map((x) => x.document_id)).not.toContain('heat');
    expect((await api(server, 'DELETE', '/v1/documents/nope')).status).toBe(404);
  });

  it('answers bad input with a clear 4xx and keeps serving', async () => {
    const cases: [string, string, unknown, number, RegExp][] = [
      ['POST', '/v1/documents', {}, 400, /empty body/],
      ['POST', '/v1/documents', { text: 42 }, 400, /text/],
      ['POST', '/v1/documents', { text: 'x', bogus: true }, 400, /bogus|Unrecognized/i],
      ['POST', '/v1/documents', { content_base64: Buffer.from('GIF89a binary').toString('base64'), mime_type: 'image/gif' }, 415, /unsupported/],
      ['POST', '/v1/query', {}, 400, /empty body/],
      ['POST', '/v1/query', { question: '' }, 400, /question/],
      ['POST', '/v1/query', { question: 'x', top_k: 'ten' }, 400, /top_k/],
      ['POST', '/v1/query', { question: 'x', filters: { tenant: 'other' } }, 400, /reserved/],
      ['POST', '/v1/feedback', { trace_id: 'abc', rating: 'meh' }, 400, /rating/],
      ['GET', '/v1/documents/does-not-exist', undefined, 404, /not found/],
    ];
    for (const [method, path, body, status, message] of cases) {
      const r = await api<{ error: { code: string; message: string } }>(server, method, path, body);
      expect({ path, status: r.status }).toEqual({ path, status });
      expect(r.body.error.message).toMatch(message);
    }
    const malformed = await api<{ error: { message: string } }>(server, 'POST', '/v1/query', '{"question": ', { 'content-type': 'application/json' });
    expect(malformed.status).toBe(400);
    expect(malformed.body.error.message).toMatch(/malformed JSON/);

    const huge = await api(server, 'POST', '/v1/documents', { text: 'a'.repeat(server.config.RAG_MAX_BODY_BYTES * 2) });
    expect(huge.status).toBe(413);
    const overDocLimit = await api<{ error: { code: string } }>(server, 'POST', '/v1/documents', { text: 'b '.repeat(server.config.RAG_MAX_BODY_BYTES * 0.6) });
    expect(overDocLimit.status).toBe(413);
    expect(overDocLimit.body.error.code).toBe('payload_too_large');

    const corrupt = await api(server, 'POST', '/v1/documents', {
      id: 'corrupt-pdf',
      content_base64: Buffer.concat([Buffer.from('%PDF-1.4\n'), Buffer.from('garbage '.repeat(50))]).toString('base64'),
    });
    expect(corrupt.status).toBe(202);
    const failed = await waitForStatus(server, 'corrupt-pdf');
    expect(failed.status).toBe('failed');
    expect(String(failed.error)).toMatch(/corrupt|PDF/i);

    // Feedback needs a trace this gateway issued to the caller's tenant (test/e2e/tenant-ids.e2e.spec.ts).
    expect((await api(server, 'POST', '/v1/feedback', { trace_id: 'abc', rating: 'up' })).status).toBe(404);
    const traced = await api<{ trace_id: string }>(server, 'POST', '/v1/retrieve', { query: 'anything' });
    expect((await api(server, 'POST', '/v1/feedback', { trace_id: traced.body.trace_id, rating: 'up' })).status).toBe(202);
    expect((await api(server, 'GET', '/healthz')).status).toBe(200);
  });

  it('keeps everything indexed across a restart', async () => {
    const dir = server.dataDir;
    await server.stop();
    server = await startServer(dir);
    const doc = await api(server, 'GET', '/v1/documents/wing');
    expect(doc.body).toMatchObject({ status: 'indexed', version: 2 });
    const q = await api<Answer>(server, 'POST', '/v1/query', { question: 'What limits the test time of a shock tube?' });
    expect(q.body.citations[0]!.document_id).toBe('shock');
    const gone = await api(server, 'GET', '/v1/documents/heat');
    expect(gone.body.status).toBe('deleted');
  });
});
