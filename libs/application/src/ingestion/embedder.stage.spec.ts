import { describe, expect, it } from 'vitest';
import { chunkId, chunkVectorValues, EmbeddedChunksEventSchema, Topic, type Chunk, type ChunksEvent, type EmbeddedChunksEvent } from '@rag/contracts';
import { MessageTooLargeError, NonRetryableError, type Bus, type BusMessage, type Embedder, type OutgoingMessage } from '@rag/ports';
import { EmbedderStage } from './embedder.stage';

/*
 * The embedder's batch path: the children of every document of a batch go to the embedder together, in slices of
 * the embedder batch size, and each document gets back exactly its own vectors.
 */

/** Records the calls; a text's vector encodes its length and first char code, so a mix-up between documents shows. */
class RecordingEmbedder implements Embedder {
  readonly modelId = 'rec';
  readonly dim = 2;
  calls: number[] = [];
  fail = false;
  async embed(texts: string[]): Promise<Float32Array[]> {
    if (this.fail) throw new Error('embedder down');
    this.calls.push(texts.length);
    return texts.map((t) => Float32Array.from([t.length, t.charCodeAt(t.length - 1)]));
  }
}

class CaptureBus implements Pick<Bus, 'publish'> {
  out: EmbeddedChunksEvent[] = [];
  publishes = 0;
  /** Keys the "broker" refuses as too large (KafkaBus: the rest of the publish goes out). */
  tooLarge = new Set<string>();
  async publish(_t: unknown, messages: OutgoingMessage[]) {
    this.publishes++;
    for (const m of messages) if (!this.tooLarge.has(m.key)) this.out.push(m.value as EmbeddedChunksEvent);
    const left = [...messages.keys()].filter((i) => this.tooLarge.has(messages[i]!.key));
    if (left.length) {
      throw new MessageTooLargeError(
        left,
        left.map((i) => messages[i]!.key),
        'larger than the topic accepts',
      );
    }
  }
}

function chunksEvent(id: string, children: number): BusMessage {
  const common = { document_id: id, tenant: 't', version: 1, acl: ['*'], title: '', heading_path: [], metadata: {} };
  const parent = chunkId(id, 1, 0);
  const chunks: Chunk[] = [{ ...common, chunk_id: parent, ordinal: 0, kind: 'parent', parent_id: null, text: 'p', token_count: 1 }];
  for (let i = 1; i <= children; i++) chunks.push({ ...common, chunk_id: chunkId(id, 1, i), ordinal: i, kind: 'child', parent_id: parent, text: `${id}${'x'.repeat(i)}${i}`, token_count: 1 });
  const value: ChunksEvent = { event_id: id, op: 'upsert', document: { document_id: id, tenant: 't', version: 1, content_hash: 'h'.repeat(64), title: '', chunks } };
  return { topic: Topic.Chunks, partition: 0, offset: 0, key: id, value, headers: {}, attempt: 1 };
}

describe('EmbedderStage batch path', () => {
  it('embeds the chunks of many documents in full embedder batches and hands each document its own vectors', async () => {
    const embedder = new RecordingEmbedder();
    const bus = new CaptureBus();
    const stage = new EmbedderStage(bus as unknown as Bus, embedder, 4);
    const msgs = [chunksEvent('a', 3), chunksEvent('b', 1), chunksEvent('c', 5)];
    expect(await stage.handleBatch(msgs)).toEqual([undefined, undefined, undefined]);
    // 9 children in slices of 4, across document boundaries (one document at a time would be 3 + 1 + 4 + 1 = 4 calls).
    expect(embedder.calls).toEqual([4, 4, 1]);
    expect(bus.out.map((e) => (e.op === 'upsert' ? e.document.document_id : ''))).toEqual(['a', 'b', 'c']);
    for (const [k, msg] of msgs.entries()) {
      const doc = (bus.out[k] as Extract<EmbeddedChunksEvent, { op: 'upsert' }>).document;
      const children = (msg.value as Extract<ChunksEvent, { op: 'upsert' }>).document.chunks.filter((c) => c.kind === 'child');
      expect(doc.vectors.map((v) => v.chunk_id)).toEqual(children.map((c) => c.chunk_id));
      // Base64 float32 on the wire (RAG_BUS_VECTOR_ENCODING default): no JSON numbers, and the event parses.
      expect(doc.vectors.every((v) => v.vector === undefined && typeof v.vector_f32 === 'string')).toBe(true);
      expect(doc.vectors.map((v) => Array.from(chunkVectorValues(v)))).toEqual(children.map((c) => [c.text.length, c.text.charCodeAt(c.text.length - 1)]));
      expect(EmbeddedChunksEventSchema.safeParse(bus.out[k]).success).toBe(true);
    }
  });

  it('publishes JSON number vectors with the json encoding (for indexers older than base64 vectors)', async () => {
    const bus = new CaptureBus();
    const stage = new EmbedderStage(bus as unknown as Bus, new RecordingEmbedder(), 4, 'json');
    expect(await stage.handleBatch([chunksEvent('a', 2)])).toEqual([undefined]);
    const doc = (bus.out[0] as Extract<EmbeddedChunksEvent, { op: 'upsert' }>).document;
    // Children "ax1" and "axx2": [length, last char code].
    expect(doc.vectors.map((v) => [v.vector, v.vector_f32])).toEqual([
      [[3, 49], undefined],
      [[4, 50], undefined],
    ]);
    expect(EmbeddedChunksEventSchema.safeParse(bus.out[0]).success).toBe(true);
  });

  it('fails only the document whose event is too large for the bus, non-retryably; the others of the batch are published', async () => {
    const bus = new CaptureBus();
    bus.tooLarge.add('b');
    const stage = new EmbedderStage(bus as unknown as Bus, new RecordingEmbedder(), 32);
    const out = await stage.handleBatch([chunksEvent('a', 2), chunksEvent('b', 2), chunksEvent('c', 1)]);
    expect(out[0]).toBeUndefined();
    expect(out[1]).toBeInstanceOf(NonRetryableError);
    expect(out[1]?.message).toMatch(/larger than the topic accepts/);
    expect(out[2]).toBeUndefined();
    expect(bus.out.map((e) => (e.op === 'upsert' ? e.document.document_id : ''))).toEqual(['a', 'c']);
  });

  it('fails an invalid message alone and passes a delete through', async () => {
    const embedder = new RecordingEmbedder();
    const bus = new CaptureBus();
    const stage = new EmbedderStage(bus as unknown as Bus, embedder, 32);
    const del: BusMessage = { ...chunksEvent('d', 0), key: 'd', value: { event_id: 'x', op: 'delete', document_id: 'd', tenant: 't', version: 2 } };
    const bad: BusMessage = { ...chunksEvent('z', 1), value: { op: 'upsert' } };
    const out = await stage.handleBatch([chunksEvent('a', 2), bad, del]);
    expect(out[0]).toBeUndefined();
    expect(out[1]).toBeInstanceOf(NonRetryableError);
    expect(out[2]).toBeUndefined();
    expect(bus.out.map((e) => e.op)).toEqual(['upsert', 'delete']);
  });

  it('fails every upsert of the batch when the embedder call fails (retryable: the bus delivers each again alone)', async () => {
    const embedder = new RecordingEmbedder();
    embedder.fail = true;
    const bus = new CaptureBus();
    const stage = new EmbedderStage(bus as unknown as Bus, embedder, 32);
    const out = await stage.handleBatch([chunksEvent('a', 2), chunksEvent('b', 2)]);
    expect(out.map((e) => e?.message)).toEqual(['embedder down', 'embedder down']);
    expect(out.some((e) => e instanceof NonRetryableError)).toBe(false);
    expect(bus.out).toEqual([]);
    embedder.fail = false;
    await stage.handle(chunksEvent('a', 2));
    expect(bus.out).toHaveLength(1);
  });
});
