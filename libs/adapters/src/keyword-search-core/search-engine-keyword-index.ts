import type { Chunk } from '@rag/contracts';
import { AppError, Logger, withDeadline } from '@rag/platform';
import type { DocumentDelete, KeywordHit, KeywordIndex, KeywordSearchRequest } from '@rag/ports';
import { ensureAliasedIndex, reindexAndSwapAliases, type ReindexOptions, type ReindexSummary } from './aliases';
import { bulkIndexOperations, engineId } from './documents';
import type { KeywordEngineClient } from './engine-client';
import { buildIndexBody, indexNames, type IndexCreateBody, type IndexLayoutOptions, type IndexNames } from './mapping';
import { buildSearchBody, countQuery, documentQuery, documentsQuery, rankHits } from './query';
import { parseBulkResponse, parseCountResponse, parseDeleteByQueryResponse, parseMgetResponse, parseSearchResponse } from './responses';

/**
 * `KeywordIndex` over Elasticsearch 8 / OpenSearch 2.x, shared by both adapters; only the transport
 * ({@link KeywordEngineClient}) differs.
 *
 * - The index (aliases + `${prefix}-v1`) is created on first use; see `mapping.ts` for the layout and `aliases.ts` for
 *   blue/green reindexing ({@link reindexAndSwap}).
 * - `upsert`: `_bulk` `index` actions with `_id` = chunk id (idempotent), `refresh=wait_for` so a returned upsert is
 *   searchable; batches of `bulkBatchSize`; any failed item fails the call (the retry is idempotent).
 * - `search`: one `bool` query (BM25 on `text_seg`, filters for tenant/ACL/kind/metadata) on the read alias.
 * - `getChunks`: `_mget` of the stored `chunk` source, in the order asked, unknown ids skipped.
 * - `deleteDocument`: `_delete_by_query` (conflicts=proceed, refresh=true) on both aliases; `count`: `_count`.
 * - Every call has a deadline (`timeoutMs`, administration `adminTimeoutMs`); failures raise `AppError`
 *   (`unavailable`, or `deadline_exceeded`).
 */
export interface SearchEngineKeywordIndexOptions extends IndexLayoutOptions {
  /** Index/alias prefix (RAG_KEYWORD_INDEX_PREFIX, default `rag-chunks`). */
  prefix?: string;
  /** Weight of the standard-analysed `text` clause next to `text_seg` (default 0: off; see `buildSearchBody`). */
  textBoost?: number;
  /** Deadline of each data call in ms (default 10 000). */
  timeoutMs?: number;
  /** Deadline of index/alias administration in ms (default 60 000). */
  adminTimeoutMs?: number;
  /** Deadline of a `_reindex` in ms (default 3 600 000). */
  reindexTimeoutMs?: number;
  /** Chunks per `_bulk` request (default 500). */
  bulkBatchSize?: number;
  logger?: Logger;
}

const MGET_BATCH = 1000;
/** Documents per `_delete_by_query` of deleteDocuments: under the default 1024 boolean clauses of the engines. */
const DELETE_GROUP = 500;

export class SearchEngineKeywordIndex implements KeywordIndex {
  readonly names: IndexNames;
  protected readonly engine: KeywordEngineClient;
  protected readonly log: Logger;
  private readonly layout: IndexCreateBody;
  private readonly textBoost: number;
  private readonly timeoutMs: number;
  private readonly adminTimeoutMs: number;
  private readonly reindexTimeoutMs: number;
  private readonly batchSize: number;
  private refreshing?: Promise<void>;
  private nextRefresh?: Promise<void>;
  private ready: Promise<string> | undefined;
  private closed = false;

  constructor(engine: KeywordEngineClient, opts: SearchEngineKeywordIndexOptions = {}) {
    this.engine = engine;
    this.names = indexNames(opts.prefix ?? 'rag-chunks');
    this.layout = buildIndexBody(opts);
    this.textBoost = opts.textBoost ?? 0;
    this.timeoutMs = opts.timeoutMs ?? 10_000;
    this.adminTimeoutMs = opts.adminTimeoutMs ?? 60_000;
    this.reindexTimeoutMs = opts.reindexTimeoutMs ?? 3_600_000;
    this.batchSize = Math.max(1, Math.min(10_000, Math.floor(opts.bulkBatchSize ?? 500)));
    if (!(this.textBoost >= 0)) throw new Error(`textBoost must be >= 0, got ${this.textBoost}`);
    this.log = opts.logger ?? new Logger(engine.engine);
  }

  /** Creates the first physical index and the aliases when missing; returns the physical index. */
  ensureIndex(): Promise<string> {
    if (!this.ready) {
      this.ready = this.call('ensure index', this.adminTimeoutMs, (ms) => ensureAliasedIndex(this.engine, this.names, this.layout, ms)).catch((e: unknown) => {
        this.ready = undefined;
        throw e;
      });
    }
    return this.ready;
  }

  async upsert(chunks: Chunk[]): Promise<void> {
    this.assertOpen();
    const byId = new Map<string, Chunk>();
    for (const c of chunks) {
      if (!c.chunk_id) throw new Error(`${this.engine.engine} keyword index: chunk without chunk_id`);
      byId.delete(c.chunk_id);
      byId.set(c.chunk_id, c);
    }
    if (byId.size === 0) return;
    await this.ensureIndex();
    const all = [...byId.values()];
    for (let i = 0; i < all.length; i += this.batchSize) {
      const batch = all.slice(i, i + this.batchSize);
      const raw = await this.call('bulk', this.timeoutMs, (ms) => this.engine.bulk(bulkIndexOperations(this.names.writeAlias, batch), false, ms));
      const failures = parseBulkResponse(raw);
      if (failures.length > 0) {
        const f = failures[0]!;
        throw new AppError('unavailable', `${this.engine.engine}: ${failures.length} of ${batch.length} chunks were not indexed; first: ${f.id} (${f.status}) ${f.error}`);
      }
    }
    await this.refreshAfterWrite();
  }

  /**
   * Makes every write that completed before this call searchable, so "indexed" means "found by the next query".
   * `refresh=wait_for` on each bulk did the same but waited for the next scheduled refresh (up to the 1 s refresh
   * interval: 1.03 s per document measured against OpenSearch 2.19, which made the indexer the bottleneck of
   * distributed ingestion). Instead one explicit `_refresh` runs at a time and is shared: callers that finished
   * writing while a refresh was already running wait for the one after it, so concurrent indexer partitions share
   * refreshes instead of queueing one each.
   */
  private refreshAfterWrite(): Promise<void> {
    if (!this.refreshing) return this.startRefresh();
    this.nextRefresh ??= this.refreshing
      .catch(() => undefined)
      .then(() => {
        this.nextRefresh = undefined;
        return this.startRefresh();
      });
    return this.nextRefresh;
  }

  private startRefresh(): Promise<void> {
    const p = this.call('refresh', this.timeoutMs, (ms) => this.engine.refresh(this.names.writeAlias, ms)).finally(() => {
      if (this.refreshing === p) this.refreshing = undefined;
    });
    this.refreshing = p;
    return p;
  }

  async search(req: KeywordSearchRequest): Promise<KeywordHit[]> {
    this.assertOpen();
    const body = buildSearchBody(req, { textBoost: this.textBoost });
    if (body === null) return [];
    await this.ensureIndex();
    const raw = await this.call('search', this.timeoutMs, (ms) => this.engine.search(this.names.readAlias, body, ms));
    const res = parseSearchResponse(raw);
    if (res.failedShards > 0 || res.timedOut) {
      this.log.warn('partial keyword search results', { index: this.names.readAlias, failedShards: res.failedShards, timedOut: res.timedOut });
    }
    return rankHits(res.hits, req.k);
  }

  async getChunks(chunkIds: string[]): Promise<Chunk[]> {
    this.assertOpen();
    const unique = [...new Set(chunkIds)];
    if (unique.length === 0) return [];
    await this.ensureIndex();
    const found = new Map<string, Chunk>();
    for (let i = 0; i < unique.length; i += MGET_BATCH) {
      const ids = unique.slice(i, i + MGET_BATCH).map(engineId);
      const raw = await this.call('mget', this.timeoutMs, (ms) => this.engine.mget(this.names.readAlias, ids, ['chunk'], ms));
      for (const [id, chunk] of parseMgetResponse(raw)) found.set(id, chunk);
    }
    return unique.map((id) => found.get(id)).filter((c): c is Chunk => c !== undefined);
  }

  async deleteDocument(documentId: string, keepVersion?: number): Promise<number> {
    this.assertOpen();
    await this.ensureIndex();
    // Both aliases: during a blue/green reindex they point to different indexes and the delete must reach both.
    const raw = await this.call('delete_by_query', this.timeoutMs, (ms) =>
      this.engine.deleteByQuery([this.names.writeAlias, this.names.readAlias], documentQuery(documentId, keepVersion), ms),
    );
    return parseDeleteByQueryResponse(raw);
  }

  /**
   * The deletes of a batch as one `_delete_by_query` per {@link DELETE_GROUP} documents (each refreshes once) instead
   * of one per document.
   */
  async deleteDocuments(documents: DocumentDelete[]): Promise<number> {
    this.assertOpen();
    if (documents.length === 0) return 0;
    await this.ensureIndex();
    let removed = 0;
    for (let i = 0; i < documents.length; i += DELETE_GROUP) {
      const body = documentsQuery(documents.slice(i, i + DELETE_GROUP));
      const raw = await this.call('delete_by_query', this.timeoutMs, (ms) => this.engine.deleteByQuery([this.names.writeAlias, this.names.readAlias], body, ms));
      removed += parseDeleteByQueryResponse(raw);
    }
    return removed;
  }

  /** Stored chunks (children and parents), of one document or all. */
  async count(documentId?: string): Promise<number> {
    this.assertOpen();
    await this.ensureIndex();
    const raw = await this.call('count', this.timeoutMs, (ms) => this.engine.count(this.names.readAlias, countQuery(documentId), ms));
    return parseCountResponse(raw);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.engine.close();
  }

  /** Blue/green: reindex into `${prefix}-v(N+1)` with the current layout and swap both aliases (see `aliases.ts`). */
  async reindexAndSwap(opts: ReindexOptions = {}): Promise<ReindexSummary> {
    this.assertOpen();
    await this.ensureIndex();
    const summary = await this.call('reindex', this.reindexTimeoutMs + this.adminTimeoutMs, () =>
      reindexAndSwapAliases(this.engine, this.names, this.layout, { adminTimeoutMs: this.adminTimeoutMs, reindexTimeoutMs: this.reindexTimeoutMs }, opts),
    );
    this.log.info('keyword index reindexed and aliases swapped', { ...summary });
    return summary;
  }

  /** Deletes every physical index of this prefix (and so its aliases): tests and admin tooling only. */
  async dropAll(): Promise<string[]> {
    this.assertOpen();
    const indices = await this.call('list indices', this.adminTimeoutMs, (ms) => this.engine.listIndices(`${this.names.prefix}-v*`, ms));
    const ours = indices.filter((i) => this.names.versionOf(i) !== null);
    for (const index of ours) await this.call('delete index', this.adminTimeoutMs, (ms) => this.engine.deleteIndex(index, ms));
    this.ready = undefined;
    return ours;
  }

  // ---------------------------------------------------------------------------------------------

  private assertOpen(): void {
    if (this.closed) throw new Error(`${this.engine.engine} keyword index ${this.names.prefix} is closed`);
  }

  /** Runs one engine call under a local deadline (the client gets the same one as its request timeout). */
  private async call<T>(op: string, ms: number, fn: (ms: number) => Promise<T>): Promise<T> {
    try {
      // A little slack so the client's own timeout (with its clearer error) normally fires first.
      return await withDeadline(`${this.engine.engine} ${op}`, ms + 1000, () => fn(ms));
    } catch (e) {
      if (e instanceof AppError) throw e;
      const msg = e instanceof Error ? e.message : String(e);
      if (e instanceof Error && e.name === 'TimeoutError') throw new AppError('deadline_exceeded', `${this.engine.engine} ${op} (${this.names.prefix}) timed out: ${msg}`);
      throw new AppError('unavailable', `${this.engine.engine} ${op} (${this.names.prefix}) failed: ${msg}`);
    }
  }
}
