import { randomUUID } from 'node:crypto';
import { chunkId, Topic, type Chunk, type ChunksEvent } from '@rag/contracts';
import type { Bus, KeywordIndex, ListCursor, Registry } from '@rag/ports';
import type { Contextualizer } from './contextualizer';

export interface ContextualReindexOptions {
  tenant?: string;
  /** Ask the LLM again for chunks that already have a context (default: only documents with a child lacking one). */
  force?: boolean;
  /** Stop after this many documents (default: all). */
  limit?: number;
  onDocument?(r: ContextualReindexDocument): void;
}

export interface ContextualReindexDocument {
  document_id: string;
  outcome: 'republished' | 'skipped' | 'missing';
  children: number;
  written: number;
  failed: number;
}

export interface ContextualReindexSummary {
  documents: number;
  republished: number;
  skipped: number;
  missing: number;
  written: number;
  failed: number;
  model: string;
}

const PAGE = 500;

/**
 * `rag reindex --contextual` (issue 16 item 5): gives the documents indexed before RAG_CONTEXTUAL_CHUNKS was on their
 * contexts, without their sources. For each indexed document it reads the active version's chunks back from the
 * keyword index (which keeps every chunk whole, children and parents), has the contextualizer write each child's
 * context, and republishes them on rag.chunks.v1 under the same version: the embedder embeds the new texts and the
 * indexer rewrites the same chunk ids in place (its no-op check compares contexts too). A document that got a newer
 * version meanwhile is left alone: the indexer drops the older republished version as stale anyway.
 */
export class ContextualReindex {
  /** Republished documents not yet seen indexed with their new contexts: document id → chunk id → context ('' none). */
  private readonly pending = new Map<string, Map<string, string>>();
  constructor(
    private readonly registry: Registry,
    private readonly keywords: KeywordIndex,
    private readonly bus: Bus,
    private readonly contextualizer: Contextualizer,
  ) {}

  async run(opts: ContextualReindexOptions = {}): Promise<ContextualReindexSummary> {
    // Keyset pages (issue 13): an offset walk re-reads every earlier row per page, quadratic over a million documents.
    const ids: string[] = [];
    // (A registry whose records carry no `seq` is paged by offset.)
    for (let after: ListCursor | undefined, offset = 0; ; offset += PAGE) {
      const page = await this.registry.list({ ...(opts.tenant ? { tenant: opts.tenant } : {}), status: 'indexed', limit: PAGE, ...(after ? { after } : { offset }) });
      ids.push(...page.map((r) => r.document_id));
      if (page.length < PAGE) break;
      const last = page[page.length - 1]!;
      after = last.seq !== undefined ? { updated_at: last.updated_at, seq: last.seq } : undefined;
    }
    const todo = opts.limit !== undefined ? ids.slice(0, opts.limit) : ids;
    const s: ContextualReindexSummary = { documents: todo.length, republished: 0, skipped: 0, missing: 0, written: 0, failed: 0, model: this.contextualizer.modelId };
    for (const id of todo) {
      const r = await this.one(id, opts.force ?? false);
      s[r.outcome]++;
      s.written += r.written;
      s.failed += r.failed;
      opts.onDocument?.(r);
    }
    return s;
  }

  private async one(documentId: string, force: boolean): Promise<ContextualReindexDocument> {
    const none = (outcome: ContextualReindexDocument['outcome'], children = 0): ContextualReindexDocument => ({ document_id: documentId, outcome, children, written: 0, failed: 0 });
    const record = await this.registry.get(documentId);
    // Only a document whose active version is its latest: one in flight gets its contexts from the chunker itself.
    if (!record || record.status !== 'indexed' || record.active_version === 0 || record.version !== record.active_version || !record.content_hash) return none('skipped');
    const chunks = await this.activeChunks(documentId, record.active_version);
    const children = chunks.filter((c) => c.kind === 'child');
    if (children.length === 0) return none('missing');
    if (!force && children.every((c) => c.context)) return none('skipped', children.length);
    const c = await this.contextualizer.contextualize({ document_id: documentId, title: record.title ?? children[0]!.title, chunks });
    const event: ChunksEvent = {
      event_id: randomUUID(),
      op: 'upsert',
      document: {
        document_id: documentId,
        tenant: record.tenant,
        version: record.active_version,
        content_hash: record.content_hash,
        title: children[0]!.title,
        chunks: c.chunks,
      },
    };
    this.pending.set(documentId, new Map(c.chunks.filter((x) => x.kind === 'child').map((x) => [x.chunk_id, x.context ?? ''])));
    await this.bus.publish(Topic.Chunks, [{ key: documentId, value: event }]);
    return { document_id: documentId, outcome: 'republished', children: children.length, written: c.written, failed: c.failed };
  }

  /**
   * Republished documents whose keyword index does not hold the new contexts yet (the embedder and indexer run
   * behind the bus); a document that got a newer version since no longer counts. Poll until 0 to wait for the run.
   */
  async unsettled(): Promise<string[]> {
    for (const [documentId, want] of this.pending) {
      const record = await this.registry.get(documentId);
      const stored = await this.keywords.getChunks([...want.keys()]);
      const done = stored.length === want.size && stored.every((c) => (c.context ?? '') === want.get(c.chunk_id));
      if (done || !record || record.version !== record.active_version || record.status === 'failed') this.pending.delete(documentId);
    }
    return [...this.pending.keys()];
  }

  /** The active version's chunks in ordinal order (ordinals are one contiguous run from 0). */
  private async activeChunks(documentId: string, version: number): Promise<Chunk[]> {
    const total = await this.keywords.count(documentId);
    const out: Chunk[] = [];
    for (let o = 0; o < total; o += PAGE) {
      const ids: string[] = [];
      for (let i = o; i < Math.min(total, o + PAGE); i++) ids.push(chunkId(documentId, version, i));
      out.push(...(await this.keywords.getChunks(ids)).filter((c) => c.version === version && c.document_id === documentId));
    }
    return out.sort((a, b) => a.ordinal - b.ordinal);
  }
}
