import { z } from 'zod';
import { ChunkSchema } from '../../document';
import { DocumentIdSchema, TenantSchema } from '../../common';
import { DocumentDeleteSchema } from '../document-event/value';

export const ChunkedDocumentSchema = z.object({
  document_id: DocumentIdSchema,
  tenant: TenantSchema,
  version: z.number().int().positive(),
  content_hash: z.string(),
  title: z.string(),
  /** Children (searched) and parents (context for the generator). */
  chunks: z.array(ChunkSchema),
});
export type ChunkedDocument = z.infer<typeof ChunkedDocumentSchema>;

export const ChunksEventSchema = z.discriminatedUnion('op', [
  z.object({ event_id: z.string().min(1), op: z.literal('upsert'), document: ChunkedDocumentSchema }),
  DocumentDeleteSchema,
]);
export type ChunksEvent = z.infer<typeof ChunksEventSchema>;
