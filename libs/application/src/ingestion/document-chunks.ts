import { chunkId, type Chunk } from '@rag/contracts';
import { externalChunkId, internalDocumentId } from '@rag/domain';
import type { KeywordIndex } from '@rag/ports';

/** One stored chunk of a document as its tenant sees it (the console's document page). */
export interface DocumentChunkView {
  chunk_id: string;
  ordinal: number;
  /** Children are searched and cited; parents are the wider context handed to the generator. */
  kind: Chunk['kind'];
  parent_id: string | null;
  heading_path: string[];
  title: string;
  text: string;
  token_count: number;
  source_url?: string;
  /** The LLM-written context (RAG_CONTEXTUAL_CHUNKS=on), when the chunk has one. */
  context?: string;
}

/**
 * The chunks of a document's active (query-visible) version, in ordinal order, a page at a time: chunk ids are
 * `${document_id}#v${version}#${ordinal}`, so a page is one keyword-index lookup of `limit` ids, whatever the corpus
 * size. `total` counts the chunks the keyword index holds for the document (parents and children).
 */
export async function listDocumentChunks(
  keywords: KeywordIndex,
  doc: { document_id: string; active_version: number | null },
  tenant: string,
  page: { offset: number; limit: number },
): Promise<{ version: number | null; total: number; chunks: DocumentChunkView[] }> {
  if (doc.active_version === null) return { version: null, total: 0, chunks: [] };
  const internal = internalDocumentId(tenant, doc.document_id);
  const total = await keywords.count(internal);
  const ids: string[] = [];
  for (let o = page.offset; o < Math.min(total, page.offset + page.limit); o++) ids.push(chunkId(internal, doc.active_version, o));
  const found = ids.length ? await keywords.getChunks(ids) : [];
  const chunks = found
    .filter((c) => c.tenant === tenant && c.version === doc.active_version)
    .sort((a, b) => a.ordinal - b.ordinal)
    .map((c) => ({
      chunk_id: externalChunkId(tenant, c.chunk_id),
      ordinal: c.ordinal,
      kind: c.kind,
      parent_id: c.parent_id === null ? null : externalChunkId(tenant, c.parent_id),
      heading_path: c.heading_path,
      title: c.title,
      text: c.text,
      token_count: c.token_count,
      ...(c.source_url ? { source_url: c.source_url } : {}),
      ...(c.context ? { context: c.context } : {}),
    }));
  return { version: doc.active_version, total, chunks };
}
