import { randomBytes } from 'node:crypto';
import type { Citation, Degraded, Filters, QueryAnswer, QueryMode, RetrievalResult, RetrieveAnswer, ScoredChunk, SearchMode, SearchScope } from '@rag/contracts';
import { balancedKeywordQuery, externalChunkId, externalDocumentId, internalDocumentIdFilters, keywordQuery, languageShare, normalizeQuery, refineTranslation, scriptLanguage, type QueryTranslation, reciprocalRankFusion, routeQuestion, validateFilterKeys } from '@rag/domain';
import { activeTraceId, AppError, inStage, Logger, setSpanAttributes, withDeadline } from '@rag/platform';
import type { Llm, QueryTranslator } from '@rag/ports';
import { AgentLoop } from './agent';
import { correctiveRetry, RefusalHold } from './corrective';
import type { GenerateCall, GenerationResult, QueryEmbeddingCall, RerankCall, RetrieveCall } from './query-path';
import type { QueryRewriter } from './query-rewriter';
import { round } from './retriever.service';

export interface QueryOptions {
  topK: number;
  candidates: number;
  deadlineMs: number;
  rrfK?: number;
  /** RAG_AGENT: `auto` routes queries without a mode (off: they are single-shot hybrid). Default off. */
  agent?: 'off' | 'auto';
  /** RAG_AGENT_MAX_STEPS (default 3, at most 5). */
  agentMaxSteps?: number;
  /** Time limit of one LLM call of the agent (RAG_LLM_TIMEOUT_MS). */
  agentTimeoutMs?: number;
  /** RAG_CORRECTIVE: the corrective retry on a weak-evidence refusal. Default off here; the services default it on. */
  corrective?: boolean;
}

export interface QueryRequest {
  question: string;
  top_k?: number;
  filters?: Filters;
  /** A search mode (single-shot), `agent` or `auto` (routed); see QueryModeSchema. */
  mode?: QueryMode;
  rerank?: boolean;
}

/** How a query is answered: single-shot in a search mode, or by the agent; `degraded` when agent was asked but cannot run. */
interface Route {
  kind: 'single' | 'agent';
  reason: string;
  searchMode: SearchMode;
  degraded: Degraded[];
}

/** The search mode of a query mode: `agent`/`auto` search hybrid when they go single-shot. */
function searchModeOf(mode: QueryMode | undefined): SearchMode {
  return mode === 'dense' || mode === 'keyword' || mode === 'hybrid' ? mode : 'hybrid';
}

/** The OpenTelemetry trace id of the active span (the request's trace), or a random one when tracing is off. */
export const newTraceId = (): string => activeTraceId() ?? randomBytes(16).toString('hex');

/** The gateway's query path: embed → retrieve (dense ∥ keyword, RRF) → rerank → generate, each under a deadline. */
export class QueryOrchestrator {
  private readonly log = new Logger('query');
  constructor(
    private readonly embedder: QueryEmbeddingCall,
    private readonly retriever: RetrieveCall,
    private readonly reranker: RerankCall,
    private readonly generator: GenerateCall,
    private readonly opts: QueryOptions,
    private readonly rewriter?: QueryRewriter,
    /** The LLM of the agent's planning calls (absent: `mode: "agent"` answers single-shot, `llm` degraded). */
    private readonly llm: Llm | null = null,
    /** Cross-lingual query translation (RAG_TRANSLATION=auto); null: off. See translatedRun. */
    private readonly translator: QueryTranslator | null = null,
  ) {}

  /** Which path a query takes (see Route). */
  private route(req: QueryRequest): Route {
    const mode: QueryMode = req.mode ?? (this.opts.agent === 'auto' ? 'auto' : 'hybrid');
    if (mode !== 'agent' && mode !== 'auto') return { kind: 'single', reason: 'mode', searchMode: mode, degraded: [] };
    const routed = mode === 'agent' ? { route: 'agent' as const, reason: 'requested' } : routeQuestion(req.question);
    if (routed.route === 'single') return { kind: 'single', reason: routed.reason, searchMode: 'hybrid', degraded: [] };
    // Asked for explicitly without an LLM: single-shot, and say so; routed there by `auto`: single-shot silently.
    if (!this.llm) return { kind: 'single', reason: 'no llm', searchMode: 'hybrid', degraded: mode === 'agent' ? ['llm'] : [] };
    return { kind: 'agent', reason: routed.reason, searchMode: 'hybrid', degraded: [] };
  }

  private checkFilters(filters?: Filters): void {
    const problems = validateFilterKeys(filters);
    if (problems.length) throw new AppError('invalid_request', problems.join('; '));
  }

  /** Retrieval (and optional rerank) only. */
  async retrieve(req: QueryRequest, scope: SearchScope, traceId = newTraceId(), how: { expand?: boolean } = {}): Promise<RetrieveAnswer & { chunks: ScoredChunk[] }> {
    this.checkFilters(req.filters);
    // Document ids are scoped by tenant: `document_id` filters name the caller's external ids (libs/domain document-id).
    const filters = internalDocumentIdFilters(scope.tenant, req.filters);
    const started = performance.now();
    const timings: Record<string, number> = {};
    const degraded = new Set<Degraded>();
    const topK = req.top_k ?? this.opts.topK;
    const mode = searchModeOf(req.mode);
    const query = normalizeQuery(req.question);

    const wantRerank = req.rerank ?? this.reranker.available;
    const k = wantRerank ? Math.max(topK, this.opts.candidates) : topK;

    // Optional LLM preprocessing: extra phrasings (multi-query) and a hypothetical passage for dense search (HyDE).
    const variants: { query: string; denseText: string }[] = [{ query, denseText: query }];
    // Not for the agent's hops and the corrective retry: they bring their own rewrites.
    if (this.rewriter?.active && how.expand !== false) {
      const t0 = performance.now();
      const rw = await this.rewriter.rewrite(query);
      rw.degraded.forEach((d) => degraded.add(d));
      if (rw.hyde) variants[0]!.denseText = rw.hyde;
      for (const q of rw.expansions) variants.push({ query: q, denseText: q });
      timings.rewrite = round(performance.now() - t0);
    }

    const runs = await Promise.all(
      variants.map(async (v, i) => {
        let vector: Float32Array | undefined;
        if (mode !== 'keyword') {
          const t0 = performance.now();
          try {
            vector = await withDeadline('query embedding', this.opts.deadlineMs, (signal) => this.embedder.embedQuery(v.denseText, signal));
          } catch (e) {
            this.log.warn('query embedding failed; dense search skipped', { error: String(e), trace_id: traceId });
            degraded.add('dense');
          }
          if (i === 0) timings.embed = round(performance.now() - t0);
        }
        return withDeadline('retrieval', this.opts.deadlineMs, (signal) =>
          this.retriever.retrieve({ query: v.query, vector, top_k: k, candidates: this.opts.candidates, filters, mode, scope }, signal),
        );
      }),
    );
    // Cross-lingual: the translated question as one more variant when what the question found is mostly in the other
    // language (see translatedRun); its weight in the fusion is that share, the original variants' the rest.
    const weights = runs.map(() => 1);
    if (this.translator && how.expand !== false) {
      const t0 = performance.now();
      const extra = await this.translatedRun(query, runs[0]!, mode, k, filters, scope, degraded, traceId);
      if (extra) {
        const asked = 1 - extra.share;
        weights.fill(asked);
        runs.push(extra.run);
        weights.push(extra.share);
        // The question's own words found in the other language's chunks — names and codes written in Latin letters
        // inside Chinese text (kahikatea, AGG01, WTA), numbers — are evidence the dictionary translation lacks, but at
        // a share near 1 the question's run weighs ≈ 0. Its keyword hits (only real matches, unlike its dense list,
        // which across scripts is noise) keep at least ORIGINAL_KEYWORD_WEIGHT. Measured in the README (Cross-lingual).
        const floor = ORIGINAL_KEYWORD_WEIGHT - asked;
        if (floor > 0 && mode === 'keyword') weights[0] = ORIGINAL_KEYWORD_WEIGHT;
        else if (floor > 0 && mode === 'hybrid') {
          const own = await withDeadline('retrieval', this.opts.deadlineMs, (signal) =>
            this.retriever.retrieve({ query, top_k: k, candidates: this.opts.candidates, filters, mode: 'keyword', scope }, signal),
          );
          if (own.results.length) {
            runs.push(own);
            weights.push(floor);
          }
        }
        timings.translate = round(performance.now() - t0);
      }
    }
    const retrieved = runs.length === 1 ? runs[0]! : fuseRuns(runs, this.opts.rrfK ?? 60, k, weights);
    Object.assign(timings, retrieved.timings_ms);
    retrieved.degraded.forEach((d) => degraded.add(d));
    let chunks = retrieved.results;
    if (wantRerank) {
      const t0 = performance.now();
      try {
        const r = await withDeadline('rerank', this.opts.deadlineMs, (signal) => this.reranker.rerank(query, chunks, topK, signal));
        chunks = r.results;
        r.degraded.forEach((d) => degraded.add(d));
      } catch (e) {
        this.log.warn('rerank failed; keeping the fused order', { error: String(e), trace_id: traceId });
        degraded.add('reranker');
      }
      timings.rerank = round(performance.now() - t0);
    }
    chunks = chunks.slice(0, topK);
    timings.total = round(performance.now() - started);
    return {
      results: chunks.map((c) => ({ ...externalIds(scope.tenant, c), title: c.title, text: c.text, score: c.score })),
      chunks,
      degraded: [...degraded],
      timings_ms: timings,
      trace_id: traceId,
    };
  }

  /**
   * The translated question's retrieval, when it can help: the question's results are checked for the share written in
   * the other language (a Chinese question over English documents finds nothing but English chunks — dense scores of
   * the script-routed pair are 0 across scripts, keyword search matches no word); at a share of at least
   * TRANSLATE_MIN_SHARE the translation (dictionary keywords, libs/domain translation) is searched too, and its run
   * is fused with the share as its weight. A question whose results are in its own language — every monolingual
   * index — is not translated at all, so monolingual ranking is unchanged (issue 15 item 4 asked for ≤ 2 % loss;
   * always-on translation with equal RRF weights would interleave the translation's hits into every answer).
   * Deviation from "always add the translated variant": the share decides, measured in the README (Cross-lingual).
   * The translation is searched twice when its first hits narrow its word senses (refineTranslation, below).
   * A translator that is not ready (dictionary loading) or fails leaves the question untranslated.
   */
  private async translatedRun(
    query: string,
    first: RetrievalResult,
    mode: SearchMode,
    k: number,
    filters: Filters | undefined,
    scope: SearchScope,
    degraded: Set<Degraded>,
    traceId: string,
  ): Promise<{ run: RetrievalResult; share: number } | undefined> {
    const texts = first.results.map((c) => c.parent_text ?? c.text);
    const own = scriptLanguage(query);
    // Nothing found (keyword mode over an index in the other language): all there is, is in the other language.
    const share = texts.length === 0 ? 1 : 1 - languageShare(texts, own);
    if (share < TRANSLATE_MIN_SHARE) return undefined;
    let translation;
    try {
      translation = await this.translator!.translate(query);
    } catch (e) {
      this.log.warn('query translation failed; searching untranslated', { error: String(e), trace_id: traceId });
      return undefined;
    }
    if (!translation || translation.target === own) return undefined;
    setSpanAttributes({ 'rag.translation.target': translation.target, 'rag.translation.share': share });
    const search = async (t: QueryTranslation): Promise<RetrievalResult> => {
      let vector: Float32Array | undefined;
      if (mode !== 'keyword') {
        try {
          vector = await withDeadline('query embedding', this.opts.deadlineMs, (signal) => this.embedder.embedQuery(t.text, signal));
        } catch (e) {
          this.log.warn('query embedding of the translation failed; its dense search skipped', { error: String(e), trace_id: traceId });
          degraded.add('dense');
        }
      }
      return withDeadline('retrieval', this.opts.deadlineMs, (signal) =>
        this.retriever.retrieve({ query: balancedKeywordQuery(t), vector, top_k: k, candidates: this.opts.candidates, filters, mode, scope }, signal),
      );
    };
    let run = await search(translation);
    // The dictionary lists a word's senses in no order of use: the translation's first hits tell which of them this
    // corpus writes (refineTranslation), and the narrowed translation is searched instead (measured in the README,
    // Cross-lingual: cranfield-zh nDCG@10 0.280 → 0.311, cmrc2018-trial-en 0.571 → 0.610; fusing both runs instead
    // gained less, a second round little).
    const refined = refineTranslation(translation, run.results.slice(0, REFINE_FROM_TOP).map((c) => c.parent_text ?? c.text));
    if (refined) {
      setSpanAttributes({ 'rag.translation.refined': true });
      run = await search(refined);
    }
    return { run, share };
  }

  /** Retrieval then a cited answer (or a refusal); `onDelta` receives the answer text as it is produced. */
  answer(req: QueryRequest, scope: SearchScope, onDelta?: (t: string) => void, traceId = newTraceId()): Promise<QueryAnswer> {
    const attributes = {
      'rag.tenant': scope.tenant,
      'rag.mode': req.mode ?? 'hybrid',
      'rag.top_k': req.top_k ?? this.opts.topK,
      'rag.rerank': req.rerank ?? this.reranker.available,
      'rag.filters': Object.keys(req.filters ?? {}).join(','),
    };
    return inStage('query', attributes, async () => {
      const a = await this.answerInSpan(req, scope, onDelta, traceId);
      setSpanAttributes({ 'rag.refused': a.refused, 'rag.citations': a.citations.length, 'rag.degraded': a.degraded.join(',') });
      return a;
    });
  }

  private async answerInSpan(req: QueryRequest, scope: SearchScope, onDelta: ((t: string) => void) | undefined, traceId: string): Promise<QueryAnswer> {
    const started = performance.now();
    const route = this.route(req);
    setSpanAttributes({ 'rag.route': route.kind, 'rag.route.reason': route.reason });
    const { r, gen, timings } = route.kind === 'agent' ? await this.agentPath(req, scope, onDelta, traceId) : await this.singleShot(req, route, scope, onDelta, traceId);
    r.degraded.push(...route.degraded);
    timings.total = round(performance.now() - started);
    const citations: Citation[] = gen.cited_refs
      .map((ref) => ({ ref, c: r.chunks[ref - 1] }))
      .filter((x): x is { ref: number; c: ScoredChunk } => x.c !== undefined)
      .map(({ ref, c }) => ({
        ref,
        ...externalIds(scope.tenant, c),
        title: c.title,
        text: c.text,
        score: c.score,
        ...(c.source_url ? { source_url: c.source_url } : {}),
        // The section the chunk sits in (the console shows it with the cited text).
        ...(c.heading_path?.length ? { heading_path: c.heading_path } : {}),
        // Contextual retrieval: the LLM-written context the chunk was indexed with.
        ...(c.context ? { context: c.context } : {}),
      }));
    return {
      answer: gen.answer,
      refused: gen.refused,
      citations,
      statements: gen.statements.map((s) => ({ text: s.text, source_ids: [...s.source_ids], support: s.support, supported: s.supported })),
      degraded: [...new Set([...r.degraded, ...gen.degraded])],
      timings_ms: timings,
      trace_id: traceId,
    };
  }

  /**
   * Today's path: one retrieval, one answer. With RAG_CORRECTIVE on, a refusal for weak evidence (nothing but the
   * refusal was produced: the gate refused, not an LLM that streamed an answer) gets the corrective retry once.
   */
  private async singleShot(req: QueryRequest, route: Route, scope: SearchScope, onDelta: ((t: string) => void) | undefined, traceId: string): Promise<PathResult> {
    const question = normalizeQuery(req.question);
    const r = await this.retrieve({ ...req, mode: route.searchMode }, scope, traceId);
    const t0 = performance.now();
    const hold = this.opts.corrective ? new RefusalHold(onDelta) : undefined;
    const gen = await this.generator.generate(question, r.chunks, hold ? hold.delta : onDelta);
    const timings: Record<string, number> = { ...r.timings_ms, generate: round(performance.now() - t0) };
    if (!hold || !gen.refused || !hold.onlyRefusal) {
      hold?.flush();
      return { r, gen, timings };
    }
    const topK = req.top_k ?? this.opts.topK;
    const retry = await correctiveRetry(
      question,
      route.searchMode,
      { topK, rrfK: this.opts.rrfK },
      {
        rewrite: (q) => (this.rewriter ? this.rewriter.corrective(q) : Promise.resolve({ query: keywordQuery(q), by: 'normaliser' as const, degraded: [] })),
        retrieve: (q, mode) => this.retrieve({ ...req, question: q, mode }, scope, traceId, { expand: false }),
        generate: (q, chunks, d) => this.generator.generate(q, chunks, d),
      },
      onDelta,
    );
    this.log.info('corrective retry', { trace_id: traceId, by: retry.by, refused: retry.gen.refused });
    return {
      r: { chunks: retry.chunks, degraded: [...new Set([...r.degraded, ...retry.degraded])] },
      gen: retry.gen,
      timings: { ...timings, ...retry.timings },
    };
  }

  /** The agent (mode "agent", or routed by "auto"): up to RAG_AGENT_MAX_STEPS hops, then one answer from all of them. */
  private async agentPath(req: QueryRequest, scope: SearchScope, onDelta: ((t: string) => void) | undefined, traceId: string): Promise<PathResult> {
    const question = normalizeQuery(req.question);
    this.checkFilters(req.filters);
    const loop = new AgentLoop(this.llm!, {
      maxSteps: this.opts.agentMaxSteps ?? 3,
      timeoutMs: this.opts.agentTimeoutMs ?? this.opts.deadlineMs,
      topK: req.top_k ?? this.opts.topK,
      rrfK: this.opts.rrfK,
    });
    const run = await loop.run(question, req.filters, scope.tenant, async (s) => {
      const r = await this.retrieve({ question: s.query, mode: s.mode, filters: s.filters, top_k: req.top_k, rerank: req.rerank }, scope, traceId, { expand: false });
      return { chunks: r.chunks, degraded: r.degraded };
    });
    this.log.info('agent run', { trace_id: traceId, hops: run.hops.length, stop: run.stop, tools: run.hops.map((h) => h.tool ?? 'none').join(',') });
    const t0 = performance.now();
    const gen = await this.generator.generate(question, run.evidence, onDelta);
    return { r: { chunks: run.evidence, degraded: run.degraded }, gen, timings: { ...run.timings, generate: round(performance.now() - t0) } };
  }
}

/** What an answer path found and generated, for answerInSpan to turn into the QueryAnswer. */
interface PathResult {
  r: { chunks: ScoredChunk[]; degraded: Degraded[] };
  gen: GenerationResult;
  timings: Record<string, number>;
}

/** A chunk's document and chunk ids as the caller's tenant knows them (the tenant qualifier stripped). */
function externalIds(tenant: string, c: { document_id: string; chunk_id: string }): { document_id: string; chunk_id: string } {
  return { document_id: externalDocumentId(tenant, c.document_id) ?? c.document_id, chunk_id: externalChunkId(tenant, c.chunk_id) };
}

/**
 * Share of a question's results in the other language from which its translation is searched too (see
 * QueryOrchestrator.translatedRun): more than a quarter of what it found is in the language it was not asked in.
 */
export const TRANSLATE_MIN_SHARE = 0.25;
/**
 * Least RRF weight of a translated question's own keyword hits (see QueryOrchestrator.retrieve): tried 0.1–0.6 on
 * cmrc2018-trial-en (nDCG@10 0.610 → 0.613 / 0.616 / 0.630 / 0.612 / 0.601 at 0.1 / 0.2 / 0.3 / 0.45 / 0.6);
 * cranfield-zh (Chinese questions over English abstracts: no shared words) does not move.
 */
export const ORIGINAL_KEYWORD_WEIGHT = 0.3;
/** The translation's hits whose text narrows its word senses (refineTranslation): the first page a user would read. */
const REFINE_FROM_TOP = 5;

/** Fuses the results of several query variants with (weighted) RRF over chunk ids (the original query's run first). */
function fuseRuns(runs: RetrievalResult[], rrfK: number, limit: number, weights?: readonly number[]): RetrievalResult {
  const byId = new Map<string, ScoredChunk>();
  for (const r of runs) for (const c of r.results) if (!byId.has(c.chunk_id)) byId.set(c.chunk_id, c);
  const fused = reciprocalRankFusion(
    runs.map((r, i) => ({ name: `q${i}`, weight: weights?.[i] ?? 1, hits: r.results.map((c) => ({ id: c.chunk_id, score: c.score })) })),
    { k: rrfK, limit },
  );
  const timings: Record<string, number> = {};
  for (const r of runs) for (const [stage, ms] of Object.entries(r.timings_ms)) timings[stage] = Math.max(timings[stage] ?? 0, ms);
  return {
    results: fused.map((f) => ({ ...byId.get(f.id)!, score: f.score })),
    degraded: [...new Set(runs.flatMap((r) => r.degraded))],
    timings_ms: timings,
  };
}
