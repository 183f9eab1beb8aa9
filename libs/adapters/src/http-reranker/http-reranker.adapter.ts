import { z } from 'zod';
import type { ScoredChunk } from '@rag/contracts';
import type { Reranker } from '@rag/ports';
import { AppError } from '@rag/platform';
import { DEFAULT_RETRY_POLICY, type RetryPolicy, joinUrl, postJson } from '../http-embedder/http-client';

/**
 * - `tei`: Hugging Face text-embeddings-inference, `POST /rerank {query, texts}` → `[{index, score}]`.
 * - `cohere`: `POST /v1/rerank {model, query, documents, top_n}` → `{results:[{index, relevance_score}]}`.
 * - `jina`: `POST /v1/rerank`, Cohere's shape.
 */
export type RerankFlavor = 'tei' | 'cohere' | 'jina';

export interface HttpRerankerOptions {
  /** Which API the server speaks (default `tei`). */
  flavor?: RerankFlavor;
  /** Server root, e.g. `http://127.0.0.1:8082` (TEI), `https://api.cohere.com`, `https://api.jina.ai`. */
  baseUrl: string;
  /** Model name; required by Cohere and Jina, ignored by TEI (one model per server). */
  model?: string;
  /** Sent as `Authorization: Bearer <apiKey>`. */
  apiKey?: string;
  /** Per-request timeout in ms (default 10 000: reranking sits on the query path). */
  timeoutMs?: number;
  /** Retries on 429/5xx/timeouts (default 1). */
  maxRetries?: number;
  backoffMs?: number;
  maxBackoffMs?: number;
  /**
   * Texts per TEI request (default 32, TEI's `--max-client-batch-size` default); results of several requests are
   * merged. Cohere and Jina take the whole list in one request.
   */
  teiBatchSize?: number;
  /** Score `title + "\n" + text` instead of the text alone (default false). */
  includeTitle?: boolean;
  headers?: Record<string, string>;
}

const TeiResponse = z.array(z.object({ index: z.number().int().nonnegative(), score: z.number() }));
const CohereResponse = z.object({
  results: z.array(z.object({ index: z.number().int().nonnegative(), relevance_score: z.number() })),
});

/**
 * One reranker adapter for the common hosted/self-hosted `/rerank` APIs, picked by `flavor`. It sends
 * the candidate texts, maps each answer back by `index`, sorts by the service's score (stable for ties)
 * and returns the best `topN` with that score.
 */
export class HttpReranker implements Reranker {
  readonly id: string;
  readonly flavor: RerankFlavor;
  private readonly url: string;
  private readonly policy: RetryPolicy;
  private readonly teiBatchSize: number;

  constructor(private readonly options: HttpRerankerOptions) {
    if (!options.baseUrl) throw new AppError('invalid_request', 'HttpReranker needs baseUrl');
    const flavor = options.flavor ?? 'tei';
    this.flavor = flavor;
    switch (flavor) {
      case 'tei':
        this.url = joinUrl(options.baseUrl, '/rerank');
        break;
      case 'cohere':
      case 'jina':
        if (!options.model) throw new AppError('invalid_request', `HttpReranker flavor ${flavor} needs a model name`);
        this.url = joinUrl(options.baseUrl, '/v1/rerank');
        break;
      default:
        throw new AppError('invalid_request', `unknown rerank flavor ${String(flavor as unknown)}; use tei, cohere or jina`);
    }
    this.id = `http-reranker:${flavor}${options.model ? `:${options.model}` : ''}`;
    this.teiBatchSize = Math.max(1, Math.floor(options.teiBatchSize ?? 32));
    this.policy = {
      timeoutMs: options.timeoutMs ?? 10_000,
      maxRetries: options.maxRetries ?? 1,
      backoffMs: options.backoffMs ?? DEFAULT_RETRY_POLICY.backoffMs,
      maxBackoffMs: options.maxBackoffMs ?? 2_000,
    };
  }

  async rerank(query: string, candidates: ScoredChunk[], topN: number): Promise<ScoredChunk[]> {
    const n = Math.max(0, Math.min(Math.floor(topN), candidates.length));
    if (n === 0) return [];
    const texts = candidates.map((c) => (this.options.includeTitle && c.title && !c.text.startsWith(c.title) ? `${c.title}\n${c.text}` : c.text));
    const scores = await this.score(query, texts, n);
    return candidates
      .map((c, i) => ({ c, i, s: scores.get(i) }))
      .filter((x): x is { c: ScoredChunk; i: number; s: number } => x.s !== undefined)
      .sort((a, b) => b.s - a.s || a.i - b.i)
      .slice(0, n)
      .map(({ c, s }) => ({ ...c, score: s }));
  }

  /** Scores by candidate index; Cohere/Jina return only the top `topN`. */
  private async score(query: string, texts: string[], topN: number): Promise<Map<number, number>> {
    const scores = new Map<number, number>();
    const flavor = this.flavor;
    switch (flavor) {
      case 'tei': {
        for (let start = 0; start < texts.length; start += this.teiBatchSize) {
          const batch = texts.slice(start, start + this.teiBatchSize);
          const raw = await this.post({ query, texts: batch, truncate: true, raw_scores: false, return_text: false });
          const parsed = TeiResponse.safeParse(raw);
          if (!parsed.success) throw this.shapeError('[{index, score}]', parsed.error.issues[0]?.message);
          for (const r of parsed.data) this.put(scores, r.index, start, batch.length, r.score);
        }
        return scores;
      }
      case 'cohere':
      case 'jina': {
        const raw = await this.post({ model: this.options.model, query, documents: texts, top_n: topN, return_documents: false });
        const parsed = CohereResponse.safeParse(raw);
        if (!parsed.success) throw this.shapeError('{results:[{index, relevance_score}]}', parsed.error.issues[0]?.message);
        for (const r of parsed.data.results) this.put(scores, r.index, 0, texts.length, r.relevance_score);
        return scores;
      }
      default: {
        const never: never = flavor;
        throw new AppError('internal', `unknown rerank flavor ${String(never)}`);
      }
    }
  }

  private put(scores: Map<number, number>, index: number, offset: number, size: number, score: number): void {
    if (index >= size) throw new AppError('unavailable', `rerank service at ${this.url} returned index ${index} for ${size} texts`);
    scores.set(offset + index, score);
  }

  private post(body: unknown): Promise<unknown> {
    return postJson({ what: `rerank service (${this.flavor})`, url: this.url, body, apiKey: this.options.apiKey, headers: this.options.headers, policy: this.policy });
  }

  private shapeError(want: string, issue?: string): AppError {
    return new AppError('unavailable', `rerank service (${this.flavor}) at ${this.url} answered an unexpected shape (want ${want})${issue ? `: ${issue}` : ''}`);
  }
}
