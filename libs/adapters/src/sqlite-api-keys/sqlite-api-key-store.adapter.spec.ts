import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { API_KEYS_DB_FILE, SqliteApiKeyStore } from './sqlite-api-key-store.adapter';

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

  it('remembers that a key has existed: revoking every key (or deleting the rows) does not clear the marker', async () => {
    expect(await store.keysEverIssued()).toBe(false);
    await store.insert({ id: 'k1', digest: digest('e'), tenant: 't', scopes: ['admin'] });
    expect(await store.keysEverIssued()).toBe(true);
    await store.revoke('k1');
    expect(await store.countActive()).toBe(0);
    expect(await store.keysEverIssued()).toBe(true);
    // Another process (the CLI) and a reopened store see it; even a row removed by hand leaves it set.
    const raw = new Database(join(dir, API_KEYS_DB_FILE));
    raw.exec('DELETE FROM api_keys');
    raw.close();
    const other = new SqliteApiKeyStore({ dir });
    try {
      expect(await other.keysEverIssued()).toBe(true);
    } finally {
      await other.close();
    }
  });

  it('a store written before the marker existed: any key row, revoked or not, counts as a key having existed', async () => {
    await store.close();
    const old = mkdtempSync(join(tmpdir(), 'rag-keys-old-'));
    const raw = new Database(join(old, API_KEYS_DB_FILE));
    raw.exec(`CREATE TABLE api_keys (id TEXT PRIMARY KEY, digest TEXT NOT NULL UNIQUE, name TEXT, tenant TEXT NOT NULL, scopes TEXT NOT NULL,
      groups TEXT NOT NULL DEFAULT '[]', unrestricted INTEGER NOT NULL DEFAULT 0, rate_rps REAL, rate_burst INTEGER, created_at TEXT NOT NULL,
      last_used_at TEXT, revoked_at TEXT);
      INSERT INTO api_keys (id, digest, tenant, scopes, created_at, revoked_at) VALUES ('k1', '${digest('f')}', 't', '["admin"]', '2025-01-01T00:00:00.000Z', '2025-02-01T00:00:00.000Z');`);
    raw.close();
    store = new SqliteApiKeyStore({ dir: old });
    try {
      expect(await store.countActive()).toBe(0);
      expect(await store.keysEverIssued()).toBe(true);
      const emptyDir = mkdtempSync(join(tmpdir(), 'rag-keys-empty-'));
      const empty = new SqliteApiKeyStore({ dir: emptyDir });
      expect(await empty.keysEverIssued()).toBe(false);
      await empty.close();
      rmSync(emptyDir, { recursive: true, force: true });
    } finally {
      rmSync(old, { recursive: true, force: true });
    }
  });
});
