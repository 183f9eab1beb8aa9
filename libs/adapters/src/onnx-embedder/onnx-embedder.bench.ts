/**
 * Embedding throughput on this machine's CPU: `npx vitest bench --run libs/adapters/src/onnx-embedder`.
 * One op embeds CHUNKS real passages (Cranfield for English, CMRC 2018 for Chinese); chunks/s = hz × CHUNKS.
 * Batch sizes 8 and 32 run side by side in one process, so their ratio is meaningful on a noisy host.
 */
import { existsSync, readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { bench, describe } from 'vitest';
import { OnnxEmbedder } from './onnx-embedder.adapter';
import { REPO_ROOT, TEST_MODELS_DIR, ensureTestModels } from './test-models';

const CHUNKS = 64;
const EVAL = resolve(REPO_ROOT, '../shared/eval');

function passages(dataset: string): string[] {
  const file = resolve(EVAL, dataset, 'corpus.jsonl');
  if (!existsSync(file)) return Array.from({ length: CHUNKS }, (_, i) => `synthetic passage ${i} `.repeat(40));
  return readFileSync(file, 'utf8')
    .split('\n')
    .filter(Boolean)
    .slice(0, CHUNKS)
    .map((l) => (JSON.parse(l) as { text: string }).text);
}

const cases: Array<{ model: string; dataset: string }> = [
  { model: 'all-minilm-l6-v2', dataset: 'cranfield' },
  { model: 'all-minilm-l6-v2-q', dataset: 'cranfield' },
  { model: 'bge-small-en-v1.5-q', dataset: 'cranfield' },
  { model: 'bge-small-zh-v1.5', dataset: 'cmrc2018-trial' },
];

ensureTestModels(cases.map((c) => c.model));

for (const { model, dataset } of cases) {
  describe(`${model} on ${CHUNKS} ${dataset} passages`, async () => {
    const texts = passages(dataset);
    const embedders = new Map<number, OnnxEmbedder>();
    for (const batchSize of [8, 32]) {
      embedders.set(batchSize, await OnnxEmbedder.create({ modelsDir: TEST_MODELS_DIR, name: model, batchSize }));
    }
    for (const [batchSize, e] of embedders) {
      bench(`batch ${batchSize}`, async () => {
        await e.embed(texts, 'passage');
      }, { iterations: 3, warmupIterations: 1, time: 0, warmupTime: 0, throws: true });
    }
  });
}
