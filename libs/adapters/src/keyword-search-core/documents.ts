import { createHash } from 'node:crypto';
import type { Chunk } from '@rag/contracts';
import { keywordText, segmentForIndex } from '@rag/domain';
import { encodeFieldKey } from './mapping';

/** Elasticsearch/OpenSearch reject `_id`s longer than 512 bytes. */
export const MAX_ENGINE_ID_BYTES = 512;

/**
 * The engine `_id` of a chunk: the chunk id itself, or `#sha256:<hex>` when it is longer than 512 bytes. Real chunk
 * ids never start with `#` (document ids cannot), so the two forms cannot collide.
 */
export function engineId(chunkId: string): string {
  if (Buffer.byteLength(chunkId) <= MAX_ENGINE_ID_BYTES) return chunkId;
  return `#sha256:${createHash('sha256').update(chunkId).digest('hex')}`;
}

/** The text a child chunk is indexed under (same as the embedded BM25 index): title, heading path, text. */
export function indexedText(chunk: Pick<Chunk, 'title' | 'heading_path' | 'text' | 'context'>): string {
  return keywordText(chunk); // title, headings, the contextual-retrieval context when present, text
}

export interface ChunkDocument {
  chunk_id: string;
  document_id: string;
  tenant: string;
  version: number;
  kind: Chunk['kind'];
  acl: string[];
  parent_id: string | null;
  /** Children only. */
  text?: string;
  /** Children only: `segmentForIndex(indexedText(chunk))`. */
  text_seg?: string;
  md_s: Record<string, string>;
  md_a: Record<string, string[]>;
  md_n: Record<string, number>;
  md_b: Record<string, boolean>;
  /** The full chunk, stored in `_source` only. */
  chunk: Chunk;
}

/** The document indexed for a chunk. */
export function toChunkDocument(chunk: Chunk): ChunkDocument {
  const doc: ChunkDocument = {
    chunk_id: chunk.chunk_id,
    document_id: chunk.document_id,
    tenant: chunk.tenant,
    version: chunk.version,
    kind: chunk.kind,
    acl: [...chunk.acl],
    parent_id: chunk.parent_id,
    md_s: {},
    md_a: {},
    md_n: {},
    md_b: {},
    chunk,
  };
  if (chunk.kind === 'child') {
    const text = indexedText(chunk);
    doc.text = text;
    doc.text_seg = segmentForIndex(text);
  }
  for (const [key, value] of Object.entries(chunk.metadata)) {
    const field = encodeFieldKey(key);
    if (Array.isArray(value)) doc.md_a[field] = [...value];
    else if (typeof value === 'string') doc.md_s[field] = value;
    else if (typeof value === 'number') doc.md_n[field] = value;
    else doc.md_b[field] = value;
  }
  return doc;
}

/** One `index` action + source pair for `_bulk`, addressed to the write alias. */
export interface BulkIndexAction {
  index: { _index: string; _id: string };
}

export function bulkIndexOperations(index: string, chunks: readonly Chunk[]): Array<BulkIndexAction | ChunkDocument> {
  const ops: Array<BulkIndexAction | ChunkDocument> = [];
  for (const c of chunks) {
    ops.push({ index: { _index: index, _id: engineId(c.chunk_id) } });
    ops.push(toChunkDocument(c));
  }
  return ops;
}
