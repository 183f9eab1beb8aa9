/**
 * Issue 11 (security and robustness), over HTTP with two tenants' keys:
 * - document ids are scoped by tenant: another tenant's id is a free, independent id (no 409 existence oracle, no
 *   squatting), and the connectors' id prefixes are reserved;
 * - feedback is bound to a trace issued to the caller's tenant;
 * - submission is atomic: a process that dies between the registry commit and the bus publish still gets its
 *   document delivered (transactional outbox, relayed by the next process).
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SqliteApiKeyStore, SqliteRegistry } from '@rag/adapters';
import { DocumentService } from '@rag/application';
import { issueApiKey } from '@rag/services';
import { RecordingBus } from '../fakes/recording-bus';
import { api, removeDir, startServer, type Server } from './harness';

const ACME = 'acme';
const BETA = 'beta';

type Body = Record<string, unknown>;

async function issueKeys(dataDir: string): Promise<{ a: string; b: string }> {
  const store = new SqliteApiKeyStore({ dir: dataDir });
  try {
    const scopes = ['ingest', 'query'] as ('ingest' | 'query')[];
    const a = await issueApiKey(store, { tenant: ACME, scopes, unrestricted: true, name: 'acme' });
    const b = await issueApiKey(store, { tenant: BETA, scopes, unrestricted: true, name: 'beta' });
    return { a: a.key, b: b.key };
  } finally {
    await store.close();
  }
}

const as = (key: string) => ({ authorization: `Bearer ${key}` });

async function waitFor(server: Server, key: string, id: string, status: string): Promise<Body> {
  const deadline = Date.now() + 60_000;
  for (;;) {
    const r = await api(server, 'GET', `/v1/documents/${encodeURIComponent(id)}`, undefined, as(key));
    if (r.body.status === status) return r.body;
    if (r.body.status === 'failed' || Date.now() > deadline) throw new Error(`document ${id}: ${JSON.stringify(r.body)}`);
    await new Promise((res) => setTimeout(res, 50));
  }
}

type Hit = { document_id: string; chunk_id: string; text: string };
const retrieve = async (server: Server, key: string, body: Body) =>
  api<{ results: Hit[]; trace_id: string }>(server, 'POST', '/v1/retrieve', { mode: 'keyword', top_k: 20, ...body }, as(key));

describe('tenant-scoped document ids, tenant-bound feedback, atomic submission (HTTP)', () => {
  let server: Server;
  let keys: { a: string; b: string };

  beforeAll(async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'rag-tenant-ids-'));
    keys = await issueKeys(dataDir);
    server = await startServer(dataDir, { RAG_RATE_LIMIT_RPS: '100000', RAG_RATE_LIMIT_BURST: '100000', RAG_PARENT_CHUNK_TOKENS: '0' });
  });
  afterAll(async () => {
    await server?.stop();
    if (server) removeDir(server.dataDir);
  });

  it('another tenant’s id is a free id: tenant B gets its own independent document, A’s stays untouched', async () => {
    const a = await api(server, 'POST', '/v1/documents', { id: 'shared-doc', title: 'Acme notes', text: 'The quokkatron manual of acme covers valves.' }, as(keys.a));
    expect(a.status).toBe(202);
    await waitFor(server, keys.a, 'shared-doc', 'indexed');
    const b = await api(server, 'POST', '/v1/documents', { id: 'shared-doc', title: 'Beta notes', text: 'The quokkatron handbook of beta covers pumps.' }, as(keys.b));
    expect(b.status, JSON.stringify(b.body)).toBe(202);
    expect(b.body).toMatchObject({ document_id: 'shared-doc', version: 1, status: 'queued' });
    await waitFor(server, keys.b, 'shared-doc', 'indexed');

    expect((await api(server, 'GET', '/v1/documents/shared-doc', undefined, as(keys.a))).body).toMatchObject({ document_id: 'shared-doc', tenant: ACME, title: 'Acme notes', version: 1 });
    expect((await api(server, 'GET', '/v1/documents/shared-doc', undefined, as(keys.b))).body).toMatchObject({ document_id: 'shared-doc', tenant: BETA, title: 'Beta notes', version: 1 });

    // Each tenant's search (and its document_id filter) sees its own document, by its external id.
    for (const [key, word, other] of [
      [keys.a, 'valves', 'pumps'],
      [keys.b, 'pumps', 'valves'],
    ] as const) {
      for (const filters of [undefined, { document_id: 'shared-doc' }, { document_id: { in: ['shared-doc'] } }]) {
        const r = await retrieve(server, key, { query: 'quokkatron', ...(filters ? { filters } : {}) });
        expect(r.status).toBe(200);
        expect(r.body.results.length).toBeGreaterThan(0);
        for (const hit of r.body.results) {
          expect(hit.document_id).toBe('shared-doc');
          expect(hit.chunk_id).toMatch(/^shared-doc#v1#\d+$/);
          expect(hit.text).toContain(word);
          expect(hit.text).not.toContain(other);
        }
      }
      const q = await api<{ citations: Hit[] }>(server, 'POST', '/v1/query', { question: 'quokkatron', mode: 'keyword' }, as(key));
      expect(q.status).toBe(200);
      for (const c of q.body.citations) expect(c).toMatchObject({ document_id: 'shared-doc', chunk_id: expect.stringMatching(/^shared-doc#v1#/) });
    }
    // A qualified internal id is no external id: it names nothing, for anyone.
    expect((await api(server, 'GET', `/v1/documents/${encodeURIComponent('acme#shared-doc')}`, undefined, as(keys.a))).status).toBe(404);
    expect((await api(server, 'GET', `/v1/documents/${encodeURIComponent('acme#shared-doc')}`, undefined, as(keys.b))).status).toBe(404);

    // B deletes its document; A's is still there and still found.
    expect((await api(server, 'DELETE', '/v1/documents/shared-doc', undefined, as(keys.b))).status).toBe(202);
    await waitFor(server, keys.b, 'shared-doc', 'deleted');
    expect((await api(server, 'GET', '/v1/documents/shared-doc', undefined, as(keys.a))).body).toMatchObject({ status: 'indexed', version: 1 });
    expect((await retrieve(server, keys.a, { query: 'quokkatron' })).body.results.map((h) => h.document_id)).toContain('shared-doc');
    expect((await retrieve(server, keys.b, { query: 'quokkatron' })).body.results).toEqual([]);
  });

  it('an unknown id and another tenant’s id get the same answers (no existence oracle)', async () => {
    await api(server, 'POST', '/v1/documents', { id: 'acme-only', text: 'only acme has this' }, as(keys.a));
    const theirs = await api(server, 'GET', '/v1/documents/acme-only', undefined, as(keys.b));
    const none = await api(server, 'GET', '/v1/documents/nobody-has-this', undefined, as(keys.b));
    expect(theirs.status).toBe(404);
    expect(none.status).toBe(404);
    expect((theirs.body as { error: { message: string } }).error.message).toBe('document acme-only not found');
    expect((await api(server, 'DELETE', '/v1/documents/acme-only', undefined, as(keys.b))).status).toBe(404);
  });

  it('reserves the connectors’ id prefixes: an upload with id confluence:site:1 (or notion:…) is a 400', async () => {
    for (const id of ['confluence:site:1', 'notion:abc', 'CONFLUENCE:site:2']) {
      const r = await api<{ error: { code: string; message: string } }>(server, 'POST', '/v1/documents', { id, text: 'squatting a page id' }, as(keys.a));
      expect(r.status, id).toBe(400);
      expect(r.body.error).toMatchObject({ code: 'invalid_request', message: expect.stringMatching(/reserved for the (confluence|notion) connector/) });
    }
    const batch = await api<{ accepted: unknown[]; rejected: { index: number; error: { code: string } }[] }>(
      server,
      'POST',
      '/v1/documents:batch',
      { documents: [{ id: 'fine-id', text: 'ok' }, { id: 'confluence:site:1', text: 'squat' }] },
      as(keys.a),
    );
    expect(batch.status).toBe(202);
    expect(batch.body.rejected).toEqual([{ index: 1, error: expect.objectContaining({ code: 'invalid_request' }) }]);
    const form = new FormData();
    form.set('id', 'notion:0b6b8e5c00000000000000000000000a');
    form.set('file', new Blob([Buffer.from('squat')], { type: 'text/plain' }), 'a.txt');
    expect((await api(server, 'POST', '/v1/documents', form, as(keys.a))).status).toBe(400);
    expect((await api(server, 'GET', '/v1/documents/confluence:site:1', undefined, as(keys.a))).status).toBe(404);
  });

  it('feedback is bound to a trace issued to the caller’s tenant: another tenant’s trace is a 404, like an unknown one', async () => {
    const q = await api<{ trace_id: string }>(server, 'POST', '/v1/query', { question: 'quokkatron valves' }, as(keys.a));
    expect(q.status).toBe(200);
    const r = await retrieve(server, keys.a, { query: 'valves' });
    for (const trace of [q.body.trace_id, r.body.trace_id]) {
      const stolen = await api<{ error: { code: string; message: string } }>(server, 'POST', '/v1/feedback', { trace_id: trace, rating: 'down' }, as(keys.b));
      expect(stolen.status).toBe(404);
      const unknown = await api<{ error: { code: string; message: string } }>(server, 'POST', '/v1/feedback', { trace_id: 'f'.repeat(32), rating: 'down' }, as(keys.b));
      expect(unknown.status).toBe(404);
      expect(stolen.body.error.code).toBe(unknown.body.error.code);
      expect((await api(server, 'POST', '/v1/feedback', { trace_id: trace, rating: 'up', comment: 'helpful' }, as(keys.a))).status).toBe(202);
    }
  });
});

describe('atomic submission across a crash between registry commit and publish (HTTP)', () => {
  it('the next gateway process delivers the document the previous one committed but never published', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'rag-outbox-'));
    let server: Server | undefined;
    try {
      const keys = await issueKeys(dataDir);
      // The previous process: the change is committed in the registry, the publish never happens.
      const registry = new SqliteRegistry({ dir: dataDir });
      const crashed = new DocumentService(registry, new RecordingBus(Infinity), 1024 * 1024);
      const accepted = await crashed.submit({ id: 'survivor', title: 'Survivor', text: 'The wombatron survives a crash.' }, ACME);
      expect(accepted).toMatchObject({ ok: true, value: { document_id: 'survivor', status: 'queued' } });
      await registry.close();

      server = await startServer(dataDir, { RAG_RATE_LIMIT_RPS: '100000', RAG_RATE_LIMIT_BURST: '100000' });
      // Before the relay has run, a resubmission of the same bytes is a duplicate of an accepted change (its event is
      // safe in the outbox): answered without a second event. Either way the document must end indexed.
      const again = await api(server, 'POST', '/v1/documents', { id: 'survivor', title: 'Survivor', text: 'The wombatron survives a crash.' }, as(keys.a));
      expect(again.status).toBe(202);
      expect(await waitFor(server, keys.a, 'survivor', 'indexed')).toMatchObject({ version: 1, tenant: ACME });
      const r = await retrieve(server, keys.a, { query: 'wombatron' });
      expect(r.body.results.map((h) => h.document_id)).toContain('survivor');
    } finally {
      await server?.stop();
      removeDir(dataDir);
    }
  });
});
