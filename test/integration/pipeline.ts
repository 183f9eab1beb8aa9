import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { EmbeddedBm25KeywordIndex, EmbeddedHnswVectorStore, HashingEmbedder, SqliteLogBus, SqliteRegistry } from '@rag/adapters';
import { BINARY_PARSERS } from '../../libs/adapters/src/document-parsers';
import { Topic } from '@rag/contracts';
import { DEFAULT_CHUNK_OPTIONS } from '@rag/domain';
import type { Bus, Embedder, KeywordIndex, QueryTranslator, VectorStore } from '@rag/ports';
import { ChunkerStage, DeadLetterProjector, DocumentService, EmbedderStage, IndexerStage, InProcessDocumentParser, LoaderStage, StatusProjector } from '@rag/application';
import { EmbeddingService, GeneratorService, QueryOrchestrator, RerankerService, RetrieverService } from '@rag/application';

/**
 * Test-only: the whole pipeline wired by hand over real embedded adapters in a temp folder (no Nest), so
 * application tests exercise the stages exactly as the services run them.
 */
export async function createPipeline(opts: { vectors?: (v: VectorStore) => VectorStore; translator?: QueryTranslator } = {}) {
  const dir = mkdtempSync(join(tmpdir(), 'rag-app-'));
  const bus = new SqliteLogBus({ path: join(dir, 'bus.db'), partitions: 2, maxAttempts: 2, retryBaseMs: 1, pollMs: 20 });
  const registry = new SqliteRegistry({ dir });
  const embedder: Embedder = new HashingEmbedder({ dim: 256 });
  const realVectors = new EmbeddedHnswVectorStore({ dir: join(dir, 'vectors'), modelId: embedder.modelId, dim: embedder.dim });
  const vectors = opts.vectors ? opts.vectors(realVectors) : realVectors;
  const keywords: KeywordIndex = new EmbeddedBm25KeywordIndex({ dir });
  const stages = {
    loader: new LoaderStage(bus, [], new InProcessDocumentParser(undefined, BINARY_PARSERS)),
    chunker: new ChunkerStage(bus, DEFAULT_CHUNK_OPTIONS),
    embedder: new EmbedderStage(bus, embedder, 16),
    indexer: new IndexerStage(bus, registry, vectors, keywords, embedder.modelId),
    projector: new StatusProjector(registry),
    deadLetters: new DeadLetterProjector(registry),
  };
  const sub = (b: Bus, group: string, topic: Topic, h: { handle: (m: never) => Promise<void> }) =>
    b.subscribe({ group, topic, stage: group, handler: (m) => h.handle(m as never) });
  await sub(bus, 'loader', Topic.SourceEvents, stages.loader);
  await sub(bus, 'chunker', Topic.Documents, stages.chunker);
  await sub(bus, 'embedder', Topic.Chunks, stages.embedder);
  await sub(bus, 'indexer', Topic.ChunksEmbedded, stages.indexer);
  await sub(bus, 'registry', Topic.IndexEvents, stages.projector);
  await sub(bus, 'registry-dlq', Topic.Dlq, stages.deadLetters);
  await bus.start();
  const documents = new DocumentService(registry, bus, 10 * 1024 * 1024);
  const retriever = new RetrieverService(vectors, keywords, registry, { rrfK: 60, denseWeight: 1, keywordWeight: 1 });
  const query = new QueryOrchestrator(
    new EmbeddingService(embedder),
    retriever,
    new RerankerService(null),
    new GeneratorService(null, { refusalThreshold: 0.5, llmTimeoutMs: 1000, maxSources: 5, translator: opts.translator ?? null }),
    { topK: 5, candidates: 50, deadlineMs: 10_000 },
    undefined,
    null,
    opts.translator ?? null,
  );
  return {
    dir,
    bus,
    registry,
    embedder,
    vectors,
    keywords,
    documents,
    retriever,
    query,
    async close() {
      await bus.close();
      await realVectors.close();
      await keywords.close();
      await registry.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
