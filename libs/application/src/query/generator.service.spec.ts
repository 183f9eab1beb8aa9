import type { ScoredChunk } from '@rag/contracts';
import { REFUSAL_MESSAGE, type GroundingTask } from '@rag/domain';
import type { Grounding, Llm } from '@rag/ports';
import { GeneratorService } from './generator.service';
import { InProcessGrounding } from './in-process-grounding';

const chunk = (id: string, text: string, score: number, parent?: string): ScoredChunk => ({
  chunk_id: `doc:${id}#v1#0`,
  document_id: `doc:${id}`,
  title: `Title ${id}`,
  text,
  score,
  heading_path: [],
  ...(parent !== undefined ? { parent_text: parent } : {}),
});

const sources = [
  chunk('a', 'The wing root carries the bending load.', 3, 'Wing structure. The wing root carries the bending load. Spars take shear.'),
  chunk('b', 'Aeroelastic models of heated aircraft must obey similarity laws.', 2),
  chunk('c', 'Unrelated text about boundary layers.', 1),
];

describe('GeneratorService lexical memo', () => {
  const base = { refusalThreshold: 0.45, llmTimeoutMs: 1000, maxSources: 5 };

  it('answers the same with and without the memo, and serves repeated sources from it', async () => {
    const withMemo = new GeneratorService(null, { ...base, lexicalMemo: { maxEntries: 100, maxChars: 100_000 } });
    const without = new GeneratorService(null, base);
    for (const q of ['what similarity laws must aeroelastic models of heated aircraft obey', 'what does the wing root carry', 'capital of france']) {
      const expected = await without.generate(q, sources);
      expect(await withMemo.generate(q, sources)).toEqual(expected);
    }
    const afterFirst = withMemo.memoStats()!;
    expect(afterFirst.entries).toBeGreaterThan(0);
    // The texts analysed: parent text of a, texts of b and c, the three titles, and the one statement the verifier
    // checked (the verifier's sources are the same texts as the gate's, so they share entries).
    expect(afterFirst.entries).toBe(7);
    const repeat = await withMemo.generate('what does the wing root carry', sources);
    expect(repeat.refused).toBe(false);
    const afterRepeat = withMemo.memoStats()!;
    // Every source text, parent text and title was analysed before: no new misses; the gate (3 sources), the
    // answerer's sentences (3), its title contexts (3) and the verifier's statement and cited source (2) are all
    // served from the memo.
    expect(repeat.statements).toHaveLength(1);
    expect(afterRepeat.misses).toBe(afterFirst.misses);
    expect(afterRepeat.hits - afterFirst.hits).toBe(11);
    expect(without.memoStats()).toBeNull();
  });

  it('keeps no memo with maxEntries 0', async () => {
    const g = new GeneratorService(null, { ...base, lexicalMemo: { maxEntries: 0, maxChars: 100_000 } });
    await g.generate('what does the wing root carry', sources);
    expect(g.memoStats()).toBeNull();
  });
});

describe('GeneratorService grounding', () => {
  const base = { refusalThreshold: 0.45, llmTimeoutMs: 1000, maxSources: 5 };
  const stalled: Grounding = { run: async () => ({ timedOut: true }), close: async () => {} };

  it('sends the gate and the extractive answer to its Grounding as one task, and answers as in process', async () => {
    const tasks: GroundingTask[] = [];
    const inner = new InProcessGrounding();
    const spy: Grounding = { run: (t) => (tasks.push(t), inner.run(t)), close: async () => {} };
    const q = 'what does the wing root carry';
    const r = await new GeneratorService(null, base, spy).generate(q, sources);
    expect(r).toEqual(await new GeneratorService(null, base).generate(q, sources));
    expect(r.refused).toBe(false);
    expect(tasks.map((t) => t.mode)).toEqual(['answer']);
    // the gate and the answerer read the parent text when there is one
    expect(tasks[0]!.sources.map((s) => s.text)).toEqual([sources[0]!.parent_text, sources[1]!.text, sources[2]!.text]);
  });

  it('with an LLM: the gate first, and the extractive answer only when the LLM fails', async () => {
    const tasks: string[] = [];
    const inner = new InProcessGrounding();
    const spy: Grounding = { run: (t) => (tasks.push(t.mode), inner.run(t)), close: async () => {} };
    const failing: Llm = {
      id: 'failing',
      async *stream() {
        throw new Error('llm down');
      },
    } as unknown as Llm;
    const r = await new GeneratorService(failing, base, spy).generate('what does the wing root carry', sources);
    expect(tasks).toEqual(['gate', 'extract']);
    expect(r.degraded).toEqual(['llm']);
    expect(r.answer).toBe((await new GeneratorService(null, base).generate('what does the wing root carry', sources)).answer);
  });

  it('a grounding task past its time limit gives a refusal, not an error or a hung call', async () => {
    const deltas: string[] = [];
    const r = await new GeneratorService(null, base, stalled).generate('what does the wing root carry', sources, (d) => deltas.push(d));
    expect(r).toMatchObject({ refused: true, answer: REFUSAL_MESSAGE, cited_refs: [], evidence: 0 });
    expect(deltas).toEqual([REFUSAL_MESSAGE]);
  });
});
