import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type { Chunk } from '@rag/contracts';
import { EmbeddedBm25KeywordIndex } from './embedded-bm25.adapter';

it('latency', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bm25-lat-'));
  const s = new EmbeddedBm25KeywordIndex({ dir });
  const cran = '/work/shared/eval/cranfield';
  const corpus = fs.readFileSync(path.join(cran, 'corpus.jsonl'), 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l) as { _id: string; title: string; text: string });
  const chunks: Chunk[] = [];
  for (const d of corpus) {
    const words = d.text.split(/\s+/);
    for (let i = 0, o = 0; i < words.length; i += 90, o++) {
      chunks.push({ chunk_id: `c${d._id}#v1#${o}`, document_id: `c${d._id}`, tenant: o % 5 === 0 ? 't2' : 't1', version: 1, ordinal: o, kind: 'child', parent_id: null, acl: o % 3 === 0 ? ['g1'] : ['*'], title: d.title, heading_path: [], metadata: { year: 1950 + (Number(d._id) % 20), tags: ['a', Number(d._id) % 2 ? 'odd' : 'even'] }, text: words.slice(i, i + 90).join(' '), token_count: 45 });
    }
  }
  let t = performance.now();
  for (let i = 0; i < chunks.length; i += 100) await s.upsert(chunks.slice(i, i + 100));
  console.log('chunks', chunks.length, 'upsert ms', (performance.now() - t).toFixed(0));
  const queries = fs.readFileSync(path.join(cran, 'queries.jsonl'), 'utf8').split('\n').filter(Boolean).map((l) => (JSON.parse(l) as { text: string }).text);
  for (const [name, req] of [
    ['plain', {}],
    ['acl', { scope: { tenant: 't1', principals: ['g2'] } }],
    ['filters', { filters: { year: { gte: 1955, lt: 1965 }, tags: 'odd' } }],
    ['acl+filters+in', { scope: { tenant: 't1', principals: ['g1'] }, filters: { year: { in: [1951, 1952, 1960] }, tags: { in: ['odd', 'x'] } } }],
  ] as const) {
    for (let rep = 0; rep < 2; rep++) {
      const times: number[] = [];
      let n = 0;
      for (const q of queries) {
        const t0 = performance.now();
        const hits = await s.search({ query: q, k: 50, scope: { tenant: 't1' }, ...req });
        times.push(performance.now() - t0);
        n += hits.length;
      }
      times.sort((a, b) => a - b);
      if (rep === 1) console.log(name, 'mean', (times.reduce((a, b) => a + b, 0) / times.length).toFixed(2), 'p50', times[times.length >> 1]!.toFixed(2), 'p95', times[Math.floor(times.length * 0.95)]!.toFixed(2), 'avg hits', (n / queries.length).toFixed(1));
    }
  }
  await s.close();
  fs.rmSync(dir, { recursive: true, force: true });
});
