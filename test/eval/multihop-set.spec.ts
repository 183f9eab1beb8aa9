import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseQrels } from '@rag/domain';

/**
 * The two-hop set (issue 16 item 7) in test/fixtures/multihop/cmrc2018-2hop is what scripts/eval/multihop-build.js
 * makes of the CMRC trial data (rebuilt here when that data is present), and every question is a real two-hop one:
 * qrels name exactly its two passages, the first passage names the second's title, and the question names the first
 * passage but never the second.
 */
const ROOT = resolve(__dirname, '..', '..');
const SET = join(ROOT, 'test', 'fixtures', 'multihop', 'cmrc2018-2hop');
const readJsonl = <T>(f: string): T[] =>
  readFileSync(f, 'utf8')
    .split('\n')
    .filter((l) => l.trim())
    .map((l) => JSON.parse(l) as T);

interface Q {
  _id: string;
  text: string;
  hops: [string, string];
  bridge: string;
}
interface D {
  _id: string;
  title: string;
  text: string;
}

describe('multi-hop set cmrc2018-2hop', () => {
  const queries = readJsonl<Q>(join(SET, 'queries.jsonl'));
  const docs = new Map(readJsonl<D>(join(SET, 'corpus.jsonl')).map((d) => [d._id, d]));
  const qrels = parseQrels(readFileSync(join(SET, 'qrels', 'test.tsv'), 'utf8'));

  it('has two judged hops per question, the first naming the second, the question naming only the first', () => {
    expect(queries.length).toBeGreaterThanOrEqual(20);
    for (const q of queries) {
      const [a, b] = q.hops.map((id) => docs.get(id)!);
      expect(a && b).toBeTruthy();
      expect([...qrels.get(q._id)!.keys()].sort()).toEqual([...q.hops].sort());
      expect(b!.title).toBe(q.bridge);
      expect(a!.text).toContain(b!.title);
      expect(q.text).toContain(a!.title);
      expect(q.text).not.toContain(b!.title);
    }
  });

  const source = join(ROOT, '..', 'shared', 'eval', 'cmrc2018-trial');
  it.skipIf(!existsSync(join(source, 'corpus.jsonl')))('is what the builder makes of the CMRC trial data', () => {
    const out = mkdtempSync(join(tmpdir(), 'rag-mh-'));
    const r = spawnSync(process.execPath, [join(ROOT, 'scripts', 'eval', 'multihop-build.js'), '--from', source, '--out', out], { encoding: 'utf8' });
    expect(r.status, r.stderr).toBe(0);
    for (const f of ['queries.jsonl', 'qrels/test.tsv', 'corpus.jsonl']) expect(readFileSync(join(out, f), 'utf8')).toBe(readFileSync(join(SET, f), 'utf8'));
  });
});
