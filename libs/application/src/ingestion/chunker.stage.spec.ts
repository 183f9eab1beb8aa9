import { describe, expect, it } from 'vitest';
import { Topic, type ChunksEvent, type IndexEvent } from '@rag/contracts';
import { type Bus, type BusMessage, type OutgoingMessage } from '@rag/ports';
import { ChunkerStage } from './chunker.stage';

class RecordingBus implements Pick<Bus, 'publish'> {
  published: { topic: Topic; value: unknown }[] = [];
  /** One entry per publish call: its topic and how many messages it carried. */
  calls: { topic: Topic; n: number }[] = [];
  failTopic?: Topic;
  async publish(topic: Topic, messages: OutgoingMessage[]) {
    if (topic === this.failTopic) throw new Error('bus down');
    this.calls.push({ topic, n: messages.length });
    for (const m of messages) this.published.push({ topic, value: m.value });
  }
}

function documentEvent(paragraphs: number, id = 'upload:d1'): BusMessage {
  const blocks = Array.from({ length: paragraphs }, (_, i) => ({ type: 'paragraph', text: `Paragraph ${i} has a few words about wings and lift.` }));
  const document = {
    document_id: id,
    tenant: 'default',
    version: 1,
    title: 'Doc',
    mime_type: 'text/plain',
    content_hash: 'a'.repeat(64),
    acl: ['*'],
    metadata: {},
    blocks,
  };
  return { topic: Topic.Documents, partition: 0, offset: 0, key: id, value: { event_id: 'e', op: 'upsert', document }, headers: {}, attempt: 1 };
}

const OPTS = { chunkTokens: 16, overlapTokens: 0, parentTokens: 0 };

describe('ChunkerStage chunk cap', () => {
  it('fails a document that makes more chunks than RAG_MAX_CHUNKS_PER_DOCUMENT, publishing no chunks', async () => {
    const bus = new RecordingBus();
    await new ChunkerStage(bus as unknown as Bus, OPTS, 10).handle(documentEvent(50));
    expect(bus.published.map((p) => p.topic)).toEqual([Topic.IndexEvents]);
    expect(bus.published[0]!.value as IndexEvent).toMatchObject({
      status: 'failed',
      stage: 'chunker',
      error: 'too_many_chunks: the document makes more than 10 chunks (RAG_MAX_CHUNKS_PER_DOCUMENT)',
    });
  });

  it('publishes the chunks of a document within the cap', async () => {
    const bus = new RecordingBus();
    await new ChunkerStage(bus as unknown as Bus, OPTS, 10).handle(documentEvent(5));
    expect(bus.published.map((p) => p.topic)).toEqual([Topic.Chunks]);
    expect((bus.published[0]!.value as ChunksEvent & { op: 'upsert' }).document.chunks).toHaveLength(5);
  });
});

describe('ChunkerStage batch (bulk ingestion)', () => {
  it('publishes the chunk events of a batch in one publish and its failures in another, in message order', async () => {
    const bus = new RecordingBus();
    const invalid: BusMessage = { ...documentEvent(1, 'upload:bad'), value: { op: 'upsert' } };
    const msgs = [documentEvent(3, 'upload:a'), documentEvent(50, 'upload:big'), invalid, documentEvent(2, 'upload:b')];
    const outcomes = await new ChunkerStage(bus as unknown as Bus, OPTS, 10).handleBatch(msgs);
    // The invalid event fails alone (the bus dead-letters it); the over-cap document is a `failed` status, not an error.
    expect(outcomes.map((o) => o?.message.split(':')[0])).toEqual([undefined, undefined, 'invalid document event', undefined]);
    expect(bus.calls).toEqual([
      { topic: Topic.Chunks, n: 2 },
      { topic: Topic.IndexEvents, n: 1 },
    ]);
    const chunks = bus.published.filter((p) => p.topic === Topic.Chunks).map((p) => p.value as ChunksEvent & { op: 'upsert' });
    expect(chunks.map((c) => [c.document.document_id, c.document.chunks.length])).toEqual([
      ['upload:a', 3],
      ['upload:b', 2],
    ]);
    expect(bus.published.find((p) => p.topic === Topic.IndexEvents)!.value).toMatchObject({ document_id: 'upload:big', status: 'failed', stage: 'chunker' });
  });

  it('fails the documents a failed publish carried, and only those', async () => {
    const bus = new RecordingBus();
    bus.failTopic = Topic.Chunks;
    const outcomes = await new ChunkerStage(bus as unknown as Bus, OPTS, 10).handleBatch([documentEvent(3, 'upload:a'), documentEvent(50, 'upload:big')]);
    expect(outcomes.map((o) => o?.message)).toEqual(['bus down', undefined]);
    expect(bus.calls).toEqual([{ topic: Topic.IndexEvents, n: 1 }]);
  });
});
