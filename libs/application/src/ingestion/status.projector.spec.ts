import { describe, expect, it } from 'vitest';
import { Topic, type IndexEvent } from '@rag/contracts';
import { setLogLevel } from '@rag/platform';
import type { BusMessage, Registry, StatusUpdate } from '@rag/ports';
import { StatusProjector } from './status.projector';

setLogLevel('silent');

/*
 * The status projection's batch path: one registry call for a batch of events where the registry has `markMany`, the
 * single forms one after another where it has not; an invalid event fails alone. The registries' own fencing of each
 * update is covered by their adapter specs (sqlite-registry markMany against the single forms).
 */

type Marks = Pick<Registry, 'markProcessing' | 'markFailed' | 'markIndexed' | 'markUnchanged' | 'markDeleted'>;

class Recording implements Marks {
  calls: string[] = [];
  async markProcessing(id: string, v: number) {
    this.calls.push(`processing ${id}@${v}`);
  }
  async markFailed(id: string, v: number, error: string) {
    this.calls.push(`failed ${id}@${v} ${error}`);
  }
  async markIndexed(id: string, v: number, hash: string, chunks: number) {
    this.calls.push(`indexed ${id}@${v} ${hash} ${chunks}`);
  }
  async markUnchanged(id: string, v: number) {
    this.calls.push(`unchanged ${id}@${v}`);
  }
  async markDeleted(id: string, v: number) {
    this.calls.push(`deleted ${id}@${v}`);
  }
}

class RecordingWithMany extends Recording {
  batches: StatusUpdate[][] = [];
  async markMany(updates: StatusUpdate[]) {
    this.batches.push(updates);
  }
}

let offset = 0;
const event = (id: string, fields: Partial<IndexEvent> & Pick<IndexEvent, 'status'>): BusMessage => ({
  topic: Topic.IndexEvents,
  partition: 0,
  offset: offset++,
  key: id,
  value: { event_id: `e${offset}`, document_id: id, tenant: 't1', version: 1, stage: 'indexer', at: '2026-12-06T00:00:00Z', ...fields },
  headers: {},
  attempt: 1,
});

const batch = [
  event('a', { status: 'processing', stage: 'loader' }),
  event('b', { status: 'indexed', content_hash: 'h', chunks: 3 }),
  event('c', { status: 'failed', stage: 'chunker', error: 'empty' }),
  event('d', { status: 'unchanged' }),
  event('e', { status: 'deleted', version: 2 }),
];

describe('StatusProjector batch', () => {
  it('applies a batch of events in one markMany call, each as its single form would', async () => {
    const registry = new RecordingWithMany();
    const outcomes = await new StatusProjector(registry as unknown as Registry).handleBatch(batch);
    expect(outcomes).toEqual([undefined, undefined, undefined, undefined, undefined]);
    expect(registry.calls).toEqual([]);
    expect(registry.batches).toEqual([
      [
        { status: 'processing', documentId: 'a', version: 1 },
        { status: 'indexed', documentId: 'b', version: 1, contentHash: 'h', chunks: 3 },
        { status: 'failed', documentId: 'c', version: 1, error: 'chunker: empty' },
        { status: 'unchanged', documentId: 'd', version: 1 },
        { status: 'deleted', documentId: 'e', version: 2 },
      ],
    ]);
  });

  it('calls the single forms in order on a registry without markMany, and fails an invalid event alone', async () => {
    const registry = new Recording();
    const invalid = { ...event('x', { status: 'processing' }), value: { document_id: 'x', status: 'bogus' } };
    const outcomes = await new StatusProjector(registry as unknown as Registry).handleBatch([...batch.slice(0, 2), invalid, ...batch.slice(2)]);
    expect(outcomes.map((o) => o?.message.split(':')[0])).toEqual([undefined, undefined, 'invalid index event', undefined, undefined, undefined]);
    expect(registry.calls).toEqual(['processing a@1', 'indexed b@1 h 3', 'failed c@1 chunker: empty', 'unchanged d@1', 'deleted e@2']);
  });

  it('keeps two events of one document in order (a foreign producer may batch them together)', async () => {
    const registry = new RecordingWithMany();
    await new StatusProjector(registry as unknown as Registry).handleBatch([
      event('a', { status: 'processing' }),
      event('b', { status: 'processing' }),
      event('a', { status: 'indexed', content_hash: 'h', chunks: 1 }),
    ]);
    expect(registry.batches.map((b) => b.map((u) => `${u.status} ${u.documentId}`))).toEqual([['processing a', 'processing b'], ['indexed a']]);
  });

  it('fails the whole batch when the registry transaction fails (the bus then delivers each alone)', async () => {
    const registry = new RecordingWithMany();
    registry.markMany = async () => {
      throw new Error('database is locked');
    };
    const outcomes = await new StatusProjector(registry as unknown as Registry).handleBatch(batch.slice(0, 2));
    expect(outcomes.map((o) => o?.message)).toEqual(['database is locked', 'database is locked']);
  });
});
