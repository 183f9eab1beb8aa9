/**
 * Query latency of the embedded BM25 index on ~3,000 chunks (Cranfield abstracts cut into 90-word chunks,
 * 20% in another tenant, a third ACL-restricted), plain vs scoped vs filtered, side by side in one run.
 * Run: npx vitest bench --run libs/adapters/src/embedded-bm25
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type { Chunk, Filters, SearchScope } from '@rag/contracts';
import { afterAll, beforeAll, bench, describe } from 'vitest';
import { EmbeddedBm25KeywordIndex } from './embedded-bm25.adapter';

const cranfield = path.resolve(__dirname, '../../../../../shared/eval/cranfield');
const hasData = fs.existsSync(path.join(cranfield, 'corpus.jsonl'));

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bm25-bench-'));
const index = new EmbeddedBm25KeywordIndex({ dir, synchronous: 'NORMAL' });
let queries: string[] = [];

function readJsonl<T>(file: string): T[] {
  return fs
    .readFileSync(path.join(cranfield, file), 'utf8')
    .split('\n')
    .filter((l) => l.trim().length > 0)
    .map((l) => JSON.parse(l) as T);
}

beforeAll(async () => {
  if (!hasData) return;
  const chunks: Chunk[] = [];
  for (const d of readJsonl<{ _id: string; title: string; text: string }>('corpus.jsonl')) {
    const words = d.text.split(/\s+/);
    for (let i = 0, o = 0; i < words.length; i += 90, o++) {
      chunks.push({
        chunk_id: `c${d._id}#v1#${o}`,
        document_id: `c${d._id}`,
        tenant: o % 5 === 4 ? 't2' : 't1',
        version: 1,
        ordinal: o,
        kind: 'child',
        parent_id: null,
        acl: o % 3 === 0 ? ['g1'] : ['*'],
        title: d.title,
        heading_path: [],
        metadata: { year: 1950 + (Number(d._id) % 20), tags: ['a', Number(d._id) % 2 ? 'odd' : 'even'] },
        text: words.slice(i, i + 90).join(' '),
        token_count: 90,
      });
    }
  }
  for (let i = 0; i < chunks.length; i += 200) await index.upsert(chunks.slice(i, i + 200));
  queries = readJsonl<{ text: string }>('queries.jsonl').map((q) => q.text);
  console.log(`indexed ${chunks.length} chunks; ${queries.length} queries per iteration`);
});

afterAll(async () => {
  await index.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

async function runAll(scope: SearchScope, filters?: Filters): Promise<void> {
  for (const query of queries) await index.search({ query, k: 50, scope, filters });
}

describe.skipIf(!hasData)('embedded BM25, 113 Cranfield queries, k=50', () => {
  bench('tenant only', () => runAll({ tenant: 't1' }));
  bench('tenant + ACL', () => runAll({ tenant: 't1', principals: ['g2'] }));
  bench('tenant + range + string[] filter', () => runAll({ tenant: 't1' }, { year: { gte: 1955, lt: 1965 }, tags: 'odd' }));
  bench('tenant + ACL + in filters', () => runAll({ tenant: 't1', principals: ['g1'] }, { year: { in: [1951, 1952, 1960] }, tags: { in: ['odd', 'x'] } }));
});
