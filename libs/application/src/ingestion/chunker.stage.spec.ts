import { describe, expect, it } from 'vitest';
import { Topic, type ChunksEvent, type IndexEvent } from '@rag/contracts';
import { type Bus, type BusMessage, type OutgoingMessage } from '@rag/ports';
import { ChunkerStage } from './chunker.stage';

class RecordingBus implements Pick<Bus, 'publish'> {
  published: { topic: Topic; value: unknown }[] = [];
  async publish(topic: Topic, messages: OutgoingMessage[]) {
    for (const m of messages) this.published.push({ topic, value: m.value });
  }
}

function documentEvent(paragraphs: number): BusMessage {
  const blocks = Array.from({ length: paragraphs }, (_, i) => ({ type: 'paragraph', text: `Paragraph ${i} has a few words about wings and lift.` }));
  const document = {
    document_id: 'upload:d1',
    tenant: 'default',
    version: 1,
    title: 'Doc',
    mime_type: 'text/plain',
    content_hash: 'a'.repeat(64),
    acl: ['*'],
    metadata: {},
    blocks,
  };
  return { topic: Topic.Documents, partition: 0, offset: 0, key: 'upload:d1', value: { event_id: 'e', op: 'upsert', document }, headers: {}, attempt: 1 };
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
