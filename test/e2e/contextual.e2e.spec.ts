import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createEmbedder, createVectorStore, embeddingSpace } from '@rag/adapters';
import { Contextualizer } from '@rag/application';
import type { Chunk } from '@rag/contracts';
import { embeddingText } from '@rag/domain';
import { loadConfig, type AppConfig } from '@rag/platform';
import type { ChatMessage, Llm } from '@rag/ports';
import { reindexCommand } from '../../apps/cli/src/reindex';
import { DEFAULT_LOCAL_MODEL, LocalLlm } from '../../libs/adapters/src/local-llm';
import { resolveLocalModel } from '../../libs/adapters/src/local-llm';
import { ensureTestModels, TEST_MODELS_DIR } from '../../libs/adapters/src/onnx-embedder/test-models';
import { api, removeDir, startServer, waitForStatus, type Server } from './harness';
import { OpenAiChatStandIn, type ChatCall, type ChatReply } from '../fakes/openai-chat';

/**
 * Contextual chunks (issue 16 item 5) through the embedded platform: the LLM's context is stored on the chunk, in the
 * embedded text (the vector store holds the embedding of title line + context + text), in the BM25 text, and in
 * citations; a failed LLM call leaves its chunk without context and the document is still indexed; `rag reindex
 * --contextual` gives an already indexed document its contexts. The LLM is the OpenAI wire stand-in (deterministic)
 * and, in the last block, the real local model (a BASE model: mechanics only).
 */

/** OpenAI chat-completions stand-in: a context naming a word found nowhere else for each chunk, a 500 for a chunk saying FAILME. */
class ContextProvider extends OpenAiChatStandIn {
  readonly prompts: string[] = [];

  protected reply({ user }: ChatCall): ChatReply {
    const chunk = /<chunk>\n([\s\S]*?)\n<\/chunk>/.exec(user)?.[1];
    if (chunk === undefined) return 'The boundary layer is unstable [1].';
    this.prompts.push(user);
    if (chunk.includes('FAILME')) return { status: 500, message: 'model overloaded' };
    return `Context: This part of the zyxquorble report covers ${chunk.split(/\s+/)[0]}. It follows the introduction.`;
  }
}

interface ChunkView {
  chunk_id: string;
  ordinal: number;
  kind: string;
  title: string;
  heading_path: string[];
  text: string;
  context?: string;
}

const DOC = {
  id: 'wing',
  title: 'Swept wings',
  text: [
    'Crossflow vortices make the boundary layer on a swept wing unstable near the leading edge of the wing.',
    'Suction through small holes in the skin keeps the flow laminar over a larger part of the chord at cruise.',
    'FAILME the provider answers this paragraph with an error, so it must stay without context.',
  ].join('\n\n'),
};
/** One child per paragraph, no parents. */
const CHUNKING = { RAG_CHUNK_TOKENS: '24', RAG_CHUNK_OVERLAP_TOKENS: '0', RAG_PARENT_CHUNK_TOKENS: '0' };

async function children(server: Server, id: string): Promise<ChunkView[]> {
  const r = await api<{ chunks: ChunkView[] }>(server, 'GET', `/v1/documents/${id}/chunks`);
  return r.body.chunks.filter((c) => c.kind === 'child').sort((a, b) => a.ordinal - b.ordinal);
}

/** The cosine between the stored vector nearest to embed(text) and embed(text): 1 when that exact text was embedded. */
async function storedSimilarity(config: AppConfig, text: string): Promise<{ chunk_id: string; score: number }> {
  const embedder = await createEmbedder(config);
  const store = await createVectorStore(config, await embeddingSpace(config));
  try {
    const [v] = await embedder.embed([text], 'passage');
    const [hit] = await store.search({ vector: Float32Array.from(v!), k: 1, scope: { tenant: 'default' } });
    return { chunk_id: hit!.chunk_id, score: hit!.score };
  } finally {
    await store.close();
    await embedder.close?.();
  }
}

describe('contextual chunks with an OpenAI-compatible LLM (wire stand-in)', () => {
  const provider = new ContextProvider();
  let baseUrl: string;
  let server: Server;
  let env: Record<string, string>;

  beforeAll(async () => {
    baseUrl = await provider.start();
    env = { RAG_LLM: 'openai', RAG_LLM_BASE_URL: baseUrl, RAG_LLM_MODEL: 'ctx-model', RAG_LLM_TIMEOUT_MS: '5000', RAG_CONTEXTUAL_CHUNKS: 'on', ...CHUNKING };
    server = await startServer(undefined, env);
    await api(server, 'POST', '/v1/documents', DOC);
    await waitForStatus(server, 'wing');
  });
  afterAll(async () => {
    await server?.stop();
    if (server) removeDir(server.dataDir);
    await provider.stop();
  });

  it('stores the context on each chunk; a failed call leaves its chunk without one and the document indexed', async () => {
    expect((await api(server, 'GET', '/v1/documents/wing')).body.status).toBe('indexed');
    const cs = await children(server, 'wing');
    expect(cs).toHaveLength(3);
    expect(cs[0]!.context).toBe('This part of the zyxquorble report covers Crossflow. It follows the introduction.');
    expect(cs[1]!.context).toBe('This part of the zyxquorble report covers Suction. It follows the introduction.');
    expect(cs[2]!.context).toBeUndefined();
    expect(cs[2]!.text).toContain('FAILME');
  });

  it('gives every chunk of a document the same prompt prefix (the document), so the provider can cache it', () => {
    expect(provider.prompts).toHaveLength(3);
    const prefixes = provider.prompts.map((p) => p.slice(0, p.indexOf('<chunk>')));
    expect(new Set(prefixes).size).toBe(1);
    expect(prefixes[0]).toContain('Suction through small holes');
  });

  it('indexes the context for BM25 and shows it in citations', async () => {
    const r = await api<{ results: { chunk_id: string }[] }>(server, 'POST', '/v1/retrieve', { query: 'zyxquorble', mode: 'keyword', top_k: 10 });
    expect(r.status).toBe(200);
    const cs = await children(server, 'wing');
    // The word is only in the contexts: the two contextualised chunks are found by it, the failed one is not.
    expect(r.body.results.map((x) => x.chunk_id).sort()).toEqual([cs[0]!.chunk_id, cs[1]!.chunk_id].sort());

    const q = await api<{ citations: { chunk_id: string; context?: string }[] }>(server, 'POST', '/v1/query', { question: 'zyxquorble crossflow leading edge', mode: 'keyword' });
    expect(q.status).toBe(200);
    expect(q.body.citations.length).toBeGreaterThan(0);
    for (const c of q.body.citations) expect(c.context).toBe(cs.find((x) => x.chunk_id === c.chunk_id)!.context);
  });

  it('embeds the context with the chunk (the stored vector is that of title line + context + text)', async () => {
    const cs = await children(server, 'wing');
    await server.stop();
    const first = cs[0]!;
    const withContext = await storedSimilarity(server.config, embeddingText({ ...first, context: first.context! }));
    const without = await storedSimilarity(server.config, embeddingText({ ...first, context: undefined }));
    expect(withContext.chunk_id).toBe(first.chunk_id);
    expect(withContext.score).toBeGreaterThan(0.9999);
    expect(without.score).toBeLessThan(0.9999);
    server = await startServer(server.dataDir, env);
  });
});

describe('rag reindex --contextual', () => {
  const provider = new ContextProvider();
  let baseUrl: string;
  let dataDir: string;

  beforeAll(async () => {
    baseUrl = await provider.start();
    dataDir = mkdtempSync(join(tmpdir(), 'rag-e2e-reindex-'));
  });
  afterAll(async () => {
    removeDir(dataDir);
    await provider.stop();
  });

  it('writes the contexts of a document indexed without them, in place (same version), through the embedder and indexer', async () => {
    const env = { RAG_LLM: 'openai', RAG_LLM_BASE_URL: baseUrl, RAG_LLM_MODEL: 'ctx-model', RAG_LLM_TIMEOUT_MS: '5000', ...CHUNKING };
    let server = await startServer(dataDir, env); // RAG_CONTEXTUAL_CHUNKS off (the default)
    await api(server, 'POST', '/v1/documents', DOC);
    const before = await waitForStatus(server, 'wing');
    expect((await children(server, 'wing')).every((c) => c.context === undefined)).toBe(true);
    expect(provider.prompts).toHaveLength(0);
    await server.stop();

    const lines: string[] = [];
    const config = (o: Partial<AppConfig> = {}): AppConfig =>
      loadConfig({ RAG_EMBEDDER: 'hashing', ...env, RAG_DATA_DIR: dataDir, RAG_PORT: '0', RAG_HOST: '127.0.0.1' }, o);
    await reindexCommand(config, (s) => lines.push(s)).parseAsync(['--contextual', '--wait-seconds', '120'], { from: 'user' });
    const summary = JSON.parse(lines[0]!) as Record<string, number>;
    expect(summary).toMatchObject({ documents: 1, republished: 1, written: 2, failed: 1, unsettled: 0, model: 'openai:ctx-model' });

    server = await startServer(dataDir, env);
    try {
      const after = (await api(server, 'GET', '/v1/documents/wing')).body;
      expect(after.status).toBe('indexed');
      expect(after.version).toBe(before.version);
      const cs = await children(server, 'wing');
      expect(cs.map((c) => c.context)).toEqual([
        'This part of the zyxquorble report covers Crossflow. It follows the introduction.',
        'This part of the zyxquorble report covers Suction. It follows the introduction.',
        undefined,
      ]);
      const r = await api<{ results: { chunk_id: string }[] }>(server, 'POST', '/v1/retrieve', { query: 'zyxquorble', mode: 'keyword' });
      expect(r.body.results).toHaveLength(2);
      // Nothing duplicated: still the three children (plus nothing else) in the keyword index.
      expect((await api<{ total: number }>(server, 'GET', '/v1/documents/wing/chunks')).body.total).toBe(3);
    } finally {
      await server.stop();
    }

    // A second run skips nothing it should not: the failed chunk is asked again, the others are already done.
    lines.length = 0;
    await reindexCommand(config, (s) => lines.push(s)).parseAsync(['--contextual', '--wait-seconds', '120'], { from: 'user' });
    expect(JSON.parse(lines[0]!)).toMatchObject({ documents: 1, republished: 1 });
  }, 120_000);
});

/** Delegates to the real model, recording each call's usage (to see the document prefix reused from the KV cache). */
class UsageRecorder implements Pick<Llm, 'id' | 'complete' | 'stream'> {
  readonly calls: { prompt_tokens: number; completion_tokens: number }[] = [];
  constructor(private readonly llm: Llm) {}
  get id(): string {
    return this.llm.id;
  }
  stream(messages: ChatMessage[], opts: { signal?: AbortSignal; maxTokens?: number; temperature?: number }): AsyncIterable<string> {
    return this.llm.stream(messages, opts);
  }
  async complete(messages: ChatMessage[], opts: { signal?: AbortSignal; maxTokens?: number; temperature?: number }) {
    const r = await this.llm.complete(messages, opts);
    this.calls.push({ prompt_tokens: r.usage?.prompt_tokens ?? -1, completion_tokens: r.usage?.completion_tokens ?? -1 });
    return r;
  }
}

describe.skipIf(process.env.RAG_SKIP_MODEL_TESTS === '1')('contextual chunks with RAG_LLM=local (real GGUF model)', () => {
  const LOCAL = { RAG_LLM: 'local', RAG_MODELS_DIR: TEST_MODELS_DIR, RAG_LLM_THREADS: '2', RAG_LLM_CONTEXT_SIZE: '4096', RAG_LLM_TIMEOUT_MS: '120000', RAG_CONTEXTUAL_MAX_TOKENS: '40' };
  beforeAll(() => ensureTestModels([DEFAULT_LOCAL_MODEL.name]), 15 * 60_000);

  it('reuses the document prefix across a document\'s chunks: after the first call, only the chunk is evaluated', async () => {
    const llm = await LocalLlm.create({ modelPath: await resolveLocalModel({ modelsDir: TEST_MODELS_DIR, autoFetch: false }), threads: 2, contextSize: 4096, timeoutMs: 120_000 });
    try {
      const rec = new UsageRecorder(llm);
      const paragraph = (i: number) => `Section ${i}. The wind tunnel tests of model ${i} measured lift, drag and the pitching moment at several angles of attack and Mach numbers.`;
      const chunks: Chunk[] = Array.from({ length: 3 }, (_, i) => ({
        chunk_id: `upload:w#v1#${i}`,
        document_id: 'upload:w',
        tenant: 'default',
        version: 1,
        ordinal: i,
        kind: 'child',
        parent_id: null,
        acl: ['*'],
        title: 'Wind tunnel report',
        heading_path: [],
        metadata: {},
        text: Array.from({ length: 4 }, (_, j) => paragraph(i * 4 + j)).join(' '),
        token_count: 120,
      }));
      const r = await new Contextualizer(rec as unknown as Llm, { documentTokens: 3000, maxTokens: 24 }).contextualize({ document_id: 'upload:w', title: 'Wind tunnel report', chunks });
      expect(r.failed).toBe(0);
      expect(rec.calls).toHaveLength(3);
      process.stderr.write(`contextual local: prompt tokens per chunk call ${rec.calls.map((c) => c.prompt_tokens).join(', ')}\n`);
      const [first, ...rest] = rec.calls;
      // The prompt of the first call holds the whole document (~360 tokens); the later ones evaluate about one chunk
      // and the instruction (their document prefix is still in the sequence's KV cache).
      expect(first!.prompt_tokens).toBeGreaterThan(350);
      for (const c of rest) expect(c.prompt_tokens).toBeLessThan(first!.prompt_tokens / 2);
    } finally {
      await llm.close();
    }
  }, 10 * 60_000);

  it('stores and embeds the context the local model wrote', async () => {
    const server = await startServer(undefined, { ...LOCAL, RAG_CONTEXTUAL_MAX_TOKENS: '24', RAG_CONTEXTUAL_CHUNKS: 'on', ...CHUNKING });
    let cs: ChunkView[];
    try {
      // Two paragraphs, two chunks: the CPU time of a base model on a shared machine is the cost here.
      await api(server, 'POST', '/v1/documents', { ...DOC, text: DOC.text.split('\n\n').slice(0, 2).join('\n\n') });
      expect((await waitForStatus(server, 'wing', undefined, 10 * 60_000)).status).toBe('indexed');
      cs = await children(server, 'wing');
    } finally {
      await server.stop();
    }
    const withContext = cs.filter((c) => c.context);
    // A base model may write nothing usable for a chunk (then it has none); it writes something for at least one.
    expect(withContext.length).toBeGreaterThan(0);
    for (const c of withContext) {
      const s = await storedSimilarity(server.config, embeddingText({ ...c, context: c.context! }));
      expect(s.chunk_id).toBe(c.chunk_id);
      expect(s.score).toBeGreaterThan(0.9999);
    }
    removeDir(server.dataDir);
  }, 15 * 60_000);
});
