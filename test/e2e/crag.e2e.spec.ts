import { REFUSAL_MESSAGE } from '@rag/domain';
import { LlmStandIn, refsContaining } from './agent-standin';
import { api, removeDir, startServer, waitForStatus, type Server } from './harness';

/**
 * Corrective retrieval (CRAG, issue 16 item 4) through the embedded platform: a refusal for weak evidence gets ONE
 * retry — the query rewritten (by the LLM, here the OpenAI wire stand-in; by the keyword normaliser without one),
 * searched in the request's mode and keyword-only — then the refusal stands if the evidence is still weak.
 */
interface Answer {
  answer: string;
  refused: boolean;
  citations: { ref: number; document_id: string }[];
  degraded: string[];
  timings_ms: Record<string, number>;
}

const DOCS = [
  { id: 'heat', title: 'Heat shields', text: 'Heat shields.\n\nAblative heat shields absorb heat by pyrolysis.' },
  { id: 'wing', title: 'Swept wings', text: 'Swept wings.\n\nCrossflow vortices make the boundary layer on a swept wing unstable near the leading edge.' },
];
const UNANSWERABLE = 'Who painted the Mona Lisa in Florence?';
const CORRECTIVE_TIMINGS = ['corrective_generate', 'corrective_retrieve', 'corrective_rewrite'];
const correctiveKeys = (t: Record<string, number>) => Object.keys(t).filter((k) => k.startsWith('corrective_')).sort();

async function seeded(env: Record<string, string>): Promise<Server> {
  const server = await startServer(undefined, env);
  for (const d of DOCS) expect((await api(server, 'POST', '/v1/documents', d)).status).toBe(202);
  for (const d of DOCS) await waitForStatus(server, d.id, 'indexed');
  return server;
}

describe('corrective retrieval with an LLM (OpenAI wire stand-in)', () => {
  const llm = new LlmStandIn();
  let server: Server;
  let off: Server;

  beforeAll(async () => {
    const baseUrl = await llm.start();
    const env = { RAG_LLM: 'openai', RAG_LLM_BASE_URL: baseUrl, RAG_LLM_MODEL: 'test-model', RAG_LLM_TIMEOUT_MS: '5000' };
    server = await seeded(env);
    off = await seeded({ ...env, RAG_CORRECTIVE: 'off' });
  }, 300_000);
  afterAll(async () => {
    for (const s of [server, off]) {
      await s?.stop();
      if (s) removeDir(s.dataDir);
    }
    await llm.stop();
  });
  beforeEach(() => {
    llm.reset();
    llm.script = (r) => {
      if (r.kind === 'rewrite') return 'Leonardo da Vinci portrait painting Mona Lisa';
      if (r.kind === 'answer') return `Ablative heat shields absorb heat by pyrolysis [${refsContaining(r.user, 'pyrolysis')[0] ?? 1}].`;
      return '';
    };
  });

  it('retries once with the rewritten query, then refuses; degraded and timings say so', async () => {
    const r = await api<Answer>(server, 'POST', '/v1/query', { question: UNANSWERABLE });
    expect(r.status).toBe(200);
    expect(r.body.refused).toBe(true);
    expect(r.body.answer).toBe(REFUSAL_MESSAGE);
    expect(r.body.citations).toEqual([]);
    expect(r.body.degraded).toEqual(['corrective']);
    expect(correctiveKeys(r.body.timings_ms)).toEqual(CORRECTIVE_TIMINGS);
    // Exactly one rewrite, of the question as asked; the gate refused both times, so no answer call was made.
    expect(llm.of('rewrite').map((q) => q.user)).toEqual([UNANSWERABLE]);
    expect(llm.of('answer')).toHaveLength(0);
  });

  it('streams one refusal, not one per attempt', async () => {
    const res = await fetch(`${server.url}/v1/query`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ question: UNANSWERABLE, stream: true }) });
    const text = await res.text();
    const deltas = [...text.matchAll(/event: delta\ndata: (.*)\n/g)].map((m) => (JSON.parse(m[1]!) as { text: string }).text);
    expect(deltas.join('')).toBe(REFUSAL_MESSAGE);
    const done = JSON.parse(/event: done\ndata: (.*)\n/.exec(text)![1]!) as Answer;
    expect(done.refused).toBe(true);
    expect(done.degraded).toEqual(['corrective']);
    expect(llm.of('rewrite')).toHaveLength(1);
  });

  it('does not retry when the evidence is good', async () => {
    const r = await api<Answer>(server, 'POST', '/v1/query', { question: 'How do ablative heat shields absorb heat?' });
    expect(r.status).toBe(200);
    expect(r.body.refused).toBe(false);
    expect(r.body.degraded).toEqual([]);
    expect(correctiveKeys(r.body.timings_ms)).toEqual([]);
    expect(llm.of('rewrite')).toHaveLength(0);
    expect(r.body.citations[0]?.document_id).toBe('heat');
  });

  it('falls back to the keyword normaliser when the LLM fails on the rewrite (llm degraded), and still refuses', async () => {
    llm.script = (r) => (r.kind === 'rewrite' ? { status: 500, message: 'model overloaded' } : '');
    const r = await api<Answer>(server, 'POST', '/v1/query', { question: UNANSWERABLE });
    expect(r.status).toBe(200);
    expect(r.body.refused).toBe(true);
    expect(r.body.degraded.sort()).toEqual(['corrective', 'llm']);
    expect(llm.of('rewrite')).toHaveLength(1);
  });

  it('RAG_CORRECTIVE=off refuses at once', async () => {
    const r = await api<Answer>(off, 'POST', '/v1/query', { question: UNANSWERABLE });
    expect(r.status).toBe(200);
    expect(r.body.refused).toBe(true);
    expect(r.body.degraded).toEqual([]);
    expect(correctiveKeys(r.body.timings_ms)).toEqual([]);
    expect(llm.of('rewrite')).toHaveLength(0);
  });
});

describe('corrective retrieval without an LLM', () => {
  let server: Server;
  beforeAll(async () => {
    server = await seeded({});
  }, 300_000);
  afterAll(async () => {
    await server?.stop();
    if (server) removeDir(server.dataDir);
  });

  it('rewrites with the keyword normaliser, retries once, then refuses (corrective, not llm)', async () => {
    const r = await api<Answer>(server, 'POST', '/v1/query', { question: UNANSWERABLE });
    expect(r.status).toBe(200);
    expect(r.body.refused).toBe(true);
    expect(r.body.degraded).toEqual(['corrective']);
    expect(correctiveKeys(r.body.timings_ms)).toEqual(CORRECTIVE_TIMINGS);
  });

  it('keyword mode retries with one search (already keyword-only)', async () => {
    const r = await api<Answer>(server, 'POST', '/v1/query', { question: UNANSWERABLE, mode: 'keyword' });
    expect(r.status).toBe(200);
    expect(r.body.refused).toBe(true);
    expect(r.body.degraded).toEqual(['corrective']);
  });
});
