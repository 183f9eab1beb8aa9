import { randomBytes } from 'node:crypto';
import type { Citation, Degraded, Filters, QueryAnswer, RetrievalResult, RetrieveAnswer, ScoredChunk, SearchMode, SearchScope } from '@rag/contracts';
import { externalChunkId, externalDocumentId, internalDocumentIdFilters, normalizeQuery, reciprocalRankFusion, validateFilterKeys } from '@rag/domain';
import { activeTraceId, AppError, inStage, Logger, setSpanAttributes, withDeadline } from '@rag/platform';
import type { GenerateCall, QueryEmbeddingCall, RerankCall, RetrieveCall } from './query-path';
import type { QueryRewriter } from './query-rewriter';
import { round } from './retriever.service';

export interface QueryOptions {
  topK: number;
  candidates: number;
  deadlineMs: number;
  rrfK?: number;
}

export interface QueryRequest {
  question: string;
  top_k?: number;
  filters?: Filters;
  mode?: SearchMode;
  rerank?: boolean;
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
  ) {}

  private checkFilters(filters?: Filters): void {
    const problems = validateFilterKeys(filters);
    if (problems.length) throw new AppError('invalid_request', problems.join('; '));
  }

  /** Retrieval (and optional rerank) only. */
  async retrieve(req: QueryRequest, scope: SearchScope, traceId = newTraceId()): Promise<RetrieveAnswer & { chunks: ScoredChunk[] }> {
    this.checkFilters(req.filters);
    // Document ids are scoped by tenant: `document_id` filters name the caller's external ids (libs/domain document-id).
    const filters = internalDocumentIdFilters(scope.tenant, req.filters);
    const started = performance.now();
    const timings: Record<string, number> = {};
    const degraded = new Set<Degraded>();
    const topK = req.top_k ?? this.opts.topK;
    const mode = req.mode ?? 'hybrid';
    const query = normalizeQuery(req.question);

    const wantRerank = req.rerank ?? this.reranker.available;
    const k = wantRerank ? Math.max(topK, this.opts.candidates) : topK;

    // Optional LLM preprocessing: extra phrasings (multi-query) and a hypothetical passage for dense search (HyDE).
    const variants: { query: string; denseText: string }[] = [{ query, denseText: query }];
    if (this.rewriter?.active) {
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
    const retrieved = runs.length === 1 ? runs[0]! : fuseRuns(runs, this.opts.rrfK ?? 60, k);
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
    const r = await this.retrieve(req, scope, traceId);
    const t0 = performance.now();
    const gen = await this.generator.generate(normalizeQuery(req.question), r.chunks, onDelta);
    const timings: Record<string, number> = { ...r.timings_ms, generate: round(performance.now() - t0) };
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
      degraded: [...new Set([...r.degraded, ...gen.degraded])],
      timings_ms: timings,
      trace_id: traceId,
    };
  }
}

/** A chunk's document and chunk ids as the caller's tenant knows them (the tenant qualifier stripped). */
function externalIds(tenant: string, c: { document_id: string; chunk_id: string }): { document_id: string; chunk_id: string } {
  return { document_id: externalDocumentId(tenant, c.document_id) ?? c.document_id, chunk_id: externalChunkId(tenant, c.chunk_id) };
}

/** Fuses the results of several query variants with RRF over chunk ids (the original query's run first). */
function fuseRuns(runs: RetrievalResult[], rrfK: number, limit: number): RetrievalResult {
  const byId = new Map<string, ScoredChunk>();
  for (const r of runs) for (const c of r.results) if (!byId.has(c.chunk_id)) byId.set(c.chunk_id, c);
  const fused = reciprocalRankFusion(
    runs.map((r, i) => ({ name: `q${i}`, hits: r.results.map((c) => ({ id: c.chunk_id, score: c.score })) })),
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
