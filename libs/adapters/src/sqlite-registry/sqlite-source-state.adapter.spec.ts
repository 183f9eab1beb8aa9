import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { SourceChange } from '@rag/ports';
import { SqliteSourceStateStore } from './sqlite-source-state.adapter';

const dirs: string[] = [];
const open = (dir = mkdtempSync(join(tmpdir(), 'src-state-'))) => {
  dirs.push(dir);
  return { dir, store: new SqliteSourceStateStore({ dir }) };
};
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});
const change = (over: Partial<SourceChange>): SourceChange => ({
  event_id: 'e1',
  document_id: 'confluence:acme:1',
  kind: 'confluence',
  tenant: 'default',
  op: 'upsert',
  changed_at: 1000,
  scope: 'ENG',
  source_version: '1',
  ...over,
});

describe('SqliteSourceStateStore', () => {
  it('dedupes event ids durably, across a reopen', async () => {
    const { dir, store } = open();
    expect(await store.admit(change({}))).toEqual({ outcome: 'admitted' });
    await store.complete('e1');
    expect(await store.admit(change({}))).toEqual({ outcome: 'duplicate' });
    await store.close();
    const again = new SqliteSourceStateStore({ dir });
    expect(await again.admit(change({}))).toEqual({ outcome: 'duplicate' });
    await again.close();
  });

  it('re-admits a pending event (its admission never finished) and undoes an abandoned one', async () => {
    const { store } = open();
    await store.admit(change({ event_id: 'a', changed_at: 1000 }));
    await store.complete('a');
    expect(await store.admit(change({ event_id: 'b', op: 'delete', changed_at: 2000 }))).toEqual({ outcome: 'admitted' });
    expect(await store.admit(change({ event_id: 'b', op: 'delete', changed_at: 2000 }))).toEqual({ outcome: 'admitted' });
    await store.abandon('b');
    expect(await store.get('confluence:acme:1')).toMatchObject({ deleted: false, changed_at: 1000, source_version: '1' });
    expect(await store.admit(change({ event_id: 'b', op: 'delete', changed_at: 2000 }))).toEqual({ outcome: 'admitted' });
    await store.close();
  });

  it('keeps a tombstone: a late update after a delete is stale, a later restore is admitted', async () => {
    const { store } = open();
    await store.admit(change({ event_id: 'u1', changed_at: 1000 }));
    await store.admit(change({ event_id: 'd', op: 'delete', changed_at: 3000 }));
    expect((await store.admit(change({ event_id: 'u2', changed_at: 2000, source_version: '2' }))).outcome).toBe('stale');
    expect((await store.admit(change({ event_id: 'u2', changed_at: 2000, source_version: '2' }))).outcome).toBe('duplicate');
    expect(await store.listLive('confluence')).toEqual([]);
    expect((await store.admit(change({ event_id: 'r', changed_at: 4000, source_version: '3' }))).outcome).toBe('admitted');
    expect((await store.listLive('confluence', { scope: 'ENG', tenant: 'default' })).map((d) => d.document_id)).toEqual(['confluence:acme:1']);
    expect((await store.listLive('confluence', { scope: 'OPS' })).length).toBe(0);
    await store.close();
  });
});
