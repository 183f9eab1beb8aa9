import type { FilterCondition, Filters, SearchScope } from '@rag/contracts';
import { byScoreThenChunkId, PUBLIC_ACL, segmentForIndex } from '@rag/domain';
import { metadataField } from './mapping';

/**
 * Query DSL (the subset we emit; identical in Elasticsearch 8 and OpenSearch 2.x) and the builders for search,
 * delete-by-query and count bodies.
 *
 * Filters have exactly the semantics of `matches()` in `@rag/domain` (filters.ts), over the typed metadata fields of
 * `mapping.ts`:
 * - tenant must be equal; with principals given, `acl` must contain `*` or one of them (`terms` on `acl`);
 * - scalar condition: strict equality on the field of the value's own type (`md_s`/`md_n`/`md_b`), or membership of
 *   `String(value)` in a string[] field (`md_a`) — so `"5"` never equals `5` and `true` never equals `1`;
 * - `{in: [...]}`: any of the scalar conditions;
 * - `{gte, gt, lte, lt}`: `range` on the numeric field only;
 * - a missing field never matches; the key `document_id` addresses the chunk's document id.
 * Everything is a `filter` clause of the one `bool` query, so filtering happens inside the search (no scoring
 * influence, cacheable) and a filter that excludes the best BM25 hits still yields k matching results.
 */

export type FieldValue = string | number | boolean;

export interface RangeBounds {
  gte?: number;
  gt?: number;
  lte?: number;
  lt?: number;
}

export interface BoolQuery {
  filter?: Query[];
  should?: Query[];
  must?: Query[];
  must_not?: Query[];
  minimum_should_match?: number;
}

export type Query =
  | { term: Record<string, { value: FieldValue }> }
  | { terms: Record<string, FieldValue[]> }
  | { range: Record<string, RangeBounds> }
  | { match: Record<string, { query: string; operator?: 'or' | 'and'; boost?: number }> }
  | { bool: BoolQuery }
  | { match_all: Record<string, never> }
  | { match_none: Record<string, never> };

export interface SearchBody {
  size: number;
  query: Query;
  _source: string[];
  track_total_hits: false;
}

export interface QueryBody {
  query: Query;
}

/** Elasticsearch/OpenSearch default `index.max_result_window`. */
export const MAX_RESULT_WINDOW = 10_000;

export const term = (field: string, value: FieldValue): Query => ({ term: { [field]: { value } } });
export const terms = (field: string, values: FieldValue[]): Query => ({ terms: { [field]: values } });
const anyOf = (should: Query[]): Query => (should.length === 1 ? should[0]! : { bool: { should, minimum_should_match: 1 } });

/** Tenant (+ ACL) filter clauses. */
export function scopeClauses(scope: SearchScope): Query[] {
  const clauses: Query[] = [term('tenant', scope.tenant)];
  if (scope.principals !== undefined) {
    clauses.push(terms('acl', [PUBLIC_ACL, ...scope.principals.filter((p) => p !== PUBLIC_ACL)]));
  }
  return clauses;
}

function scalarClause(key: string, value: FieldValue): Query {
  const typed =
    typeof value === 'string'
      ? term(metadataField('string', key), value)
      : typeof value === 'number'
        ? term(metadataField('number', key), value)
        : term(metadataField('boolean', key), value);
  return anyOf([typed, term(metadataField('array', key), String(value))]);
}

function metadataClause(key: string, cond: FilterCondition): Query {
  if (typeof cond !== 'object') return scalarClause(key, cond);
  if ('in' in cond) {
    const strs = cond.in.filter((v): v is string => typeof v === 'string');
    const nums = cond.in.filter((v): v is number => typeof v === 'number');
    const should: Query[] = [];
    if (strs.length > 0) should.push(terms(metadataField('string', key), strs));
    if (nums.length > 0) should.push(terms(metadataField('number', key), nums));
    should.push(terms(metadataField('array', key), cond.in.map((v) => String(v))));
    return anyOf(should);
  }
  const bounds: RangeBounds = {};
  if (cond.gte !== undefined) bounds.gte = cond.gte;
  if (cond.gt !== undefined) bounds.gt = cond.gt;
  if (cond.lte !== undefined) bounds.lte = cond.lte;
  if (cond.lt !== undefined) bounds.lt = cond.lt;
  return { range: { [metadataField('number', key)]: bounds } };
}

/** `document_id` is a keyword: only strings can match; `null` = can never match. */
function documentIdClause(cond: FilterCondition): Query | null {
  if (typeof cond === 'string') return term('document_id', cond);
  if (typeof cond !== 'object') return null;
  if ('in' in cond) {
    const strs = cond.in.filter((v): v is string => typeof v === 'string');
    return strs.length === 0 ? null : terms('document_id', strs);
  }
  return null;
}

/** Filter clauses for scope + metadata filters; `null` when the filters can never match. */
export function filterClauses(scope: SearchScope, filters?: Filters): Query[] | null {
  const clauses = scopeClauses(scope);
  for (const [key, cond] of Object.entries(filters ?? {})) {
    if (key === 'document_id') {
      const c = documentIdClause(cond);
      if (c === null) return null;
      clauses.push(c);
    } else {
      clauses.push(metadataClause(key, cond));
    }
  }
  return clauses;
}

export interface SearchBodyRequest {
  query: string;
  k: number;
  scope: SearchScope;
  filters?: Filters;
}

export interface SearchBodyOptions {
  /**
   * Weight of an extra `match` on the standard-analysed `text` field (default 0 = off: `text_seg` alone, which
   * ranks like the embedded index). A small weight (e.g. 0.2) lets exact surface forms the light stemmer conflates
   * break ties.
   */
  textBoost?: number;
}

/**
 * Hits asked for beyond k, so that the tie-break by chunk id (rankHits, after the engine has ranked by score alone)
 * sees every chunk tied with the k-th score unless more than this many are. The engine sorts by score only: a sort of
 * `[_score, chunk_id]` made Lucene score every matching document (a field sort needs complete scores), where a
 * score-only sort without total hit counts lets it skip the blocks that cannot compete (block-max WAND); measured in
 * scripts/bench/README.md (*scale*, distributed: 0.80× the engine's time at 1.3M documents). Deviation from the
 * embedded index, said here: when more than this many chunks tie exactly with the k-th score (repeated passages), the
 * engine's index order picks among them instead of the lowest chunk ids — equal scores, another pick among equals.
 */
export const TIE_MARGIN = 20;

/**
 * The search body: `bool` with `should` over `text_seg` (the query segmented with `segmentForIndex`) and optionally
 * `text`, at least one of them matching; `filter` clauses for tenant, ACL, `kind: child` and every metadata filter;
 * `size: k + TIE_MARGIN`, by score alone (the caller breaks ties by chunk id with rankHits, like the embedded index).
 * `null` when nothing can match (the query has no searchable token, k < 1, or the filters are unsatisfiable).
 */
export function buildSearchBody(req: SearchBodyRequest, opts: SearchBodyOptions = {}): SearchBody | null {
  const size = Math.min(Math.floor(req.k), MAX_RESULT_WINDOW);
  if (!(size > 0)) return null;
  const segmented = segmentForIndex(req.query);
  if (segmented.length === 0) return null;
  const filter = filterClauses(req.scope, req.filters);
  if (filter === null) return null;
  filter.push(term('kind', 'child'));
  const should: Query[] = [{ match: { text_seg: { query: segmented, operator: 'or' } } }];
  const textBoost = opts.textBoost ?? 0;
  if (textBoost > 0) should.push({ match: { text: { query: req.query, operator: 'or', boost: textBoost } } });
  return {
    size: Math.min(size + TIE_MARGIN, MAX_RESULT_WINDOW),
    query: { bool: { should, minimum_should_match: 1, filter } },
    _source: ['chunk_id', 'document_id', 'version'],
    track_total_hits: false,
  };
}

/**
 * The first k of an engine's hits in the platform's order: score descending, then chunk id ascending (the embedded
 * index's order). Exact whenever the engine returned every chunk tied with the k-th score (see TIE_MARGIN).
 */
export function rankHits<H extends { chunk_id: string; score: number }>(hits: readonly H[], k: number): H[] {
  return [...hits].sort(byScoreThenChunkId).slice(0, Math.max(0, Math.floor(k)));
}

/** Selects a document's chunks, except those of `keepVersion` when given (delete-by-query). */
export function documentQuery(documentId: string, keepVersion?: number): QueryBody {
  const bool: BoolQuery = { filter: [term('document_id', documentId)] };
  if (keepVersion !== undefined) bool.must_not = [term('version', keepVersion)];
  return { query: { bool } };
}

/**
 * The chunks of several documents' deletes in one query: each delete as {@link documentQuery} in a `should` (any of
 * them), or one `terms` on the ids when no delete keeps a version.
 */
export function documentsQuery(documents: readonly { documentId: string; keepVersion?: number }[]): QueryBody {
  if (documents.length === 0) throw new Error('documentsQuery: no documents');
  if (documents.every((d) => d.keepVersion === undefined)) return { query: { bool: { filter: [{ terms: { document_id: [...new Set(documents.map((d) => d.documentId))] } }] } } };
  return { query: { bool: { should: documents.map((d) => documentQuery(d.documentId, d.keepVersion).query), minimum_should_match: 1 } } };
}

/** Count body: everything, or one document's chunks. */
export function countQuery(documentId?: string): QueryBody {
  return documentId === undefined ? { query: { match_all: {} } } : documentQuery(documentId);
}
