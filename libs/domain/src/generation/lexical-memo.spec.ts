/**
 * The lexical memo must not change a single answer or evidence value: the gate is compared, with and without a memo
 * (a small one, so entries are evicted and re-analysed), against a verbatim copy of the implementation before the
 * memo (testing/evidence.v0.ts); the extractive answerer with a memo against itself without one (its algorithm has
 * changed since — concise answers, issue 15 — so its frozen v0 copy was retired); on candidate sets drawn from the dev corpora
 * (RAG_EVAL_DIR, default ../shared/eval; those suites are skipped when the data is absent) and on inline fixtures.
 */
import { existsSync, readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { evidenceScore, shouldRefuse } from './evidence';
import { extractiveAnswer, type ExtractiveSource } from './extractive';
import { LexicalMemo } from './lexical-memo';
import { evidenceScore as evidenceScoreV0, shouldRefuse as shouldRefuseV0 } from './testing/evidence.v0';

const dir = process.env['RAG_EVAL_DIR'] ?? resolve(process.cwd(), '../shared/eval');
const readJsonl = <T>(path: string): T[] =>
  (existsSync(path) ? readFileSync(path, 'utf8') : '')
    .split('\n')
    .filter((l) => l.trim())
    .map((l) => JSON.parse(l) as T);

interface Passage {
  _id: string;
  title: string;
  text: string;
}
interface CandidateSet {
  question: string;
  sources: ExtractiveSource[];
}

/** Up to `n` candidate sets: each question with its relevant passages (at most 3) and 2 others picked pseudo-randomly. */
function candidateSets(name: string, n: number): CandidateSet[] {
  const corpus = readJsonl<Passage>(resolve(dir, name, 'corpus.jsonl'));
  const byId = new Map(corpus.map((p) => [p._id, p]));
  const questions = readJsonl<{ _id: string; text: string }>(resolve(dir, name, 'queries.jsonl'));
  const qrels = resolve(dir, name, 'qrels', existsSync(resolve(dir, name, 'qrels', 'dev.tsv')) ? 'dev.tsv' : 'test.tsv');
  const relevant = new Map<string, string[]>();
  for (const line of (existsSync(qrels) ? readFileSync(qrels, 'utf8') : '').split('\n').slice(1)) {
    const [q, d] = line.split('\t');
    if (q && d) relevant.set(q, [...(relevant.get(q) ?? []), d]);
  }
  let seed = 12345;
  const rand = () => (seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648;
  const sets: CandidateSet[] = [];
  for (const [i, q] of questions.entries()) {
    if (sets.length >= n) break;
    const passages = (relevant.get(q._id) ?? []).slice(0, 3).flatMap((id) => byId.get(id) ?? []);
    for (let k = 0; k < 2 && corpus.length > 0; k++) passages.push(corpus[Math.floor(rand() * corpus.length)]!);
    if (passages.length === 0) continue;
    // Scores with ties (equal scores keep their order); every other set with titles.
    sets.push({
      question: q.text,
      sources: passages.map((p, r) => ({ ref: r + 1, text: p.text, score: Math.floor((10 - r) / 2), ...(i % 2 === 0 ? { title: p.title } : {}) })),
    });
  }
  return sets;
}

function expectSameAsBefore(sets: readonly CandidateSet[], memo: LexicalMemo): void {
  for (const { question, sources } of sets) {
    const texts = sources.map((s) => ({ text: s.text, score: s.score }));
    const before = shouldRefuseV0(question, texts, 0.5);
    expect(shouldRefuse(question, texts, 0.5)).toEqual(before);
    expect(shouldRefuse(question, texts, 0.5, memo)).toEqual(before);
    for (const s of sources) expect(evidenceScore(question, s.text, memo)).toBe(evidenceScoreV0(question, s.text));
    for (const opts of [{}, { maxSentences: 2, maxChars: 200 }]) {
      const answer = extractiveAnswer(question, sources, opts);
      expect(extractiveAnswer(question, sources, { ...opts, memo })).toEqual(answer);
    }
  }
}

const inline: CandidateSet[] = [
  {
    question: 'What does the root of the plant do?',
    sources: [
      { ref: 1, score: 2, title: 'Plant roots', text: 'Its root anchors the plant. It also absorbs water and minerals. Leaves make food.' },
      { ref: 2, score: 2, text: 'The plant grows toward light. Roots grow down.' },
      { ref: 3, score: 1, text: '' },
    ],
  },
  {
    question: '尤金袋鼠分布在哪些地区？',
    sources: [
      { ref: 1, score: 3, title: '尤金袋鼠', text: '尤金袋鼠是一种小型袋鼠。它分布在澳大利亚南部及西部的沿海地区。它们以草为食！' },
      { ref: 2, score: 1, text: 'Kangaroos live in Australia. 袋鼠是有袋类动物。' },
    ],
  },
  { question: 'the of and', sources: [{ ref: 1, score: 1, text: 'The of and.' }] },
  { question: 'aeroelastic models of heated aircraft', sources: [{ ref: 1, score: 1, text: 'Aeroelasticity of heated wings; e.g. 3.5 times the load. Models were tested.' }] },
];

describe('LexicalMemo', () => {
  it('gives the same gate and extractive results as the implementation before it (inline fixtures, twice, so the second pass hits)', () => {
    const memo = new LexicalMemo({ maxEntries: 100, maxChars: 1_000_000 });
    expectSameAsBefore(inline, memo);
    const afterFirst = memo.stats();
    expectSameAsBefore(inline, memo);
    expect(memo.stats().misses).toBe(afterFirst.misses);
    expect(memo.stats().hits).toBeGreaterThan(afterFirst.hits);
  });

  it('serves a repeated text from the memo and drops the least recently used beyond maxEntries', () => {
    const memo = new LexicalMemo({ maxEntries: 2, maxChars: 1000 });
    const a = memo.gate('alpha wings');
    expect(memo.gate('alpha wings')).toBe(a);
    memo.gate('beta');
    memo.gate('alpha wings'); // a is now the most recently used
    memo.gate('gamma'); // evicts beta
    expect(memo.stats()).toEqual({ hits: 2, misses: 3, entries: 2, chars: 'alpha wings'.length + 'gamma'.length });
    expect(memo.gate('alpha wings')).toBe(a);
    memo.gate('beta');
    expect(memo.stats().misses).toBe(4);
  });

  it('keeps the characters held within maxChars and does not keep a text longer than that', () => {
    const memo = new LexicalMemo({ maxEntries: 100, maxChars: 10 });
    memo.sentences('abcdef.');
    memo.sentences('ghijkl.');
    expect(memo.stats()).toMatchObject({ entries: 1, chars: 7 });
    const long = 'x'.repeat(11);
    expect(memo.context(long).tokens).toEqual(new Set(['x'.repeat(11)]));
    expect(memo.stats()).toMatchObject({ entries: 1, chars: 7 });
  });

  it('holds nothing with maxEntries 0', () => {
    const memo = new LexicalMemo({ maxEntries: 0, maxChars: 1000 });
    memo.gate('a b c');
    memo.gate('a b c');
    expect(memo.stats()).toEqual({ hits: 0, misses: 2, entries: 0, chars: 0 });
  });

  it('analyses each field of a text once (gate, sentences and context are separate misses, then hits)', () => {
    const memo = new LexicalMemo({ maxEntries: 10, maxChars: 1000 });
    memo.gate('Lift rises. Drag falls.');
    memo.sentences('Lift rises. Drag falls.');
    memo.context('Lift rises. Drag falls.');
    expect(memo.stats()).toMatchObject({ hits: 0, misses: 3, entries: 1 });
    expect(memo.sentences('Lift rises. Drag falls.').map((s) => s.text)).toEqual(['Lift rises.', 'Drag falls.']);
    expect(memo.stats()).toMatchObject({ hits: 1, misses: 3 });
  });
});

// 453 candidate sets in all: every Cranfield (113), Cranfield-zh (40) and CMRC-en (100) question, 200 CMRC ones.
for (const [name, n] of [['cranfield', 113], ['cranfield-zh', 40], ['cmrc2018-trial', 200], ['cmrc2018-trial-en', 100]] as const) {
  describe.skipIf(!existsSync(resolve(dir, name, 'corpus.jsonl')))(`LexicalMemo on ${name}`, () => {
    it(`gives the same gate and extractive results as before on ${n} candidate sets, with a memo small enough to evict`, () => {
      const sets = candidateSets(name, n);
      expect(sets.length).toBe(n);
      const memo = new LexicalMemo({ maxEntries: 64, maxChars: 200_000 });
      expectSameAsBefore(sets, memo);
      expectSameAsBefore(sets.slice(0, 30), memo);
      expect(memo.stats().hits).toBeGreaterThan(0);
      expect(memo.stats().entries).toBeLessThanOrEqual(64);
    });
  });
}
