/** Versioned topic names. Every message is keyed by `document_id` so one document's events stay ordered. */
export enum Topic {
  SourceEvents = 'rag.source.events.v1',
  Documents = 'rag.documents.v1',
  Chunks = 'rag.chunks.v1',
  ChunksEmbedded = 'rag.chunks.embedded.v1',
  IndexEvents = 'rag.index.events.v1',
  Dlq = 'rag.dlq.v1',
}

export const ALL_TOPICS: readonly Topic[] = Object.values(Topic);

/** Header names carried by messages on the dead-letter topic. */
export const DLQ_HEADERS = {
  reason: 'x-rag-dlq-reason',
  stage: 'x-rag-dlq-stage',
  originalTopic: 'x-rag-dlq-original-topic',
  attempts: 'x-rag-dlq-attempts',
  /** Where the message was on its topic (partition, offset): replay or inspect it from there while retention keeps it. */
  originalPartition: 'x-rag-dlq-original-partition',
  originalOffset: 'x-rag-dlq-original-offset',
  /**
   * Set when the original value was too large for the dead-letter topic: the value is then a stand-in that carries only
   * the document's `version` (so its status still becomes `failed`), and this header says how large the original was
   * and where it stays.
   */
  valueOmitted: 'x-rag-dlq-value-omitted',
} as const;

/**
 * The document version a pipeline message is about: `version` (source events, status events) or `document.version`;
 * undefined when it names none. What a dead-lettered message marks `failed`, and all a DLQ stand-in keeps of a value.
 */
export function messageVersion(value: unknown): number | undefined {
  if (typeof value !== 'object' || value === null) return undefined;
  const v = value as { version?: unknown; document?: { version?: unknown } };
  const n = typeof v.version === 'number' ? v.version : v.document?.version;
  return typeof n === 'number' && Number.isInteger(n) && n > 0 ? n : undefined;
}
