import { expect, it } from 'vitest';
import type { ApiKeyStore } from '@rag/ports';

/** The ApiKeyStore contract; every `open` call returns another handle on the same (initially empty) store. */
export interface ApiKeyStoreHarness {
  open(): Promise<ApiKeyStore>;
}

const digest = (c: string) => c.repeat(64).slice(0, 64);

export function apiKeyStoreContract(h: ApiKeyStoreHarness): void {
  it('stores digests only, finds active keys by digest, lists per tenant and revokes within a tenant', async () => {
    const store = await h.open();
    const a = await store.insert({ id: 'k1', digest: digest('a'), tenant: 'acme', scopes: ['query', 'query', 'ingest'], groups: ['eng'], name: 'bot' });
    expect(a).toMatchObject({ id: 'k1', tenant: 'acme', scopes: ['query', 'ingest'], groups: ['eng'], unrestricted: false, rate_limit: null, revoked_at: null, last_used_at: null, name: 'bot' });
    expect(Date.parse(a.created_at)).not.toBeNaN();
    await store.insert({ id: 'k2', digest: digest('b'), tenant: 'beta', scopes: ['admin'], unrestricted: true, rate_limit: { rps: 2.5, burst: 5 } });
    expect(await store.findByDigest(digest('b'))).toMatchObject({ id: 'k2', unrestricted: true, rate_limit: { rps: 2.5, burst: 5 } });
    expect(await store.findByDigest(digest('c'))).toBeNull();
    expect((await store.list({ tenant: 'acme' })).map((k) => k.id)).toEqual(['k1']);
    expect((await store.list()).map((k) => k.id)).toEqual(['k1', 'k2']);
    expect(await store.countActive()).toBe(2);
    expect(await store.revoke('k1', 'beta')).toBeNull();
    expect(await store.revoke('nope')).toBeNull();
    expect((await store.revoke('k1', 'acme'))?.revoked_at).toEqual(expect.any(String));
    expect((await store.revoke('k1', 'acme'))?.revoked_at).toEqual(expect.any(String));
    expect(await store.findByDigest(digest('a'))).toBeNull();
    expect(await store.countActive()).toBe(1);
    expect((await store.list({ tenant: 'acme' })).length).toBe(0);
    expect((await store.list({ tenant: 'acme', includeRevoked: true })).map((k) => k.id)).toEqual(['k1']);
    await store.touch('k2', '2026-01-01T00:00:00.000Z');
    expect((await store.get('k2'))?.last_used_at).toBe('2026-01-01T00:00:00.000Z');
  });

  it('refuses a duplicate digest or id and anything but a sha256 hex digest', async () => {
    const store = await h.open();
    await store.insert({ id: 'k1', digest: digest('a'), tenant: 't', scopes: ['query'] });
    await expect(store.insert({ id: 'k2', digest: digest('a'), tenant: 't', scopes: ['query'] })).rejects.toThrow(/UNIQUE/);
    await expect(store.insert({ id: 'k1', digest: digest('b'), tenant: 't', scopes: ['query'] })).rejects.toThrow(/UNIQUE/);
    await expect(store.insert({ id: 'k3', digest: 'secret-key-in-clear', tenant: 't', scopes: ['query'] })).rejects.toThrow(/sha256/);
    expect(await store.countActive()).toBe(1);
  });

  it('is shared between handles: a second one (another replica, the CLI) sees keys added and revoked by the first', async () => {
    const [store, other] = [await h.open(), await h.open()];
    await store.insert({ id: 'k1', digest: digest('d'), tenant: 't', scopes: ['query'] });
    expect((await other.findByDigest(digest('d')))?.id).toBe('k1');
    await other.revoke('k1');
    expect(await store.findByDigest(digest('d'))).toBeNull();
  });

  it('remembers that a key has existed: revoking every key does not clear the marker', async () => {
    const store = await h.open();
    expect(await store.keysEverIssued()).toBe(false);
    await store.insert({ id: 'k1', digest: digest('e'), tenant: 't', scopes: ['admin'] });
    expect(await store.keysEverIssued()).toBe(true);
    await store.revoke('k1');
    expect(await store.countActive()).toBe(0);
    expect(await store.keysEverIssued()).toBe(true);
    await store.close();
    expect(await (await h.open()).keysEverIssued()).toBe(true);
  });
}
