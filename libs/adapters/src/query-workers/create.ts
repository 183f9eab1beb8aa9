import type { AppConfig } from '@rag/platform';
import type { KeywordIndex } from '@rag/ports';
import { join } from 'node:path';
import { FOLLOW_CHANGES_MS } from '../embedded-bm25';
import type { WorkerGrounding, WorkerGroundingOptions } from './worker-grounding.adapter';

/** The keyword workers' hot terms in the data folder (OffloadedKeywordIndexOptions.warmFile). */
export const KEYWORD_WARM_FILE = 'keyword-warm.json';

// Lazy imports, so that importing '@rag/adapters' does not load piscina (see factory/lazy-loading.spec.ts).

/** The generator's grounding worker pool (RAG_GENERATOR_WORKERS > 0). */
export async function createWorkerGrounding(options: WorkerGroundingOptions): Promise<WorkerGrounding> {
  const { WorkerGrounding } = await import('./worker-grounding.adapter');
  return new WorkerGrounding(options);
}

/**
 * The embedded keyword index with its searches on RAG_QUERY_WORKERS worker threads; any other index (OpenSearch,
 * Elasticsearch: the search runs in the engine) or RAG_QUERY_WORKERS=0 is returned as it is.
 */
export async function withKeywordSearchWorkers(index: KeywordIndex, config: AppConfig): Promise<KeywordIndex> {
  if (config.RAG_KEYWORD_INDEX !== 'embedded' || config.RAG_QUERY_WORKERS === 0) return index;
  const { OffloadedKeywordIndex } = await import('./offloaded-keyword-index.adapter');
  return new OffloadedKeywordIndex(index, {
    workers: config.RAG_QUERY_WORKERS,
    timeoutMs: config.RAG_QUERY_WORKER_TIMEOUT_MS,
    minSearchMs: config.RAG_QUERY_WORKERS_MIN_MS,
    queuePerWorker: config.RAG_QUERY_WORKERS_QUEUE,
    index: { dir: config.dataDir, termCacheBytes: config.RAG_KEYWORD_TERM_CACHE_MB * 2 ** 20, followChangesMs: FOLLOW_CHANGES_MS },
    // the hot terms, for the next start's warm-up (only with a term cache to warm)
    ...(config.RAG_KEYWORD_TERM_CACHE_MB > 0 ? { warmFile: join(config.dataDir, KEYWORD_WARM_FILE) } : {}),
  });
}
