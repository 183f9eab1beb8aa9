import { z } from 'zod';

/** Metadata values allowed on documents and chunks: string, number, boolean or string[]. */
export const MetadataValueSchema = z.union([z.string(), z.number().finite(), z.boolean(), z.array(z.string())]);
export type MetadataValue = z.infer<typeof MetadataValueSchema>;

/**
 * Caps on one document's metadata, for every producer (API, webhooks, reconciler, JSONL): the metadata is copied into
 * every chunk, so 10k keys in one 600 KB request once cost 1.1 GB on disk. 64 keys and 16 KiB (as JSON, UTF-8) leave
 * room for any real set of attributes; a 20k-chunk document then carries at most 320 MB of metadata copies.
 */
export const METADATA_LIMITS = { maxKeys: 64, maxBytes: 16 * 1024 } as const;

export const MetadataSchema = z.record(z.string().min(1).max(128), MetadataValueSchema).superRefine((m, ctx) => {
  const keys = Object.keys(m).length;
  if (keys > METADATA_LIMITS.maxKeys) {
    ctx.addIssue({ code: 'custom', message: `metadata has ${keys} keys; at most ${METADATA_LIMITS.maxKeys} are allowed` });
    return;
  }
  const bytes = new TextEncoder().encode(JSON.stringify(m)).length;
  if (bytes > METADATA_LIMITS.maxBytes) {
    ctx.addIssue({ code: 'custom', message: `metadata is ${bytes} bytes as JSON; at most ${METADATA_LIMITS.maxBytes} are allowed` });
  }
});
export type Metadata = z.infer<typeof MetadataSchema>;

/**
 * A document id as callers send and see it (API, CLI): `upload:<uuid>`, `confluence:<site>:<pageId>`,
 * `notion:<pageId>` or any caller-chosen stable id, unique within the caller's tenant.
 */
export const ExternalDocumentIdSchema = z
  .string()
  .min(1)
  .max(512)
  .regex(/^[^\s#][^\s#]*$/, 'document_id must not contain whitespace or "#"');

/**
 * A document id inside the platform (events, chunks, stores): the external id for the tenant `default`, or
 * `${tenant}#${external id}` for any other tenant (see libs/domain documents/document-id.ts), so ids are unique
 * across tenants.
 */
export const DocumentIdSchema = z
  .string()
  .min(1)
  .max(641)
  .regex(/^(?:[A-Za-z0-9._-]{1,128}#)?[^\s#]{1,512}$/, 'document_id must be an id without whitespace or "#", optionally qualified as "<tenant>#<id>"');

export const TenantSchema = z.string().min(1).max(128).regex(/^[A-Za-z0-9._-]+$/, 'tenant must be [A-Za-z0-9._-]');

/** Groups or users allowed to read a document. `*` means everyone in the tenant. */
export const AclSchema = z.array(z.string().min(1).max(256)).max(1000);

export const DocumentStatusSchema = z.enum(['queued', 'processing', 'indexed', 'failed', 'deleted']);
export type DocumentStatus = z.infer<typeof DocumentStatusSchema>;

export const SearchModeSchema = z.enum(['hybrid', 'dense', 'keyword']);
export type SearchMode = z.infer<typeof SearchModeSchema>;

/**
 * `/v1/query`'s mode: a search mode (single-shot), `agent` (multi-hop: the LLM picks retrieval tools for up to
 * RAG_AGENT_MAX_STEPS hops) or `auto` (a router sends multi-hop-looking questions to the agent, the rest single-shot).
 */
export const QueryModeSchema = z.enum(['hybrid', 'dense', 'keyword', 'agent', 'auto']);
export type QueryMode = z.infer<typeof QueryModeSchema>;

/**
 * Metadata filter: each key is a metadata field (or `document_id`); the value is
 * - a scalar: equality (for a string[] field: the array contains it),
 * - `{in: [...]}`: any of,
 * - `{gte, gt, lte, lt}`: numeric range.
 * All keys must match (AND).
 */
export const FilterConditionSchema = z.union([
  z.string(),
  z.number().finite(),
  z.boolean(),
  z.object({ in: z.array(z.union([z.string(), z.number().finite()])).min(1).max(1000) }).strict(),
  z
    .object({
      gte: z.number().finite().optional(),
      gt: z.number().finite().optional(),
      lte: z.number().finite().optional(),
      lt: z.number().finite().optional(),
    })
    .strict()
    .refine((r) => Object.keys(r).length > 0, 'a range needs at least one of gte, gt, lte, lt'),
]);
export type FilterCondition = z.infer<typeof FilterConditionSchema>;

export const FiltersSchema = z
  .record(z.string().min(1).max(128).regex(/^[A-Za-z0-9_.-]+$/, 'filter keys must be [A-Za-z0-9_.-]'), FilterConditionSchema)
  .refine((f) => Object.keys(f).length <= 32, 'at most 32 filter keys');
export type Filters = z.infer<typeof FiltersSchema>;

/** Who is searching: every search in every store is restricted to the tenant and the principal's ACL. */
export const SearchScopeSchema = z.object({
  tenant: TenantSchema,
  /** Groups/users of the caller; `undefined` = unrestricted within the tenant (admin/anonymous local mode). */
  principals: z.array(z.string()).optional(),
});
export type SearchScope = z.infer<typeof SearchScopeSchema>;
