import { ensureTestModels, TEST_MODELS_DIR } from '../../libs/adapters/src/onnx-embedder/test-models';
import { DEFAULT_LOCAL_MODEL } from '../../libs/adapters/src/local-llm';
import { api, removeDir, startServer, type Server } from './harness';
import { waitForStatus } from './harness';

/**
 * RAG_LLM=local through the embedded platform: the generator answers with the in-process GGUF model (Gemma 3 270M,
 * fetched by the project's own script). A BASE model: this checks the mechanics of the LLM path (the answer comes
 * from the model, not the extractive fallback; streamed; citations, when it writes [n], point at retrieved
 * documents; tokens counted), never the quality of what it says.
 */
interface Answer {
  answer: string;
  refused: boolean;
  citations: { ref: number; document_id: string; chunk_id: string; text: string }[];
  degraded: string[];
  timings_ms: Record<string, number>;
  statements: { text: string; source_ids: number[]; support: number; supported: boolean }[];
}

const MODEL_LABEL = 'gemma-3-270m-q4_k_m';

async function completionTokens(server: Server): Promise<number> {
  const r = await fetch(`${server.url}/metrics`);
  const line = (await r.text()).split('\n').find((l) => l.startsWith('rag_llm_tokens_total{') && l.includes('kind="completion"') && l.includes(`model="${MODEL_LABEL}"`));
  return line ? Number(line.trim().split(/\s+/).pop()) : 0;
}

describe.skipIf(process.env.RAG_SKIP_MODEL_TESTS === '1')('with RAG_LLM=local (in-process GGUF model)', () => {
  let server: Server;

  beforeAll(async () => {
    ensureTestModels([DEFAULT_LOCAL_MODEL.name]);
    server = await startServer(undefined, {
      RAG_LLM: 'local',
      RAG_MODELS_DIR: TEST_MODELS_DIR,
      RAG_LLM_THREADS: '2',
      RAG_LLM_CONTEXT_SIZE: '4096',
      RAG_LLM_MAX_TOKENS: '24',
      RAG_LLM_TIMEOUT_MS: '60000',
    });
    await api(server, 'POST', '/v1/documents', {
      id: 'wing',
      title: 'Swept wings',
      text: 'Swept wings.\n\nCrossflow vortices make the boundary layer on a swept wing unstable near the leading edge.',
    });
    await api(server, 'POST', '/v1/documents', { id: 'heat', title: 'Heat shields', text: 'Heat shields.\n\nAblative heat shields absorb heat by pyrolysis.' });
    await waitForStatus(server, 'wing');
    await waitForStatus(server, 'heat');
  }, 15 * 60_000);
  afterAll(async () => {
    await server?.stop();
    if (server) removeDir(server.dataDir);
  });

  it('answers /v1/query with the local model: not degraded, citations valid, tokens counted', async () => {
    const before = await completionTokens(server);
    const r = await api<Answer>(server, 'POST', '/v1/query', { question: 'What makes the boundary layer on a swept wing unstable?' });
    expect(r.status).toBe(200);
    // 'llm' in degraded would mean the model failed and the extractive answerer stood in.
    expect(r.body.degraded).not.toContain('llm');
    expect(typeof r.body.answer).toBe('string');
    expect(r.body.answer.length).toBeGreaterThan(0);
    expect(typeof r.body.refused).toBe('boolean');
    if (r.body.refused) expect(r.body.citations).toEqual([]);
    for (const c of r.body.citations) {
      expect(['wing', 'heat']).toContain(c.document_id);
      expect(c.ref).toBeGreaterThanOrEqual(1);
      expect(c.chunk_id.startsWith(`${c.document_id}#`)).toBe(true);
    }
    expect(r.body.timings_ms.generate).toBeGreaterThan(0);
    // Not streamed: the model was asked for schema-constrained JSON statements (issue 15/16). Whatever it wrote, each
    // statement's source ids are sources the answer cites, and each carries its verified support.
    expect(Array.isArray(r.body.statements)).toBe(true);
    const refs = new Set(r.body.citations.map((c) => c.ref));
    for (const st of r.body.statements) {
      expect(st.text.length).toBeGreaterThan(0);
      for (const id of st.source_ids) expect(refs.has(id), `statement cites [${id}], citations ${[...refs].join(',')}`).toBe(true);
      expect(st.support).toBeGreaterThanOrEqual(0);
      expect(st.support).toBeLessThanOrEqual(1);
    }
    const used = (await completionTokens(server)) - before;
    expect(used).toBeGreaterThan(0);
    expect(used).toBeLessThanOrEqual(24);
  });

  it('streams the model’s answer as delta events, then the final answer', async () => {
    const res = await fetch(`${server.url}/v1/query`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ question: 'How do ablative heat shields absorb heat?', stream: true }),
    });
    expect(res.headers.get('content-type')).toContain('text/event-stream');
    const text = await res.text();
    const deltas = [...text.matchAll(/event: delta\ndata: (.*)\n/g)].map((m) => JSON.parse(m[1]!) as unknown);
    const done = /event: done\ndata: (.*)\n/.exec(text);
    expect(done).not.toBeNull();
    const answer = JSON.parse(done![1]!) as Answer;
    expect(answer.degraded).not.toContain('llm');
    if (!answer.refused) expect(deltas.length).toBeGreaterThan(1);
    for (const c of answer.citations) expect(['wing', 'heat']).toContain(c.document_id);
  });
});
