import { z } from 'zod';
import { ChunkedDocumentSchema } from '../chunks-event/value';
import { DocumentDeleteSchema } from '../document-event/value';
import { decodeVectorF32, f32Base64Length, isF32Base64 } from './vector-encoding';

/**
 * One child chunk's embedding, in one of two forms (exactly one is present):
 * - `vector_f32`: the float32 values, little-endian, base64 (vector-encoding.ts) — what the embedder publishes;
 * - `vector`: the values as JSON numbers — what embedders published before (messages still in a log or a DLQ, and a
 *   producer set to `RAG_BUS_VECTOR_ENCODING=json` while older indexers are still running).
 * Read the values with `chunkVectorValues`, which accepts both.
 */
export const ChunkVectorSchema = z
  .object({
    chunk_id: z.string().min(1),
    vector: z.array(z.number()).optional(),
    vector_f32: z.string().refine(isF32Base64, 'must be base64 of little-endian float32 values').optional(),
  })
  .refine((v) => (v.vector === undefined) !== (v.vector_f32 === undefined), { message: 'exactly one of `vector` and `vector_f32` must be given' });
export type ChunkVector = z.infer<typeof ChunkVectorSchema>;

/** How many values a chunk vector holds (either form), without decoding it. */
export function chunkVectorLength(v: ChunkVector): number {
  return v.vector_f32 !== undefined ? f32Base64Length(v.vector_f32) : (v.vector?.length ?? 0);
}

/** A chunk vector's values (either form). */
export function chunkVectorValues(v: ChunkVector): Float32Array {
  return v.vector_f32 !== undefined ? decodeVectorF32(v.vector_f32) : Float32Array.from(v.vector ?? []);
}

export const EmbeddedDocumentSchema = ChunkedDocumentSchema.extend({
  /** Embedding model id, e.g. `onnx:all-MiniLM-L6-v2` or `hashing-lexical-384`. */
  model: z.string().min(1),
  dim: z.number().int().positive(),
  /** One vector per child chunk. */
  vectors: z.array(ChunkVectorSchema),
}).refine((d) => d.vectors.every((v) => chunkVectorLength(v) === d.dim), { message: 'every vector must have `dim` values' });
export type EmbeddedDocument = z.infer<typeof EmbeddedDocumentSchema>;

export const EmbeddedChunksEventSchema = z.discriminatedUnion('op', [
  z.object({ event_id: z.string().min(1), op: z.literal('upsert'), document: EmbeddedDocumentSchema }),
  DocumentDeleteSchema,
]);
export type EmbeddedChunksEvent = z.infer<typeof EmbeddedChunksEventSchema>;
