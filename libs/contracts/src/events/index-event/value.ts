import { z } from 'zod';
import { DocumentIdSchema, TenantSchema } from '../../common';

/** Status changes published by every stage; the registry projects them onto documents. */
export const IndexEventSchema = z.object({
  event_id: z.string().min(1),
  document_id: DocumentIdSchema,
  tenant: TenantSchema,
  version: z.number().int().positive(),
  status: z.enum(['processing', 'indexed', 'unchanged', 'failed', 'deleted']),
  stage: z.enum(['gateway', 'loader', 'chunker', 'embedder', 'indexer']),
  content_hash: z.string().optional(),
  chunks: z.number().int().nonnegative().optional(),
  error: z.string().max(4000).optional(),
  at: z.string(),
});
export type IndexEvent = z.infer<typeof IndexEventSchema>;
