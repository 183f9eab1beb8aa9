import { z } from 'zod';
import { AclSchema, DocumentIdSchema, MetadataSchema, TenantSchema } from './common';

/** One block of a structured document, as produced by the loader. */
export const BlockSchema = z.discriminatedUnion('type', [
  z.object({ type: z.literal('heading'), level: z.number().int().min(1).max(6), text: z.string() }),
  z.object({ type: z.literal('paragraph'), text: z.string() }),
  z.object({ type: z.literal('list'), ordered: z.boolean(), items: z.array(z.string()) }),
  /** rows[0] is the header row when `header` is true. */
  z.object({ type: z.literal('table'), rows: z.array(z.array(z.string())), header: z.boolean(), caption: z.string().optional() }),
  z.object({ type: z.literal('code'), text: z.string(), language: z.string().optional() }),
]);
export type Block = z.infer<typeof BlockSchema>;

export const StructuredDocumentSchema = z.object({
  document_id: DocumentIdSchema,
  tenant: TenantSchema,
  version: z.number().int().positive(),
  title: z.string().max(1024),
  source_url: z.string().max(2048).optional(),
  mime_type: z.string(),
  /** sha256 (hex) of the normalized body. */
  content_hash: z.string().regex(/^[0-9a-f]{64}$/),
  acl: AclSchema,
  metadata: MetadataSchema,
  blocks: z.array(BlockSchema),
  /** Pages for paged formats (PDF), 1-based page count. */
  pages: z.number().int().nonnegative().optional(),
});
export type StructuredDocument = z.infer<typeof StructuredDocumentSchema>;

export const ChunkKindSchema = z.enum(['child', 'parent']);

export const ChunkSchema = z.object({
  /** `${document_id}#v${version}#${ordinal}` */
  chunk_id: z.string().min(1),
  document_id: DocumentIdSchema,
  tenant: TenantSchema,
  version: z.number().int().positive(),
  ordinal: z.number().int().nonnegative(),
  /** children are searched; parents are handed to the generator. */
  kind: ChunkKindSchema,
  parent_id: z.string().nullable(),
  acl: AclSchema,
  title: z.string(),
  heading_path: z.array(z.string()),
  source_url: z.string().optional(),
  metadata: MetadataSchema,
  text: z.string(),
  token_count: z.number().int().nonnegative(),
  /**
   * Contextual retrieval (RAG_CONTEXTUAL_CHUNKS=on): one or two sentences an LLM wrote to situate the chunk in its
   * document; prepended for embedding and BM25, shown in citations. Absent when off or when the LLM call failed.
   */
  context: z.string().max(2000).optional(),
});
export type Chunk = z.infer<typeof ChunkSchema>;

export function chunkId(documentId: string, version: number, ordinal: number): string {
  return `${documentId}#v${version}#${ordinal}`;
}

/** Parses a chunk id back into its parts; `null` when it is not of the form `${document_id}#v${version}#${ordinal}`. */
export function parseChunkId(id: string): { document_id: string; version: number; ordinal: number } | null {
  const m = /^(.*)#v(\d+)#(\d+)$/.exec(id);
  if (!m) return null;
  return { document_id: m[1]!, version: Number(m[2]), ordinal: Number(m[3]) };
}
