import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { EmbeddedBm25KeywordIndex, EmbeddedHnswVectorStore, HashingEmbedder, SqliteLogBus, SqliteRegistry } from '@rag/adapters';
import {
  ChunkerStage,
  DocumentService,
  EmbedderStage,
  EmbeddingService,
  GeneratorService,
  IndexerStage,
  LoaderStage,
  RerankerService,
  RetrieverService,
  StatusProjector,
} from '@rag/application';
import { Topic } from '@rag/contracts';
import { DEFAULT_CHUNK_OPTIONS } from '@rag/domain';
import type { Llm } from '@rag/ports';

/**
 * Test-only: the real local query-path services over real embedded adapters in a temp folder, with a few documents
 * ingested through the real stages — what the gRPC servers wrap in the specs.
 */
export const FIXTURE_DOCS = [
  { id: 'inlet', text: 'Supersonic inlets.\n\nA supersonic inlet decelerates the flow through oblique shocks before a terminal normal shock.', metadata: { team: 'propulsion' } },
  { id: 'wing', text: 'Swept wings.\n\nCrossflow vortices make the boundary layer on a swept wing unstable near the leading edge.', metadata: { team: 'aero' } },
  { id: 'flutter', text: 'Panel flutter.\n\nPanel flutter is a self-excited oscillation of a thin skin panel exposed to supersonic flow.', metadata: { team: 'structures' } },
];

export async function createLocalQueryPath(opts: { llm?: Llm | null } = {}) {
  const dir = mkdtempSync(join(tmpdir(), 'rag-grpc-'));
  const bus = new SqliteLogBus({ path: join(dir, 'bus.db'), partitions: 2, maxAttempts: 2, retryBaseMs: 1, pollMs: 20 });
  const registry = new SqliteRegistry({ dir });
  const embedder = new HashingEmbedder({ dim: 256 });
  const vectors = new EmbeddedHnswVectorStore({ dir: join(dir, 'vectors'), modelId: embedder.modelId, dim: embedder.dim });
  const keywords = new EmbeddedBm25KeywordIndex({ dir });
  const stages: [string, Topic, { handle: (m: never) => Promise<void> }][] = [
    ['loader', Topic.SourceEvents, new LoaderStage(bus)],
    ['chunker', Topic.Documents, new ChunkerStage(bus, DEFAULT_CHUNK_OPTIONS)],
    ['embedder', Topic.Chunks, new EmbedderStage(bus, embedder, 16)],
    ['indexer', Topic.ChunksEmbedded, new IndexerStage(bus, registry, vectors, keywords, embedder.modelId)],
    ['registry', Topic.IndexEvents, new StatusProjector(registry)],
  ];
  for (const [group, topic, stage] of stages) await bus.subscribe({ group, topic, stage: group, handler: (m) => stage.handle(m as never) });
  await bus.start();
  const documents = new DocumentService(registry, bus, 10 * 1024 * 1024);
  for (const d of FIXTURE_DOCS) await documents.submit({ id: d.id, text: d.text, metadata: d.metadata }, 'default');
  await bus.drain();
  return {
    stores: { vectors, keywords, registry },
    embedder,
    embedding: new EmbeddingService(embedder),
    retriever: new RetrieverService(vectors, keywords, registry, { rrfK: 60, denseWeight: 1, keywordWeight: 1 }),
    reranker: new RerankerService(null),
    generator: new GeneratorService(opts.llm ?? null, { refusalThreshold: 0.5, llmTimeoutMs: 2_000, maxSources: 5 }),
    async close() {
      await bus.close();
      await vectors.close();
      await keywords.close();
      await registry.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** A loopback port nothing listens on (bound, then released). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });
}

/** An LLM that streams fixed pieces (one per tick). */
export function scriptedLlm(pieces: string[]): Llm {
  return {
    id: 'scripted',
    async *stream(_messages, opts) {
      for (const p of pieces) {
        if (opts.signal?.aborted) throw new Error('aborted');
        await new Promise((r) => setTimeout(r, 2));
        yield p;
      }
    },
    async complete() {
      return { text: pieces.join('') };
    },
  };
}
