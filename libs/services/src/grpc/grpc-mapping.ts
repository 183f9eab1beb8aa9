import { z } from 'zod';
import type { RetrieveRequest } from '@rag/application';
import { FiltersSchema, SearchModeSchema, TenantSchema, type Degraded, type Filters, type RagV1, type RetrievalResult, type ScoredChunk, type SearchScope } from '@rag/contracts';
import { validateFilterKeys } from '@rag/domain';
import { AppError } from '@rag/platform';
import type { EmbedInputType } from '@rag/ports';

/*
 * The edge between the wire messages (rag.proto, typed by the generated RagV1 interfaces) and the use cases. The
 * application works on the generated messages except where the wire encodes something proto3 cannot type:
 * - ScoredChunk's optional texts: proto3 implicit presence ('' = absent; `optional` would break buf FILE checks);
 * - RetrieveRequest: filters travel as JSON (`filters_json`, arbitrary typed values), the vector as Float32Array,
 *   and "no ACL restriction" as `unrestricted` (an empty repeated field cannot say "absent").
 * Every incoming request is validated here: a malformed one is an AppError('invalid_request') → INVALID_ARGUMENT.
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

// ---------- ScoredChunk: explicit presence of parent_text / source_url ----------

export const toWireChunk = (c: ScoredChunk): RagV1.ScoredChunk => ({
  chunk_id: c.chunk_id,
  document_id: c.document_id,
  title: c.title,
  text: c.text,
  score: c.score,
  heading_path: c.heading_path,
  parent_text: c.parent_text ?? '',
  source_url: c.source_url ?? '',
  context: c.context ?? '',
});

export function fromWireChunk({ parent_text, source_url, context, ...c }: RagV1.ScoredChunk): ScoredChunk {
  return { ...c, ...(parent_text ? { parent_text } : {}), ...(source_url ? { source_url } : {}), ...(context ? { context } : {}) };
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
  // Absent from a peer built before the field (proto3: '' then).
  context: z.string().max(MAX_TEXT).default(''),
});

const chunksFromWire = (chunks: RagV1.ScoredChunk[], what: string): ScoredChunk[] => parse(z.array(WireChunkSchema).max(MAX_ITEMS), chunks, what).map(fromWireChunk);

// ---------- Embed ----------

const EmbedRequestSchema = z.object({
  texts: z.array(z.string().max(MAX_TEXT)).min(1, 'texts must not be empty').max(1024),
  input_type: z.enum(['', 'query', 'passage']),
});

export function embedRequestFromWire(req: RagV1.EmbedRequest): { texts: string[]; inputType: EmbedInputType } {
  const r = parse(EmbedRequestSchema, req, 'invalid Embed request');
  return { texts: r.texts, inputType: r.input_type === 'passage' ? 'passage' : 'query' };
}

// ---------- Retrieve ----------

export function retrieveRequestToWire(req: RetrieveRequest): RagV1.RetrieveRequest {
  return {
    query: req.query,
    vector: req.vector ? Array.from(req.vector) : [],
    top_k: req.top_k,
    candidates: req.candidates,
    filters_json: req.filters && Object.keys(req.filters).length > 0 ? JSON.stringify(req.filters) : '',
    mode: req.mode,
    scope: { tenant: req.scope.tenant, principals: req.scope.principals ?? [], unrestricted: req.scope.principals === undefined },
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

export const retrievalToWire = (r: RetrievalResult): RagV1.RetrieveResponse => ({ ...r, results: r.results.map(toWireChunk), timings_ms: { ...r.timings_ms } });
export const retrievalFromWire = (r: RagV1.RetrieveResponse): RetrievalResult => ({ results: r.results.map(fromWireChunk), degraded: toDegraded(r.degraded), timings_ms: { ...r.timings_ms } });

// ---------- Rerank / Generate ----------

const RerankRequestSchema = z.object({ query: z.string().max(MAX_TEXT), top_n: z.number().int().min(0).max(MAX_ITEMS) });

export function rerankRequestFromWire(req: RagV1.RerankRequest): { query: string; candidates: ScoredChunk[]; topN: number } {
  const r = parse(RerankRequestSchema, { query: req.query, top_n: req.top_n }, 'invalid Rerank request');
  return { query: r.query, topN: r.top_n, candidates: chunksFromWire(req.candidates, 'invalid Rerank candidates') };
}

export function generateRequestFromWire(req: RagV1.GenerateRequest): { question: string; sources: ScoredChunk[] } {
  const question = parse(z.string().max(MAX_TEXT), req.question, 'invalid Generate request: question');
  return { question, sources: chunksFromWire(req.sources, 'invalid Generate sources') };
}

/**
 * A Generate result's statements as the gateway takes them: proto3 leaves a missing list empty (an older generator
 * sends none) and defaults numbers to 0; support is clamped into [0, 1], refs kept when positive integers.
 */
export function statementsFromWire(list: readonly RagV1.Statement[] | undefined): RagV1.Statement[] {
  return (list ?? []).map((s) => ({
    text: s.text ?? '',
    source_ids: (s.source_ids ?? []).filter((r) => Number.isInteger(r) && r > 0),
    support: Number.isFinite(s.support) ? Math.min(1, Math.max(0, s.support)) : 0,
    supported: s.supported === true,
  }));
}
