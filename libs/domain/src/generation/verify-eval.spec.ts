/**
 * Eval-style check of the verifier on the shared evaluation data (issue 15 item 3): extractive answers over each
 * question's judged passages, with a false statement swapped in — a sentence of an unrelated passage, citing the
 * answer's own source. Targets: ≥ 90 % of the injected statements flagged, ≤ 5 % of the original ones. Whole
 * datasets (the first 300 judged questions of each), a fixed seed; skipped when the data is absent (RAG_EVAL_DIR).
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { extractiveAnswer } from './extractive';
import { splitSentences } from './sentences';
import type { AnswerStatement } from './statements';
import { verifyStatements } from './verify';

const dir = process.env['RAG_EVAL_DIR'] ?? resolve(process.cwd(), '../shared/eval');
const readText = (path: string): string => (existsSync(path) ? readFileSync(path, 'utf8') : '');
const readJsonl = <T>(path: string): T[] =>
  readText(path)
    .split('\n')
    .filter((l) => l.trim())
    .map((l) => JSON.parse(l) as T);

interface Passage {
  _id: string;
  title: string;
  text: string;
}

/** A small LCG: the same injected sentences on every run. */
function seeded(seed: number): () => number {
  let s = seed;
  return () => (s = (s * 1103515245 + 12345) % 2147483648) / 2147483648;
}

function injectAndVerify(dataset: string) {
  const base = resolve(dir, dataset);
  const corpus = readJsonl<Passage>(resolve(base, 'corpus.jsonl'));
  const byId = new Map(corpus.map((d) => [d._id, d]));
  const qrelFile = readdirSync(resolve(base, 'qrels')).find((f) => f.endsWith('.tsv'))!;
  const judged = new Map<string, string[]>();
  for (const line of readText(resolve(base, 'qrels', qrelFile)).split('\n').slice(1)) {
    const [q, d, s] = line.split('\t');
    if (!q || !d || !(Number(s) > 0)) continue;
    judged.set(q, [...(judged.get(q) ?? []), d]);
  }
  const rnd = seeded(7);
  let original = 0;
  let originalFlagged = 0;
  let injected = 0;
  let injectedFlagged = 0;
  for (const q of readJsonl<{ _id: string; text: string }>(resolve(base, 'queries.jsonl')).slice(0, 300)) {
    const passages = (judged.get(q._id) ?? []).slice(0, 5).flatMap((id) => byId.get(id) ?? []);
    if (passages.length === 0) continue;
    const sources = passages.map((p, i) => ({ ref: i + 1, score: passages.length - i, title: p.title, text: p.text }));
    const answer = extractiveAnswer(q.text, sources);
    const statements: AnswerStatement[] = answer.sentences.map((s) => ({ text: s.text, source_ids: [s.ref] }));
    let other: Passage;
    do other = corpus[Math.floor(rnd() * corpus.length)]!;
    while (passages.some((p) => p._id === other._id));
    const sentences = splitSentences(other.text);
    const fake = sentences[Math.floor(rnd() * sentences.length)]!.text;
    // The false statement goes in at a random place, citing a source of the answer.
    const at = Math.floor(rnd() * (statements.length + 1));
    const withFake = [...statements.slice(0, at), { text: fake, source_ids: [statements[0]?.source_ids[0] ?? 1] }, ...statements.slice(at)];
    const v = verifyStatements(withFake, sources, { mode: 'mark' });
    v.statements.forEach((s, i) => {
      if (i === at) {
        injected++;
        if (!s.supported) injectedFlagged++;
      } else {
        original++;
        if (!s.supported) originalFlagged++;
      }
    });
  }
  return { original, injected, originalFlagged: originalFlagged / original, injectedFlagged: injectedFlagged / injected };
}

describe.skipIf(!existsSync(resolve(dir, 'cranfield/corpus.jsonl')))('verifier on cranfield (English)', () => {
  it('flags ≥ 90 % of injected false statements and ≤ 5 % of the answer’s own', () => {
    const r = injectAndVerify('cranfield');
    expect(r.injected).toBeGreaterThan(100);
    // Measured: 0 % of 430 original statements, 99.1 % of 113 injected ones flagged.
    expect(r.injectedFlagged).toBeGreaterThanOrEqual(0.9);
    expect(r.originalFlagged).toBeLessThanOrEqual(0.05);
  });
});

describe.skipIf(!existsSync(resolve(dir, 'cmrc2018-trial/corpus.jsonl')))('verifier on cmrc2018-trial (Chinese)', () => {
  it('flags ≥ 90 % of injected false statements and ≤ 5 % of the answer’s own', () => {
    const r = injectAndVerify('cmrc2018-trial');
    expect(r.injected).toBeGreaterThan(250);
    // Measured: 0 % of the original statements, 100 % of 300 injected ones flagged.
    expect(r.injectedFlagged).toBeGreaterThanOrEqual(0.9);
    expect(r.originalFlagged).toBeLessThanOrEqual(0.05);
  });

  it('the extractive answer leads with the gold answer for most questions (gold passage first)', async () => {
    const { answerContainsGold } = await import('../eval');
    const base = resolve(dir, 'cmrc2018-trial');
    const passages = new Map(readJsonl<Passage>(resolve(base, 'corpus.jsonl')).map((p) => [p._id, p]));
    const gold = new Map(
      readText(resolve(base, 'qrels/test.tsv'))
        .split('\n')
        .slice(1)
        .map((l) => l.split('\t'))
        .filter((c): c is [string, string, string] => c.length === 3)
        .map(([q, d]) => [q, d]),
    );
    let n = 0;
    let first = 0;
    for (const q of readJsonl<{ _id: string; text: string; answers?: string[] }>(resolve(base, 'queries.jsonl'))) {
      const p = passages.get(gold.get(q._id) ?? '');
      if (!p || !q.answers?.length) continue;
      n++;
      const a = extractiveAnswer(q.text, [{ ref: 1, score: 1, title: p.title, text: p.text }]);
      if (answerContainsGold(a.sentences[0]?.text ?? '', q.answers)) first++;
    }
    expect(n).toBeGreaterThan(900);
    expect(first / n).toBeGreaterThan(0.75);
  });
});
