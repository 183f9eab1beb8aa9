import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { exportJWK, generateKeyPair, SignJWT, type JWTPayload } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SqliteApiKeyStore } from '@rag/adapters';
import { loadConfig, type AppConfig, type RawConfig } from '@rag/platform';
import { Authenticator, digestApiKey, issueApiKey, scopeOf, type Principal } from './auth';

const SECRET = 'an-hs256-secret-of-at-least-32-characters!';
const dirs: string[] = [];

/** `patch` is applied after validation (a config that loadConfig itself would refuse, to test defence in depth). */
function setup(env: Record<string, string> = {}, patch: Partial<RawConfig> = {}): { auth: Authenticator; store: SqliteApiKeyStore; config: AppConfig } {
  const dir = mkdtempSync(join(tmpdir(), 'rag-auth-'));
  dirs.push(dir);
  const config = { ...loadConfig({ RAG_DATA_DIR: dir, ...env }), ...patch };
  const store = new SqliteApiKeyStore({ dir });
  return { auth: new Authenticator(config, store), store, config };
}

/** What curl sends to the default address (Host with the bound port, no Origin). */
const local = { host: '127.0.0.1:8080' };
const bearer = (key: string, jwt?: string, header = 'x-jwt-assertion') => ({ authorization: `Bearer ${key}`, ...(jwt ? { [header]: jwt } : {}) });
const hs = (claims: JWTPayload, opts: { exp?: string | number; secret?: string; alg?: string } = {}) =>
  new SignJWT(claims)
    .setProtectedHeader({ alg: opts.alg ?? 'HS256' })
    .setIssuedAt()
    .setExpirationTime(opts.exp ?? '5m')
    .sign(new TextEncoder().encode(opts.secret ?? SECRET));

async function rejects(p: Promise<unknown>, code: string, message?: RegExp): Promise<void> {
  await expect(p).rejects.toMatchObject({ code, ...(message ? { message: expect.stringMatching(message) } : {}) });
}

afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

describe('Authenticator: API keys', () => {
  it('serves the anonymous tenant only on loopback with RAG_AUTH=auto while no key exists anywhere', async () => {
    const { auth, store } = setup();
    const anon = await auth.authenticate(local);
    expect(anon).toMatchObject({ tenant: 'default', kind: 'anonymous', keyId: null, scopes: ['ingest', 'query', 'admin'] });
    expect(scopeOf(anon)).toEqual({ tenant: 'default' });
    // The first stored key closes anonymous access at once.
    const { key } = await issueApiKey(store, { tenant: 'acme', scopes: ['admin'] });
    await rejects(auth.authenticate(local), 'unauthorized', /missing/);
    expect((await auth.authenticate(bearer(key))).tenant).toBe('acme');
    await rejects(auth.authenticate(bearer('rag_nope')), 'unauthorized', /invalid API key/);
    await rejects(auth.authenticate({ authorization: `Basic ${key}` }), 'unauthorized', /Bearer/);

    await rejects(setup({ RAG_AUTH: 'required' }).auth.authenticate({}), 'unauthorized');
    await rejects(setup({ RAG_AUTH: 'required' }, { RAG_HOST: '0.0.0.0' }).auth.authenticate({}), 'unauthorized');
    await rejects(setup({}, { RAG_HOST: '10.0.0.5' }).auth.authenticate({}), 'unauthorized');
  });

  it('RAG_API_KEYS entries: every scope, unrestricted in their tenant (the behaviour before the key store)', async () => {
    const { auth } = setup({ RAG_API_KEYS: 'k-one, k-two=acme' });
    expect(await auth.authenticate(bearer('k-one'))).toMatchObject({ tenant: 'default', kind: 'env', scopes: ['ingest', 'query', 'admin'] });
    const two = await auth.authenticate(bearer('k-two'));
    expect(two.tenant).toBe('acme');
    expect(two.principals).toBeUndefined();
    expect(two.keyId).toMatch(/^env:[0-9a-f]{12}$/);
    await rejects(auth.authenticate({}), 'unauthorized');
    await rejects(auth.authenticate(bearer('k-three')), 'unauthorized');
  });

  it('stored keys: groups become group:<name> principals; no groups = public documents only; unrestricted = whole tenant', async () => {
    const { auth, store } = setup({ RAG_AUTH: 'required' });
    const eng = await issueApiKey(store, { tenant: 'acme', scopes: ['query'], groups: ['eng', 'ops'], rate_limit: { rps: 1, burst: 2 } });
    const none = await issueApiKey(store, { tenant: 'acme', scopes: ['query'] });
    const all = await issueApiKey(store, { tenant: 'acme', scopes: ['query', 'ingest'], unrestricted: true });
    const p: Principal = await auth.authenticate(bearer(eng.key));
    expect(p).toMatchObject({ tenant: 'acme', kind: 'stored', keyId: eng.record.id, scopes: ['query'], principals: ['group:eng', 'group:ops'], rateLimit: { rps: 1, burst: 2 } });
    expect(scopeOf(p)).toEqual({ tenant: 'acme', principals: ['group:eng', 'group:ops'] });
    expect(scopeOf(await auth.authenticate(bearer(none.key)))).toEqual({ tenant: 'acme', principals: [] });
    expect(scopeOf(await auth.authenticate(bearer(all.key)))).toEqual({ tenant: 'acme' });
    expect(eng.key).toMatch(/^rag_[0-9a-f]{16}_[A-Za-z0-9_-]{43}$/);
    // Only the digest is on disk; a revoked key stops working.
    const file = Buffer.concat([readFileSync(store.file), ...(existsSync(`${store.file}-wal`) ? [readFileSync(`${store.file}-wal`)] : [])]);
    expect(file.includes(Buffer.from(eng.key))).toBe(false);
    expect(file.includes(Buffer.from(digestApiKey(eng.key)))).toBe(true);
    await store.revoke(eng.record.id);
    await rejects(auth.authenticate(bearer(eng.key)), 'unauthorized');
  });
});

describe('Authenticator: the anonymous local mode serves only what no web page can send through the browser', () => {
  /** A POST's headers and facts; `type` null = no content type at all. */
  const post = (headers: Record<string, string>, type: string | null = 'application/json') => ({
    method: 'POST' as const,
    headers: { ...local, ...(type !== null ? { 'content-type': type } : {}), ...headers },
  });

  it('Host must name this loopback server with the bound port (DNS rebinding)', async () => {
    const { auth } = setup();
    for (const host of ['127.0.0.1:8080', 'localhost:8080', 'LocalHost:8080', '[::1]:8080', '127.0.0.2:8080']) {
      expect((await auth.authenticate({ host })).kind, host).toBe('anonymous');
    }
    for (const host of ['evil.example:8080', 'evil.example', 'localhost:9999', '127.0.0.1', '127.0.0.1.nip.io:8080', 'localhost.evil.example:8080', 'me@127.0.0.1:8080', '127.0.0.1:8080/x', '10.0.0.5:8080', '']) {
      await rejects(auth.authenticate({ host }), 'forbidden', /DNS rebinding/);
    }
    await rejects(auth.authenticate({}), 'forbidden', /Host/);
    // The port is the one the connection arrived on (RAG_PORT=0 binds an ephemeral one); port 80 may be left out.
    expect((await auth.authenticate({ host: 'localhost:43210' }, { localPort: 43210 })).kind).toBe('anonymous');
    await rejects(auth.authenticate(local, { localPort: 43210 }), 'forbidden', /43210/);
    expect((await auth.authenticate({ host: 'localhost' }, { localPort: 80 })).kind).toBe('anonymous');
  });

  it('an Origin must be this server’s own (the playground at / passes); cross-origin requests are refused', async () => {
    const { auth } = setup();
    const same = post({ origin: 'http://127.0.0.1:8080' });
    expect((await auth.authenticate(same.headers, same)).kind).toBe('anonymous');
    const loc = post({ host: 'localhost:8080', origin: 'http://localhost:8080' });
    expect((await auth.authenticate(loc.headers, loc)).kind).toBe('anonymous');
    for (const origin of ['https://evil.example', 'http://evil.example:8080', 'null', 'http://localhost:8080', 'https://127.0.0.1:8080', 'http://127.0.0.1:9999', 'garbage']) {
      const r = post({ origin });
      await rejects(auth.authenticate(r.headers, r), 'forbidden', /cross-origin/);
    }
  });

  it('a POST with a form, multipart, text/plain or no content type (CSRF) needs a key; JSON, GET and DELETE do not', async () => {
    const { auth, store } = setup({ RAG_API_KEYS: '' });
    for (const type of ['application/x-www-form-urlencoded', 'multipart/form-data; boundary=x', 'Text/Plain;charset=UTF-8', '']) {
      const r = post({}, type || null);
      await rejects(auth.authenticate(r.headers, r), 'forbidden', /CSRF/);
      // Also from the server's own origin: the rule is about the content type, not only about who says it sent it.
      const o = post({ origin: 'http://127.0.0.1:8080' }, type || null);
      await rejects(auth.authenticate(o.headers, o), 'forbidden', /CSRF/);
    }
    const json = post({}, 'application/json; charset=utf-8');
    expect((await auth.authenticate(json.headers, json)).kind).toBe('anonymous');
    expect((await auth.authenticate(local, { method: 'GET' })).kind).toBe('anonymous');
    expect((await auth.authenticate(local, { method: 'DELETE' })).kind).toBe('anonymous');
    // With a key none of this applies: a key is never sent by a browser on its own.
    const { key } = await issueApiKey(store, { tenant: 'default', scopes: ['ingest'] });
    const form = { method: 'POST', headers: { ...bearer(key), host: 'evil.example', origin: 'https://evil.example', 'content-type': 'multipart/form-data; boundary=x' } };
    expect((await auth.authenticate(form.headers, form)).kind).toBe('stored');
  });

  it('once a key has existed, revoking the last one leaves every request 401 (admin included), also after a restart', async () => {
    const { auth, store, config } = setup();
    expect((await auth.authenticate(local)).kind).toBe('anonymous');
    const { record, key } = await issueApiKey(store, { tenant: 'default', scopes: ['admin', 'ingest', 'query'], unrestricted: true });
    expect((await auth.authenticate(bearer(key))).scopes).toContain('admin');
    await store.revoke(record.id);
    expect(await store.countActive()).toBe(0);
    await rejects(auth.authenticate(local), 'unauthorized', /revoked.*rag -- keys create/);
    await rejects(auth.authenticate(bearer(key)), 'unauthorized', /invalid API key.*rag -- keys create/);
    // A new process over the same store (a restart) does not fall back to anonymous either.
    await rejects(new Authenticator(config, store).authenticate(local), 'unauthorized', /RAG_API_KEYS/);
    expect(await new Authenticator(config, store).anonymousAllowed()).toBe(false);
    // The operator's way back: a key from the CLI (the store directly); it works at once, anonymous access stays closed.
    const fresh = await issueApiKey(store, { tenant: 'default', scopes: ['admin'] });
    expect((await auth.authenticate(bearer(fresh.key))).keyId).toBe(fresh.record.id);
    await rejects(auth.authenticate(local), 'unauthorized', /^missing `Authorization: Bearer <api key>`$/);
  });
});

describe('Authenticator: forwarded JWT (HS256)', () => {
  it('replaces the key’s groups with the verified user and groups, and checks tenant, issuer, audience and expiry', async () => {
    const { auth, store } = setup({ RAG_AUTH: 'required', RAG_JWT_SECRET: SECRET, RAG_JWT_ISSUER: 'https://idp.example', RAG_JWT_AUDIENCE: 'rag' });
    const gw = await issueApiKey(store, { tenant: 'acme', scopes: ['query'], unrestricted: true });
    const std = { iss: 'https://idp.example', aud: 'rag', tenant: 'acme' };
    const p = await auth.authenticate(bearer(gw.key, await hs({ ...std, sub: 'alice', groups: ['hr', 'eng'] })));
    expect(p).toMatchObject({ tenant: 'acme', subject: 'alice', principals: ['user:alice', 'group:hr', 'group:eng'] });
    // Even an unrestricted key is restricted to the forwarded user's identity.
    expect(scopeOf(await auth.authenticate(bearer(gw.key, await hs({ ...std, sub: 'bob' }))))).toEqual({ tenant: 'acme', principals: ['user:bob'] });
    // A single group as a string; "Bearer " before the token is accepted.
    expect((await auth.authenticate(bearer(gw.key, `Bearer ${await hs({ ...std, sub: 'c', groups: 'sales' })}`))).principals).toEqual(['user:c', 'group:sales']);

    await rejects(auth.authenticate(bearer(gw.key, await hs({ ...std, tenant: 'other', sub: 'eve' }))), 'forbidden', /tenant/);
    await rejects(auth.authenticate(bearer(gw.key, await hs({ iss: std.iss, aud: 'rag', sub: 'eve' }))), 'unauthorized', /tenant.*missing/);
    await rejects(auth.authenticate(bearer(gw.key, await hs({ ...std, iss: 'https://evil.example', sub: 'eve' }))), 'unauthorized', /iss/);
    await rejects(auth.authenticate(bearer(gw.key, await hs({ ...std, aud: 'other', sub: 'eve' }))), 'unauthorized', /aud/);
    await rejects(auth.authenticate(bearer(gw.key, await hs({ ...std, sub: 'eve' }, { exp: Math.floor(Date.now() / 1000) - 3600 }))), 'unauthorized', /expired/);
    await rejects(auth.authenticate(bearer(gw.key, await hs({ ...std, sub: 'eve' }, { secret: 'another-secret-of-at-least-32-characters' }))), 'unauthorized', /signature/);
    await rejects(auth.authenticate(bearer(gw.key, await hs({ ...std, sub: 'eve' }, { alg: 'HS512' }))), 'unauthorized', /algorithm/);
    const unsigned = `${Buffer.from('{"alg":"none"}').toString('base64url')}.${Buffer.from(JSON.stringify({ ...std, sub: 'eve', groups: ['hr'] })).toString('base64url')}.`;
    await rejects(auth.authenticate(bearer(gw.key, unsigned)), 'unauthorized');
    await rejects(auth.authenticate(bearer(gw.key, await hs({ ...std, sub: 'eve', groups: [1, 2] }))), 'unauthorized', /groups/);
    await rejects(auth.authenticate(bearer(gw.key, 'not-a-jwt')), 'unauthorized', /invalid JWT/);
    // A JWT never authenticates on its own.
    await rejects(auth.authenticate({ 'x-jwt-assertion': await hs({ ...std, sub: 'alice' }) }), 'unauthorized');
  });

  it('reads groups from a configured claim (namespaced, or a dotted path) and can skip the tenant check', async () => {
    const ns = setup({ RAG_AUTH: 'required', RAG_JWT_SECRET: SECRET, RAG_JWT_GROUPS_CLAIM: 'https://example.com/groups', RAG_JWT_TENANT_CLAIM: '', RAG_JWT_HEADER: 'X-User-Token' });
    const k = await issueApiKey(ns.store, { tenant: 'acme', scopes: ['query'] });
    const p = await ns.auth.authenticate(bearer(k.key, await hs({ sub: 'u', 'https://example.com/groups': ['a'] }), 'x-user-token'));
    expect(p.principals).toEqual(['user:u', 'group:a']);
    const kc = setup({ RAG_AUTH: 'required', RAG_JWT_SECRET: SECRET, RAG_JWT_GROUPS_CLAIM: 'realm_access.roles', RAG_JWT_TENANT_CLAIM: 'org.id' });
    const k2 = await issueApiKey(kc.store, { tenant: 'acme', scopes: ['query'] });
    const p2 = await kc.auth.authenticate(bearer(k2.key, await hs({ sub: 'u', org: { id: 'acme' }, realm_access: { roles: ['r1'] } })));
    expect(p2.principals).toEqual(['user:u', 'group:r1']);
    await rejects(kc.auth.authenticate(bearer(k2.key, await hs({ sub: 'u', org: { id: 'beta' }, realm_access: { roles: ['r1'] } }))), 'forbidden');
  });

  it('refuses a forwarded JWT when no verifier is configured instead of ignoring it', async () => {
    const { auth, store } = setup({ RAG_AUTH: 'required' });
    const k = await issueApiKey(store, { tenant: 'acme', scopes: ['query'], unrestricted: true });
    await rejects(auth.authenticate(bearer(k.key, await hs({ sub: 'alice', tenant: 'acme' }))), 'unauthorized', /RAG_JWT_SECRET/);
  });
});

describe('Authenticator: forwarded JWT lifetime', () => {
  const now = () => Math.floor(Date.now() / 1000);
  const raw = (claims: JWTPayload) => new SignJWT(claims).setProtectedHeader({ alg: 'HS256' }).sign(new TextEncoder().encode(SECRET));

  it('requires exp, and refuses a lifetime over RAG_JWT_MAX_LIFETIME_S (exp - iat, or exp - now without iat)', async () => {
    const { auth, store, config } = setup({ RAG_AUTH: 'required', RAG_JWT_SECRET: SECRET, RAG_JWT_TENANT_CLAIM: '', RAG_JWT_MAX_LIFETIME_S: '3600' });
    expect(config.RAG_JWT_MAX_LIFETIME_S).toBe(3600);
    const k = await issueApiKey(store, { tenant: 'acme', scopes: ['query'] });
    await rejects(auth.authenticate(bearer(k.key, await raw({ sub: 'alice', iat: now() }))), 'unauthorized', /claim exp missing/);
    await rejects(auth.authenticate(bearer(k.key, await raw({ sub: 'alice' }))), 'unauthorized', /exp/);
    await rejects(auth.authenticate(bearer(k.key, await raw({ sub: 'alice', iat: now(), exp: now() + 7200 }))), 'unauthorized', /lifetime .*exp - iat.*RAG_JWT_MAX_LIFETIME_S \(3600 s\)/);
    await rejects(auth.authenticate(bearer(k.key, await raw({ sub: 'alice', exp: now() + 7200 }))), 'unauthorized', /exp - now/);
    // An iat in the future does not stretch the allowance.
    await rejects(auth.authenticate(bearer(k.key, await raw({ sub: 'alice', iat: now() + 5000, exp: now() + 7200 }))), 'unauthorized', /lifetime/);
    // An old token that is still valid counts from its iat.
    await rejects(auth.authenticate(bearer(k.key, await raw({ sub: 'alice', iat: now() - 7000, exp: now() + 600 }))), 'unauthorized', /lifetime/);
    expect((await auth.authenticate(bearer(k.key, await raw({ sub: 'alice', iat: now(), exp: now() + 3500 })))).subject).toBe('alice');
    expect((await auth.authenticate(bearer(k.key, await raw({ sub: 'bob', exp: now() + 600 })))).subject).toBe('bob');
    // The default is one day.
    const d = setup({ RAG_AUTH: 'required', RAG_JWT_SECRET: SECRET, RAG_JWT_TENANT_CLAIM: '' });
    expect(d.config.RAG_JWT_MAX_LIFETIME_S).toBe(86_400);
    const k2 = await issueApiKey(d.store, { tenant: 'acme', scopes: ['query'] });
    expect((await d.auth.authenticate(bearer(k2.key, await raw({ sub: 'c', iat: now(), exp: now() + 86_000 })))).subject).toBe('c');
    await rejects(d.auth.authenticate(bearer(k2.key, await raw({ sub: 'c', iat: now(), exp: now() + 90_000 }))), 'unauthorized', /lifetime/);
  });
});

describe('Authenticator: forwarded JWT (JWKS)', () => {
  let server: Server;
  let url: string;
  let sign: (claims: JWTPayload, kid?: string) => Promise<string>;
  beforeAll(async () => {
    const { publicKey, privateKey } = await generateKeyPair('RS256');
    const jwk = { ...(await exportJWK(publicKey)), kid: 'k1', alg: 'RS256', use: 'sig' };
    server = createServer((_req, res) => {
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ keys: [jwk] }));
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/.well-known/jwks.json`;
    sign = (claims, kid = 'k1') => new SignJWT(claims).setProtectedHeader({ alg: 'RS256', kid }).setExpirationTime('5m').sign(privateKey);
  });
  afterAll(() => new Promise<void>((r) => server.close(() => r())));

  it('verifies RS256 tokens against the JWKS endpoint and refuses unknown keys and HMAC tokens', async () => {
    const { auth, store } = setup({ RAG_AUTH: 'required', RAG_JWT_JWKS_URL: url });
    const k = await issueApiKey(store, { tenant: 'acme', scopes: ['query'] });
    expect((await auth.authenticate(bearer(k.key, await sign({ sub: 'alice', tenant: 'acme', groups: ['eng'] })))).principals).toEqual(['user:alice', 'group:eng']);
    await rejects(auth.authenticate(bearer(k.key, await sign({ sub: 'alice', tenant: 'acme' }, 'other-kid'))), 'unauthorized', /JWKS|key/);
    await rejects(auth.authenticate(bearer(k.key, await hs({ sub: 'alice', tenant: 'acme' }))), 'unauthorized', /algorithm/);
  });
});

describe('config for access', () => {
  it('fails fast on unsafe or contradictory settings', () => {
    const problems = (env: Record<string, string>) => {
      try {
        loadConfig(env);
        return '';
      } catch (e) {
        return String(e);
      }
    };
    expect(problems({ RAG_HOST: '0.0.0.0' })).toMatch(/not loopback/);
    expect(problems({ RAG_HOST: '127.evil.example' })).toMatch(/not loopback/);
    expect(problems({ RAG_HOST: '0.0.0.0', RAG_AUTH: 'required' })).toBe('');
    expect(problems({ RAG_HOST: '0.0.0.0', RAG_API_KEYS: 'k=acme' })).toBe('');
    expect(problems({ RAG_API_KEYS: 'k=bad tenant!' })).toMatch(/RAG_API_KEYS/);
    expect(problems({ RAG_JWT_SECRET: 'short' })).toMatch(/32 characters/);
    expect(problems({ RAG_JWT_SECRET: SECRET, RAG_JWT_JWKS_URL: 'https://idp.example/jwks' })).toMatch(/not both/);
    expect(problems({ RAG_JWT_JWKS_URL: 'not a url' })).toMatch(/RAG_JWT_JWKS_URL/);
    expect(problems({ RAG_JWT_HEADER: 'Authorization' })).toMatch(/carries the API key/);
    expect(problems({ RAG_JWT_MAX_LIFETIME_S: '0' })).toMatch(/RAG_JWT_MAX_LIFETIME_S/);
    expect(problems({ RAG_JWT_MAX_LIFETIME_S: 'forever' })).toMatch(/RAG_JWT_MAX_LIFETIME_S/);
  });
});
