import type { Embedder } from '@rag/ports';
import { EmbeddingService } from './embedding.service';

/** An embedder that counts its model runs (the vector is derived from the text, so repeats must be equal). */
function countingEmbedder() {
  const runs: string[] = [];
  const embedder: Embedder = {
    modelId: 'counting',
    dim: 2,
    embed: async (texts: string[]) => texts.map((t) => (runs.push(t), Float32Array.from([t.length, t.charCodeAt(0)]))),
  } as unknown as Embedder;
  return { embedder, runs };
}

describe('EmbeddingService', () => {
  it('embeds a repeated query once and returns equal, independent vectors', async () => {
    const { embedder, runs } = countingEmbedder();
    const s = new EmbeddingService(embedder);
    const a = await s.embedQuery('flutter margin');
    const b = await s.embedQuery('flutter margin');
    expect(runs).toEqual(['flutter margin']);
    expect([...b]).toEqual([...a]);
    b[0] = -1;
    expect((await s.embedQuery('flutter margin'))[0]).toBe(14);
  });

  it('keeps a bounded number of recent queries (the oldest is embedded again)', async () => {
    const { embedder, runs } = countingEmbedder();
    const s = new EmbeddingService(embedder);
    for (let i = 0; i < 300; i++) await s.embedQuery(`q${i}`);
    await s.embedQuery('q299');
    expect(runs).toHaveLength(300);
    await s.embedQuery('q0');
    expect(runs).toHaveLength(301);
  });
});
