import { join } from 'node:path';
import { HashingEmbedder } from './hashing-embedder.adapter';
import { WorkerHashingEmbedder, type WorkerHashingEmbedderOptions } from './worker-hashing-embedder';

const made: WorkerHashingEmbedder[] = [];
function embedder(opts: WorkerHashingEmbedderOptions = {}): WorkerHashingEmbedder {
  const e = new WorkerHashingEmbedder({ dim: 64, ...opts });
  made.push(e);
  return e;
}
afterAll(async () => {
  await Promise.all(made.map((e) => e.close()));
});

const passages = [
  'The wing root carries the bending load; spars take the shear.',
  'Aeroelastic models of heated high speed aircraft must obey similarity laws.',
  '尤金袋鼠分布在澳大利亚南部地区。',
  '',
  'the of and', // stop words only: the fixed unit vector
];

describe('WorkerHashingEmbedder', () => {
  it('hashes passages on its worker and queries on this thread, with the vectors of HashingEmbedder (same model id), and other options reach the worker', async () => {
    for (const options of [{ dim: 64 }, { dim: 96, charNgrams: [3], wordBigrams: false }]) {
      const e = embedder(options);
      const local = new HashingEmbedder(options);
      expect([e.modelId, e.dim]).toEqual([local.modelId, local.dim]);
      const got = await e.embed(passages, 'passage');
      expect(got).toEqual(await local.embed(passages, 'passage'));
      // each vector is its own array (not a view of the one transferred buffer)
      expect(got.map((v) => v.buffer.byteLength)).toEqual(passages.map(() => local.dim * 4));
      expect(await e.embed(['wing root bending'], 'query')).toEqual(await local.embed(['wing root bending'], 'query'));
      expect(e.stats()).toEqual({ inWorker: 1, retriedInProcess: 0 });
    }
  }, 60_000);

  it('batches in flight together come back each with its own vectors, in order', async () => {
    const e = embedder();
    const local = new HashingEmbedder({ dim: 64 });
    const batches = Array.from({ length: 8 }, (_, b) => Array.from({ length: 20 }, (_, i) => `passage ${b}-${i} about wing ${i % 3} and load ${b}`));
    const got = await Promise.all(batches.map((texts) => e.embed(texts, 'passage')));
    for (let b = 0; b < batches.length; b++) expect(got[b]).toEqual(await local.embed(batches[b]!, 'passage'));
    expect(e.stats().inWorker).toBe(8);
  }, 60_000);

  it('a worker that dies mid-batch: the batch is hashed on this thread (same vectors) and the next goes to a new worker', async () => {
    const e = embedder({ workerFile: join(__dirname, 'testing/faulty-hashing.worker.ts') });
    const local = new HashingEmbedder({ dim: 64 });
    const texts = ['CRASH the worker', 'wing root'];
    expect(await e.embed(texts, 'passage')).toEqual(await local.embed(texts, 'passage'));
    expect(e.stats()).toEqual({ inWorker: 0, retriedInProcess: 1 });
    expect(await e.embed(['wing root'], 'passage')).toEqual(await local.embed(['wing root'], 'passage'));
    expect(e.stats()).toEqual({ inWorker: 1, retriedInProcess: 1 });
  }, 60_000);

  it('rejects a malformed batch before posting it, empty batches and queries never start the thread, and a closed embedder refuses passages', async () => {
    const e = embedder();
    await expect(e.embed([42 as unknown as string], 'passage')).rejects.toThrow(/invalid hashing task: every text must be a string/);
    expect(await e.embed([], 'passage')).toEqual([]);
    await e.embed(['a question'], 'query');
    expect(e.stats()).toEqual({ inWorker: 0, retriedInProcess: 0 });
    await e.close();
    await expect(e.embed(['wing'], 'passage')).rejects.toThrow(/closed/);
    // queries need no thread: still answered
    expect(await e.embed(['wing'], 'query')).toHaveLength(1);
    expect(() => new WorkerHashingEmbedder({ dim: 3 })).toThrow(/dim must be an integer/);
  }, 60_000);
});
