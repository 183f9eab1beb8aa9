import type { Degraded } from '@rag/contracts';
import { buildCorrectivePrompt, buildExpansionPrompt, buildHydePrompt, keywordQuery, parseCorrectiveQuery, parseExpansions } from '@rag/domain';
import { Logger } from '@rag/platform';
import type { Llm } from '@rag/ports';

export type QueryExpansion = 'none' | 'multi' | 'hyde' | 'multi+hyde';

export interface RewriteResult {
  /** Extra phrasings to search besides the original (which is always searched). */
  expansions: string[];
  /** A hypothetical answer passage to embed for dense search instead of the bare question (HyDE). */
  hyde?: string;
  degraded: Degraded[];
}

export interface CorrectiveRewrite {
  query: string;
  /** Who rewrote it: the LLM, or the non-LLM keyword normaliser (no LLM configured, or it failed). */
  by: 'llm' | 'normaliser';
  degraded: Degraded[];
}

/**
 * LLM query preprocessing, behind RAG_QUERY_EXPANSION: multi-query expansion and/or HyDE. Without an LLM, or
 * when it fails or times out, the original query is searched alone and `llm` is reported degraded.
 */
export class QueryRewriter {
  private readonly log = new Logger('query-rewriter');
  constructor(
    private readonly llm: Llm | null,
    private readonly opts: { expansion: QueryExpansion; count: number; timeoutMs: number },
  ) {}

  get active(): boolean {
    return this.opts.expansion !== 'none';
  }

  async rewrite(query: string, signal?: AbortSignal): Promise<RewriteResult> {
    if (!this.active) return { expansions: [], degraded: [] };
    if (!this.llm) return { expansions: [], degraded: ['llm'] };
    const llm = this.llm;
    const timeout = AbortSignal.timeout(this.opts.timeoutMs);
    const s = signal ? AbortSignal.any([signal, timeout]) : timeout;
    const wantMulti = this.opts.expansion === 'multi' || this.opts.expansion === 'multi+hyde';
    const wantHyde = this.opts.expansion === 'hyde' || this.opts.expansion === 'multi+hyde';
    const degraded: Degraded[] = [];
    const [multi, hyde] = await Promise.all([
      wantMulti
        ? llm
            .complete(buildExpansionPrompt(query, this.opts.count), { signal: s, temperature: 0.3, maxTokens: 200 })
            .then((r) => parseExpansions(r.text, query, this.opts.count))
            .catch((e: unknown) => {
              this.log.warn('query expansion failed; searching the original query only', { error: String(e) });
              degraded.push('llm');
              return [] as string[];
            })
        : Promise.resolve([] as string[]),
      wantHyde
        ? llm
            .complete(buildHydePrompt(query), { signal: s, temperature: 0.3, maxTokens: 200 })
            .then((r) => r.text.trim() || undefined)
            .catch((e: unknown) => {
              this.log.warn('HyDE failed; embedding the question itself', { error: String(e) });
              if (!degraded.includes('llm')) degraded.push('llm');
              return undefined;
            })
        : Promise.resolve(undefined),
    ]);
    return { expansions: multi, ...(hyde ? { hyde } : {}), degraded };
  }

  /**
   * The rewrite of the corrective retry (CRAG): one better search query from the LLM; without an LLM — or when it
   * fails, times out or returns nothing new — the non-LLM keyword normaliser (keywordQuery), `llm` degraded on failure.
   */
  async corrective(query: string, signal?: AbortSignal): Promise<CorrectiveRewrite> {
    const fallback = (degraded: Degraded[]): CorrectiveRewrite => ({ query: keywordQuery(query), by: 'normaliser', degraded });
    if (!this.llm) return fallback([]);
    const timeout = AbortSignal.timeout(this.opts.timeoutMs);
    const s = signal ? AbortSignal.any([signal, timeout]) : timeout;
    try {
      const r = await this.llm.complete(buildCorrectivePrompt(query), { signal: s, temperature: 0, maxTokens: 64 });
      const q = parseCorrectiveQuery(r.text, query);
      return q ? { query: q, by: 'llm', degraded: [] } : fallback([]);
    } catch (e) {
      if (signal?.aborted) throw signal.reason;
      this.log.warn('corrective rewrite failed; retrying with the keyword form of the query', { error: String(e) });
      return fallback(['llm']);
    }
  }
}
