import type { FilterCondition, Filters, MetadataValue, SearchScope } from '@rag/contracts';

/** What a filter is evaluated against: a chunk's security fields and metadata. */
export interface FilterTarget {
  tenant: string;
  acl: readonly string[];
  document_id: string;
  metadata: Readonly<Record<string, MetadataValue>>;
}

/** The wildcard ACL entry: every principal of the tenant may read. */
export const PUBLIC_ACL = '*';

/** Tenant and ACL check: the tenant must match; with principals given, the ACL must name one of them or `*`. */
export function inScope(target: Pick<FilterTarget, 'tenant' | 'acl'>, scope: SearchScope): boolean {
  if (target.tenant !== scope.tenant) return false;
  if (scope.principals === undefined) return true;
  if (target.acl.includes(PUBLIC_ACL)) return true;
  return scope.principals.some((p) => target.acl.includes(p));
}

function fieldValue(target: FilterTarget, key: string): MetadataValue | undefined {
  if (key === 'document_id') return target.document_id;
  return target.metadata[key];
}

function scalarEquals(value: MetadataValue, expected: string | number | boolean): boolean {
  return Array.isArray(value) ? value.includes(String(expected)) : value === expected;
}

export function matchesCondition(value: MetadataValue | undefined, cond: FilterCondition): boolean {
  if (value === undefined) return false;
  if (typeof cond !== 'object') return scalarEquals(value, cond);
  if ('in' in cond) return cond.in.some((c) => scalarEquals(value, c));
  if (typeof value !== 'number') return false;
  if (cond.gte !== undefined && !(value >= cond.gte)) return false;
  if (cond.gt !== undefined && !(value > cond.gt)) return false;
  if (cond.lte !== undefined && !(value <= cond.lte)) return false;
  if (cond.lt !== undefined && !(value < cond.lt)) return false;
  return true;
}

/**
 * The one predicate every embedded store applies inside its search: scope (tenant + ACL) first, then every
 * filter key (AND). Security fields cannot be widened through `filters`: `tenant` and `acl` keys are rejected
 * by {@link validateFilterKeys}.
 */
export function matches(target: FilterTarget, scope: SearchScope, filters?: Filters): boolean {
  if (!inScope(target, scope)) return false;
  if (!filters) return true;
  for (const [key, cond] of Object.entries(filters)) {
    if (!matchesCondition(fieldValue(target, key), cond)) return false;
  }
  return true;
}

/** Reserved keys that would let a caller widen or spoof the security scope. */
export const RESERVED_FILTER_KEYS = ['tenant', 'acl', 'version', 'chunk_id'] as const;

/** Returns the problems with a filter's keys (empty when it is fine). */
export function validateFilterKeys(filters: Filters | undefined): string[] {
  if (!filters) return [];
  return Object.keys(filters)
    .filter((k) => (RESERVED_FILTER_KEYS as readonly string[]).includes(k))
    .map((k) => `filter key "${k}" is reserved and cannot be used in filters`);
}
