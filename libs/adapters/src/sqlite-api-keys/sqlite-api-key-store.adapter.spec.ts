import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { SqliteApiKeyStore } from './sqlite-api-key-store.adapter';

const digest = (c: string) => c.repeat(64).slice(0, 64);

describe('SqliteApiKeyStore', () => {
  let dir: string;
  let store: SqliteApiKeyStore;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'rag-keys-'));
    store = new SqliteApiKeyStore({ dir });
  });
  afterEach(async () => {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('stores digests only, finds active keys by digest, lists per tenant and revokes within a tenant', async () => {
    const a = await store.insert({ id: 'k1', digest: digest('a'), tenant: 'acme', scopes: ['query', 'query', 'ingest'], groups: ['eng'], name: 'bot' });
    expect(a).toMatchObject({ id: 'k1', tenant: 'acme', scopes: ['query', 'ingest'], groups: ['eng'], unrestricted: false, rate_limit: null, revoked_at: null, name: 'bot' });
    await store.insert({ id: 'k2', digest: digest('b'), tenant: 'beta', scopes: ['admin'], unrestricted: true, rate_limit: { rps: 2.5, burst: 5 } });
    expect(await store.findByDigest(digest('b'))).toMatchObject({ id: 'k2', unrestricted: true, rate_limit: { rps: 2.5, burst: 5 } });
    expect(await store.findByDigest(digest('c'))).toBeNull();
    expect((await store.list({ tenant: 'acme' })).map((k) => k.id)).toEqual(['k1']);
    expect(await store.countActive()).toBe(2);
    // Another tenant cannot revoke it; its own tenant can, once (idempotent), and it stops authenticating.
    expect(await store.revoke('k1', 'beta')).toBeNull();
    expect((await store.revoke('k1', 'acme'))?.revoked_at).toEqual(expect.any(String));
    const again = await store.revoke('k1', 'acme');
    expect(again?.revoked_at).toEqual(expect.any(String));
    expect(await store.findByDigest(digest('a'))).toBeNull();
    expect(await store.countActive()).toBe(1);
    expect((await store.list({ tenant: 'acme' })).length).toBe(0);
    expect((await store.list({ tenant: 'acme', includeRevoked: true })).map((k) => k.id)).toEqual(['k1']);
    await store.touch('k2', '2026-01-01T00:00:00.000Z');
    expect((await store.get('k2'))?.last_used_at).toBe('2026-01-01T00:00:00.000Z');
  });

  it('refuses a duplicate digest or id and anything but a sha256 hex digest', async () => {
    await store.insert({ id: 'k1', digest: digest('a'), tenant: 't', scopes: ['query'] });
    await expect(store.insert({ id: 'k2', digest: digest('a'), tenant: 't', scopes: ['query'] })).rejects.toThrow(/UNIQUE/);
    await expect(store.insert({ id: 'k1', digest: digest('b'), tenant: 't', scopes: ['query'] })).rejects.toThrow(/UNIQUE/);
    await expect(store.insert({ id: 'k3', digest: 'secret-key-in-clear', tenant: 't', scopes: ['query'] })).rejects.toThrow(/sha256/);
  });

  it('is shared between processes through the file: a second handle sees keys added by the first', async () => {
    const other = new SqliteApiKeyStore({ dir });
    try {
      await store.insert({ id: 'k1', digest: digest('d'), tenant: 't', scopes: ['query'] });
      expect((await other.findByDigest(digest('d')))?.id).toBe('k1');
      await other.revoke('k1');
      expect(await store.findByDigest(digest('d'))).toBeNull();
    } finally {
      await other.close();
    }
  });
});
