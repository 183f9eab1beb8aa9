/**
 * Tenants and access, distributed mode: the same scenario as test/e2e/access.e2e.spec.ts against eight processes over
 * real Kafka, gRPC, Milvus and OpenSearch. The scope travels gateway → gRPC Retrieve → the Milvus expression and the
 * OpenSearch bool filter; the stores are also searched directly to show the filter is applied inside each search
 * (a restricted principal still gets its k nearest permitted chunks, never a post-filtered remainder).
 *
 * RAG_DIST_DIR=<repo>/tmp/<name>-dist builds there instead of dist/ (scripts/build.js).
 */
import { SignJWT, type JWTPayload } from 'jose';
import { SqliteApiKeyStore } from '@rag/adapters';
import { externalDocumentId, internalDocumentId } from '@rag/domain';
import { issueApiKey } from '@rag/services';
import {
  ALL_A,
  ALL_B,
  bearer,
  citedIds,
  CRAFTED,
  KEY_SPECS,
  MODES,
  QUERY,
  retrieveIds,
  seed,
  TENANT_A,
  TENANT_B,
  VISIBLE,
  type Call,
  type KeyName,
} from '../e2e/access-scenario';
import { dataDir, embedder, env, milvus, opensearch, URL, useDistributedPlatform } from './distributed-harness';
import * as attributeChange from '../e2e/attribute-change-scenario';

const SECRET = 'hs256-secret-for-the-access-infra-suite-0123456789';
// Every service of the run sees these (the harness spreads `env` into each process).
Object.assign(env, {
  RAG_AUTH: 'required',
  RAG_JWT_SECRET: SECRET,
  RAG_JWT_AUDIENCE: 'rag',
  RAG_RATE_LIMIT_RPS: '100000',
  RAG_RATE_LIMIT_BURST: '100000',
});

const call: Call = async (method, path, body, headers = {}) => {
  const res = await fetch(URL + path, {
    method,
    headers: { 'content-type': 'application/json', ...headers },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
  const text = await res.text();
  let parsed: unknown = text;
  try {
    parsed = JSON.parse(text);
  } catch {
    /* not JSON */
  }
  return { status: res.status, body: parsed, headers: res.headers };
};

const jwt = (claims: JWTPayload) =>
  new SignJWT({ aud: 'rag', ...claims }).setProtectedHeader({ alg: 'HS256' }).setExpirationTime('5m').sign(new TextEncoder().encode(SECRET));

describe('tenants and access (distributed: Kafka, gRPC, Milvus, OpenSearch)', () => {
  const keys = {} as Record<KeyName, string>;

  beforeAll(async () => {
    const store = new SqliteApiKeyStore({ dir: dataDir });
    for (const [name, spec] of Object.entries(KEY_SPECS) as [KeyName, (typeof KEY_SPECS)[KeyName]][]) keys[name] = (await issueApiKey(store, spec)).key;
    await store.close();
  });
  useDistributedPlatform();

  it('seeds both tenants through the gateway and Kafka', { timeout: 240_000 }, async () => {
    expect((await call('GET', '/v1/documents')).status).toBe(401);
    await seed(call, keys.adminA, TENANT_A, 200_000);
    await seed(call, keys.adminB, TENANT_B, 200_000);
  });

  it('tenant A never retrieves tenant B’s chunks; ACLs hold for key groups, no groups and forwarded JWTs, in every mode', { timeout: 120_000 }, async () => {
    // Milvus searches at Bounded consistency: a vector indexed a moment ago can take a few seconds to be searchable, so
    // first wait until each tenant's admin sees everything it seeded (a flake seen once in CI: B dense missed one).
    // "Nobody else sees it" is never polled: every assertion below holds from its first request.
    for (const [key, want] of [
      [keys.adminA, ALL_A],
      [keys.adminB, ALL_B],
    ] as const) {
      await attributeChange.eventually(
        () => retrieveIds(call, bearer(key), 'dense'),
        (r) => JSON.stringify(r.ids) === JSON.stringify(want),
      );
    }
    for (const mode of MODES) {
      expect((await retrieveIds(call, bearer(keys.adminA), mode)).ids, `A ${mode}`).toEqual(ALL_A);
      expect((await retrieveIds(call, bearer(keys.adminB), mode)).ids, `B ${mode}`).toEqual(ALL_B);
      expect((await retrieveIds(call, bearer(keys.engA), mode)).ids, `eng ${mode}`).toEqual(VISIBLE.engA);
      expect((await retrieveIds(call, bearer(keys.plainA), mode)).ids, `plain ${mode}`).toEqual(VISIBLE.plainA);
      const alice = bearer(keys.gatewayA, { 'x-jwt-assertion': await jwt({ sub: 'alice', groups: ['hr'], tenant: TENANT_A }) });
      expect((await retrieveIds(call, alice, mode)).ids, `alice ${mode}`).toEqual(VISIBLE.aliceHr);
    }
    for (const id of await citedIds(call, bearer(keys.engA))) expect(VISIBLE.engA).toContain(id);
    for (const id of await citedIds(call, bearer(keys.adminB))) expect(ALL_B).toContain(id);
    const otherTenant = await call('POST', '/v1/retrieve', { query: QUERY }, bearer(keys.gatewayA, { 'x-jwt-assertion': await jwt({ sub: 'a', tenant: TENANT_B }) }));
    expect(otherTenant.status).toBe(403);
  });

  it('crafted filters cannot widen a query through the gRPC path, Milvus or OpenSearch', { timeout: 180_000 }, async () => {
    for (const c of CRAFTED) {
      for (const mode of MODES) {
        const r = await retrieveIds(call, bearer(keys.engA), mode, c.body);
        expect(r.status, `${c.name} (${mode}): ${JSON.stringify(r.body)}`).toBe(c.status);
        if (c.status === 200) {
          expect(r.ids, `${c.name} (${mode})`).toEqual(c.within);
          expect((r.body as { degraded: string[] }).degraded, `${c.name} (${mode})`).toEqual([]);
        }
      }
    }
  });

  it('the stores filter inside the search: k nearest permitted chunks from Milvus and OpenSearch directly', { timeout: 60_000 }, async () => {
    const [vector] = await embedder.embed([QUERY], 'query');
    const scopes = [
      { scope: { tenant: TENANT_A, principals: ['group:eng'] }, want: VISIBLE.engA },
      { scope: { tenant: TENANT_A, principals: [] as string[] }, want: VISIBLE.plainA },
      { scope: { tenant: TENANT_A, principals: ['user:alice', 'group:hr'] }, want: VISIBLE.aliceHr },
      { scope: { tenant: TENANT_B }, want: ALL_B },
      { scope: { tenant: 'nobody' }, want: [] as string[] },
    ];
    for (const { scope, want } of scopes) {
      // k = the number of permitted documents' chunks or fewer: a post-filter over the global top k would come up short.
      // The stores hold internal ids (`<tenant>#<id>` outside the default tenant); the API shows the tenant's own ids.
      const external = (h: { document_id: string }[]) => [...new Set(h.map((x) => externalDocumentId(scope.tenant, x.document_id) ?? x.document_id))].sort();
      const dense = await milvus.search({ vector: vector!, k: 50, scope });
      expect(external(dense), `milvus ${JSON.stringify(scope)}`).toEqual(want);
      const keyword = await opensearch.search({ query: QUERY, k: 50, scope });
      expect(external(keyword), `opensearch ${JSON.stringify(scope)}`).toEqual(want);
      if (want.length > 0) {
        expect((await milvus.search({ vector: vector!, k: 1, scope })).length).toBe(1);
        expect((await opensearch.search({ query: QUERY, k: 1, scope })).length).toBe(1);
      }
    }
  });

  it('enforces scopes and per-key rate limits at the distributed gateway', { timeout: 60_000 }, async () => {
    expect((await call('POST', '/v1/documents', { text: 'x' }, bearer(keys.engA))).status).toBe(403);
    expect((await call('POST', '/v1/retrieve', { query: QUERY }, bearer(keys.ingestA))).status).toBe(403);
    expect((await call('GET', '/v1/admin/api-keys', undefined, bearer(keys.engA))).status).toBe(403);
    expect((await call('GET', '/healthz')).status).toBe(200);
    const statuses: number[] = [];
    let retryAfter: string | null = null;
    for (let i = 0; i < 3; i++) {
      const r = await call('POST', '/v1/retrieve', { query: QUERY }, bearer(keys.slowA));
      statuses.push(r.status);
      retryAfter = r.headers.get('retry-after');
    }
    expect(statuses).toEqual([200, 200, 429]);
    expect(Number(retryAfter)).toBeGreaterThanOrEqual(1);
  });

  // Issue 11, item 1 (last: it adds a document of tenant A that the exact-set checks above do not expect).
  it('ACL, title and metadata changes with the same text reach Milvus, OpenSearch and the answers', { timeout: 240_000 }, async () => {
    const p = {
      writer: bearer(keys.adminA),
      everyone: bearer(keys.plainA),
      hr: bearer(keys.gatewayA, { 'x-jwt-assertion': await jwt({ sub: 'carol', groups: ['hr'], tenant: TENANT_A }) }),
    };
    await attributeChange.indexFirstVersion(call, p);
    await attributeChange.narrowAcl(call, p);
    await attributeChange.changeTitle(call, p);
    // Inside each store: a principal without groups finds none of the document's chunks, group hr finds them. Checked
    // after the title change: its version was indexed after the indexer had deleted the acl ["*"] version (one
    // document's events are handled in order), while right after `narrowAcl` that delete may still be under way (the
    // API fences on the active version, a direct store search does not).
    const [vector] = await embedder.embed([attributeChange.QUESTION], 'query');
    const stored = internalDocumentId(TENANT_A, attributeChange.DOC_ID);
    const ids = (h: { document_id: string }[]) => h.filter((x) => x.document_id === stored).length;
    expect(ids(await milvus.search({ vector: vector!, k: 50, scope: { tenant: TENANT_A, principals: [] } }))).toBe(0);
    expect(ids(await opensearch.search({ query: attributeChange.QUESTION, k: 50, scope: { tenant: TENANT_A, principals: [] } }))).toBe(0);
    expect(ids(await milvus.search({ vector: vector!, k: 50, scope: { tenant: TENANT_A, principals: ['group:hr'] } }))).toBeGreaterThan(0);
    expect(ids(await opensearch.search({ query: attributeChange.QUESTION, k: 50, scope: { tenant: TENANT_A, principals: ['group:hr'] } }))).toBeGreaterThan(0);
    await attributeChange.changeMetadata(call, p);
    await attributeChange.resendUnchanged(call, p);
  });
});
