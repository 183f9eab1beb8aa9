/**
 * `mode: "agent"` with RAG_LLM=local: the planner's calls go to the in-process GGUF model (Gemma 3 270M, fetched by
 * the project's own script) with grammar-constrained JSON (generateJson). A BASE model: this checks the mechanics —
 * the loop never exceeds RAG_AGENT_MAX_STEPS, one `agent-hop` span per hop (children of the query span, in the
 * answer's trace), the answer a cited answer or a refusal over retrieved documents — never what the model decides.
 * Spans go to an in-memory exporter of the real OpenTelemetry SDK, started before the platform is loaded.
 */
import { InMemorySpanExporter, SimpleSpanProcessor, type ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { startTracing } from '@rag/platform';
import type { Server } from './harness';

const exporter = new InMemorySpanExporter();
startTracing('agent-local-test', { spanProcessors: [new SimpleSpanProcessor(exporter)], env: {} });
let harness: typeof import('./harness');

interface Answer {
  answer: string;
  refused: boolean;
  citations: { ref: number; document_id: string; chunk_id: string }[];
  degraded: string[];
  timings_ms: Record<string, number>;
  trace_id: string;
}

const MAX_STEPS = 2;
const MODEL_LABEL = 'gemma-3-270m-q4_k_m';
const ACTIONS = ['dense_search', 'keyword_search', 'filtered_search', 'fetch_document', 'answer', 'none'];

async function completionTokens(server: Server): Promise<number> {
  const r = await fetch(`${server.url}/metrics`);
  const line = (await r.text()).split('\n').find((l) => l.startsWith('rag_llm_tokens_total{') && l.includes('kind="completion"') && l.includes(`model="${MODEL_LABEL}"`));
  return line ? Number(line.trim().split(/\s+/).pop()) : 0;
}

async function spansOf(traceId: string, name: string): Promise<ReadableSpan[]> {
  // The query span ends after the response is written: wait for it (its children end before it).
  const deadline = Date.now() + 10_000;
  for (;;) {
    const spans = exporter.getFinishedSpans().filter((s) => s.spanContext().traceId === traceId);
    if (spans.some((s) => s.name === 'query') || Date.now() > deadline) return spans.filter((s) => s.name === name || name === '*');
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe('mode: agent with RAG_LLM=local (in-process GGUF model)', () => {
  let server: Server;

  beforeAll(async () => {
    const { ensureTestModels } = await import('../../libs/adapters/src/onnx-embedder/test-models');
    const { TEST_MODELS_DIR } = await import('../../libs/adapters/src/onnx-embedder/test-models');
    const { DEFAULT_LOCAL_MODEL } = await import('../../libs/adapters/src/local-llm');
    harness = await import('./harness');
    ensureTestModels([DEFAULT_LOCAL_MODEL.name]);
    server = await harness.startServer(undefined, {
      RAG_LLM: 'local',
      RAG_MODELS_DIR: TEST_MODELS_DIR,
      RAG_LLM_THREADS: '2',
      RAG_LLM_CONTEXT_SIZE: '4096',
      RAG_LLM_MAX_TOKENS: '24',
      RAG_LLM_TIMEOUT_MS: '120000',
      RAG_AGENT_MAX_STEPS: String(MAX_STEPS),
    });
    const docs = [
      { id: 'zephyr', title: 'Zephyr project', text: 'Zephyr project.\n\nThe Zephyr project is led by the engineer Alice Moreau.' },
      { id: 'moreau', title: 'Alice Moreau', text: 'Alice Moreau.\n\nAlice Moreau spent her childhood years at Lyon, France.' },
      { id: 'heat', title: 'Heat shields', text: 'Heat shields.\n\nAblative heat shields absorb heat by pyrolysis.' },
    ];
    for (const d of docs) await harness.api(server, 'POST', '/v1/documents', d);
    for (const d of docs) await harness.waitForStatus(server, d.id, 'indexed');
  }, 15 * 60_000);
  afterAll(async () => {
    await server?.stop();
    if (server) harness.removeDir(server.dataDir);
  });

  it('never exceeds its cap, emits one agent-hop span per hop, ends with a cited answer or a refusal', async () => {
    const before = await completionTokens(server);
    const r = await harness.api<Answer>(server, 'POST', '/v1/query', { question: 'In which city did the leader of the Zephyr project grow up?', mode: 'agent' });
    expect(r.status).toBe(200);
    const hopTimings = Object.keys(r.body.timings_ms).filter((k) => /^agent_hop\d+$/.test(k));
    expect(hopTimings.length).toBeGreaterThanOrEqual(1);
    expect(hopTimings.length).toBeLessThanOrEqual(MAX_STEPS);

    const hops = await spansOf(r.body.trace_id, 'agent-hop');
    const [query] = await spansOf(r.body.trace_id, 'query');
    expect(query).toBeDefined();
    expect(hops).toHaveLength(hopTimings.length);
    expect(hops.map((s) => s.attributes['rag.agent.step']).sort()).toEqual(hopTimings.map((_, i) => i + 1));
    for (const s of hops) {
      expect(s.parentSpanContext?.spanId).toBe(query!.spanContext().spanId);
      expect(ACTIONS).toContain(s.attributes['rag.agent.action']);
      expect(s.attributes['rag.agent.max_steps']).toBe(MAX_STEPS);
    }
    // The planner ran on the model (grammar-constrained calls count tokens), not on a fallback.
    expect((await completionTokens(server)) - before).toBeGreaterThan(0);

    expect(typeof r.body.refused).toBe('boolean');
    if (r.body.refused) expect(r.body.citations).toEqual([]);
    for (const c of r.body.citations) {
      expect(['zephyr', 'moreau', 'heat']).toContain(c.document_id);
      expect(c.chunk_id.startsWith(`${c.document_id}#`)).toBe(true);
    }
  }, 10 * 60_000);
});
