/**
 * Tenants and access, embedded mode, through the HTTP API: tenant isolation and ACLs in every search mode (so in the
 * HNSW and the BM25 stores), crafted filters, forwarded JWTs (verified against a JWKS endpoint), scopes, admin key
 * management, rate limits, and the anonymous local mode closing once the first key exists.
 */
import { mkdtempSync } from 'node:fs';
import { createServer, type Server as HttpServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { exportJWK, generateKeyPair, SignJWT, type JWTPayload } from 'jose';
import { SqliteApiKeyStore } from '@rag/adapters';
import { issueApiKey } from '@rag/services';
import {
  ALL_A,
  ALL_B,
  bearer,
  citedIds,
  CRAFTED,
  KEY_SPECS,
  MODES,
  retrieveIds,
  seed,
  TENANT_A,
  TENANT_B,
  VISIBLE,
  type Call,
  type KeyName,
} from './access-scenario';
import { api, removeDir, startServer, type Server } from './harness';

const ISSUER = 'https://idp.acme.example';

describe('tenants and access (embedded platform, end to end)', () => {
  let server: Server;
  let jwks: HttpServer;
  let sign: (claims: JWTPayload) => Promise<string>;
  let signWrongKey: (claims: JWTPayload) => Promise<string>;
  let signBare: (claims: JWTPayload) => Promise<string>;
  const keys = {} as Record<KeyName, string>;
  const ids = {} as Record<KeyName, string>;
  const call: Call = (method, path, body, headers) => api(server, method, path, body, headers);

  beforeAll(async () => {
    const { publicKey, privateKey } = await generateKeyPair('ES256');
    const other = await generateKeyPair('ES256');
    const jwk = { ...(await exportJWK(publicKey)), kid: 'idp-1', alg: 'ES256', use: 'sig' };
    jwks = createServer((_req, res) => {
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ keys: [jwk] }));
    });
    await new Promise<void>((r) => jwks.listen(0, '127.0.0.1', r));
    const jwksUrl = `http://127.0.0.1:${(jwks.address() as AddressInfo).port}/jwks.json`;
    const token = (key: CryptoKey) => (claims: JWTPayload) =>
      new SignJWT({ iss: ISSUER, ...claims }).setProtectedHeader({ alg: 'ES256', kid: 'idp-1' }).setIssuedAt().setExpirationTime('5m').sign(key);
    sign = token(privateKey);
    signWrongKey = token(other.privateKey);
    // No exp/iat set by the helper: the claims say what the token carries.
    signBare = (claims) => new SignJWT({ iss: ISSUER, ...claims }).setProtectedHeader({ alg: 'ES256', kid: 'idp-1' }).sign(privateKey);

    // The keys exist before the gateway starts (as after `rag keys create`): anonymous access is closed from the start.
    const dataDir = mkdtempSync(join(tmpdir(), 'rag-access-'));
    const store = new SqliteApiKeyStore({ dir: dataDir });
    for (const [name, spec] of Object.entries(KEY_SPECS) as [KeyName, (typeof KEY_SPECS)[KeyName]][]) {
      const { key, record } = await issueApiKey(store, spec);
      keys[name] = key;
      ids[name] = record.id;
    }
    await store.close();
    server = await startServer(dataDir, {
      RAG_JWT_JWKS_URL: jwksUrl,
      RAG_JWT_ISSUER: ISSUER,
      RAG_RATE_LIMIT_RPS: '100000',
      RAG_RATE_LIMIT_BURST: '100000',
      RAG_PARENT_CHUNK_TOKENS: '0',
    });
    await seed(call, keys.adminA, TENANT_A);
    await seed(call, keys.adminB, TENANT_B);
  });
  afterAll(async () => {
    await server?.stop();
    if (server) removeDir(server.dataDir);
    await new Promise<void>((r) => (jwks ? jwks.close(() => r()) : r()));
  });

  it('tenant A never retrieves tenant B’s chunks and vice versa, in every search mode and in answers', async () => {
    for (const mode of MODES) {
      expect((await retrieveIds(call, bearer(keys.adminA), mode)).ids, `A ${mode}`).toEqual(ALL_A);
      expect((await retrieveIds(call, bearer(keys.adminB), mode)).ids, `B ${mode}`).toEqual(ALL_B);
    }
    const citedA = await citedIds(call, bearer(keys.adminA));
    const citedB = await citedIds(call, bearer(keys.adminB));
    expect(citedA.length * citedB.length).toBeGreaterThan(0);
    for (const id of citedA) expect(ALL_A).toContain(id);
    for (const id of citedB) expect(ALL_B).toContain(id);
  });

  it('a principal outside a document’s ACL never retrieves it: groups of the key, no groups, forwarded JWT', async () => {
    for (const mode of MODES) {
      expect((await retrieveIds(call, bearer(keys.engA), mode)).ids, `eng ${mode}`).toEqual(VISIBLE.engA);
      expect((await retrieveIds(call, bearer(keys.plainA), mode)).ids, `plain ${mode}`).toEqual(VISIBLE.plainA);
      const alice = bearer(keys.gatewayA, { 'x-jwt-assertion': await sign({ sub: 'alice', groups: ['hr'], tenant: TENANT_A }) });
      expect((await retrieveIds(call, alice, mode)).ids, `alice ${mode}`).toEqual(VISIBLE.aliceHr);
      // A JWT naming group eng of tenant A never reaches beta-eng.
      const bob = bearer(keys.gatewayA, { 'x-jwt-assertion': await sign({ sub: 'bob', groups: ['eng'], tenant: TENANT_A }) });
      expect((await retrieveIds(call, bob, mode)).ids, `bob ${mode}`).toEqual(VISIBLE.engA);
    }
    for (const id of await citedIds(call, bearer(keys.engA))) expect(VISIBLE.engA).toContain(id);
    for (const id of await citedIds(call, bearer(keys.plainA))) expect(VISIBLE.plainA).toContain(id);
    // Without a JWT the gateway key is what it is (unrestricted here); with a JWT of another tenant or a forged one, nothing.
    expect((await retrieveIds(call, bearer(keys.gatewayA), 'hybrid')).ids).toEqual(ALL_A);
    const otherTenant = await retrieveIds(call, bearer(keys.gatewayA, { 'x-jwt-assertion': await sign({ sub: 'alice', groups: ['hr'], tenant: TENANT_B }) }), 'hybrid');
    expect(otherTenant.status).toBe(403);
    const forged = await retrieveIds(call, bearer(keys.gatewayA, { 'x-jwt-assertion': await signWrongKey({ sub: 'alice', groups: ['hr'], tenant: TENANT_A }) }), 'hybrid');
    expect(forged.status).toBe(401);
    const wrongIssuer = await retrieveIds(call, bearer(keys.gatewayA, { 'x-jwt-assertion': await sign({ iss: 'https://evil.example', sub: 'alice', tenant: TENANT_A }) }), 'hybrid');
    expect(wrongIssuer.status).toBe(401);
  });

  it('a forwarded JWT needs exp, and a lifetime within RAG_JWT_MAX_LIFETIME_S (default one day)', async () => {
    const now = Math.floor(Date.now() / 1000);
    const claims = { sub: 'alice', groups: ['hr'], tenant: TENANT_A };
    const retrieve = async (jwt: string) => retrieveIds(call, bearer(keys.gatewayA, { 'x-jwt-assertion': jwt }), 'hybrid');
    const noExp = await retrieve(await signBare({ ...claims, iat: now }));
    expect(noExp.status).toBe(401);
    expect(JSON.stringify(noExp.body)).toMatch(/exp/);
    const tooLong = await retrieve(await signBare({ ...claims, iat: now, exp: now + 2 * 86_400 }));
    expect(tooLong.status).toBe(401);
    expect(JSON.stringify(tooLong.body)).toMatch(/RAG_JWT_MAX_LIFETIME_S/);
    expect((await retrieve(await signBare({ ...claims, exp: now + 30 * 86_400 }))).status).toBe(401);
    const fine = await retrieve(await signBare({ ...claims, iat: now, exp: now + 3600 }));
    expect(fine.status).toBe(200);
    expect(fine.ids).toEqual(VISIBLE.aliceHr);
  });

  it('crafted filters and bodies cannot widen a query: refused with 400, or they only narrow', async () => {
    for (const c of CRAFTED) {
      for (const mode of MODES) {
        const r = await retrieveIds(call, bearer(keys.engA), mode, c.body);
        expect(r.status, `${c.name} (${mode}): ${JSON.stringify(r.body)}`).toBe(c.status);
        if (c.status === 400) expect((r.body as { error: { code: string } }).error.code).toBe('invalid_request');
        else expect(r.ids, `${c.name} (${mode})`).toEqual(c.within);
      }
      const q = await call('POST', '/v1/query', { question: 'zephyrium coolant loop pressure', ...c.body }, bearer(keys.engA));
      expect(q.status, `query: ${c.name}`).toBe(c.status);
      if (q.status === 200) for (const cit of (q.body as { citations: { document_id: string }[] }).citations) expect(c.within).toContain(cit.document_id);
    }
    // Headers do not choose a tenant either.
    expect((await retrieveIds(call, bearer(keys.engA, { 'x-tenant': TENANT_B, 'x-rag-tenant': TENANT_B }), 'hybrid')).ids).toEqual(VISIBLE.engA);
  });

  it('documents of another tenant cannot be read, listed, overwritten or deleted', async () => {
    expect((await call('GET', '/v1/documents/acme-public', undefined, bearer(keys.adminB))).status).toBe(404);
    expect((await call('DELETE', '/v1/documents/acme-public', undefined, bearer(keys.adminB))).status).toBe(404);
    // Ids are scoped by tenant: acme's id is a free id for beta (no 409 oracle); beta's write never touches acme's.
    const overwrite = await call('POST', '/v1/documents', { id: 'acme-public', text: 'beta takes over' }, bearer(keys.adminB));
    expect(overwrite.status).toBe(202);
    expect((await call('GET', '/v1/documents/acme-public', undefined, bearer(keys.adminA))).body).toMatchObject({ tenant: TENANT_A, version: 1, title: 'Public' });
    expect((await call('DELETE', '/v1/documents/acme-public', undefined, bearer(keys.adminB))).status).toBe(202);
    for (let status = ''; status !== 'deleted'; await new Promise((r) => setTimeout(r, 50))) {
      status = String(((await call('GET', '/v1/documents/acme-public', undefined, bearer(keys.adminB))).body as { status?: string }).status);
    }
    expect((await call('GET', '/v1/documents/acme-public', undefined, bearer(keys.adminA))).body).toMatchObject({ status: 'indexed' });
    const listed = await call('GET', '/v1/documents?status=indexed', undefined, bearer(keys.adminB));
    expect((listed.body as { documents: { document_id: string }[] }).documents.map((d) => d.document_id).sort()).toEqual(ALL_B);
    const mine = await call('GET', '/v1/documents/acme-hr', undefined, bearer(keys.ingestA));
    expect(mine.body).toMatchObject({ document_id: 'acme-hr', tenant: TENANT_A, acl: ['group:hr'] });
    expect((await retrieveIds(call, bearer(keys.adminA), 'keyword')).ids).toEqual(ALL_A);
  });

  it('enforces scopes: 401 without a valid key, 403 for a route outside the key’s scopes; health stays public', async () => {
    const none = await call('POST', '/v1/retrieve', { query: 'x' });
    expect(none.status).toBe(401);
    expect(none.headers.get('www-authenticate')).toMatch(/^Bearer/);
    expect((await call('POST', '/v1/retrieve', { query: 'x' }, bearer('rag_0000000000000000_forged'))).status).toBe(401);
    expect((await call('POST', '/v1/retrieve', { query: 'x' }, { authorization: keys.engA })).status).toBe(401);
    expect((await call('POST', '/v1/documents', { text: 'x' }, bearer(keys.engA))).status).toBe(403);
    expect((await call('GET', '/v1/documents', undefined, bearer(keys.engA))).status).toBe(403);
    expect((await call('DELETE', '/v1/documents/acme-public', undefined, bearer(keys.engA))).status).toBe(403);
    const ingestOnly = await call('POST', '/v1/retrieve', { query: 'x' }, bearer(keys.ingestA));
    expect(ingestOnly.status).toBe(403);
    expect((ingestOnly.body as { error: { code: string; message: string } }).error).toMatchObject({ code: 'forbidden', message: expect.stringMatching(/query/) });
    expect((await call('POST', '/v1/feedback', { trace_id: 't', rating: 'up' }, bearer(keys.ingestA))).status).toBe(403);
    expect((await call('GET', '/v1/admin/api-keys', undefined, bearer(keys.engA))).status).toBe(403);
    expect((await call('GET', '/v1/admin/api-keys', undefined, bearer(keys.ingestA))).status).toBe(403);
    for (const path of ['/healthz', '/readyz', '/metrics', '/', '/docs/openapi.json']) expect((await call('GET', path)).status, path).toBe(200);
  });

  it('admin endpoints manage the keys of their own tenant; a new key is shown once and works until revoked', async () => {
    const listed = await call('GET', '/v1/admin/api-keys', undefined, bearer(keys.adminA));
    const views = (listed.body as { api_keys: { id: string; tenant: string; key?: string }[] }).api_keys;
    expect(views.every((k) => k.tenant === TENANT_A && k.key === undefined)).toBe(true);
    expect(views.map((k) => k.id)).toContain(ids.engA);
    expect(views.map((k) => k.id)).not.toContain(ids.adminB);
    expect(JSON.stringify(listed.body)).not.toContain(keys.engA);

    expect((await call('POST', '/v1/admin/api-keys', { scopes: ['query'], tenant: TENANT_B }, bearer(keys.adminA))).status).toBe(403);
    expect((await call('POST', '/v1/admin/api-keys', { scopes: ['root'] }, bearer(keys.adminA))).status).toBe(400);
    expect((await call('POST', '/v1/admin/api-keys', { scopes: ['query'], unrestricted: true, groups: ['hr'] }, bearer(keys.adminA))).status).toBe(400);
    const created = await call('POST', '/v1/admin/api-keys', { scopes: ['query'], groups: ['hr'], name: 'hr reader' }, bearer(keys.adminA));
    expect(created.status).toBe(201);
    const hr = created.body as { id: string; key: string; tenant: string; groups: string[] };
    expect(hr).toMatchObject({ tenant: TENANT_A, groups: ['hr'], key: expect.stringMatching(/^rag_/) });
    expect((await retrieveIds(call, bearer(hr.key), 'hybrid')).ids).toEqual(['acme-hr', 'acme-public']);
    const again = await call('GET', '/v1/admin/api-keys', undefined, bearer(keys.adminA));
    expect(JSON.stringify(again.body)).not.toContain(hr.key);

    expect((await call('DELETE', `/v1/admin/api-keys/${hr.id}`, undefined, bearer(keys.adminB))).status).toBe(404);
    const revoked = await call('DELETE', `/v1/admin/api-keys/${hr.id}`, undefined, bearer(keys.adminA));
    expect(revoked.status).toBe(200);
    expect((revoked.body as { revoked_at: string | null }).revoked_at).toEqual(expect.any(String));
    expect((await call('POST', '/v1/retrieve', { query: 'x' }, bearer(hr.key))).status).toBe(401);
  });

  it('rate-limits per key with 429 and Retry-After; other keys are unaffected', async () => {
    const ok1 = await call('POST', '/v1/retrieve', { query: 'zephyrium' }, bearer(keys.slowA));
    const ok2 = await call('POST', '/v1/retrieve', { query: 'zephyrium' }, bearer(keys.slowA));
    expect([ok1.status, ok2.status]).toEqual([200, 200]);
    const limited = await call('POST', '/v1/retrieve', { query: 'zephyrium' }, bearer(keys.slowA));
    expect(limited.status).toBe(429);
    expect((limited.body as { error: { code: string } }).error.code).toBe('rate_limited');
    const retryAfter = Number(limited.headers.get('retry-after'));
    expect(Number.isInteger(retryAfter) && retryAfter >= 1).toBe(true);
    expect((await call('POST', '/v1/retrieve', { query: 'zephyrium' }, bearer(keys.engA))).status).toBe(200);
  });
});

describe('anonymous local mode and the configured default rate limit (embedded)', () => {
  let server: Server;
  beforeAll(async () => {
    server = await startServer(undefined, { RAG_RATE_LIMIT_RPS: '0.001', RAG_RATE_LIMIT_BURST: '3' });
  });
  afterAll(async () => {
    await server?.stop();
    if (server) removeDir(server.dataDir);
  });

  it('serves tenant default without keys until the first key is created, then requires keys and applies the default limit', async () => {
    expect((await api(server, 'GET', '/v1/documents')).status).toBe(200);
    // The anonymous operator cannot mint keys for another tenant through the API (the CLI can).
    expect((await api(server, 'POST', '/v1/admin/api-keys', { scopes: ['admin'], tenant: 'acme' })).status).toBe(403);
    const created = await api(server, 'POST', '/v1/admin/api-keys', { scopes: ['admin', 'query', 'ingest'], unrestricted: true });
    expect(created.status).toBe(201);
    const key = (created.body as { key: string; tenant: string }).key;
    expect((created.body as { tenant: string }).tenant).toBe('default');
    expect((await api(server, 'GET', '/v1/documents')).status).toBe(401);
    // The key has no limit of its own: the configured default (burst 3) applies.
    const statuses: number[] = [];
    for (let i = 0; i < 4; i++) statuses.push((await api(server, 'GET', '/v1/documents', undefined, bearer(key))).status);
    expect(statuses).toEqual([200, 200, 200, 429]);
  });
});
