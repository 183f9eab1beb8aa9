import { z } from 'zod';
import { TenantSchema } from '../common';

/** What an API key may do: `ingest` (documents), `query` (query, retrieve, feedback), `admin` (API keys of its tenant). */
export const ApiScopeSchema = z.enum(['ingest', 'query', 'admin']);
export type ApiScope = z.infer<typeof ApiScopeSchema>;
export const API_SCOPES: readonly ApiScope[] = ApiScopeSchema.options;

/** A group name as carried by an API key or a JWT; it matches ACL entries `group:<name>`. */
export const GroupNameSchema = z
  .string()
  .min(1)
  .max(200)
  .refine((g) => g.trim() === g, 'group names must not start or end with whitespace');

export const RateLimitSchema = z
  .object({
    /** Sustained requests per second (token refill rate). */
    rps: z.number().positive().max(1_000_000),
    /** Bucket size: requests allowed in a burst. */
    burst: z.number().int().min(1).max(1_000_000),
  })
  .strict();
export type RateLimit = z.infer<typeof RateLimitSchema>;

/** POST /v1/admin/api-keys. */
export const ApiKeyCreateSchema = z
  .object({
    name: z.string().min(1).max(200).optional(),
    /** Defaults to the caller's tenant; another tenant is refused. */
    tenant: TenantSchema.optional(),
    scopes: z.array(ApiScopeSchema).min(1).max(3),
    /** ACL groups of the key's principal (`group:<name>` entries). */
    groups: z.array(GroupNameSchema).max(1000).optional(),
    /** Reads every document of the tenant regardless of ACL (no JWT forwarded). Exclusive with `groups`. */
    unrestricted: z.boolean().optional(),
    /** Per-key limit; absent = the configured default (RAG_RATE_LIMIT_RPS / RAG_RATE_LIMIT_BURST). */
    rate_limit: RateLimitSchema.optional(),
  })
  .strict()
  .refine((k) => !(k.unrestricted && k.groups && k.groups.length > 0), {
    message: 'an unrestricted key reads the whole tenant: do not also give it groups',
    path: ['groups'],
  });
export type ApiKeyCreate = z.infer<typeof ApiKeyCreateSchema>;

/** An API key as listed (never the secret). */
export interface ApiKeyView {
  id: string;
  name: string | null;
  tenant: string;
  scopes: ApiScope[];
  groups: string[];
  unrestricted: boolean;
  rate_limit: RateLimit | null;
  created_at: string;
  last_used_at: string | null;
  revoked_at: string | null;
}
