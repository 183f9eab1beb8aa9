import { combinedEvidence } from './calibration';
import { shouldRefuse } from './evidence';
import { extractiveAnswer } from './extractive';
import { groundingTaskProblem, runGrounding, type GroundingTask } from './grounding';
import { LexicalMemo } from './lexical-memo';

const sources = [
  { ref: 1, text: 'Wing structure. The wing root carries the bending load. Spars take shear.', score: 3, title: 'Wings' },
  { ref: 2, text: '尤金袋鼠分布在澳大利亚南部地区。它们体型较小。', score: 2, title: '尤金袋鼠' },
];
const task = (question: string, mode: GroundingTask['mode']): GroundingTask => ({ mode, question, sources, threshold: 0.45 });
const gateOf = (q: string) => shouldRefuse(q, sources.map((s) => ({ text: s.text, score: s.score })), 0.45);

describe('runGrounding', () => {
  it('gate: the gate only; answer: the gate, then the extractive answer unless refused; extract: the answer only', () => {
    for (const q of ['what does the wing root carry', '尤金袋鼠分布在哪些地区']) {
      expect(runGrounding(task(q, 'gate'))).toEqual({ gate: gateOf(q) });
      expect(runGrounding(task(q, 'answer'))).toEqual({ gate: gateOf(q), extractive: extractiveAnswer(q, sources) });
      expect(runGrounding(task(q, 'extract'))).toEqual({ extractive: extractiveAnswer(q, sources) });
    }
    const refused = runGrounding(task('capital of france', 'answer'));
    expect(refused.gate!.refuse).toBe(true);
    expect(refused.extractive).toBeUndefined();
    expect(runGrounding({ mode: 'answer', question: 'anything', sources: [], threshold: 0.45 })).toEqual({ gate: { refuse: true, evidence: 0 } });
  });

  it('gives the same result with a memo, cold and warm', () => {
    const memo = new LexicalMemo({ maxEntries: 100, maxChars: 100_000 });
    const q = 'what does the wing root carry';
    expect(runGrounding(task(q, 'answer'), memo)).toEqual(runGrounding(task(q, 'answer')));
    expect(runGrounding(task(q, 'answer'), memo)).toEqual(runGrounding(task(q, 'answer')));
    expect(memo.stats().hits).toBeGreaterThan(0);
  });
});

describe('groundingTaskProblem', () => {
  it('accepts a well-formed task and names what is wrong with a malformed one', () => {
    expect(groundingTaskProblem(task('q', 'gate'))).toBeNull();
    expect(groundingTaskProblem(null)).toMatch(/must be an object/);
    expect(groundingTaskProblem({ ...task('q', 'gate'), mode: 'all' })).toMatch(/mode must be gate, answer or extract/);
    expect(groundingTaskProblem({ ...task('q', 'gate'), question: 3 })).toMatch(/question must be a string/);
    expect(groundingTaskProblem({ ...task('q', 'gate'), threshold: Number.NaN })).toMatch(/threshold must be a finite number/);
    expect(groundingTaskProblem({ ...task('q', 'gate'), sources: 'x' })).toMatch(/sources must be an array/);
    expect(groundingTaskProblem({ ...task('q', 'gate'), sources: [{ ref: 1.5, text: 'a', score: 1 }] })).toMatch(/sources\[0\]\.ref must be an integer/);
    expect(groundingTaskProblem({ ...task('q', 'gate'), sources: [{ ref: 1, text: 'a', score: 1, title: 7 }] })).toMatch(/sources\[0\]\.title must be a string/);
  });
});

describe('runGrounding with per-index term weights', () => {
  it('passes the weights to the gate, and groundingTaskProblem checks them', () => {
    const q = 'what does the wing root carry';
    const termWeights = { wing: 1, root: 2, carry: 3 };
    const r = runGrounding({ ...task(q, 'gate'), termWeights, unseenWeight: 6 });
    expect(r.gate).toEqual(shouldRefuse(q, sources.map((s) => ({ text: s.text, score: s.score })), 0.45, { termWeights, unseenWeight: 6 }));
    expect(r.gate?.signals?.idf_coverage).toBeDefined();
    expect(groundingTaskProblem({ ...task(q, 'gate'), termWeights })).toBeNull();
    expect(groundingTaskProblem({ ...task(q, 'gate'), termWeights: [] })).toMatch(/termWeights/);
    expect(groundingTaskProblem({ ...task(q, 'gate'), termWeights: { wing: -1 } })).toMatch(/termWeights\["wing"\]/);
    expect(groundingTaskProblem({ ...task(q, 'gate'), unseenWeight: Number.NaN })).toMatch(/unseenWeight/);
    const calibration = { lexical: { q50: 0.1, q95: 0.4 }, dense: { q50: 0.5, q95: 0.6 }, target: 1.3 };
    expect(groundingTaskProblem({ ...task(q, 'gate'), termWeights, calibration, denseTop: 0.8 })).toBeNull();
    expect(groundingTaskProblem({ ...task(q, 'gate'), calibration: { lexical: {}, target: 1 } })).toMatch(/calibration/);
    expect(groundingTaskProblem({ ...task(q, 'gate'), denseTop: 'x' })).toMatch(/denseTop/);
    const calibrated = runGrounding({ ...task(q, 'gate'), threshold: 0.5, termWeights, calibration, denseTop: 0.8 });
    expect(calibrated.gate?.signals?.dense_top).toBe(0.8);
    expect(calibrated.gate?.evidence).toBeCloseTo(combinedEvidence({ lexical: calibrated.gate!.signals!.idf_coverage!, dense: 0.8 }, calibration));
  });
});
