import { z } from 'zod';
import { ChunkedDocumentSchema } from '../chunks-event/value';
import { DocumentDeleteSchema } from '../document-event/value';

export const ChunkVectorSchema = z.object({ chunk_id: z.string().min(1), vector: z.array(z.number()) });
export type ChunkVector = z.infer<typeof ChunkVectorSchema>;

export const EmbeddedDocumentSchema = ChunkedDocumentSchema.extend({
  /** Embedding model id, e.g. `onnx:all-MiniLM-L6-v2` or `hashing-lexical-384`. */
  model: z.string().min(1),
  dim: z.number().int().positive(),
  /** One vector per child chunk. */
  vectors: z.array(ChunkVectorSchema),
}).refine((d) => d.vectors.every((v) => v.vector.length === d.dim), { message: 'every vector must have `dim` values' });
export type EmbeddedDocument = z.infer<typeof EmbeddedDocumentSchema>;

export const EmbeddedChunksEventSchema = z.discriminatedUnion('op', [
  z.object({ event_id: z.string().min(1), op: z.literal('upsert'), document: EmbeddedDocumentSchema }),
  DocumentDeleteSchema,
]);
export type EmbeddedChunksEvent = z.infer<typeof EmbeddedChunksEventSchema>;
