/** What the version fence needs from a hit. */
export interface VersionFencedHit {
  document_id: string;
  version: number;
}

/**
 * Keeps only hits whose `version` is the document's active version.
 *
 * While a document is being replaced, the stores briefly hold chunks of both the old and the new
 * version (the new one is written first, then older ones are deleted). Fencing on the registry's
 * active version means a query never sees a mix: until the switch it sees only the old version, after
 * it only the new one. Hits of documents absent from `active` (deleted, or never finished indexing)
 * are dropped too. Order is preserved.
 */
export function applyVersionFence<T extends VersionFencedHit>(hits: readonly T[], active: ReadonlyMap<string, number>): T[] {
  return hits.filter((h) => active.get(h.document_id) === h.version);
}
