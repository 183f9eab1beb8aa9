import { AsyncLocalStorage } from 'node:async_hooks';
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

/** One prom-client registry per process (each service, or the whole embedded runner). */
export const metricsRegistry = new Registry();
collectDefaultMetrics({ register: metricsRegistry, prefix: 'rag_' });

/**
 * The stage names shared by the latency histogram and the OpenTelemetry spans. The query path:
 * gateway → query-embed → retrieve (retrieve-dense ∥ retrieve-keyword → fuse) → rerank → generate; `query` is a
 * whole /v1/query. Ingestion: load → chunk → embed → index (index-dense, index-keyword). Dashboards and alert
 * rules in deploy/observability/ name these values; a test checks that they exist.
 */
export const STAGES = [
  'gateway',
  'query',
  'query-embed',
  'retrieve',
  'retrieve-dense',
  'retrieve-keyword',
  'fuse',
  'rerank',
  'generate',
  // one hop of the agent loop (LLM decision + the tool it chose); the corrective retry (CRAG)
  'agent-hop',
  'corrective',
  'load',
  'chunk',
  'embed',
  'index',
  'index-dense',
  'index-keyword',
] as const;
export type StageName = (typeof STAGES)[number];

/** Buckets from 1 ms to 60 s. */
export const LATENCY_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 20, 30, 60];

export const metrics = {
  stageLatency: new Histogram({
    name: 'rag_stage_duration_seconds',
    help: 'Latency of each pipeline and query stage',
    labelNames: ['stage'] as const,
    buckets: LATENCY_BUCKETS,
    registers: [metricsRegistry],
  }),
  httpRequests: new Counter({
    name: 'rag_http_requests_total',
    help: 'HTTP requests by route and status',
    labelNames: ['method', 'route', 'status'] as const,
    registers: [metricsRegistry],
  }),
  httpLatency: new Histogram({
    name: 'rag_http_request_duration_seconds',
    help: 'HTTP request latency by route and status',
    labelNames: ['method', 'route', 'status'] as const,
    buckets: LATENCY_BUCKETS,
    registers: [metricsRegistry],
  }),
  messages: new Counter({
    name: 'rag_bus_messages_total',
    help: 'Messages handled by each stage, by outcome',
    labelNames: ['stage', 'topic', 'outcome'] as const,
    registers: [metricsRegistry],
  }),
  dlq: new Counter({
    name: 'rag_dlq_messages_total',
    help: 'Messages sent to the dead-letter topic',
    labelNames: ['stage', 'topic'] as const,
    registers: [metricsRegistry],
  }),
  consumerLag: new Gauge({
    name: 'rag_kafka_consumer_lag',
    help: 'Messages behind the newest offset, by consumer group, topic and partition',
    labelNames: ['group', 'topic', 'partition'] as const,
    registers: [metricsRegistry],
  }),
  busLogBytes: new Gauge({
    name: 'rag_bus_log_bytes',
    help: 'On-disk size of the embedded bus log: the SQLite file (db), its WAL (wal) and the payload files of large messages (blobs)',
    labelNames: ['part'] as const,
    registers: [metricsRegistry],
  }),
  busLogMessages: new Gauge({
    name: 'rag_bus_log_messages',
    help: 'Messages retained in the embedded bus log (not yet compacted), by topic',
    labelNames: ['topic'] as const,
    registers: [metricsRegistry],
  }),
  outboxMessages: new Gauge({
    name: 'rag_outbox_messages',
    help: 'Accepted changes whose source event is not yet on the bus (the registry outbox; grows while the bus is down)',
    registers: [metricsRegistry],
  }),
  outboxBytes: new Gauge({
    name: 'rag_outbox_bytes',
    help: 'Bytes of the source events in the registry outbox (uploads ride in them, base64)',
    registers: [metricsRegistry],
  }),
  outboxOldestAge: new Gauge({
    name: 'rag_outbox_oldest_age_seconds',
    help: 'Age of the oldest change in the registry outbox (0 when it is empty): how long the oldest accepted document has waited for the bus',
    registers: [metricsRegistry],
  }),
  documents: new Gauge({
    name: 'rag_documents',
    help: 'Documents by status',
    labelNames: ['status'] as const,
    registers: [metricsRegistry],
  }),
  answers: new Counter({
    name: 'rag_answers_total',
    help: 'Answers by outcome (answered, refused)',
    labelNames: ['outcome'] as const,
    registers: [metricsRegistry],
  }),
  degraded: new Counter({
    name: 'rag_degraded_total',
    help: 'Answers served with a degraded part',
    labelNames: ['part'] as const,
    registers: [metricsRegistry],
  }),
  llmTokens: new Counter({
    name: 'rag_llm_tokens_total',
    help: 'LLM tokens used, by kind (prompt, completion) and model',
    labelNames: ['kind', 'model'] as const,
    registers: [metricsRegistry],
  }),
  leader: new Gauge({
    name: 'rag_leader',
    help: 'Whether this replica holds the leadership of a singleton job (1) or not (0), by job name (reconciler)',
    labelNames: ['name'] as const,
    registers: [metricsRegistry],
  }),
  keywordSearches: new Counter({
    name: 'rag_keyword_searches_total',
    help: 'Embedded keyword-index searches by the thread that ran them: worker, main_small (recent searches were cheap), main_busy (every worker was busy), main_retry (a worker failed), timed_out',
    labelNames: ['thread'] as const,
    registers: [metricsRegistry],
  }),
  keywordTermCacheLookups: new Counter({
    name: 'rag_keyword_term_cache_lookups_total',
    help: 'Embedded keyword index: query-term lookups in the term cache (RAG_KEYWORD_TERM_CACHE_MB) by connection (main, worker) and result (hit; refresh: a hit on a term the keyword writer changed since, its changed tail re-read; miss); a miss share that stays high under a steady load means the budget is below the working set',
    labelNames: ['connection', 'result'] as const,
    registers: [metricsRegistry],
  }),
  keywordTermCacheBytes: new Gauge({
    name: 'rag_keyword_term_cache_bytes',
    help: 'Embedded keyword index: bytes held by the term caches, by connection (main: this thread; worker: all keyword workers together)',
    labelNames: ['connection'] as const,
    registers: [metricsRegistry],
  }),
  keywordWrites: new Counter({
    name: 'rag_keyword_writes_total',
    help: 'Embedded keyword-index writes (upserts, deletes) by the thread that ran them: worker, main_retry (the writer thread failed; run again on the main thread)',
    labelNames: ['thread', 'op'] as const,
    registers: [metricsRegistry],
  }),
  keywordReclusters: new Counter({
    name: 'rag_keyword_reclusters_total',
    help: 'Embedded keyword index: reclusters (chunks renumbered by topic on the keyword writer, RAG_KEYWORD_RECLUSTER_RATIO) by outcome: done, failed (rolled back; tried again when due, after 15 minutes), abandoned (the process closed during one; rolled back)',
    labelNames: ['outcome'] as const,
    registers: [metricsRegistry],
  }),
  keywordReclusterSeconds: new Gauge({
    name: 'rag_keyword_recluster_last_seconds',
    help: 'Embedded keyword index: how long the last recluster took (keyword writes wait meanwhile)',
    registers: [metricsRegistry],
  }),
  feedback: new Counter({
    name: 'rag_feedback_total',
    help: 'Feedback by rating',
    labelNames: ['rating'] as const,
    registers: [metricsRegistry],
  }),
};

const background = new AsyncLocalStorage<string>();

/**
 * Runs `fn` as the platform's own background work (e.g. the relevance gate's calibration, whose ~160 retrievals are
 * not user requests): stages timed inside it (`inStage`, `timeStage`) are left out of `rag_stage_duration_seconds`,
 * which the SLO dashboards and alerts read as user-facing latency. `what` names the work (`backgroundWork()`).
 */
export function asBackgroundWork<T>(what: string, fn: () => T): T {
  return background.run(what, fn);
}

/** The background work the caller runs inside (asBackgroundWork), or undefined for request/pipeline work. */
export function backgroundWork(): string | undefined {
  return background.getStore();
}

/** A timer into the stage histogram, or a no-op inside background work (asBackgroundWork). */
export function stageTimer(stage: string): () => void {
  if (background.getStore() !== undefined) return () => undefined;
  const end = metrics.stageLatency.startTimer({ stage });
  return () => {
    end();
  };
}

/** Times a function into the stage histogram. */
export async function timeStage<T>(stage: string, fn: () => Promise<T>): Promise<T> {
  const end = stageTimer(stage);
  try {
    return await fn();
  } finally {
    end();
  }
}
