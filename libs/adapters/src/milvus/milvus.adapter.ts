import { createHash } from 'node:crypto';
import {
  ConsistencyLevelEnum,
  DataType,
  MilvusClient,
  type BoolResponse,
  type CreateCollectionReq,
  type CreateIndexSimpleReq,
  type DeleteEntitiesReq,
  type DescribeCollectionReq,
  type DescribeCollectionResponse,
  type DescribeIndexReq,
  type DescribeIndexResponse,
  type DropCollectionReq,
  type FlushReq,
  type GetFlushStateResponse,
  type HasCollectionReq,
  type InsertReq,
  type LoadCollectionReq,
  type MutationResult,
  type QueryReq,
  type QueryResults,
  type ResStatus,
  type SearchResults,
  type SearchSimpleReq,
} from '@zilliz/milvus2-sdk-node';
import { AppError, Logger, withDeadline } from '@rag/platform';
import type { DocumentDelete, VectorHit, VectorRecord, VectorSearchRequest, VectorStore } from '@rag/ports';
import type { Chunk } from '@rag/contracts';
import { buildMilvusExpr, milvusDocumentExpr, milvusDocumentsExpr, milvusStringList } from './milvus-expr';

/**
 * Milvus 2.3 vector store (`@zilliz/milvus2-sdk-node` 2.3 over gRPC).
 *
 * - One collection per embedding model and dimension: `rag_<model>_<dim>` (see {@link milvusCollectionName}), created on
 *   first use with the fields `chunk_id` (VarChar primary key), `document_id` (VarChar), `tenant` (VarChar), `version`
 *   (Int64), `acl` (Array<VarChar>, Milvus 2.3's ARRAY type), `metadata` (JSON object) and `vector` (FloatVector, dim), a COSINE index
 *   on `vector` (HNSW with M/efConstruction, or IVF_SQ8 with nlist) and loaded into memory before the first search.
 *   An existing collection is checked for its dimension; when its index type differs from the configured one the
 *   existing index wins (with a warning) and the search parameters follow it.
 * - Upsert uses Milvus 2.3's native `upsert` (delete + insert of the primary key in one request), in batches of
 *   `batchSize` rows (default 100, see {@link DEFAULT_UPSERT_ROWS}); duplicate chunk ids inside one call are collapsed (last wins) because Milvus would
 *   otherwise keep both rows.
 * - Search: tenant, ACL and metadata filters become one boolean expression ({@link buildMilvusExpr}) passed with the
 *   search request, so Milvus filters inside the ANN search (never post-filtered). Metric COSINE: Milvus 2.3 returns
 *   the cosine similarity itself (higher is better, in [-1, 1]) as the score, which is what `VectorHit.score` wants.
 * - Consistency: searches use `consistencyLevel` (default Bounded: ≈ 4 ms per search on Milvus 2.3.5 standalone; writes
 *   become visible within about one time tick, 200 ms). Strong makes every returned upsert/delete visible to the next
 *   search but waits for the next time tick (≈ +200 ms per search, measured). Counts and deletes always use Strong.
 * - Every call carries a gRPC deadline and is raced against the same deadline locally (`timeoutMs` for data calls,
 *   `adminTimeoutMs` for create/index/load/flush, which can legitimately take longer). Failures raise `AppError`
 *   (`unavailable` or `deadline_exceeded`).
 */
export type MilvusIndexType = 'HNSW' | 'IVF_SQ8';
export type MilvusConsistencyLevel = 'Strong' | 'Session' | 'Bounded' | 'Eventually';

/** The subset of `MilvusClient` this store uses (a real client satisfies it; tests inject fakes). */
export interface MilvusClientLike {
  hasCollection(req: HasCollectionReq): Promise<BoolResponse>;
  createCollection(req: CreateCollectionReq): Promise<ResStatus>;
  describeCollection(req: DescribeCollectionReq): Promise<DescribeCollectionResponse>;
  describeIndex(req: DescribeIndexReq): Promise<DescribeIndexResponse>;
  createIndex(req: CreateIndexSimpleReq): Promise<ResStatus>;
  loadCollectionSync(req: LoadCollectionReq): Promise<ResStatus>;
  upsert(req: InsertReq): Promise<MutationResult>;
  search(req: SearchSimpleReq): Promise<SearchResults>;
  query(req: QueryReq): Promise<QueryResults>;
  deleteEntities(req: DeleteEntitiesReq): Promise<MutationResult>;
  flushSync(req: FlushReq): Promise<GetFlushStateResponse>;
  dropCollection(req: DropCollectionReq): Promise<ResStatus>;
  closeConnection(): unknown;
}

export interface MilvusVectorStoreOptions {
  /** `host:port` of Milvus (RAG_MILVUS_ADDRESS, default 127.0.0.1:19530). */
  address?: string;
  /** Embedding model id; its vectors live in their own collection. */
  modelId: string;
  /** Vector dimension; every upserted and query vector must have it. */
  dim: number;
  /** Vector index type for a new collection (RAG_MILVUS_INDEX, default HNSW). */
  indexType?: MilvusIndexType;
  /** HNSW graph degree (RAG_HNSW_M, default 16). */
  m?: number;
  /** HNSW construction beam (RAG_HNSW_EF_CONSTRUCTION, default 200). */
  efConstruction?: number;
  /** HNSW search beam (RAG_HNSW_EF, default 128; raised to k for larger k, as Milvus requires ef >= k). */
  ef?: number;
  /** IVF_SQ8 cluster count (RAG_MILVUS_NLIST, default 1024). */
  nlist?: number;
  /** IVF_SQ8 clusters probed per search (RAG_MILVUS_NPROBE, default 16). */
  nprobe?: number;
  /** Collection name prefix (default `rag`); must start with a letter or `_` and be `[A-Za-z0-9_]`. */
  collectionPrefix?: string;
  /** Explicit collection name (overrides prefix/model/dim naming). */
  collectionName?: string;
  /** Consistency level of searches (default Bounded; Strong costs ≈ 200 ms per search). Counts and deletes always use Strong. */
  consistencyLevel?: MilvusConsistencyLevel;
  /** Deadline of each data call in ms (default 10 000). */
  timeoutMs?: number;
  /** Deadline of create/index/load/flush calls in ms (default 120 000). */
  adminTimeoutMs?: number;
  /** Rows per upsert request (default 100, 1..10 000; see {@link DEFAULT_UPSERT_ROWS}). */
  batchSize?: number;
  /** Shards of a new collection (default 1). */
  shards?: number;
  username?: string;
  password?: string;
  token?: string;
  ssl?: boolean;
  /** A ready client (tests, or sharing one connection between stores); the store then does not close it. */
  client?: MilvusClientLike;
  logger?: Logger;
}

/**
 * Rows per upsert request by default. Not larger, because the SDK's client-side encoding is quadratic in the rows of
 * one request (`@zilliz/milvus2-sdk-node` 2.3.5, the last 2.3 release, builds a vector column with
 * `field.data = field.data.concat(row)` per row): measured through this store on 2 cores, 384-dim rows with tenant,
 * ACL and metadata, 6,000 rows one request after another — 50 rows a request 1,466 rows/s (0.34 ms of this process's
 * CPU per row), 100: 1,849 (0.39), 200: 1,602 (0.52), 500 (the old default): 1,115 (0.87); 2,000: 431. Smaller than
 * 100 the per-request round trips (the SDK describes the collection before every insert) win again.
 */
export const DEFAULT_UPSERT_ROWS = 100;

/** Milvus caps topk (and ef) at 16 384. */
export const MILVUS_MAX_TOPK = 16_384;
const MAX_ID_LENGTH = 2048;
const MAX_TENANT_LENGTH = 512;
const MAX_ACL_ENTRIES = 1024;
const MAX_ACL_ENTRY_LENGTH = 1024;
const OUTPUT_FIELDS = ['document_id', 'version'];
/** Documents per delete expression of {@link MilvusVectorStore.deleteDocuments} (keeps the expression short). */
const DELETE_GROUP = 200;

/**
 * Collection name for a model and dimension: `${prefix}_${model}_${dim}`, with the model id reduced to Milvus's
 * `[A-Za-z0-9_]` and, when characters were replaced (or it was shortened), an 8-hex hash of the original id appended
 * so two ids that sanitise alike never share a collection.
 */
export function milvusCollectionName(modelId: string, dim: number, prefix = 'rag'): string {
  if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(prefix)) throw new Error(`MilvusVectorStore: collection prefix "${prefix}" must match [A-Za-z_][A-Za-z0-9_]*`);
  let safe = modelId.replace(/[^A-Za-z0-9_]+/g, '_');
  if (safe !== modelId || safe.length === 0 || safe.length > 150) {
    safe = `${safe.slice(0, 150)}_${createHash('sha256').update(modelId).digest('hex').slice(0, 8)}`;
  }
  return `${prefix}_${safe}_${dim}`.replace(/_{2,}/g, '_');
}

function statusOk(s: ResStatus | undefined): boolean {
  if (!s) return false;
  return s.error_code === 'Success' || s.error_code === 0 || (s.error_code === undefined && (s.code ?? 0) === 0);
}

function statusText(s: ResStatus | undefined): string {
  if (!s) return 'no status in response';
  return `${String(s.error_code)}${s.code ? ` (${s.code})` : ''}: ${s.reason || 'no reason given'}`;
}

function consistency(level: MilvusConsistencyLevel): ConsistencyLevelEnum {
  switch (level) {
    case 'Strong':
      return ConsistencyLevelEnum.Strong;
    case 'Session':
      return ConsistencyLevelEnum.Session;
    case 'Bounded':
      return ConsistencyLevelEnum.Bounded;
    case 'Eventually':
      return ConsistencyLevelEnum.Eventually;
    default: {
      const never: never = level;
      throw new Error(`unknown Milvus consistency level ${String(never)}`);
    }
  }
}

function positiveInt(name: string, v: number, min = 1, max = Number.MAX_SAFE_INTEGER): number {
  if (!Number.isInteger(v) || v < min || v > max) throw new Error(`MilvusVectorStore: ${name} must be an integer in [${min}, ${max}], got ${v}`);
  return v;
}

interface Row {
  chunk_id: string;
  document_id: string;
  tenant: string;
  version: number;
  acl: string[];
  metadata: Record<string, string | number | boolean | string[]>;
  vector: number[];
  chunk?: Chunk | Record<string, never>;
}

/**
 * Milvus caps a JSON value at 64 KiB. The chunk copy only serves answers while the keyword index is down, so an
 * oversized text (a huge table kept whole) is shortened rather than rejecting the vector.
 */
const MAX_CHUNK_JSON_BYTES = 60_000;
function storedChunk(c: Chunk | undefined): Chunk | Record<string, never> {
  if (!c) return {};
  if (Buffer.byteLength(JSON.stringify(c)) <= MAX_CHUNK_JSON_BYTES) return c;
  let text = c.text;
  while (text.length > 0 && Buffer.byteLength(JSON.stringify({ ...c, text })) > MAX_CHUNK_JSON_BYTES) text = text.slice(0, Math.floor(text.length * 0.8));
  return { ...c, text };
}

export class MilvusVectorStore implements VectorStore {
  readonly collection: string;
  readonly address: string;
  private readonly dim: number;
  private readonly modelId: string;
  private readonly indexType: MilvusIndexType;
  private readonly m: number;
  private readonly efConstruction: number;
  private readonly ef: number;
  private readonly nlist: number;
  private readonly nprobe: number;
  private readonly searchConsistency: ConsistencyLevelEnum;
  private readonly timeoutMs: number;
  private readonly adminTimeoutMs: number;
  private readonly batchSize: number;
  private readonly shards: number;
  private readonly log: Logger;
  private readonly opts: MilvusVectorStoreOptions;
  private readonly ownsClient: boolean;
  private clientInstance: MilvusClientLike | undefined;
  private ready: Promise<void> | undefined;
  /** Whether the collection stores the chunk beside the vector (every collection this version creates does). */
  private hasChunkField = true;
  /** Index type of the collection as found/created (decides the search parameters). */
  private activeIndexType: MilvusIndexType;
  private closed = false;

  constructor(opts: MilvusVectorStoreOptions) {
    if (!opts.modelId) throw new Error('MilvusVectorStore: modelId is required');
    this.dim = positiveInt('dim', opts.dim, 1, 32_768);
    this.modelId = opts.modelId;
    this.indexType = opts.indexType ?? 'HNSW';
    this.activeIndexType = this.indexType;
    this.m = positiveInt('m', opts.m ?? 16, 2, 2048);
    this.efConstruction = positiveInt('efConstruction', opts.efConstruction ?? 200, 1, 100_000);
    this.ef = positiveInt('ef', opts.ef ?? 128, 1, MILVUS_MAX_TOPK);
    this.nlist = positiveInt('nlist', opts.nlist ?? 1024, 1, 65_536);
    this.nprobe = positiveInt('nprobe', opts.nprobe ?? 16, 1, 65_536);
    this.searchConsistency = consistency(opts.consistencyLevel ?? 'Bounded');
    this.timeoutMs = positiveInt('timeoutMs', opts.timeoutMs ?? 10_000);
    this.adminTimeoutMs = positiveInt('adminTimeoutMs', opts.adminTimeoutMs ?? 120_000);
    this.batchSize = positiveInt('batchSize', opts.batchSize ?? DEFAULT_UPSERT_ROWS, 1, 10_000);
    this.shards = positiveInt('shards', opts.shards ?? 1, 1, 64);
    this.address = opts.address ?? '127.0.0.1:19530';
    this.collection = opts.collectionName ?? milvusCollectionName(opts.modelId, opts.dim, opts.collectionPrefix ?? 'rag');
    if (!/^[A-Za-z_][A-Za-z0-9_]{0,254}$/.test(this.collection)) throw new Error(`MilvusVectorStore: invalid collection name "${this.collection}"`);
    this.log = opts.logger ?? new Logger('milvus');
    this.opts = opts;
    this.clientInstance = opts.client;
    this.ownsClient = opts.client === undefined;
  }

  async upsert(records: VectorRecord[]): Promise<void> {
    this.assertOpen();
    const byId = new Map<string, Row>();
    for (const r of records) {
      this.validate(r);
      byId.delete(r.chunk_id); // keep the last occurrence, in its position
      byId.set(r.chunk_id, {
        chunk_id: r.chunk_id,
        document_id: r.document_id,
        tenant: r.tenant,
        version: r.version,
        acl: [...r.acl],
        metadata: { ...r.metadata },
        vector: Array.from(r.vector),
        chunk: storedChunk(r.chunk),
      });
    }
    if (byId.size === 0) return;
    await this.ensureReady();
    const rows = [...byId.values()];
    if (!this.hasChunkField) for (const row of rows) delete row.chunk;
    for (let i = 0; i < rows.length; i += this.batchSize) {
      const batch = rows.slice(i, i + this.batchSize);
      const res = await this.call('upsert', this.timeoutMs, (timeout) =>
        this.client().upsert({ collection_name: this.collection, data: batch as unknown as InsertReq['data'], timeout }),
      );
      this.check('upsert', res.status);
      if (res.err_index && res.err_index.length > 0) {
        throw new AppError('unavailable', `MilvusVectorStore(${this.collection}): upsert rejected ${res.err_index.length} of ${batch.length} rows`);
      }
    }
  }

  async search(req: VectorSearchRequest): Promise<VectorHit[]> {
    this.assertOpen();
    if (req.vector.length !== this.dim) {
      throw new Error(`MilvusVectorStore(${this.modelId}): query vector has dimension ${req.vector.length}, expected ${this.dim}`);
    }
    const k = Math.min(Math.floor(req.k), MILVUS_MAX_TOPK);
    if (!(k > 0)) return [];
    const expr = buildMilvusExpr(req.scope, req.filters);
    if (expr === null) return [];
    await this.ensureReady();
    const params: Record<string, number> =
      this.activeIndexType === 'HNSW' ? { ef: Math.min(MILVUS_MAX_TOPK, Math.max(this.ef, k)) } : { nprobe: Math.min(this.nprobe, this.nlist) };
    const res = await this.call('search', this.timeoutMs, (timeout) =>
      this.client().search({
        collection_name: this.collection,
        vector: Array.from(req.vector),
        limit: k,
        filter: expr,
        output_fields: OUTPUT_FIELDS,
        metric_type: 'COSINE',
        params,
        consistency_level: this.searchConsistency,
        timeout,
      }),
    );
    this.check('search', res.status);
    return res.results.map((r) => ({
      chunk_id: String(r.id),
      document_id: String(r['document_id']),
      version: Number(r['version']),
      score: Number(r.score),
    }));
  }

  /** Chunks stored beside their vectors (collections created before the `chunk` field existed return none). */
  async getChunks(chunkIds: string[]): Promise<Chunk[]> {
    this.assertOpen();
    const unique = [...new Set(chunkIds)];
    if (unique.length === 0) return [];
    await this.ensureReady();
    if (!this.hasChunkField) return [];
    const res = await this.call('query', this.timeoutMs, (timeout) =>
      this.client().query({ collection_name: this.collection, expr: `chunk_id in ${milvusStringList(unique)}`, output_fields: ['chunk'], timeout }),
    );
    this.check('query', res.status);
    const byId = new Map<string, Chunk>();
    for (const row of res.data as Record<string, unknown>[]) {
      const c = row['chunk'] as Chunk | undefined;
      if (c && typeof c.chunk_id === 'string') byId.set(c.chunk_id, c);
    }
    return unique.map((id) => byId.get(id)).filter((c): c is Chunk => c !== undefined);
  }

  async deleteDocument(documentId: string, keepVersion?: number): Promise<number> {
    this.assertOpen();
    await this.ensureReady();
    return this.deleteExpr(milvusDocumentExpr(documentId, keepVersion));
  }

  /**
   * The deletes of a batch in one count and one delete request per {@link DELETE_GROUP} documents, instead of a count
   * (which waits for a time tick, ≈ 200 ms, under Strong consistency) and a delete per document.
   */
  async deleteDocuments(documents: DocumentDelete[]): Promise<number> {
    this.assertOpen();
    if (documents.length === 0) return 0;
    await this.ensureReady();
    let removed = 0;
    for (let i = 0; i < documents.length; i += DELETE_GROUP) removed += await this.deleteExpr(milvusDocumentsExpr(documents.slice(i, i + DELETE_GROUP)));
    return removed;
  }

  private async deleteExpr(expr: string): Promise<number> {
    // Count first, with Strong consistency: the result is exact whatever a server version reports for expression
    // deletes, and the wait for the current time tick makes rows written just before this call visible to the
    // delete's own primary-key lookup.
    const before = await this.countExpr(expr);
    if (before === 0) return 0;
    const res = await this.call('delete', this.timeoutMs, (timeout) => this.client().deleteEntities({ collection_name: this.collection, filter: expr, timeout }));
    this.check('delete', res.status);
    const reported = Number(res.delete_cnt);
    return Number.isFinite(reported) && reported > 0 ? Math.min(reported, before) : before;
  }

  async count(documentId?: string): Promise<number> {
    this.assertOpen();
    await this.ensureReady();
    return this.countExpr(documentId === undefined ? '' : milvusDocumentExpr(documentId));
  }

  /**
   * Durability point of the port. Milvus acknowledges an insert/upsert/delete only after it is in its write-ahead log
   * (rocksmq in standalone, Pulsar/Kafka in a cluster), so an acknowledged write already survives a crash: nothing
   * to do. Calling Milvus's `flush` here (as an earlier version did, once per indexed document) sealed a tiny
   * segment per document and cost about a second each, which made the indexer the bottleneck of distributed
   * ingestion; segment sealing is left to Milvus's own size/time policy. {@link sealSegments} seals on demand.
   */
  async flush(): Promise<void> {
    this.assertOpen();
  }

  /** Seals the growing segments now (Milvus `flush`): benchmarks and admin tooling that want indexed segments. */
  async sealSegments(): Promise<void> {
    this.assertOpen();
    if (!this.ready) return; // nothing written through this instance yet
    await this.ensureReady();
    const res = await this.call('flush', this.adminTimeoutMs, (timeout) => this.client().flushSync({ collection_names: [this.collection], timeout }));
    this.check('flush', res.status);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    if (this.ownsClient && this.clientInstance) {
      try {
        this.clientInstance.closeConnection();
      } catch (e) {
        this.log.warn('closing the milvus connection failed', { error: e });
      }
    }
    this.clientInstance = undefined;
  }

  /** Drops the collection (tests and admin tooling; not part of the port). */
  async drop(): Promise<void> {
    this.assertOpen();
    const res = await this.call('dropCollection', this.adminTimeoutMs, (timeout) => this.client().dropCollection({ collection_name: this.collection, timeout }));
    if (!statusOk(res) && !/not (exist|found)|can't find/i.test(res.reason)) this.check('dropCollection', res);
    this.ready = undefined;
  }

  /** The index type the collection actually has (after the first call). */
  get effectiveIndexType(): MilvusIndexType {
    return this.activeIndexType;
  }

  // ---------------------------------------------------------------------------------------------

  private assertOpen(): void {
    if (this.closed) throw new Error(`MilvusVectorStore(${this.collection}) is closed`);
  }

  private client(): MilvusClientLike {
    if (!this.clientInstance) {
      const client = new MilvusClient({
        address: this.address,
        username: this.opts.username,
        password: this.opts.password,
        token: this.opts.token,
        ssl: this.opts.ssl ?? false,
        timeout: this.timeoutMs,
        logLevel: 'error',
      });
      // The SDK starts a server-info call in its constructor and never handles its failure: without this catch an
      // unreachable Milvus would surface as an unhandled rejection (fatal by default in Node). Calls report it anyway.
      client.connectPromise.catch((e: unknown) => this.log.warn('milvus handshake failed', { address: this.address, error: e }));
      this.clientInstance = client;
    }
    return this.clientInstance;
  }

  private validate(r: VectorRecord): void {
    if (!r.chunk_id) throw new Error('MilvusVectorStore: record without chunk_id');
    if (Buffer.byteLength(r.chunk_id) > MAX_ID_LENGTH) throw new Error(`MilvusVectorStore: chunk_id longer than ${MAX_ID_LENGTH} bytes: ${r.chunk_id.slice(0, 80)}…`);
    if (Buffer.byteLength(r.document_id) > MAX_ID_LENGTH) throw new Error(`MilvusVectorStore: document_id of ${r.chunk_id} longer than ${MAX_ID_LENGTH} bytes`);
    if (Buffer.byteLength(r.tenant) > MAX_TENANT_LENGTH) throw new Error(`MilvusVectorStore: tenant of ${r.chunk_id} longer than ${MAX_TENANT_LENGTH} bytes`);
    if (r.acl.length > MAX_ACL_ENTRIES) throw new Error(`MilvusVectorStore: acl of ${r.chunk_id} has more than ${MAX_ACL_ENTRIES} entries`);
    if (r.acl.some((p) => Buffer.byteLength(p) > MAX_ACL_ENTRY_LENGTH)) throw new Error(`MilvusVectorStore: an acl entry of ${r.chunk_id} is longer than ${MAX_ACL_ENTRY_LENGTH} bytes`);
    if (!Number.isSafeInteger(r.version)) throw new Error(`MilvusVectorStore: version of ${r.chunk_id} must be an integer`);
    if (!(r.vector instanceof Float32Array)) throw new Error(`MilvusVectorStore: vector of ${r.chunk_id} must be a Float32Array`);
    if (r.vector.length !== this.dim) {
      throw new Error(`MilvusVectorStore(${this.modelId}): vector of ${r.chunk_id} has dimension ${r.vector.length}, expected ${this.dim}`);
    }
    for (let i = 0; i < r.vector.length; i++) {
      if (!Number.isFinite(r.vector[i]!)) throw new Error(`MilvusVectorStore: vector of ${r.chunk_id} has a non-finite value at ${i}`);
    }
  }

  private check(op: string, status: ResStatus | undefined): void {
    if (!statusOk(status)) throw new AppError('unavailable', `MilvusVectorStore(${this.collection}): ${op} failed: ${statusText(status)}`);
  }

  /** Runs one client call with a gRPC deadline and a local deadline; transport errors become `unavailable`. */
  private async call<T>(op: string, ms: number, fn: (timeout: number) => Promise<T>): Promise<T> {
    try {
      return await withDeadline(`milvus ${op} (${this.collection})`, ms, () => fn(ms));
    } catch (e) {
      if (e instanceof AppError) throw e;
      const msg = e instanceof Error ? e.message : String(e);
      throw new AppError('unavailable', `MilvusVectorStore(${this.collection}) at ${this.address}: ${op} failed: ${msg}`);
    }
  }

  private async countExpr(expr: string): Promise<number> {
    const res = await this.call('count', this.timeoutMs, (timeout) =>
      this.client().query({
        collection_name: this.collection,
        expr,
        output_fields: ['count(*)'],
        consistency_level: ConsistencyLevelEnum.Strong,
        timeout,
      }),
    );
    this.check('count', res.status);
    const first = res.data[0] as Record<string, unknown> | undefined;
    return first ? Number(first['count(*)'] ?? 0) : 0;
  }

  private ensureReady(): Promise<void> {
    if (!this.ready) {
      this.ready = this.prepare().catch((e: unknown) => {
        this.ready = undefined; // retry on the next call
        throw e;
      });
    }
    return this.ready;
  }

  /** Creates (or checks) the collection and its vector index, then loads it. Idempotent across processes. */
  private async prepare(): Promise<void> {
    const name = this.collection;
    const has = await this.call('hasCollection', this.timeoutMs, (timeout) => this.client().hasCollection({ collection_name: name, timeout }));
    this.check('hasCollection', has.status);
    if (!has.value) {
      const res = await this.call('createCollection', this.adminTimeoutMs, (timeout) => this.client().createCollection(this.collectionSchema(timeout)));
      if (!statusOk(res) && !/already exist/i.test(res.reason)) this.check('createCollection', res);
      this.log.info('created milvus collection', { collection: name, dim: this.dim, model: this.modelId });
    } else {
      await this.checkSchema();
    }
    await this.ensureIndex();
    const load = await this.call('loadCollection', this.adminTimeoutMs, (timeout) => this.client().loadCollectionSync({ collection_name: name, timeout }));
    this.check('loadCollection', load);
  }

  private collectionSchema(timeout: number): CreateCollectionReq {
    return {
      collection_name: this.collection,
      description: `RAG chunks embedded with ${this.modelId} (dim ${this.dim})`.slice(0, 255),
      shards_num: this.shards,
      consistency_level: 'Bounded',
      timeout,
      fields: [
        { name: 'chunk_id', data_type: DataType.VarChar, is_primary_key: true, autoID: false, max_length: MAX_ID_LENGTH },
        { name: 'document_id', data_type: DataType.VarChar, max_length: MAX_ID_LENGTH },
        { name: 'tenant', data_type: DataType.VarChar, max_length: MAX_TENANT_LENGTH },
        { name: 'version', data_type: DataType.Int64 },
        { name: 'acl', data_type: DataType.Array, element_type: DataType.VarChar, max_capacity: MAX_ACL_ENTRIES, max_length: MAX_ACL_ENTRY_LENGTH },
        { name: 'metadata', data_type: DataType.JSON },
        { name: 'chunk', data_type: DataType.JSON },
        { name: 'vector', data_type: DataType.FloatVector, dim: this.dim },
      ],
    };
  }

  private async checkSchema(): Promise<void> {
    const desc = await this.call('describeCollection', this.timeoutMs, (timeout) => this.client().describeCollection({ collection_name: this.collection, timeout }));
    this.check('describeCollection', desc.status);
    const fields = desc.schema?.fields ?? [];
    const vector = fields.find((f) => f.name === 'vector');
    const dimParam = vector?.type_params?.find((p) => p.key === 'dim')?.value;
    const missing = ['chunk_id', 'document_id', 'tenant', 'version', 'acl', 'metadata', 'vector'].filter((n) => !fields.some((f) => f.name === n));
    this.hasChunkField = fields.some((f) => f.name === 'chunk');
    if (!this.hasChunkField) this.log.warn('collection predates the chunk field: answers need the keyword index for chunk text', { collection: this.collection });
    if (missing.length > 0) throw new Error(`MilvusVectorStore: collection ${this.collection} exists without the fields ${missing.join(', ')}`);
    const acl = fields.find((f) => f.name === 'acl');
    if (acl && String(acl.data_type) !== 'Array') throw new Error(`MilvusVectorStore: collection ${this.collection} has acl of type ${String(acl.data_type)}, expected Array<VarChar>`);
    if (Number(dimParam) !== this.dim) throw new Error(`MilvusVectorStore: collection ${this.collection} has dimension ${String(dimParam)}, not ${this.dim}`);
  }

  private async describeVectorIndex(): Promise<DescribeIndexResponse | null> {
    const res = await this.call('describeIndex', this.timeoutMs, (timeout) =>
      this.client().describeIndex({ collection_name: this.collection, field_name: 'vector', timeout }),
    );
    if (!statusOk(res.status) || !res.index_descriptions || res.index_descriptions.length === 0) return null;
    return res;
  }

  private async ensureIndex(): Promise<void> {
    let existing = await this.describeVectorIndex();
    if (!existing) {
      const res = await this.call('createIndex', this.adminTimeoutMs, (timeout) => this.client().createIndex(this.indexRequest(timeout)));
      if (statusOk(res)) {
        this.activeIndexType = this.indexType;
        return;
      }
      existing = await this.describeVectorIndex(); // another process may have created it first
      if (!existing) throw new AppError('unavailable', `MilvusVectorStore(${this.collection}): createIndex failed: ${statusText(res)}`);
    }
    const params = existing.index_descriptions[0]!.params ?? [];
    const type = String(params.find((p) => p.key === 'index_type')?.value ?? '');
    if (type === 'HNSW' || type === 'IVF_SQ8') {
      if (type !== this.indexType) {
        this.log.warn('milvus collection has another index type than configured; using the existing one', {
          collection: this.collection,
          existing: type,
          configured: this.indexType,
        });
      }
      this.activeIndexType = type;
    } else {
      throw new Error(`MilvusVectorStore: collection ${this.collection} has an unsupported vector index ${type || '(unknown)'}; expected HNSW or IVF_SQ8`);
    }
  }

  private indexRequest(timeout: number): CreateIndexSimpleReq {
    return {
      collection_name: this.collection,
      field_name: 'vector',
      index_name: 'vector_idx',
      index_type: this.indexType,
      metric_type: 'COSINE',
      params: this.indexType === 'HNSW' ? { M: this.m, efConstruction: this.efConstruction } : { nlist: this.nlist },
      timeout,
    };
  }
}
