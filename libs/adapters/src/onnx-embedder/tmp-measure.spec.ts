import { readFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { OnnxEmbedder } from './onnx-embedder.adapter';
const N = 64;
const read = (d: string) => readFileSync(`/work/shared/eval/${d}/corpus.jsonl`, 'utf8').split('\n').filter(Boolean).slice(0, N).map((l) => (JSON.parse(l) as { text: string }).text);
it('measure', async () => {
  const models = (process.env.M ?? 'all-minilm-l6-v2,all-minilm-l6-v2-q,e5-small-v2,bge-small-zh-v1.5').split(',');
  for (const m of models) {
    const texts = read(m.includes('zh') ? 'cmrc2018-trial' : 'cranfield');
    const es = new Map<number, OnnxEmbedder>();
    for (const b of [8, 32]) es.set(b, await OnnxEmbedder.create({ modelsDir: '/work/main/.models', name: m, batchSize: b }));
    const times: Record<number, number[]> = { 8: [], 32: [] };
    await es.get(8)!.embed(texts.slice(0, 8), 'passage');
    for (let r = 0; r < 3; r++) for (const b of r % 2 ? [32, 8] : [8, 32]) {
      const t0 = performance.now(); await es.get(b)!.embed(texts, 'passage'); times[b].push(performance.now() - t0);
    }
    const med = (a: number[]) => [...a].sort((x, y) => x - y)[Math.floor(a.length / 2)];
    console.log(`RESULT ${m} load=${loadavg()[0].toFixed(1)} ` + [8, 32].map((b) => `b${b}: median ${(N / (med(times[b]) / 1000)).toFixed(1)} chunks/s best ${(N / (Math.min(...times[b]) / 1000)).toFixed(1)} (${times[b].map((t) => (t / 1000).toFixed(1)).join('/')} s)`).join(' | '));
    for (const e of es.values()) await e.close();
  }
}, 1_800_000);
