import { DLQ_HEADERS, Topic } from '@rag/contracts';
import { setLogLevel } from '@rag/platform';
import type { BusMessage } from '@rag/ports';
import { createPipeline } from './pipeline';

setLogLevel('silent');

const textA = 'Supersonic inlets.\n\nA supersonic inlet decelerates the flow through a series of oblique shocks before a terminal normal shock.';
const textA2 = 'Supersonic inlets.\n\nA mixed-compression inlet uses a variable ramp to position the terminal normal shock near the throat.';

type P = Awaited<ReturnType<typeof createPipeline>>;

async function counts(p: P, id: string) {
  const rec = await p.registry.get(id);
  return { vectors: await p.vectors.count(id), registry: rec?.chunks ?? 0, status: rec?.status, version: rec?.version, active: rec?.active_version };
}

describe('ingestion pipeline (real embedded adapters)', () => {
  let p: P;
  beforeEach(async () => {
    p = await createPipeline();
  });
  afterEach(async () => {
    await p.close();
  });

  it('indexes a document once even when the embedded message is delivered twice', async () => {
    const captured: unknown[] = [];
    await p.bus.subscribe({ group: 'spy', topic: Topic.ChunksEmbedded, stage: 'spy', handler: async (m: BusMessage) => void captured.push(m.value) });
    const r = await p.documents.submit({ id: 'a', text: textA }, 'default');
    expect(r.ok).toBe(true);
    await p.bus.drain();
    const first = await counts(p, 'a');
    expect(first).toMatchObject({ status: 'indexed', version: 1, active: 1 });
    expect(first.vectors).toBe(first.registry);
    expect(first.vectors).toBeGreaterThan(0);
    // At-least-once: the same message again (a redelivery after a crash before the commit).
    await p.bus.publish(Topic.ChunksEmbedded, [{ key: 'a', value: captured[0] }]);
    await p.bus.drain();
    expect(await counts(p, 'a')).toEqual(first);
  });

  it('replaces a changed document, ignores a stale version, and never resurrects a deleted one', async () => {
    const captured: unknown[] = [];
    await p.bus.subscribe({ group: 'spy', topic: Topic.ChunksEmbedded, stage: 'spy', handler: async (m: BusMessage) => void captured.push(m.value) });
    await p.documents.submit({ id: 'a', text: textA }, 'default');
    await p.bus.drain();
    await p.documents.submit({ id: 'a', text: textA2 }, 'default');
    await p.bus.drain();
    expect(await counts(p, 'a')).toMatchObject({ status: 'indexed', version: 2, active: 2 });
    const hits = await p.query.retrieve({ question: 'terminal normal shock inlet' }, { tenant: 'default' });
    expect(hits.results.every((h) => h.chunk_id.startsWith('a#v2#'))).toBe(true);

    // A late redelivery of version 1 must not bring its chunks back.
    await p.bus.publish(Topic.ChunksEmbedded, [{ key: 'a', value: captured[0] }]);
    await p.bus.drain();
    expect(await counts(p, 'a')).toMatchObject({ version: 2, active: 2 });
    expect((await p.query.retrieve({ question: 'oblique shocks series' }, { tenant: 'default' })).results.some((h) => h.chunk_id.startsWith('a#v1#'))).toBe(false);

    const del = await p.documents.delete('a', 'default');
    expect(del.ok).toBe(true);
    await p.bus.drain();
    expect(await counts(p, 'a')).toMatchObject({ status: 'deleted', vectors: 0, registry: 0, active: 0 });
    await p.bus.publish(Topic.ChunksEmbedded, [{ key: 'a', value: captured[1] }]);
    await p.bus.drain();
    expect(await counts(p, 'a')).toMatchObject({ status: 'deleted', vectors: 0 });
    expect(await p.keywords.count('a')).toBe(0);
  });

  it('treats identical content as a no-op and re-sent bytes as a duplicate', async () => {
    await p.documents.submit({ id: 'a', text: textA }, 'default');
    await p.bus.drain();
    const again = await p.documents.submit({ id: 'a', text: textA }, 'default');
    expect(again.ok && again.value.unchanged).toBe(true);
    // Same normalized body, different bytes (extra blank lines): a new version is accepted but nothing is rewritten.
    await p.documents.submit({ id: 'a', text: textA.replace('\n\n', '\n\n\n\n') }, 'default');
    await p.bus.drain();
    expect(await counts(p, 'a')).toMatchObject({ status: 'indexed', version: 2, active: 1 });
  });

  it('marks a corrupt upload failed with the reason and keeps going', async () => {
    await p.documents.submit({ id: 'bad', content_base64: Buffer.from('%PDF-1.7\n' + 'x'.repeat(200)).toString('base64') }, 'default');
    await p.documents.submit({ id: 'good', text: textA }, 'default');
    await p.bus.drain();
    const bad = await p.registry.get('bad');
    expect(bad?.status).toBe('failed');
    expect(bad?.error).toMatch(/loader: corrupt/);
    expect((await p.registry.get('good'))?.status).toBe('indexed');
  });

  it('sends a poison message to the DLQ with its reason and stage, and the partition moves on', async () => {
    await p.bus.publish(Topic.Documents, [{ key: 'x', value: { op: 'upsert', document: { nope: true } } }]);
    await p.documents.submit({ id: 'a', text: textA }, 'default');
    await p.bus.drain();
    const dlq = (p.bus as unknown as { deadLetters(): { key: string; headers: Record<string, string> }[] }).deadLetters();
    expect(dlq).toHaveLength(1);
    expect(dlq[0]!.headers[DLQ_HEADERS.stage]).toBe('chunker');
    expect(dlq[0]!.headers[DLQ_HEADERS.reason]).toMatch(/invalid document event/);
    expect((await p.registry.get('a'))?.status).toBe('indexed');
  });

  it('marks the document of a dead-lettered message failed with the stage and reason (never a finished one)', async () => {
    // A version accepted by the registry whose source event is malformed: the loader dead-letters it.
    const ghost = await p.registry.accept({ document_id: 'ghost', tenant: 'default', op: 'upsert', mime_type: 'text/plain' });
    await p.bus.publish(Topic.SourceEvents, [{ key: 'ghost', value: { op: 'upsert', document_id: 'ghost', version: ghost.version, tenant: 'default' } }]);
    // A finished document must not be flipped by a late poison copy of one of its messages.
    await p.documents.submit({ id: 'done', text: textA }, 'default');
    await p.bus.drain();
    const done = (await p.registry.get('done'))!;
    expect(done.status).toBe('indexed');
    await p.bus.publish(Topic.Documents, [{ key: 'done', value: { op: 'upsert', document: { version: done.version } } }]);
    // Garbage with no document or version is ignored (and does not loop through the DLQ).
    await p.bus.publish(Topic.Chunks, [{ key: '', value: 'not json at all' }]);
    await p.bus.drain();
    const failed = (await p.registry.get('ghost'))!;
    expect(failed.status).toBe('failed');
    expect(failed.error).toMatch(/^loader: .*invalid source event/);
    expect((await p.registry.get('done'))?.status).toBe('indexed');
    const dlq = (p.bus as unknown as { deadLetters(): unknown[] }).deadLetters();
    expect(dlq).toHaveLength(3);
  });
});
