// `rag db copy-sqlite`: an existing SQLite installation (registry, outbox, traces, feedback, source state, API keys)
// copied into PostgreSQL through the CLI command, then read back through the PostgreSQL adapters. Needs the server of
//   bash deploy/local/servers.sh start postgres        (RAG_TEST_DATABASE_URL overrides the address)
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Topic } from '@rag/contracts';
import { loadConfig } from '@rag/platform';
import { SqliteApiKeyStore } from '../../libs/adapters/src/sqlite-api-keys';
import { SqliteRegistry, SqliteSourceStateStore } from '../../libs/adapters/src/sqlite-registry';
import { PgApiKeyStore, PgRegistry, PgSourceStateStore } from '../../libs/adapters/src/postgres';
import { dbCommand } from '../../apps/cli/src/db';

const BASE = process.env.RAG_TEST_DATABASE_URL ?? 'postgres://rag@127.0.0.1:55432/rag';
const dbName = `rag_import_${randomBytes(4).toString('hex')}`;
const url = new URL(BASE);
url.pathname = `/${dbName}`;
const URL_ = url.toString();
const admin = new pg.Pool({ connectionString: BASE, max: 1 });
let dir: string;

beforeAll(async () => {
  await admin.query(`CREATE DATABASE ${dbName}`);
  dir = mkdtempSync(join(tmpdir(), 'rag-copy-sqlite-'));
});
afterAll(async () => {
  rmSync(dir, { recursive: true, force: true });
  await admin.query(`DROP DATABASE IF EXISTS ${dbName} WITH (FORCE)`);
  await admin.end();
});

const run = async (args: string[]) => {
  let printed = '';
  const cfg = loadConfig({ RAG_DATA_DIR: dir, RAG_DATABASE_URL: URL_ });
  const cmd = dbCommand(() => cfg, (s) => (printed += s)).exitOverride();
  await cmd.parseAsync(args, { from: 'user' });
  return JSON.parse(printed) as { from: string; copied: Record<string, number> };
};

describe('rag db copy-sqlite', () => {
  it('copies every table of a SQLite installation into PostgreSQL, which then carries on from it; refuses a second copy', async () => {
    const reg = new SqliteRegistry({ dir });
    await reg.accept({ document_id: 'upload:a', tenant: 't1', op: 'upsert', title: 'A', acl: ['g'], metadata: { k: 1 }, raw_hash: 'r' });
    await reg.markIndexed('upload:a', 1, 'a'.repeat(64), 3);
    await reg.accept({ document_id: 'upload:b', tenant: 't2', op: 'upsert' }, (r) => ({ topic: Topic.SourceEvents, key: r.document_id, value: { v: r.version } }));
    await reg.markFailed('upload:b', 1, 'parse error');
    await reg.recordQueryTrace('trace-1', 't1');
    expect(await reg.recordFeedback('trace-1', 't1', 'up', 'good')).toBe(true);
    const before = { a: await reg.get('upload:a'), b: await reg.get('upload:b'), list: await reg.list({ limit: 10, offset: 0 }) };
    await reg.close();
    const src = new SqliteSourceStateStore({ dir });
    await src.admit({ event_id: 'ev-1', document_id: 'confluence:s:1', kind: 'confluence', tenant: 'default', op: 'upsert', changed_at: 1000, scope: 'ENG', source_version: '7' });
    await src.complete('ev-1');
    await src.admit({ event_id: 'ev-2', document_id: 'confluence:s:1', kind: 'confluence', tenant: 'default', op: 'delete', changed_at: 2000 });
    await src.close();
    const keys = new SqliteApiKeyStore({ dir });
    await keys.insert({ id: 'k1', digest: 'd'.repeat(64), tenant: 't1', scopes: ['query'], rate_limit: { rps: 2, burst: 4 } });
    await keys.insert({ id: 'k2', digest: 'e'.repeat(64), tenant: 't1', scopes: ['admin'] });
    await keys.revoke('k2');
    await keys.close();

    const out = await run(['copy-sqlite', '--from', dir]);
    expect(out.copied).toEqual({ documents: 2, outbox: 1, query_traces: 1, feedback: 1, source_events: 2, source_documents: 1, api_keys: 2 });

    const pgReg = await PgRegistry.open({ url: URL_ });
    try {
      expect(await pgReg.get('upload:a')).toEqual(before.a);
      expect(await pgReg.get('upload:b')).toEqual(before.b);
      expect(await pgReg.list({ limit: 10, offset: 0 })).toEqual(before.list);
      // It carries on: the next version, the next outbox message after the copied one, feedback on the copied trace.
      expect((await pgReg.accept({ document_id: 'upload:a', tenant: 't1', op: 'upsert' }, (r) => ({ topic: Topic.SourceEvents, key: 'a', value: { v: r.version } }))).version).toBe(2);
      expect((await pgReg.claimOutbox(10, 60_000)).map((m) => [m.key, m.value])).toEqual([['upload:b', { v: 1 }], ['a', { v: 2 }]]);
      expect(await pgReg.recordFeedback('trace-1', 't1', 'down')).toBe(true);
      expect((await pgReg.list({ limit: 1, offset: 0 }))[0]!.document_id).toBe('upload:a');
    } finally {
      await pgReg.close();
    }
    const pgSrc = await PgSourceStateStore.open({ url: URL_ });
    try {
      expect(await pgSrc.get('confluence:s:1')).toMatchObject({ deleted: true, changed_at: 2000, source_version: '7', scope: 'ENG' });
      expect((await pgSrc.admit({ event_id: 'ev-1', document_id: 'confluence:s:1', kind: 'confluence', tenant: 'default', op: 'upsert', changed_at: 1000 })).outcome).toBe('duplicate');
      // ev-2 was pending (never completed) in SQLite: abandoning it restores the state from before it, as there.
      await pgSrc.abandon('ev-2');
      expect(await pgSrc.get('confluence:s:1')).toMatchObject({ deleted: false, changed_at: 1000, source_version: '7' });
    } finally {
      await pgSrc.close();
    }
    const pgKeys = await PgApiKeyStore.open({ url: URL_ });
    try {
      expect(await pgKeys.findByDigest('d'.repeat(64))).toMatchObject({ id: 'k1', tenant: 't1', rate_limit: { rps: 2, burst: 4 } });
      expect(await pgKeys.findByDigest('e'.repeat(64))).toBeNull();
      expect(await pgKeys.keysEverIssued()).toBe(true);
      expect(await pgKeys.countActive()).toBe(1);
    } finally {
      await pgKeys.close();
    }

    await expect(run(['copy-sqlite', '--from', dir])).rejects.toThrow(/already holds/);
    await expect(run(['copy-sqlite', '--from', join(dir, 'missing')])).rejects.toThrow(/nothing to copy/);
  });
});
