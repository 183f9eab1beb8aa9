import { z } from 'zod';
import type { GenerationResult, RetrieveRequest } from '@rag/application';
import { FiltersSchema, RagV1, SearchModeSchema, TenantSchema, type Degraded, type Filters, type RetrievalResult, type ScoredChunk, type SearchScope } from '@rag/contracts';
import { validateFilterKeys } from '@rag/domain';
import { AppError } from '@rag/platform';
import type { EmbedInputType } from '@rag/ports';

/*
 * Conversions between the wire messages (libs/contracts/src/generated) and the TypeScript contracts, with the
 * server-side validation of every request: a malformed request is an AppError('invalid_request') that the server
 * turns into INVALID_ARGUMENT.
 */

const MAX_TEXT = 100_000;
const MAX_ITEMS = 10_000;

const DEGRADED: readonly Degraded[] = ['dense', 'keyword', 'reranker', 'llm'];
/** Degraded parts from the wire; unknown names (a newer server) are dropped. */
export const toDegraded = (parts: string[]): Degraded[] => parts.filter((p): p is Degraded => (DEGRADED as readonly string[]).includes(p));

const invalid = (what: string, issues: z.core.$ZodIssue[] | string): AppError =>
  new AppError('invalid_request', `${what}: ${typeof issues === 'string' ? issues : issues.map((i) => `${i.path.join('.') || 'value'}: ${i.message}`).join('; ')}`);

function parse<T>(schema: z.ZodType<T>, value: unknown, what: string): T {
  const r = schema.safeParse(value);
  if (!r.success) throw invalid(what, r.error.issues);
  return r.data;
}

// ---------- ScoredChunk ----------

export function toWireChunk(c: ScoredChunk): RagV1.ScoredChunk {
  return {
    chunk_id: c.chunk_id,
    document_id: c.document_id,
    title: c.title,
    text: c.text,
    score: c.score,
    parent_text: c.parent_text ?? '',
    source_url: c.source_url ?? '',
    heading_path: c.heading_path,
  };
}

const WireChunkSchema = z.object({
  chunk_id: z.string().min(1).max(2048),
  document_id: z.string().min(1).max(1024),
  title: z.string().max(MAX_TEXT),
  text: z.string().max(10 * MAX_TEXT),
  score: z.number().refine((n) => !Number.isNaN(n), 'score must be a number'),
  parent_text: z.string().max(10 * MAX_TEXT),
  source_url: z.string().max(8192),
  heading_path: z.array(z.string().max(MAX_TEXT)).max(64),
});

/** Empty strings on the wire are absent optional fields. */
export function fromWireChunk(c: RagV1.ScoredChunk): ScoredChunk {
  return {
    chunk_id: c.chunk_id,
    document_id: c.document_id,
    title: c.title,
    text: c.text,
    score: c.score,
    heading_path: c.heading_path,
    ...(c.parent_text ? { parent_text: c.parent_text } : {}),
    ...(c.source_url ? { source_url: c.source_url } : {}),
  };
}

const chunksFromWire = (chunks: RagV1.ScoredChunk[], what: string): ScoredChunk[] =>
  parse(z.array(WireChunkSchema).max(MAX_ITEMS), chunks, what).map(fromWireChunk);

// ---------- Embed ----------

export interface EmbedCall {
  texts: string[];
  inputType: EmbedInputType;
}

const EmbedRequestSchema = z.object({
  texts: z.array(z.string().max(MAX_TEXT)).min(1, 'texts must not be empty').max(1024),
  input_type: z.enum(['', 'query', 'passage']),
});

export function embedRequestFromWire(req: RagV1.EmbedRequest): EmbedCall {
  const r = parse(EmbedRequestSchema, req, 'invalid Embed request');
  return { texts: r.texts, inputType: r.input_type === 'passage' ? 'passage' : 'query' };
}

export function embedResponseToWire(model: string, dim: number, vectors: Float32Array[]): RagV1.EmbedResponse {
  return { model, dim, embeddings: vectors.map((v) => ({ values: Array.from(v) })) };
}

// ---------- Retrieve ----------

export function retrieveRequestToWire(req: RetrieveRequest): RagV1.RetrieveRequest {
  const unrestricted = req.scope.principals === undefined;
  return {
    query: req.query,
    vector: req.vector ? Array.from(req.vector) : [],
    top_k: req.top_k,
    candidates: req.candidates,
    filters_json: req.filters && Object.keys(req.filters).length > 0 ? JSON.stringify(req.filters) : '',
    mode: req.mode,
    scope: { tenant: req.scope.tenant, principals: req.scope.principals ?? [], unrestricted },
  };
}

/** Parses `filters_json` with FiltersSchema (and the reserved-key rule of the gateway); '' = no filters. */
export function parseFiltersJson(json: string): Filters | undefined {
  if (json.trim() === '') return undefined;
  let raw: unknown;
  try {
    raw = JSON.parse(json);
  } catch (e) {
    throw invalid('invalid filters_json', `not JSON (${e instanceof Error ? e.message : String(e)})`);
  }
  const filters = parse(FiltersSchema, raw, 'invalid filters');
  const problems = validateFilterKeys(filters);
  if (problems.length) throw invalid('invalid filters', problems.join('; '));
  return filters;
}

const RetrieveRequestSchema = z.object({
  query: z.string().max(MAX_TEXT),
  vector: z.array(z.number().finite()).max(8192),
  top_k: z.number().int().min(1).max(1000),
  candidates: z.number().int().min(1).max(MAX_ITEMS),
  filters_json: z.string().max(65_536),
  mode: z.union([z.literal(''), SearchModeSchema]),
  scope: z.object(
    {
      tenant: TenantSchema,
      principals: z.array(z.string().min(1).max(256)).max(1000),
      unrestricted: z.boolean(),
    },
    { error: 'scope is required' },
  ),
});

export function retrieveRequestFromWire(req: RagV1.RetrieveRequest): RetrieveRequest {
  const r = parse(RetrieveRequestSchema, req, 'invalid Retrieve request');
  const filters = parseFiltersJson(r.filters_json);
  const scope: SearchScope = r.scope.unrestricted ? { tenant: r.scope.tenant } : { tenant: r.scope.tenant, principals: r.scope.principals };
  return {
    query: r.query,
    ...(r.vector.length > 0 ? { vector: Float32Array.from(r.vector) } : {}),
    top_k: r.top_k,
    candidates: r.candidates,
    ...(filters ? { filters } : {}),
    mode: r.mode === '' ? 'hybrid' : r.mode,
    scope,
  };
}

export function retrievalToWire(r: RetrievalResult): RagV1.RetrieveResponse {
  return { results: r.results.map(toWireChunk), degraded: r.degraded, timings_ms: { ...r.timings_ms } };
}

export function retrievalFromWire(r: RagV1.RetrieveResponse): RetrievalResult {
  return { results: r.results.map(fromWireChunk), degraded: toDegraded(r.degraded), timings_ms: { ...r.timings_ms } };
}

// ---------- Rerank ----------

export interface RerankInput {
  query: string;
  candidates: ScoredChunk[];
  topN: number;
}

const RerankRequestSchema = z.object({
  query: z.string().max(MAX_TEXT),
  top_n: z.number().int().min(0).max(MAX_ITEMS),
});

export function rerankRequestFromWire(req: RagV1.RerankRequest): RerankInput {
  const r = parse(RerankRequestSchema, { query: req.query, top_n: req.top_n }, 'invalid Rerank request');
  return { query: r.query, topN: r.top_n, candidates: chunksFromWire(req.candidates, 'invalid Rerank candidates') };
}

// ---------- Generate ----------

export interface GenerateInput {
  question: string;
  sources: ScoredChunk[];
}

export function generateRequestFromWire(req: RagV1.GenerateRequest): GenerateInput {
  const question = parse(z.string().max(MAX_TEXT), req.question, 'invalid Generate request: question');
  return { question, sources: chunksFromWire(req.sources, 'invalid Generate sources') };
}

export function generationFinalToWire(g: GenerationResult): RagV1.GenerateChunk {
  return { delta: '', done: true, refused: g.refused, cited_refs: g.cited_refs, degraded: g.degraded, answer: g.answer };
}
