import { z } from 'zod';
import { StructuredDocumentSchema } from '../../document';
import { DocumentIdSchema, TenantSchema } from '../../common';

export const DocumentDeleteSchema = z.object({
  event_id: z.string().min(1),
  op: z.literal('delete'),
  document_id: DocumentIdSchema,
  tenant: TenantSchema,
  version: z.number().int().positive(),
});

export const DocumentEventSchema = z.discriminatedUnion('op', [
  z.object({ event_id: z.string().min(1), op: z.literal('upsert'), document: StructuredDocumentSchema }),
  DocumentDeleteSchema,
]);
export type DocumentEvent = z.infer<typeof DocumentEventSchema>;
export type DeleteEvent = z.infer<typeof DocumentDeleteSchema>;
