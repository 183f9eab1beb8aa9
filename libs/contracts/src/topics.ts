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
} as const;
