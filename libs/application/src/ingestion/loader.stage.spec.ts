import { describe, expect, it } from 'vitest';
import { Topic, type IndexEvent, type SourceEvent } from '@rag/contracts';
import { DEFAULT_PARSE_LIMITS } from '@rag/domain';
import { setLogLevel } from '@rag/platform';
import { NonRetryableError, type Bus, type BusMessage, type DocumentParser, type OutgoingMessage, type ParseOutcome, type SourceConnector } from '@rag/ports';
import { InProcessDocumentParser, LoaderStage } from './loader.stage';

setLogLevel('silent');

/** Records what the stage publishes (the buses have their own specs). */
class RecordingBus implements Pick<Bus, 'publish'> {
  published: { topic: Topic; value: unknown }[] = [];
  async publish(topic: Topic, messages: OutgoingMessage[]) {
    for (const m of messages) this.published.push({ topic, value: m.value });
  }
  statuses(): IndexEvent[] {
    return this.published.filter((p) => p.topic === Topic.IndexEvents).map((p) => p.value as IndexEvent);
  }
}

function message(value: Record<string, unknown>): BusMessage {
  return { topic: Topic.SourceEvents, partition: 0, offset: 0, key: 'd', value, headers: {}, attempt: 1 };
}

function upload(over: Partial<Extract<SourceEvent, { op: 'upsert' }>> = {}): Record<string, unknown> {
  return {
    event_id: 'e1',
    op: 'upsert',
    document_id: 'upload:d1',
    tenant: 'default',
    version: 1,
    emitted_at: new Date(0).toISOString(),
    mime_type: 'text/plain',
    text: 'Hello.',
    source: { kind: 'upload' },
    acl: ['*'],
    metadata: {},
    ...over,
  };
}

/** A parser that answers one fixed outcome (the worker pool's timeout and memory outcomes are covered in its spec). */
class FixedParser implements DocumentParser {
  constructor(private readonly outcome: ParseOutcome) {}
  async parse() {
    return this.outcome;
  }
  async close() {}
}

describe('LoaderStage limits', () => {
  it('a document over a parse limit is failed with the reason naming the setting', async () => {
    const bus = new RecordingBus();
    const stage = new LoaderStage(bus as unknown as Bus, [], new InProcessDocumentParser({ ...DEFAULT_PARSE_LIMITS, maxTextBytes: 1024 }));
    await stage.handle(message(upload({ text: 'word '.repeat(1000) })));
    expect(bus.statuses().map((s) => [s.status, s.stage, s.error])).toEqual([
      ['processing', 'loader', undefined],
      ['failed', 'loader', 'too_large: the document has more than 1 KiB of text (RAG_MAX_TEXT_BYTES)'],
    ]);
    expect(bus.published.some((p) => p.topic === Topic.Documents)).toBe(false);
  });

  it('a parse stopped by the time limit is failed with the reason', async () => {
    const bus = new RecordingBus();
    const reason = 'parsing took longer than 60000 ms and was stopped (RAG_PARSE_TIMEOUT_MS)';
    const stage = new LoaderStage(bus as unknown as Bus, [], new FixedParser({ ok: false, code: 'timeout', reason }));
    await stage.handle(message(upload()));
    expect(bus.statuses().at(-1)).toMatchObject({ status: 'failed', stage: 'loader', error: `timeout: ${reason}` });
  });

  it('a source event whose metadata is over the caps never reaches the parser (dead-lettered with the reason)', async () => {
    const bus = new RecordingBus();
    const stage = new LoaderStage(bus as unknown as Bus);
    const metadata = Object.fromEntries(Array.from({ length: 65 }, (_, i) => [`k${i}`, i]));
    const err = await stage.handle(message(upload({ metadata }))).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(NonRetryableError);
    expect(String((err as Error).message)).toContain('metadata has 65 keys; at most 64 are allowed');
    expect(bus.published).toEqual([]);
  });

  it('connector metadata merged over the caps fails the document instead of publishing it', async () => {
    const bus = new RecordingBus();
    const half = (p: string) => Object.fromEntries(Array.from({ length: 40 }, (_, i) => [`${p}${i}`, 'v']));
    const connector = {
      kind: 'notion',
      fetch: async () => ({
        status: 'found' as const,
        title: 'Page',
        blocks: [{ type: 'paragraph' as const, text: 'Body.' }],
        acl: ['*'],
        metadata: half('page'),
        source_version: '1',
        changed_at: 0,
      }),
    } as unknown as SourceConnector;
    const stage = new LoaderStage(bus as unknown as Bus, [connector]);
    await stage.handle(message(upload({ text: undefined, source: { kind: 'notion', ref: 'p1' }, metadata: half('event') })));
    expect(bus.statuses().at(-1)).toMatchObject({ status: 'failed', error: 'invalid_metadata: metadata has 80 keys; at most 64 are allowed' });
    expect(bus.published.some((p) => p.topic === Topic.Documents)).toBe(false);
  });

  it('an ordinary document still loads', async () => {
    const bus = new RecordingBus();
    const stage = new LoaderStage(bus as unknown as Bus);
    await stage.handle(message(upload({ text: '# Travel\n\nBook early.', mime_type: 'text/markdown', metadata: { team: 'ops' } })));
    const doc = bus.published.find((p) => p.topic === Topic.Documents)?.value as { document: { title: string; metadata: unknown } };
    expect(doc.document).toMatchObject({ title: 'Travel', metadata: { team: 'ops' } });
  });
});

describe('LoaderStage batches (bulk ingestion)', () => {
  /** Counts publish calls per topic too (the batch path publishes each kind of message once per batch). */
  class CountingBus extends RecordingBus {
    calls: Topic[] = [];
    override async publish(topic: Topic, messages: OutgoingMessage[]) {
      this.calls.push(topic);
      await super.publish(topic, messages);
    }
  }
  const at = (value: Record<string, unknown>, key: string, offset: number): BusMessage => ({ ...message(value), key, offset });

  it('loads a batch with one publish per kind; an invalid event and a transient source failure fail alone, the rest go on', async () => {
    const bus = new CountingBus();
    const connector = {
      kind: 'notion',
      fetch: async () => {
        throw new Error('notion: 503 Service Unavailable');
      },
    } as unknown as SourceConnector;
    const stage = new LoaderStage(bus as unknown as Bus, [connector], new InProcessDocumentParser({ ...DEFAULT_PARSE_LIMITS, maxTextBytes: 1024 }));
    const outcomes = await stage.handleBatch([
      at(upload({ document_id: 'upload:a', text: 'Alpha body.' }), 'upload:a', 0),
      at({ op: 'upsert', document_id: 'upload:bad' }, 'upload:bad', 1),
      at(upload({ document_id: 'notion:p1', text: undefined, source: { kind: 'notion', ref: 'p1' } }), 'notion:p1', 2),
      at(upload({ document_id: 'upload:big', text: 'word '.repeat(1000) }), 'upload:big', 3),
      at({ event_id: 'e9', op: 'delete', document_id: 'upload:gone', tenant: 'default', version: 2, emitted_at: new Date(0).toISOString() }, 'upload:gone', 4),
      at(upload({ document_id: 'upload:b', text: 'Beta body.' }), 'upload:b', 5),
    ]);
    expect(outcomes[0]).toBeUndefined();
    expect(outcomes[1]).toBeInstanceOf(NonRetryableError);
    expect(String(outcomes[2])).toContain('503');
    expect(outcomes.slice(3)).toEqual([undefined, undefined, undefined]);
    const docs = bus.published.filter((p) => p.topic === Topic.Documents).map((p) => p.value as { op: string; document?: { document_id: string }; document_id?: string });
    expect(docs.map((d) => d.document?.document_id ?? `${d.op}:${d.document_id}`).sort()).toEqual(['delete:upload:gone', 'upload:a', 'upload:b']);
    const statuses = bus.statuses().map((s) => [s.document_id, s.status]);
    expect(statuses.filter(([, s]) => s === 'processing').map(([id]) => id)).toEqual(['upload:a', 'notion:p1', 'upload:big', 'upload:b']);
    expect(statuses.filter(([, s]) => s === 'failed')).toEqual([['upload:big', 'failed']]);
    // processing statuses, then the documents, then the failed statuses: three publishes for the whole batch
    expect(bus.calls).toEqual([Topic.IndexEvents, Topic.Documents, Topic.IndexEvents]);
  });

  it('two events of one document in a batch are handled one after the other, in order', async () => {
    const bus = new CountingBus();
    const stage = new LoaderStage(bus as unknown as Bus);
    const outcomes = await stage.handleBatch([
      at(upload({ document_id: 'upload:a', version: 1, text: 'First.' }), 'upload:a', 0),
      at(upload({ document_id: 'upload:a', version: 2, text: 'Second.' }), 'upload:a', 1),
    ]);
    expect(outcomes).toEqual([undefined, undefined]);
    const versions = bus.published.filter((p) => p.topic === Topic.Documents).map((p) => (p.value as { document: { version: number } }).document.version);
    expect(versions).toEqual([1, 2]);
  });
});
