import type { Degraded, ScoredChunk } from '@rag/contracts';
import { buildAnswerPrompt, extractiveAnswer, isRefusalAnswer, LexicalMemo, parseCitations, REFUSAL_MESSAGE, shouldRefuse, type LexicalMemoOptions } from '@rag/domain';
import { inStage, Logger, setSpanAttributes } from '@rag/platform';
import type { Llm } from '@rag/ports';
import type { GenerateCall, GenerationResult } from './query-path';

export interface GeneratorOptions {
  /** Evidence under this threshold → refusal. */
  refusalThreshold: number;
  llmTimeoutMs: number;
  /** Sources handed to the answerer. */
  maxSources: number;
  /**
   * Memo of the sources' text analysis shared by the gate and the extractive answerer across queries (results are
   * identical with or without; see LexicalMemo). Absent: no memo.
   */
  lexicalMemo?: LexicalMemoOptions;
}

/**
 * Answers only from the numbered sources: a relevance gate first (refuse when the evidence is too weak), then the
 * LLM when one is configured (streamed, with a timeout), else — or when the LLM fails — the extractive answerer.
 */
export class GeneratorService implements GenerateCall {
  private readonly log = new Logger('generator');
  private readonly memo: LexicalMemo | undefined;
  constructor(
    private readonly llm: Llm | null,
    private readonly opts: GeneratorOptions,
  ) {
    this.memo = opts.lexicalMemo && opts.lexicalMemo.maxEntries > 0 ? new LexicalMemo(opts.lexicalMemo) : undefined;
  }

  /** Hits, misses and size of the text-analysis memo (null without one). */
  memoStats() {
    return this.memo?.stats() ?? null;
  }

  generate(question: string, all: ScoredChunk[], onDelta?: (t: string) => void, signal?: AbortSignal): Promise<GenerationResult> {
    const attributes = { 'rag.sources': Math.min(all.length, this.opts.maxSources), 'rag.llm.model': this.llm?.id ?? 'extractive' };
    return inStage('generate', attributes, async () => {
      const r = await this.answer(question, all, onDelta, signal);
      setSpanAttributes({ 'rag.refused': r.refused, 'rag.citations': r.cited_refs.length, 'rag.evidence': r.evidence, 'rag.degraded': r.degraded.join(',') });
      return r;
    });
  }

  private async answer(question: string, all: ScoredChunk[], onDelta?: (t: string) => void, signal?: AbortSignal): Promise<GenerationResult> {
    const sources = all.slice(0, this.opts.maxSources);
    const context = (s: ScoredChunk) => s.parent_text ?? s.text;
    const gate = shouldRefuse(
      question,
      sources.map((s) => ({ text: context(s), score: s.score })),
      this.opts.refusalThreshold,
      this.memo,
    );
    if (sources.length === 0 || gate.refuse) {
      onDelta?.(REFUSAL_MESSAGE);
      return { answer: REFUSAL_MESSAGE, refused: true, cited_refs: [], degraded: [], evidence: gate.evidence };
    }
    const degraded: Degraded[] = [];
    if (this.llm) {
      try {
        const messages = buildAnswerPrompt(
          question,
          sources.map((s, i) => ({ ref: i + 1, title: s.title, text: context(s) })),
        );
        const timeout = AbortSignal.timeout(this.opts.llmTimeoutMs);
        const combined = signal ? AbortSignal.any([signal, timeout]) : timeout;
        let answer = '';
        for await (const delta of this.llm.stream(messages, { signal: combined, temperature: 0 })) {
          answer += delta;
          onDelta?.(delta);
        }
        answer = answer.trim();
        const refused = answer.length === 0 || isRefusalAnswer(answer);
        return {
          answer: refused ? REFUSAL_MESSAGE : answer,
          refused,
          cited_refs: refused ? [] : parseCitations(answer, sources.length),
          degraded,
          evidence: gate.evidence,
        };
      } catch (e) {
        this.log.warn('LLM failed; answering extractively', { error: String(e) });
        degraded.push('llm');
      }
    }
    const ex = extractiveAnswer(
      question,
      sources.map((s, i) => ({ ref: i + 1, text: context(s), score: s.score, title: s.title })),
      { memo: this.memo },
    );
    onDelta?.(ex.answer);
    return { answer: ex.answer, refused: false, cited_refs: ex.citedRefs, degraded, evidence: gate.evidence };
  }
}
