import { expect, it } from 'vitest';
import type { SourceChange, SourceStateStore } from '@rag/ports';

/** The SourceStateStore (source sync state + webhook de-duplication) contract; `open` reopens the same store. */
export interface SourceStateHarness {
  open(): Promise<SourceStateStore>;
}

const change = (over: Partial<SourceChange>): SourceChange => ({
  event_id: 'e1', document_id: 'confluence:acme:1', kind: 'confluence', tenant: 'default', op: 'upsert', changed_at: 1000, scope: 'ENG', source_version: '1', ...over,
});

export function sourceStateContract(h: SourceStateHarness): void {
  it('dedupes event ids durably, across a reopen', async () => {
    const store = await h.open();
    expect(await store.admit(change({}))).toEqual({ outcome: 'admitted' });
    await store.complete('e1');
    expect(await store.admit(change({}))).toEqual({ outcome: 'duplicate' });
    await store.close();
    const again = await h.open();
    expect(await again.admit(change({}))).toEqual({ outcome: 'duplicate' });
    expect(await again.get('confluence:acme:1')).toMatchObject({ kind: 'confluence', tenant: 'default', scope: 'ENG', source_version: '1', changed_at: 1000, deleted: false });
    expect(Date.parse((await again.get('confluence:acme:1'))!.updated_at)).not.toBeNaN();
  });

  it('re-admits a pending event (its admission never finished) and undoes an abandoned one', async () => {
    const store = await h.open();
    await store.admit(change({ event_id: 'a', changed_at: 1000 }));
    await store.complete('a');
    expect(await store.admit(change({ event_id: 'b', op: 'delete', changed_at: 2000 }))).toEqual({ outcome: 'admitted' });
    expect(await store.admit(change({ event_id: 'b', op: 'delete', changed_at: 2000 }))).toEqual({ outcome: 'admitted' });
    await store.abandon('b');
    expect(await store.get('confluence:acme:1')).toMatchObject({ deleted: false, changed_at: 1000, source_version: '1' });
    expect(await store.admit(change({ event_id: 'b', op: 'delete', changed_at: 2000 }))).toEqual({ outcome: 'admitted' });
    // Abandoning the first admission of a document forgets the document.
    await store.admit(change({ event_id: 'n', document_id: 'confluence:acme:2' }));
    await store.abandon('n');
    expect(await store.get('confluence:acme:2')).toBeNull();
    await store.abandon('never-seen');
  });

  it('keeps a tombstone: a late update after a delete is stale, a later restore is admitted', async () => {
    const store = await h.open();
    await store.admit(change({ event_id: 'u1', changed_at: 1000 }));
    await store.admit(change({ event_id: 'd', op: 'delete', changed_at: 3000 }));
    expect((await store.admit(change({ event_id: 'u2', changed_at: 2000, source_version: '2' }))).outcome).toBe('stale');
    expect((await store.admit(change({ event_id: 'u2', changed_at: 2000, source_version: '2' }))).outcome).toBe('duplicate');
    expect(await store.listLive('confluence')).toEqual([]);
    expect((await store.admit(change({ event_id: 'r', changed_at: 4000, source_version: '3' }))).outcome).toBe('admitted');
    expect((await store.listLive('confluence', { scope: 'ENG', tenant: 'default' })).map((d) => d.document_id)).toEqual(['confluence:acme:1']);
    expect((await store.listLive('confluence', { scope: 'OPS' })).length).toBe(0);
  });

  it('admits one of many concurrent deliveries of the same event, from two handles (replicas)', async () => {
    const [a, b] = [await h.open(), await h.open()];
    const outcomes = await Promise.all(
      Array.from({ length: 10 }, async (_, i) => {
        const s = i % 2 ? a : b;
        const o = await s.admit(change({ event_id: 'dup', document_id: 'notion:p1', kind: 'notion', changed_at: 5000 }));
        if (o.outcome === 'admitted') await s.complete('dup');
        return o.outcome;
      }),
    );
    // A pending event may be re-admitted until completed; once completed every later delivery is a duplicate.
    expect(outcomes.filter((o) => o === 'admitted').length).toBeGreaterThanOrEqual(1);
    expect(outcomes.every((o) => o === 'admitted' || o === 'duplicate')).toBe(true);
    expect((await a.admit(change({ event_id: 'dup', document_id: 'notion:p1', kind: 'notion', changed_at: 5000 }))).outcome).toBe('duplicate');
    expect((await b.listLive('notion')).map((d) => d.document_id)).toEqual(['notion:p1']);
  });

  it('prunes processed events older than the given age, never pending ones', async () => {
    const store = await h.open();
    await store.admit(change({ event_id: 'done' }));
    await store.complete('done');
    await store.admit(change({ event_id: 'pending', changed_at: 2000 }));
    expect(await store.pruneEvents(-60_000)).toBe(1);
    // The done event is forgotten (a redelivery is processed again, and ordered by source time: stale now).
    expect((await store.admit(change({ event_id: 'done' }))).outcome).toBe('stale');
    expect((await store.admit(change({ event_id: 'pending', changed_at: 2000 }))).outcome).toBe('admitted');
  });
}
