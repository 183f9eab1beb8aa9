/**
 * One access scenario for both modes (embedded: test/e2e/access.e2e.spec.ts; distributed: test/infra/access.infra.spec.ts):
 * two tenants whose documents all match one query, documents with different ACLs, keys with different groups, and
 * the crafted requests that try to widen a query. Every expectation is an exact set of document ids, per search mode,
 * so a leak through any one store (vectors or keywords) fails the test.
 */
import type { ApiKeyCreate } from '@rag/contracts';

export type Call = (method: string, path: string, body?: unknown, headers?: Record<string, string>) => Promise<{ status: number; body: unknown; headers: Headers }>;

/** Every document mentions these words, so every document matches in every mode; only the scope can hide one. */
export const QUERY = 'zephyrium coolant loop pressure';
const text = (topic: string) => `Zephyrium coolant loop, ${topic}.\n\nThe zephyrium coolant loop pressure of the ${topic} section is checked every shift.`;

export interface SeedDoc {
  id: string;
  title: string;
  text: string;
  acl?: string[];
  metadata?: Record<string, string | number | boolean | string[]>;
}

export const TENANT_A = 'acme';
export const TENANT_B = 'beta';

export const DOCS: Record<string, SeedDoc[]> = {
  [TENANT_A]: [
    { id: 'acme-public', title: 'Public', text: text('public'), metadata: { team: 'all', level: 1 } },
    { id: 'acme-eng', title: 'Engineering', text: text('engineering'), acl: ['group:eng'], metadata: { team: 'platform', level: 2 } },
    { id: 'acme-hr', title: 'HR', text: text('personnel'), acl: ['group:hr'], metadata: { team: 'people', level: 3, labels: ['secret'] } },
    { id: 'acme-alice', title: 'Alice', text: text('alice private'), acl: ['user:alice'], metadata: { team: 'platform', level: 4 } },
  ],
  [TENANT_B]: [
    { id: 'beta-public', title: 'Beta public', text: text('beta public'), metadata: { team: 'all', level: 1 } },
    // Same group name as in tenant A: a group never crosses tenants.
    { id: 'beta-eng', title: 'Beta engineering', text: text('beta engineering'), acl: ['group:eng'], metadata: { team: 'platform', level: 2 } },
  ],
};

export const ALL_A = DOCS[TENANT_A]!.map((d) => d.id).sort();
export const ALL_B = DOCS[TENANT_B]!.map((d) => d.id).sort();

/** The keys of the scenario (created in the key store before the gateway starts or through the admin API). */
export const KEY_SPECS = {
  adminA: { tenant: TENANT_A, scopes: ['admin', 'ingest', 'query'], unrestricted: true, name: 'acme admin' },
  adminB: { tenant: TENANT_B, scopes: ['admin', 'ingest', 'query'], unrestricted: true, name: 'beta admin' },
  engA: { tenant: TENANT_A, scopes: ['query'], groups: ['eng'], name: 'acme eng' },
  plainA: { tenant: TENANT_A, scopes: ['query'], name: 'acme no groups' },
  gatewayA: { tenant: TENANT_A, scopes: ['query'], unrestricted: true, name: 'acme enterprise gateway' },
  ingestA: { tenant: TENANT_A, scopes: ['ingest'], unrestricted: true, name: 'acme pipeline' },
  slowA: { tenant: TENANT_A, scopes: ['query'], groups: ['eng'], rate_limit: { rps: 0.001, burst: 2 }, name: 'acme slow' },
} satisfies Record<string, ApiKeyCreate & { tenant: string }>;
export type KeyName = keyof typeof KEY_SPECS;

/** What each principal may read (sorted document ids). */
export const VISIBLE = {
  adminA: ALL_A,
  adminB: ALL_B,
  engA: ['acme-eng', 'acme-public'],
  plainA: ['acme-public'],
  /** gatewayA with a JWT for alice in group hr. */
  aliceHr: ['acme-alice', 'acme-hr', 'acme-public'],
} as const;

/**
 * Requests that try to widen the engA query. `status: 400` = refused at the edge; `status: 200` = accepted but
 * may only narrow: `within` is the exact expected answer (a subset of what engA may read).
 */
export const CRAFTED: { name: string; body: Record<string, unknown>; status: 400 | 200; within?: string[] }[] = [
  { name: 'tenant filter', body: { filters: { tenant: TENANT_B } }, status: 400 },
  { name: 'tenant in-list', body: { filters: { tenant: { in: [TENANT_A, TENANT_B] } } }, status: 400 },
  { name: 'acl wildcard array', body: { filters: { acl: ['*'] } }, status: 400 },
  { name: 'acl as a string', body: { filters: { acl: 'group:hr' } }, status: 400 },
  { name: 'acl in-list', body: { filters: { acl: { in: ['*', 'group:hr', 'user:alice'] } } }, status: 400 },
  { name: 'version range', body: { filters: { version: { gte: 0 } } }, status: 400 },
  { name: 'chunk_id', body: { filters: { chunk_id: 'acme-hr#v1#0' } }, status: 400 },
  { name: '$or operator', body: { filters: { $or: [{ tenant: TENANT_B }, { acl: '*' }] } }, status: 400 },
  { name: '$ne operator object', body: { filters: { team: { $ne: 'nobody' } } }, status: 400 },
  { name: 'nested object', body: { filters: { team: { tenant: TENANT_B } } }, status: 400 },
  { name: 'array value', body: { filters: { team: ['platform', 'people'] } }, status: 400 },
  { name: 'null value', body: { filters: { team: null } }, status: 400 },
  { name: '__proto__ key', body: JSON.parse('{"filters":{"__proto__":{"tenant":"beta"}}}') as Record<string, unknown>, status: 400 },
  { name: 'filters as an array', body: { filters: [{ tenant: TENANT_B }] }, status: 400 },
  { name: 'filters as a string', body: { filters: "tenant == 'beta' || true" }, status: 400 },
  { name: 'tenant beside the query', body: { tenant: TENANT_B }, status: 400 },
  { name: 'scope beside the query', body: { scope: { tenant: TENANT_B } }, status: 400 },
  { name: 'principals beside the query', body: { principals: ['*', 'group:hr'] }, status: 400 },
  // Accepted shapes that only ever narrow what engA may read:
  { name: 'dotted key metadata.tenant', body: { filters: { 'metadata.tenant': TENANT_B } }, status: 200, within: [] },
  { name: 'dotted key acl.0', body: { filters: { 'acl.0': '*' } }, status: 200, within: [] },
  { name: 'upper-case TENANT', body: { filters: { TENANT: TENANT_B } }, status: 200, within: [] },
  { name: 'constructor key', body: { filters: { constructor: 'Object' } }, status: 200, within: [] },
  { name: 'document_id of a hidden doc', body: { filters: { document_id: 'acme-hr' } }, status: 200, within: [] },
  { name: 'document_id of another tenant', body: { filters: { document_id: { in: ['beta-public', 'beta-eng', 'acme-alice'] } } }, status: 200, within: [] },
  { name: 'quote injection in a value', body: { filters: { team: 'x" || tenant == "beta' } }, status: 200, within: [] },
  { name: 'quote injection in a key', body: { filters: { 'team"]||tenant': 'x' } }, status: 400 },
  { name: 'metadata of a hidden doc', body: { filters: { labels: 'secret' } }, status: 200, within: [] },
  { name: 'range over every level', body: { filters: { level: { gte: -1e9 } } }, status: 200, within: ['acme-eng', 'acme-public'] },
  { name: 'in over every team', body: { filters: { team: { in: ['all', 'platform', 'people'] } } }, status: 200, within: ['acme-eng', 'acme-public'] },
  { name: 'narrowing filter', body: { filters: { team: 'platform' } }, status: 200, within: ['acme-eng'] },
];

export const MODES = ['hybrid', 'dense', 'keyword'] as const;

export const bearer = (key: string, extra: Record<string, string> = {}) => ({ authorization: `Bearer ${key}`, ...extra });

/** Document ids returned by /v1/retrieve (top 20, so every visible document is in). */
export async function retrieveIds(call: Call, headers: Record<string, string>, mode: (typeof MODES)[number], extra: Record<string, unknown> = {}): Promise<{ status: number; ids: string[]; body: unknown }> {
  const r = await call('POST', '/v1/retrieve', { query: QUERY, top_k: 20, mode, ...extra }, headers);
  const results = (r.body as { results?: { document_id: string }[] }).results ?? [];
  return { status: r.status, ids: [...new Set(results.map((x) => x.document_id))].sort(), body: r.body };
}

/** Document ids cited by /v1/query (the answer path). */
export async function citedIds(call: Call, headers: Record<string, string>): Promise<string[]> {
  const r = await call('POST', '/v1/query', { question: QUERY, top_k: 20 }, headers);
  if (r.status !== 200) throw new Error(`query: ${r.status} ${JSON.stringify(r.body)}`);
  return [...new Set((r.body as { citations: { document_id: string }[] }).citations.map((c) => c.document_id))].sort();
}

/** Submits the scenario's documents of one tenant with its admin key and waits until all are indexed. */
export async function seed(call: Call, key: string, tenant: string, timeoutMs = 120_000): Promise<void> {
  const r = await call('POST', '/v1/documents:batch', { documents: DOCS[tenant] }, bearer(key));
  if (r.status !== 202 || (r.body as { rejected: unknown[] }).rejected.length) throw new Error(`seed ${tenant}: ${r.status} ${JSON.stringify(r.body)}`);
  const deadline = Date.now() + timeoutMs;
  for (const d of DOCS[tenant]!) {
    for (;;) {
      const s = await call('GET', `/v1/documents/${encodeURIComponent(d.id)}`, undefined, bearer(key));
      const status = (s.body as { status?: string }).status;
      if (status === 'indexed') break;
      if (status === 'failed' || Date.now() > deadline) throw new Error(`seed ${d.id}: ${JSON.stringify(s.body)}`);
      await new Promise((res) => setTimeout(res, 100));
    }
  }
}
