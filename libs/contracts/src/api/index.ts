import { z } from 'zod';
import { AclSchema, ExternalDocumentIdSchema, FiltersSchema, MetadataSchema, QueryModeSchema, SearchModeSchema } from '../common';

/** Limits applied at the edge. */
export const LIMITS = {
  maxQuestionChars: 4000,
  maxTopK: 100,
  maxBatchDocuments: 1000,
  maxTitleChars: 1024,
} as const;

export const DocumentInputSchema = z
  .object({
    id: ExternalDocumentIdSchema.optional(),
    title: z.string().max(LIMITS.maxTitleChars).optional(),
    text: z.string().optional(),
    content_base64: z.string().regex(/^[A-Za-z0-9+/=\s]*$/, 'content_base64 is not base64').optional(),
    mime_type: z.string().min(1).max(255).optional(),
    source: z.string().max(2048).optional(),
    metadata: MetadataSchema.optional(),
    acl: AclSchema.optional(),
  })
  .strict()
  .refine((d) => (d.text === undefined) !== (d.content_base64 === undefined), {
    message: 'exactly one of text or content_base64 is required',
  })
  .refine((d) => d.text === undefined || d.text.trim().length > 0, { message: 'text is empty', path: ['text'] });
export type DocumentInput = z.infer<typeof DocumentInputSchema>;

export const BatchInputSchema = z
  .object({ documents: z.array(z.unknown()).min(1).max(LIMITS.maxBatchDocuments) })
  .strict();

export const QueryInputSchema = z
  .object({
    question: z.string().trim().min(1, 'question is empty').max(LIMITS.maxQuestionChars),
    top_k: z.number().int().min(1).max(LIMITS.maxTopK).optional(),
    filters: FiltersSchema.optional(),
    mode: QueryModeSchema.optional(),
    rerank: z.boolean().optional(),
    stream: z.boolean().optional(),
  })
  .strict();
export type QueryInput = z.infer<typeof QueryInputSchema>;

export const RetrieveInputSchema = z
  .object({
    query: z.string().trim().min(1, 'query is empty').max(LIMITS.maxQuestionChars),
    top_k: z.number().int().min(1).max(LIMITS.maxTopK).optional(),
    filters: FiltersSchema.optional(),
    mode: SearchModeSchema.optional(),
    rerank: z.boolean().optional(),
  })
  .strict();
export type RetrieveInput = z.infer<typeof RetrieveInputSchema>;

export const FeedbackInputSchema = z
  .object({
    trace_id: z.string().min(1).max(128),
    rating: z.enum(['up', 'down']),
    comment: z.string().max(4000).optional(),
  })
  .strict();
export type FeedbackInput = z.infer<typeof FeedbackInputSchema>;

/**
 * Parts of an answer that did not go as usual: a search or the reranker or the LLM missing (`dense`, `keyword`,
 * `reranker`, `llm`), or `corrective`: the first retrieval's evidence was weak, so the answer (or refusal) comes
 * after the corrective retry (rewritten query + keyword-only).
 */
export type Degraded = 'dense' | 'keyword' | 'reranker' | 'llm' | 'corrective';

export interface Citation {
  ref: number;
  document_id: string;
  chunk_id: string;
  title: string;
  text: string;
  score: number;
  source_url?: string;
  /** Headings above the chunk in its document, outermost first; absent when it has none. */
  heading_path?: string[];
  /** The LLM-written context of the chunk (RAG_CONTEXTUAL_CHUNKS=on); absent when it has none. */
  context?: string;
}

/**
 * One claim of an answer (issue 15): `source_ids` are the refs of the `citations` it cites ([n]); `support` in [0, 1]
 * is how well those sources support it (the verifier: lexical overlap, plus embedding similarity when the query
 * embedder is at hand); `supported` is support ≥ the verifier's threshold. RAG_VERIFY=mark (default) keeps
 * unsupported statements marked, drop removes them, refuse refuses the answer.
 */
export interface Statement {
  text: string;
  source_ids: number[];
  support: number;
  supported: boolean;
}

export const StatementSchema = z
  .object({
    text: z.string(),
    source_ids: z.array(z.number().int().min(1)),
    support: z.number().min(0).max(1),
    supported: z.boolean(),
  })
  .strict();

export interface QueryAnswer {
  answer: string;
  refused: boolean;
  citations: Citation[];
  /** The answer's claims with their sources and support (empty for a refusal). */
  statements: Statement[];
  degraded: Degraded[];
  timings_ms: Record<string, number>;
  trace_id: string;
}

export interface RetrieveAnswer {
  results: { document_id: string; chunk_id: string; title: string; text: string; score: number }[];
  degraded: Degraded[];
  timings_ms: Record<string, number>;
  trace_id: string;
}

export interface ApiErrorBody {
  error: { code: string; message: string; details?: unknown };
}
export * from './api-keys';
