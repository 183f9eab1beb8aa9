import { z } from 'zod';
import { AclSchema, DocumentIdSchema, MetadataSchema, TenantSchema } from '../../common';

const Base = {
  event_id: z.string().min(1).max(256),
  document_id: DocumentIdSchema,
  tenant: TenantSchema,
  /** Version reserved for this change by the registry when the change was accepted. */
  version: z.number().int().positive(),
  emitted_at: z.string(),
};

/** Where the content comes from: inline (uploads) or a source reference the loader fetches (connectors). */
export const SourceRefSchema = z.object({
  kind: z.enum(['upload', 'confluence', 'notion']),
  ref: z.string().max(2048).optional(),
});

export const SourceUpsertSchema = z
  .object({
    ...Base,
    op: z.literal('upsert'),
    title: z.string().max(1024).optional(),
    mime_type: z.string().min(1).max(255),
    text: z.string().optional(),
    content_base64: z.string().optional(),
    source: SourceRefSchema,
    source_url: z.string().max(2048).optional(),
    acl: AclSchema,
    metadata: MetadataSchema,
  })
  .refine((e) => e.text !== undefined || e.content_base64 !== undefined || e.source.kind !== 'upload', {
    message: 'an upload carries text or content_base64',
  });

export const SourceDeleteSchema = z.object({ ...Base, op: z.literal('delete') });

export const SourceEventSchema = z.union([SourceUpsertSchema, SourceDeleteSchema]);
export type SourceEvent = z.infer<typeof SourceEventSchema>;
export type SourceUpsert = z.infer<typeof SourceUpsertSchema>;
export type SourceDelete = z.infer<typeof SourceDeleteSchema>;
