import type { FilterCondition, Filters } from '@rag/contracts';

/**
 * Document ids are scoped by tenant. Callers (API, CLI, connectors) speak *external* ids, unique within their tenant;
 * the registry, the bus and every store (HNSW, BM25, Milvus, OpenSearch) speak *internal* ids, unique across
 * tenants, because they upsert by chunk id (`${document_id}#v${version}#${ordinal}`) and delete by document id.
 *
 * The mapping is a pure bijection, no lookup:
 * - tenant `default`: internal = external (existing data folders and the anonymous laptop mode are unchanged);
 * - any other tenant `t`: internal = `t#external`.
 * External ids never contain whitespace or `#`, and tenants are `[A-Za-z0-9._-]`, so the first `#` of an internal
 * id separates the tenant unambiguously, and no internal id of one tenant can equal one of another tenant.
 *
 * Records accepted before ids were scoped live under the plain external id for every tenant; callers that look a
 * document up should fall back to the plain id when the qualified one is unknown, but only when that record belongs
 * to the same tenant ({@link documentIdCandidates}).
 */
export const DEFAULT_TENANT = 'default';

/** Id prefixes produced by the source connectors; uploads may not use them (no squatting of a page's id). */
export const RESERVED_DOCUMENT_ID_PREFIXES: readonly string[] = ['confluence:', 'notion:'];

const EXTERNAL_ID = /^[^\s#]+$/;
const TENANT = /^[A-Za-z0-9._-]{1,128}$/;
export const MAX_EXTERNAL_DOCUMENT_ID_LENGTH = 512;

/** Why an external document id is not acceptable, or null when it is. */
export function externalDocumentIdProblem(id: string): string | null {
  if (id.length === 0) return 'document_id must not be empty';
  if (id.length > MAX_EXTERNAL_DOCUMENT_ID_LENGTH) return `document_id must be at most ${MAX_EXTERNAL_DOCUMENT_ID_LENGTH} characters`;
  if (!EXTERNAL_ID.test(id)) return 'document_id must not contain whitespace or "#"';
  return null;
}

/** Why an id may not be chosen by an upload (reserved connector prefixes included), or null when it may. */
export function uploadDocumentIdProblem(id: string): string | null {
  const problem = externalDocumentIdProblem(id);
  if (problem) return problem;
  const lower = id.toLowerCase();
  const reserved = RESERVED_DOCUMENT_ID_PREFIXES.find((p) => lower.startsWith(p));
  return reserved ? `document_id prefix "${reserved}" is reserved for the ${reserved.slice(0, -1)} connector` : null;
}

function assertTenant(tenant: string): void {
  if (!TENANT.test(tenant)) throw new Error(`invalid tenant "${tenant}"`);
}

/** The internal id of a tenant's external id. Throws on an invalid tenant or external id (check it at the edge first). */
export function internalDocumentId(tenant: string, externalId: string): string {
  assertTenant(tenant);
  const problem = externalDocumentIdProblem(externalId);
  if (problem) throw new Error(`${problem}: ${JSON.stringify(externalId)}`);
  return tenant === DEFAULT_TENANT ? externalId : `${tenant}#${externalId}`;
}

/**
 * The external id under which `tenant` knows an internal id: the part after `${tenant}#`, or a plain id (one
 * without `#`: the default tenant's, or a record stored before ids were scoped). Null for an id qualified for
 * another tenant.
 */
export function externalDocumentId(tenant: string, internalId: string): string | null {
  const hash = internalId.indexOf('#');
  if (hash < 0) return internalId;
  if (tenant === DEFAULT_TENANT) return null;
  return internalId.slice(0, hash) === tenant ? internalId.slice(hash + 1) : null;
}

/**
 * The chunk id as the tenant sees it: `${external document id}#v${version}#${ordinal}` (the tenant qualifier
 * stripped), so a response's chunk ids keep the documented prefix relation to its document ids.
 */
export function externalChunkId(tenant: string, chunkId: string): string {
  if (tenant === DEFAULT_TENANT) return chunkId;
  const prefix = `${tenant}#`;
  return chunkId.startsWith(prefix) ? chunkId.slice(prefix.length) : chunkId;
}

/**
 * The internal ids to try, in order, for a tenant's external id: the qualified one, then (non-default tenants) the
 * plain one of records stored before ids were scoped; a caller must use the plain one only when its record belongs
 * to the same tenant. Empty when the external id is invalid (it cannot name any document).
 */
export function documentIdCandidates(tenant: string, externalId: string): string[] {
  if (externalDocumentIdProblem(externalId) || !TENANT.test(tenant)) return [];
  const qualified = internalDocumentId(tenant, externalId);
  return qualified === externalId ? [qualified] : [qualified, externalId];
}

/**
 * A query's filters with `document_id` values (external ids of the caller's tenant) turned into internal ids: each
 * value becomes the tenant-qualified id plus, for records stored before ids were scoped, the plain id (harmless:
 * every search is restricted to the tenant too). Other filter keys, and every filter of the default tenant, are
 * unchanged. A value that is no valid external id becomes an id no document can have, so it matches nothing.
 */
export function internalDocumentIdFilters(tenant: string, filters: Filters | undefined): Filters | undefined {
  if (!filters || tenant === DEFAULT_TENANT || !Object.prototype.hasOwnProperty.call(filters, 'document_id')) return filters;
  const cond: FilterCondition | undefined = filters.document_id;
  let values: (string | number)[];
  if (typeof cond === 'string' || typeof cond === 'number') values = [cond];
  else if (cond !== undefined && typeof cond === 'object' && 'in' in cond) values = cond.in;
  else return filters; // a boolean or a numeric range never matches an id, qualified or not
  const ids = new Set<string>();
  for (const v of values) {
    const id = String(v);
    ids.add(`${tenant}#${id}`);
    if (externalDocumentIdProblem(id) === null) ids.add(id);
  }
  return { ...filters, document_id: { in: [...ids] } };
}
