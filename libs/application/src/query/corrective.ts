import type { Degraded, ScoredChunk, SearchMode } from '@rag/contracts';
import { keywordQuery, REFUSAL_MESSAGE } from '@rag/domain';
import { inStage, setSpanAttributes } from '@rag/platform';
import { fuseChunks } from './agent';
import type { GenerationResult } from './query-path';
import type { CorrectiveRewrite } from './query-rewriter';
import { round } from './retriever.service';

/**
 * Holds back the streamed text of a first answer attempt while it could still be the gate's refusal, so that a
 * corrective retry does not stream "I cannot answer…" before the real answer. Text that stops matching the refusal
 * message is passed on at once (a streamed LLM answer is delayed by at most its first few characters).
 */
export class RefusalHold {
  private held = '';
  private passing = false;
  constructor(private readonly onDelta?: (t: string) => void) {}

  readonly delta = (t: string): void => {
    if (this.passing) return this.onDelta?.(t);
    this.held += t;
    if (!REFUSAL_MESSAGE.startsWith(this.held)) {
      this.passing = true;
      const h = this.held;
      this.held = '';
      this.onDelta?.(h);
    }
  };

  /** Nothing but (a part of) the refusal message was produced: a retry may still answer. */
  get onlyRefusal(): boolean {
    return !this.passing;
  }

  /** Sends what is held (no retry will follow). */
  flush(): void {
    if (this.held) this.onDelta?.(this.held);
    this.held = '';
    this.passing = true;
  }
}

export interface CorrectiveDeps {
  rewrite(query: string): Promise<CorrectiveRewrite>;
  retrieve(query: string, mode: SearchMode): Promise<{ chunks: ScoredChunk[]; degraded: Degraded[]; timings_ms: Record<string, number> }>;
  generate(question: string, chunks: ScoredChunk[], onDelta?: (t: string) => void): Promise<GenerationResult>;
}

export interface CorrectiveOutcome {
  chunks: ScoredChunk[];
  gen: GenerationResult;
  degraded: Degraded[];
  timings: Record<string, number>;
  rewritten: string;
  by: CorrectiveRewrite['by'];
}

/**
 * The corrective retry (CRAG, issue 16 item 4), run once when the generator refused for weak evidence: the question
 * rewritten (LLM, or the non-LLM keyword normaliser), searched in the request's mode and keyword-only in parallel
 * (one search when the mode is keyword already), the two lists fused (RRF) and answered again — gated against the
 * ORIGINAL question, so the evidence must support what was asked, not the rewrite. Still weak: the refusal stands.
 * `corrective` is always in `degraded`; timings: corrective_rewrite, corrective_retrieve, corrective_generate.
 */
export async function correctiveRetry(
  question: string,
  mode: SearchMode,
  opts: { topK: number; rrfK?: number },
  deps: CorrectiveDeps,
  onDelta?: (t: string) => void,
): Promise<CorrectiveOutcome> {
  return inStage('corrective', { 'rag.mode': mode }, async () => {
    const timings: Record<string, number> = {};
    const degraded = new Set<Degraded>(['corrective']);
    let t0 = performance.now();
    const rw = await deps.rewrite(question).catch((): CorrectiveRewrite => ({ query: keywordQuery(question), by: 'normaliser', degraded: ['llm'] }));
    rw.degraded.forEach((d) => degraded.add(d));
    timings.corrective_rewrite = round(performance.now() - t0);
    t0 = performance.now();
    const modes: SearchMode[] = mode === 'keyword' ? ['keyword'] : [mode, 'keyword'];
    const runs = await Promise.all(modes.map((m) => deps.retrieve(rw.query, m)));
    runs.forEach((r) => r.degraded.forEach((d) => degraded.add(d)));
    const chunks = fuseChunks(
      runs.map((r) => r.chunks),
      opts.rrfK ?? 60,
      opts.topK,
    );
    timings.corrective_retrieve = round(performance.now() - t0);
    t0 = performance.now();
    const gen = await deps.generate(question, chunks, onDelta);
    gen.degraded.forEach((d) => degraded.add(d));
    timings.corrective_generate = round(performance.now() - t0);
    setSpanAttributes({ 'rag.corrective.by': rw.by, 'rag.corrective.refused': gen.refused, 'rag.corrective.sources': chunks.length });
    return { chunks, gen, degraded: [...degraded], timings, rewritten: rw.query, by: rw.by };
  });
}
