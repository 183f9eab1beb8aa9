import type { IndexCreateBody } from './mapping';
import type { QueryBody, SearchBody } from './query';

/**
 * The few engine operations the keyword index needs, in engine-neutral terms. The OpenSearch and Elasticsearch
 * adapters implement it over their official clients (the only difference is how a request body is passed: `body`
 * for OpenSearch, top-level parameters for Elasticsearch 8); bodies are built, and raw JSON responses parsed, by this
 * shared core.
 *
 * Every method takes the deadline of the call in ms (passed to the client as `requestTimeout`). Methods returning
 * `unknown` return the raw response body, which the core validates.
 */
export interface AliasAction {
  add?: { index: string; alias: string; is_write_index?: boolean };
  remove?: { index: string; alias: string };
}

export type CreateIndexRequest = IndexCreateBody & { aliases?: Record<string, { is_write_index?: boolean }> };

export type BulkRefresh = 'wait_for' | false;

export interface KeywordEngineClient {
  readonly engine: 'opensearch' | 'elasticsearch';
  /** Physical indexes the alias points to; `[]` when the alias does not exist. */
  getAliasTargets(alias: string, timeoutMs: number): Promise<string[]>;
  /** Creates an index (optionally with aliases); `'exists'` when an index of that name already exists. */
  createIndex(index: string, body: CreateIndexRequest, timeoutMs: number): Promise<'created' | 'exists'>;
  deleteIndex(index: string, timeoutMs: number): Promise<void>;
  /** Physical index names matching a wildcard pattern (`[]` when none). */
  listIndices(pattern: string, timeoutMs: number): Promise<string[]>;
  /** Atomic alias update (`_aliases`). */
  updateAliases(actions: AliasAction[], timeoutMs: number): Promise<void>;
  /** `_bulk` with the given NDJSON lines (action, source, action, source, …). */
  bulk(operations: object[], refresh: BulkRefresh, timeoutMs: number): Promise<unknown>;
  search(index: string, body: SearchBody, timeoutMs: number): Promise<unknown>;
  mget(index: string, ids: string[], sourceIncludes: string[], timeoutMs: number): Promise<unknown>;
  /** `_delete_by_query` with `conflicts=proceed` and `refresh=true`. */
  deleteByQuery(indices: string[], body: QueryBody, timeoutMs: number): Promise<unknown>;
  count(index: string, body: QueryBody, timeoutMs: number): Promise<unknown>;
  /** Server-side `_reindex` (`op_type: create`, `conflicts: proceed`), waiting for completion. */
  reindex(source: string, dest: string, timeoutMs: number): Promise<unknown>;
  refresh(index: string, timeoutMs: number): Promise<void>;
  close(): Promise<void>;
}

/** HTTP status of a client error (both clients put it in `meta.statusCode`), if any. */
export function errorStatus(e: unknown): number | undefined {
  if (typeof e !== 'object' || e === null) return undefined;
  const meta = (e as { meta?: unknown }).meta;
  if (typeof meta === 'object' && meta !== null) {
    const s = (meta as { statusCode?: unknown }).statusCode;
    if (typeof s === 'number') return s;
  }
  const s = (e as { statusCode?: unknown }).statusCode;
  return typeof s === 'number' ? s : undefined;
}

/** The engine's error `type` (e.g. `resource_already_exists_exception`) of a client error, if any. */
export function errorType(e: unknown): string | undefined {
  if (typeof e !== 'object' || e === null) return undefined;
  const candidates: unknown[] = [(e as { body?: unknown }).body];
  const meta = (e as { meta?: unknown }).meta;
  if (typeof meta === 'object' && meta !== null) candidates.push((meta as { body?: unknown }).body);
  for (const body of candidates) {
    if (typeof body !== 'object' || body === null) continue;
    const err = (body as { error?: unknown }).error;
    if (typeof err === 'object' && err !== null) {
      const t = (err as { type?: unknown }).type;
      if (typeof t === 'string') return t;
    }
  }
  return undefined;
}
