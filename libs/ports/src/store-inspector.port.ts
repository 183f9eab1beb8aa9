/** Which store a file belongs to. */
export type StoreName = 'registry' | 'keyword' | 'vectors' | 'bus' | 'api_keys' | 'embedding_cache';

/** The state of one store file. */
export interface StoreFileReport {
  store: StoreName;
  file: string;
  /** false: the file is not there yet (a new store; not a problem by itself). */
  exists: boolean;
  bytes: number;
  ok: boolean;
  /** One line naming the file, when not ok. */
  problem?: string;
}

/** Sizes of the stores, for the cross-store consistency check; null where the store is not embedded or not readable. */
export interface StoreCounts {
  /** Rows of the registry, any status (deleted documents included). */
  registryDocuments: number | null;
  /** Sum of the child-chunk counts of the registry's documents that have an active (query-visible) version. */
  registryIndexedChunks: number | null;
  /**
   * Documents queued or being processed: their chunks may already be in the stores (the indexer writes them before the
   * registry records them), so they explain stores holding more than registryIndexedChunks.
   */
  registryPendingDocuments: number | null;
  /** Searchable (child) chunks in the keyword index. */
  keywordChunks: number | null;
  /** Vectors (child chunks) in the vector store of the current embedding space. */
  vectorRecords: number | null;
  /** The file each count comes from, for messages. */
  files: { registry?: string; keyword?: string; vectors?: string };
}

export interface StoreInspection {
  files: StoreFileReport[];
  counts: StoreCounts;
  ms: number;
}

/** Looks at the embedded stores' files from outside the adapters: integrity, schema, sizes. */
export interface StoreInspector {
  /** Structural check of every store file (SQLite quick_check or integrity_check: O(size); none skips it), expected schema, counts. */
  inspect(mode: 'quick' | 'full' | 'none'): Promise<StoreInspection>;
  /** Cheap: each file is still there and still a SQLite file; corruption seen by queries since it was opened. */
  ping(): Promise<StoreFileReport[]>;
  /** Store sizes only (cheap enough for a cached readiness probe). */
  counts(): Promise<StoreCounts>;
}
