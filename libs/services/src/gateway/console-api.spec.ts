import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig, markUnrecoverable, resetUnrecoverableForTests, setLogLevel } from '@rag/platform';
import { startEmbeddedServer } from '../embedded';
import { consoleDir } from './console';
import { CounterWindow, readLatestEval, writeLatestEval, type OverviewCounters } from './overview';

setLogLevel('error');
const dirs: string[] = [];
const tmp = (p: string) => {
  const d = mkdtempSync(join(tmpdir(), p));
  dirs.push(d);
  return d;
};
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

async function start(env: Record<string, string>) {
  const dataDir = tmp('rag-console-');
  const config = loadConfig({ RAG_MAX_BODY_BYTES: String(1024 * 1024), RAG_EMBEDDER: 'hashing', RAG_RECONCILE_INTERVAL_S: '0', ...env, RAG_DATA_DIR: dataDir, RAG_PORT: '0', RAG_HOST: '127.0.0.1' });
  const s = await startEmbeddedServer(config);
  const call = async (method: string, path: string, opts: { key?: string; body?: unknown; headers?: Record<string, string> } = {}) => {
    const res = await fetch(s.url + path, {
      method,
      redirect: 'manual',
      headers: { ...(opts.body !== undefined ? { 'content-type': 'application/json' } : {}), ...(opts.key ? { authorization: `Bearer ${opts.key}` } : {}), ...opts.headers },
      ...(opts.body !== undefined ? { body: JSON.stringify(opts.body) } : {}),
    });
    const text = await res.text();
    let body: unknown = text;
    try {
      body = JSON.parse(text);
    } catch {
      /* text */
    }
    return { status: res.status, headers: res.headers, body: body as Record<string, unknown>, text };
  };
  return { ...s, call, dataDir };
}

function builtConsole(): string {
  const dir = tmp('rag-console-build-');
  mkdirSync(join(dir, 'assets'));
  writeFileSync(join(dir, 'index.html'), '<!doctype html><div id="app"></div><script type="module" src="/assets/index-abc123.js"></script>');
  writeFileSync(join(dir, 'assets', 'index-abc123.js'), 'console.log("console")');
  return dir;
}

describe('the web console at /', () => {
  let s: Awaited<ReturnType<typeof start>>;
  beforeAll(async () => {
    s = await start({ RAG_CONSOLE_DIR: builtConsole() });
  });
  afterAll(() => s?.close());

  it('serves index.html revalidated on every load, with a CSP that allows only this origin', async () => {
    const r = await s.call('GET', '/');
    expect(r.status).toBe(200);
    expect(r.headers.get('content-type')).toContain('text/html');
    expect(r.text).toContain('<div id="app">');
    expect(r.headers.get('cache-control')).toBe('no-cache');
    expect(r.headers.get('content-security-policy')).toContain("script-src 'self'");
  });

  it('caches the content-hashed assets for a year; a missing asset is a 404, not the page', async () => {
    const a = await s.call('GET', '/assets/index-abc123.js');
    expect(a.status).toBe(200);
    expect(a.headers.get('cache-control')).toBe('public, max-age=31536000, immutable');
    expect((await s.call('GET', '/assets/nope.js')).status).toBe(404);
  });

  it('the old playground address redirects to the console; the API is unaffected', async () => {
    const r = await s.call('GET', '/playground');
    expect(r.status).toBe(301);
    expect(r.headers.get('location')).toBe('/');
    expect((await s.call('GET', '/healthz')).status).toBe(200);
  });

  it('/healthz answers 503 naming a part that only a restart repairs (the liveness probe then restarts the process)', async () => {
    try {
      markUnrecoverable('onnx-worker', 'worker exited with code: 3');
      const r = await s.call('GET', '/healthz');
      expect(r.status).toBe(503);
      expect(JSON.parse(r.text)).toEqual({ status: 'restart_required', unrecoverable: [{ part: 'onnx-worker', reason: 'worker exited with code: 3' }] });
    } finally {
      resetUnrecoverableForTests();
    }
    expect((await s.call('GET', '/healthz')).status).toBe(200);
  });
});

describe('consoleDir', () => {
  it('finds console/ beside the build, then <repo>/dist/console; RAG_CONSOLE_DIR wins and must hold index.html', () => {
    const out = builtConsole();
    const root = tmp('rag-build-');
    mkdirSync(join(root, 'libs/services/src/gateway'), { recursive: true });
    expect(consoleDir({ RAG_CONSOLE_DIR: undefined }, join(root, 'libs/services/src/gateway'))).toBeNull();
    mkdirSync(join(root, 'dist', 'console'), { recursive: true });
    writeFileSync(join(root, 'dist', 'console', 'index.html'), 'x');
    expect(consoleDir({ RAG_CONSOLE_DIR: undefined }, join(root, 'libs/services/src/gateway'))).toBe(join(root, 'dist', 'console'));
    mkdirSync(join(root, 'console'));
    writeFileSync(join(root, 'console', 'index.html'), 'x');
    expect(consoleDir({ RAG_CONSOLE_DIR: undefined }, join(root, 'libs/services/src/gateway'))).toBe(join(root, 'console'));
    expect(consoleDir({ RAG_CONSOLE_DIR: out }, '/nowhere')).toBe(out);
    expect(consoleDir({ RAG_CONSOLE_DIR: root }, '/nowhere')).toBeNull();
  });

  it('without a built console `/` answers 503 with how to build it, and the API keeps serving', async () => {
    const s = await start({ RAG_CONSOLE_DIR: tmp('rag-empty-') });
    try {
      const r = await s.call('GET', '/');
      expect(r.status).toBe(503);
      expect(r.text).toContain('npm run build');
      expect((await s.call('GET', '/v1/session')).status).toBe(200);
    } finally {
      await s.close();
    }
  });
});

describe('console endpoints: session, sources, overview', () => {
  const ADMIN = 'console-admin-key-0123456789';
  let s: Awaited<ReturnType<typeof start>>;
  let queryKey = '';
  beforeAll(async () => {
    s = await start({ RAG_API_KEYS: ADMIN, RAG_CONFLUENCE_WEBHOOK_SECRET: 'a-confluence-secret', RAG_TRACE_URL_TEMPLATE: 'https://traces.example/t/{trace_id}' });
    const k = await s.call('POST', '/v1/admin/api-keys', { key: ADMIN, body: { scopes: ['query'], name: 'reader' } });
    expect(k.status).toBe(201);
    queryKey = k.body.key as string;
  });
  afterAll(() => s?.close());

  it('GET /v1/session names the tenant, the scopes and the trace link template; no key is a 401', async () => {
    expect((await s.call('GET', '/v1/session', { key: ADMIN })).body).toMatchObject({
      tenant: 'default',
      scopes: ['ingest', 'query', 'admin'],
      kind: 'env',
      restricted: false,
      trace_url_template: 'https://traces.example/t/{trace_id}',
    });
    expect((await s.call('GET', '/v1/session', { key: queryKey })).body).toMatchObject({ scopes: ['query'], kind: 'stored', restricted: true });
    expect((await s.call('GET', '/v1/session')).status).toBe(401);
  });

  it('GET /v1/sources: connection, webhook secret and the last webhook with its outcome (a refused one included)', async () => {
    const before = await s.call('GET', '/v1/sources', { key: ADMIN });
    expect(before.status).toBe(200);
    const kinds = before.body.sources as Record<string, unknown>[];
    expect(kinds.map((k) => k.kind)).toEqual(['confluence', 'notion']);
    expect(kinds[0]).toMatchObject({ connected: false, webhook_configured: true, last_webhook: null, last_reconcile: null });
    expect(kinds[1]).toMatchObject({ connected: false, webhook_configured: false });
    const hook = await fetch(`${s.url}/v1/webhooks/confluence`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"event":"page_updated"}' });
    expect(hook.status).toBe(401);
    const after = (await s.call('GET', '/v1/sources', { key: ADMIN })).body.sources as { last_webhook: Record<string, unknown> | null }[];
    expect(after[0]!.last_webhook).toMatchObject({ ok: false, outcome: 'unauthorized' });
    expect(typeof after[0]!.last_webhook!.at).toBe('string');
    expect(after[1]!.last_webhook).toBeNull();
  });

  it('POST /v1/sources/reconcile (admin) runs a pass; a query-only key gets 403 on the sources routes', async () => {
    const r = await s.call('POST', '/v1/sources/reconcile', { key: ADMIN });
    expect(r.status).toBe(200);
    expect(r.body).toEqual({ reports: [] });
    expect((await s.call('POST', '/v1/sources/reconcile', { key: queryKey })).status).toBe(403);
    expect((await s.call('GET', '/v1/sources', { key: queryKey })).status).toBe(403);
  });

  it('GET /v1/overview counts documents by status, answers and feedback of the last hour', async () => {
    const o1 = (await s.call('GET', '/v1/overview', { key: ADMIN })).body;
    expect(o1).toMatchObject({ documents: { indexed: 0 }, feedback: { up: expect.any(Number), down: expect.any(Number) } });
    const q = await s.call('POST', '/v1/query', { key: queryKey, body: { question: 'what is a swept wing?' } });
    expect(q.status).toBe(200);
    expect((await s.call('POST', '/v1/feedback', { key: queryKey, body: { trace_id: q.body.trace_id, rating: 'down', comment: 'empty corpus' } })).status).toBe(202);
    const o2 = (await s.call('GET', '/v1/overview', { key: ADMIN })).body as { answers: { answered: number; refused: number }; feedback: { down: number } };
    const a1 = o1.answers as { answered: number; refused: number };
    expect(o2.answers.answered + o2.answers.refused).toBe(a1.answered + a1.refused + 1);
    expect(o2.feedback.down).toBe((o1.feedback as { down: number }).down + 1);
    expect((await s.call('GET', '/v1/overview', { key: queryKey })).status).toBe(403);
  });

  it('GET /v1/overview carries the latest `rag eval` report of the data folder: null without one, an error for a bad file', async () => {
    expect((await s.call('GET', '/v1/overview', { key: ADMIN })).body.eval).toBeNull();
    mkdirSync(join(s.dataDir, 'eval'), { recursive: true });
    const report = { finished_at: '2026-01-02T03:04:05.000Z', dataset: 'cranfield', results: [{ dataset: 'cranfield', mode: 'hybrid', 'ndcg@10': 0.41, nested: { x: 1 } }] };
    writeFileSync(join(s.dataDir, 'eval', 'latest.json'), JSON.stringify(report));
    expect((await s.call('GET', '/v1/overview', { key: ADMIN })).body.eval).toEqual({
      finished_at: '2026-01-02T03:04:05.000Z',
      dataset: 'cranfield',
      results: [{ dataset: 'cranfield', mode: 'hybrid', 'ndcg@10': 0.41 }],
    });
    writeFileSync(join(s.dataDir, 'eval', 'latest.json'), '{"results": 3}');
    expect((await s.call('GET', '/v1/overview', { key: ADMIN })).body.eval).toMatchObject({ error: expect.stringMatching(/not one written by `rag eval`/) });
    writeFileSync(join(s.dataDir, 'eval', 'latest.json'), 'not json');
    expect((await s.call('GET', '/v1/overview', { key: ADMIN })).body.eval).toEqual({ error: 'the eval report is not JSON' });
  });
});

describe('GET /v1/documents/{id}/chunks', () => {
  const ADMIN = 'chunks-admin-key-0123456789';
  const OTHER = 'chunks-other-tenant-key-0123456789';
  let s: Awaited<ReturnType<typeof start>>;
  const GUIDE = '# Wind tunnels\n\n## Test section\nThe test section holds the model; its walls are slotted to reduce blockage.\n\n## Diffuser\nThe diffuser recovers pressure downstream of the test section.\n';
  const indexed = async (key: string, id: string) => {
    for (;;) {
      const r = await s.call('GET', `/v1/documents/${id}`, { key });
      if (r.body.status === 'indexed') return r.body;
      if (r.body.status === 'failed') throw new Error(JSON.stringify(r.body));
      await new Promise((res) => setTimeout(res, 50));
    }
  };
  beforeAll(async () => {
    s = await start({ RAG_API_KEYS: `${ADMIN},${OTHER}=acme` });
  });
  afterAll(() => s?.close());

  it('lists the active version’s chunks in ordinal order with heading paths and parent links, paged', async () => {
    expect((await s.call('POST', '/v1/documents', { key: ADMIN, body: { id: 'guide', title: 'Guide', text: GUIDE, mime_type: 'text/markdown' } })).status).toBe(202);
    const doc = await indexed(ADMIN, 'guide');
    // The Overview counts it among the documents that finished ingestion (the registry's index-event consumer).
    const overview = (await s.call('GET', '/v1/overview', { key: ADMIN })).body as { ingested: number; documents: { indexed: number } };
    expect(overview.ingested).toBeGreaterThanOrEqual(1);
    expect(overview.documents.indexed).toBe(1);
    const r = await s.call('GET', '/v1/documents/guide/chunks', { key: ADMIN });
    expect(r.status).toBe(200);
    const body = r.body as { active_version: number; total: number; chunks: { chunk_id: string; ordinal: number; kind: string; parent_id: string | null; heading_path: string[]; text: string }[] };
    expect(body.active_version).toBe(1);
    expect(body.total).toBeGreaterThanOrEqual(doc.chunks as number);
    expect(body.chunks.map((c) => c.ordinal)).toEqual([...Array(body.total).keys()]);
    for (const c of body.chunks) {
      expect(c.chunk_id).toBe(`guide#v1#${c.ordinal}`);
      if (c.parent_id !== null) expect(body.chunks.map((x) => x.chunk_id)).toContain(c.parent_id);
    }
    expect(body.chunks.filter((c) => c.kind === 'child').length).toBe(doc.chunks);
    expect(body.chunks.some((c) => c.heading_path.includes('Diffuser') && c.text.includes('recovers pressure'))).toBe(true);
    const second = await s.call('GET', '/v1/documents/guide/chunks?limit=1&offset=1', { key: ADMIN });
    expect((second.body.chunks as unknown[]).length).toBe(body.total > 1 ? 1 : 0);
  });

  it('another tenant’s document ids resolve inside that tenant (ids without the tenant qualifier)', async () => {
    expect((await s.call('POST', '/v1/documents', { key: OTHER, body: { id: 'guide', title: 'Acme guide', text: GUIDE } })).status).toBe(202);
    await indexed(OTHER, 'guide');
    const r = await s.call('GET', '/v1/documents/guide/chunks', { key: OTHER });
    const chunks = r.body.chunks as { chunk_id: string; title: string }[];
    expect(chunks.length).toBeGreaterThan(0);
    expect(chunks.every((c) => c.chunk_id.startsWith('guide#v1#') && c.title === 'Acme guide')).toBe(true);
  });

  it('4xx: an unknown document, a bad page, an unknown parameter; nothing for a key without ingest', async () => {
    expect((await s.call('GET', '/v1/documents/nope/chunks', { key: ADMIN })).status).toBe(404);
    const bad = await s.call('GET', '/v1/documents/guide/chunks?limit=0', { key: ADMIN });
    expect(bad.status).toBe(400);
    expect(String((bad.body.error as { message: string }).message)).toMatch(/limit/);
    expect((await s.call('GET', '/v1/documents/guide/chunks?limit=500', { key: ADMIN })).status).toBe(400);
    expect((await s.call('GET', '/v1/documents/guide/chunks?page=2', { key: ADMIN })).status).toBe(400);
    // Ids no document can have: a 4xx, never a 5xx.
    for (const id of ['a%20b', '%23', 'x'.repeat(600), '%00', 'upload%3A', 'acme%23guide']) {
      const r = await s.call('GET', `/v1/documents/${id}/chunks`, { key: ADMIN });
      expect(r.status, id).toBeGreaterThanOrEqual(400);
      expect(r.status, id).toBeLessThan(500);
    }
    const q = await s.call('POST', '/v1/admin/api-keys', { key: ADMIN, body: { scopes: ['query'] } });
    expect((await s.call('GET', '/v1/documents/guide/chunks', { key: q.body.key as string })).status).toBe(403);
  });
});

describe('GET /v1/documents pages by cursor', () => {
  const ADMIN = 'list-admin-key-0123456789';
  const OTHER = 'list-other-tenant-key-0123456789';
  let s: Awaited<ReturnType<typeof start>>;
  beforeAll(async () => {
    s = await start({ RAG_API_KEYS: `${ADMIN},${OTHER}=acme` });
  });
  afterAll(() => s?.close());

  it('walks every document once, in the order of an offset listing, and ends with next_cursor null', async () => {
    const documents = Array.from({ length: 7 }, (_, i) => ({ id: `page-${i}`, title: `Page ${i}`, text: `Page ${i} is about the wind tunnel number ${i}.` }));
    expect((await s.call('POST', '/v1/documents:batch', { key: ADMIN, body: { documents } })).status).toBe(202);
    expect((await s.call('POST', '/v1/documents', { key: OTHER, body: { id: 'theirs', text: 'Another tenant.' } })).status).toBe(202);
    const all = await s.call('GET', '/v1/documents?limit=100', { key: ADMIN });
    expect(all.body.next_cursor).toBeNull();
    const order = (all.body.documents as { document_id: string }[]).map((d) => d.document_id);
    expect([...order].sort()).toEqual(documents.map((d) => d.id).sort());
    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const r = await s.call('GET', `/v1/documents?limit=3${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`, { key: ADMIN });
      expect(r.status).toBe(200);
      seen.push(...(r.body.documents as { document_id: string }[]).map((d) => d.document_id));
      cursor = r.body.next_cursor as string | null;
      pages++;
    } while (cursor && pages < 10);
    expect(seen).toEqual(order);
    expect(pages).toBe(3);
    const theirs = await s.call('GET', '/v1/documents?limit=1', { key: OTHER });
    expect((theirs.body.documents as { document_id: string }[]).map((d) => d.document_id)).toEqual(['theirs']);
    // Another tenant's cursor names a position, not documents: it never reveals this tenant's rows.
    const after = await s.call('GET', `/v1/documents?limit=10&cursor=${encodeURIComponent(theirs.body.next_cursor as string)}`, { key: OTHER });
    expect(after.body).toMatchObject({ documents: [], next_cursor: null });
  });

  it('400 for a cursor it did not issue and for a cursor with an offset; the list keeps serving', async () => {
    const bad = await s.call('GET', '/v1/documents?cursor=not-a-token', { key: ADMIN });
    expect(bad.status).toBe(400);
    expect(JSON.stringify(bad.body)).toContain('next_cursor of the previous page');
    const first = await s.call('GET', '/v1/documents?limit=1', { key: ADMIN });
    const both = await s.call('GET', `/v1/documents?limit=1&offset=2&cursor=${encodeURIComponent(first.body.next_cursor as string)}`, { key: ADMIN });
    expect(both.status).toBe(400);
    expect(JSON.stringify(both.body)).toContain('cursor or offset');
    expect((await s.call('GET', '/v1/documents?limit=1&offset=2', { key: ADMIN })).status).toBe(200);
  });
});

describe('the eval report file', () => {
  it('what `rag eval` writes is what the overview reads (replaced whole on the next run)', async () => {
    const dir = tmp('rag-eval-');
    expect(await readLatestEval(dir)).toBeNull();
    writeLatestEval(dir, { finished_at: '2026-01-01T00:00:00.000Z', dataset: 'a', results: [{ mode: 'dense', 'ndcg@10': 0.3 }] });
    writeLatestEval(dir, { finished_at: '2026-01-02T00:00:00.000Z', dataset: 'b', results: [{ mode: 'hybrid', 'ndcg@10': 0.5, ood_file: 'x.jsonl' }] });
    expect(await readLatestEval(dir)).toEqual({ finished_at: '2026-01-02T00:00:00.000Z', dataset: 'b', results: [{ mode: 'hybrid', 'ndcg@10': 0.5, ood_file: 'x.jsonl' }] });
  });
});

describe('CounterWindow', () => {
  const c = (n: number): OverviewCounters => ({ answered: n, refused: 0, feedback_up: 0, feedback_down: 0, index_events: n * 2, dead_letters: 0 });
  it('answers deltas over the last hour, and the span it covers', () => {
    const w = new CounterWindow(3_600_000);
    expect(w.summary(0, c(5))).toEqual({ window_s: 0, counts: c(5) });
    w.add(0, c(10));
    expect(w.summary(30_000, c(12))).toEqual({ window_s: 30, counts: { ...c(2), index_events: 4 } });
    for (let m = 1; m <= 120; m++) w.add(m * 60_000, c(10 + m));
    // At 120 min the oldest sample inside the hour is the one of minute 60.
    expect(w.summary(120 * 60_000, c(130))).toEqual({ window_s: 3600, counts: { ...c(60), index_events: 120 } });
  });
  it('a counter that went down (a reset) counts from zero', () => {
    const w = new CounterWindow();
    w.add(0, c(10));
    expect(w.summary(1000, c(3)).counts.answered).toBe(3);
  });
});

describe('config', () => {
  it('RAG_TRACE_URL_TEMPLATE must contain {trace_id}', () => {
    expect(() => loadConfig({ RAG_TRACE_URL_TEMPLATE: 'https://traces.example/' })).toThrow(/RAG_TRACE_URL_TEMPLATE/);
    expect(loadConfig({ RAG_TRACE_URL_TEMPLATE: 'https://t/{trace_id}' }).RAG_TRACE_URL_TEMPLATE).toBe('https://t/{trace_id}');
  });
});
