import type { AppConfig } from '@rag/platform';
import type { KeywordIndex } from '@rag/ports';

// A lazy import, so that importing '@rag/adapters' does not load piscina (see factory/lazy-loading.spec.ts).

/**
 * The embedded keyword index with its writes on a worker thread (RAG_KEYWORD_WRITE_WORKER, default true); any other
 * index (OpenSearch, Elasticsearch: the engine writes) or `false` is returned as it is.
 */
export async function withKeywordWriteWorker(index: KeywordIndex, config: AppConfig): Promise<KeywordIndex> {
  if (config.RAG_KEYWORD_INDEX !== 'embedded' || !config.RAG_KEYWORD_WRITE_WORKER) return index;
  const { OffloadedKeywordWrites } = await import('./offloaded-keyword-writes.adapter');
  return new OffloadedKeywordWrites(index, {
    index: {
      dir: config.dataDir,
      synchronous: config.RAG_SQLITE_SYNCHRONOUS,
      recluster: { ratio: config.RAG_KEYWORD_RECLUSTER_RATIO, minIds: config.RAG_KEYWORD_RECLUSTER_MIN_CHUNKS },
      walCheckpointMiB: config.RAG_KEYWORD_CHECKPOINT_MIB,
    },
  });
}
