import type { Chunk } from '@rag/contracts';
import type { KeywordHit } from '@rag/ports';

/**
 * Validation of raw Elasticsearch/OpenSearch response bodies (identical shapes in ES 8 and OpenSearch 2.x). A body
 * that does not have the expected shape raises an error naming the operation, never a silent empty result.
 */

type Json = Record<string, unknown>;

function isRecord(x: unknown): x is Json {
  return typeof x === 'object' && x !== null && !Array.isArray(x);
}

function fail(op: string, why: string): never {
  throw new Error(`unexpected ${op} response: ${why}`);
}

function record(op: string, x: unknown, what: string): Json {
  if (!isRecord(x)) fail(op, `${what} is not an object`);
  return x;
}

function array(op: string, x: unknown, what: string): unknown[] {
  if (!Array.isArray(x)) fail(op, `${what} is not an array`);
  return x;
}

function describeError(e: unknown): string {
  if (!isRecord(e)) return String(e);
  const type = typeof e['type'] === 'string' ? e['type'] : 'error';
  const reason = typeof e['reason'] === 'string' ? e['reason'] : JSON.stringify(e).slice(0, 300);
  const cause = isRecord(e['caused_by']) ? ` (caused by ${describeError(e['caused_by'])})` : '';
  return `${type}: ${reason}${cause}`;
}

export interface BulkFailure {
  id: string;
  status: number;
  error: string;
}

/** The failed items of a `_bulk` response (empty when all succeeded). */
export function parseBulkResponse(raw: unknown): BulkFailure[] {
  const body = record('bulk', raw, 'body');
  const items = array('bulk', body['items'], 'items');
  if (body['errors'] !== true) return [];
  const failures: BulkFailure[] = [];
  for (const item of items) {
    if (!isRecord(item)) continue;
    for (const result of Object.values(item)) {
      if (!isRecord(result) || result['error'] === undefined) continue;
      failures.push({ id: String(result['_id']), status: Number(result['status']), error: describeError(result['error']) });
    }
  }
  return failures;
}

export interface SearchParseResult {
  hits: KeywordHit[];
  /** Shards that failed (partial results). */
  failedShards: number;
  timedOut: boolean;
}

export function parseSearchResponse(raw: unknown): SearchParseResult {
  const body = record('search', raw, 'body');
  const hitsObj = record('search', body['hits'], 'hits');
  const shards = isRecord(body['_shards']) ? body['_shards'] : {};
  const hits: KeywordHit[] = [];
  for (const h of array('search', hitsObj['hits'], 'hits.hits')) {
    const hit = record('search', h, 'hit');
    const src = record('search', hit['_source'], 'hit._source');
    const chunkId = src['chunk_id'];
    const documentId = src['document_id'];
    if (typeof chunkId !== 'string' || typeof documentId !== 'string') fail('search', 'hit without chunk_id/document_id');
    const score = typeof hit['_score'] === 'number' ? hit['_score'] : Number(hit['_score']);
    hits.push({ chunk_id: chunkId, document_id: documentId, version: Number(src['version']), score: Number.isFinite(score) ? score : 0 });
  }
  return { hits, failedShards: Number(shards['failed'] ?? 0) || 0, timedOut: body['timed_out'] === true };
}

/** Stored chunks of an `_mget` response, by chunk id (docs not found are skipped; a per-doc error throws). */
export function parseMgetResponse(raw: unknown): Map<string, Chunk> {
  const body = record('mget', raw, 'body');
  const out = new Map<string, Chunk>();
  for (const d of array('mget', body['docs'], 'docs')) {
    const doc = record('mget', d, 'doc');
    if (doc['error'] !== undefined) throw new Error(`mget of ${String(doc['_id'])} failed: ${describeError(doc['error'])}`);
    if (doc['found'] !== true) continue;
    const src = record('mget', doc['_source'], 'doc._source');
    const chunk = record('mget', src['chunk'], 'doc._source.chunk');
    if (typeof chunk['chunk_id'] !== 'string') fail('mget', 'stored chunk without chunk_id');
    out.set(chunk['chunk_id'], chunk as unknown as Chunk);
  }
  return out;
}

/** Deleted count of a `_delete_by_query` response; throws when it reports failures or timed out. */
export function parseDeleteByQueryResponse(raw: unknown): number {
  const body = record('delete_by_query', raw, 'body');
  const failures = Array.isArray(body['failures']) ? body['failures'] : [];
  if (failures.length > 0) throw new Error(`delete_by_query failed: ${describeError(failures[0])}${failures.length > 1 ? ` (+${failures.length - 1} more)` : ''}`);
  if (body['timed_out'] === true) throw new Error('delete_by_query timed out before deleting every match');
  const deleted = Number(body['deleted']);
  if (!Number.isFinite(deleted)) fail('delete_by_query', 'no deleted count');
  return deleted;
}

export function parseCountResponse(raw: unknown): number {
  const body = record('count', raw, 'body');
  const n = Number(body['count']);
  if (!Number.isFinite(n)) fail('count', 'no count');
  return n;
}

/** Index names of a `GET _alias/<name>` response (`{ "<index>": { "aliases": { … } } }`). */
export function parseAliasResponse(raw: unknown): string[] {
  if (!isRecord(raw)) return [];
  return Object.keys(raw)
    .filter((k) => isRecord(raw[k]) && isRecord((raw[k] as Json)['aliases']))
    .sort();
}

export interface ReindexResult {
  total: number;
  created: number;
  updated: number;
  versionConflicts: number;
}

export function parseReindexResponse(raw: unknown): ReindexResult {
  const body = record('reindex', raw, 'body');
  const failures = Array.isArray(body['failures']) ? body['failures'] : [];
  if (failures.length > 0) throw new Error(`reindex failed: ${describeError(failures[0])}`);
  if (body['timed_out'] === true) throw new Error('reindex timed out');
  return {
    total: Number(body['total'] ?? 0),
    created: Number(body['created'] ?? 0),
    updated: Number(body['updated'] ?? 0),
    versionConflicts: Number(body['version_conflicts'] ?? 0),
  };
}
