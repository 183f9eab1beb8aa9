import { Topic, type SourceEvent } from '@rag/contracts';
import { internalDocumentId } from '@rag/domain';
import { Logger } from '@rag/platform';
import type { Bus, Registry, SourceConnector, SourceKind, SourceStateStore } from '@rag/ports';
import { nowIso } from '../ingestion/validate';
import { KeyedLock } from './keyed-lock';

/** A change reported by a source (webhook) or observed by the reconciler. */
export interface SourceChangeRequest {
  /** Unique per event at the source (redeliveries repeat it): the dedupe key. */
  event_id: string;
  kind: SourceKind;
  document_id: string;
  /** The page id at the source (what the loader's connector fetches). */
  ref: string;
  op: 'upsert' | 'delete';
  /** Source time of the change, epoch ms. */
  changed_at: number;
  scope?: string;
  source_version?: string;
  title?: string;
  source_url?: string;
}

export interface SourceChangeOptions {
  tenant: string;
  defaultAcl: string[];
  /**
   * The configured connectors: an upsert asks the connector of its kind for the page's ACL (Confluence read
   * restrictions; Notion's configured ACL) so the registry records the ACL the index will get, and a change of
   * restrictions alone is visible in the registry view.
   */
  connectors?: SourceConnector[];
  /** Longest wait for that ACL answer before admitting without it (default 5 s; a slower answer is then unused). */
  aclTimeoutMs?: number;
}

export type SourceChangeResult =
  | { status: 'queued'; document_id: string; version: number; op: 'upsert' | 'delete' }
  | { status: 'duplicate'; document_id: string }
  | { status: 'ignored'; document_id: string; reason: string };

export const SOURCE_MIME: Record<SourceKind, string> = { confluence: 'application/xhtml+xml', notion: 'application/json' };

/**
 * Admits source changes: durable event-id dedupe and per-document source ordering (SourceStateStore), a version
 * reserved in the registry, then one `rag.source.events.v1` message keyed by document id (the loader fetches the
 * content). If queuing fails the admission is undone, so the source's redelivery is processed again.
 */
export class SourceChangeService {
  private readonly log = new Logger('sources');
  private readonly lock = new KeyedLock();

  constructor(
    private readonly registry: Registry,
    private readonly bus: Bus,
    private readonly state: SourceStateStore,
    private readonly opts: SourceChangeOptions,
  ) {
    this.connectors = new Map((opts.connectors ?? []).map((c) => [c.kind, c]));
  }

  private readonly connectors: Map<SourceKind, SourceConnector>;

  apply(req: SourceChangeRequest): Promise<SourceChangeResult> {
    return this.lock.run(req.document_id, () => this.admit(req));
  }

  private async admit(req: SourceChangeRequest): Promise<SourceChangeResult> {
    const tenant = this.opts.tenant;
    // The registry, the bus and the stores use tenant-scoped internal ids; the source state and the results keep the
    // source's id (libs/domain documents/document-id.ts).
    const documentId = internalDocumentId(tenant, req.document_id);
    const decision = await this.state.admit({
      event_id: req.event_id,
      document_id: req.document_id,
      kind: req.kind,
      tenant,
      op: req.op,
      changed_at: req.changed_at,
      ...(req.scope !== undefined ? { scope: req.scope } : {}),
      ...(req.source_version !== undefined ? { source_version: req.source_version } : {}),
    });
    if (decision.outcome === 'duplicate') return { status: 'duplicate', document_id: req.document_id };
    if (decision.outcome === 'stale') {
      this.log.info('source change ignored', { document_id: req.document_id, op: req.op, reason: decision.reason });
      return { status: 'ignored', document_id: req.document_id, reason: decision.reason };
    }
    try {
      const existing = await this.registry.get(documentId);
      if (req.op === 'delete' && (!existing || existing.status === 'deleted')) {
        await this.state.complete(req.event_id);
        return { status: 'ignored', document_id: req.document_id, reason: 'nothing to delete: the document is not indexed' };
      }
      const acl = req.op === 'upsert' ? await this.currentAcl(req) : undefined;
      const record = await this.registry.accept(
        req.op === 'delete'
          ? { document_id: documentId, tenant, op: 'delete' }
          : {
              document_id: documentId,
              tenant,
              op: 'upsert',
              mime_type: SOURCE_MIME[req.kind],
              ...(req.title ? { title: req.title.slice(0, 1024) } : {}),
              ...(req.source_url ? { source_url: req.source_url } : {}),
              ...(acl ? { acl } : {}),
            },
      );
      const emitted_at = nowIso();
      const event: SourceEvent =
        req.op === 'delete'
          ? { event_id: req.event_id, op: 'delete', document_id: documentId, tenant, version: record.version, emitted_at }
          : {
              event_id: req.event_id,
              op: 'upsert',
              document_id: documentId,
              tenant,
              version: record.version,
              emitted_at,
              ...(req.title ? { title: req.title.slice(0, 1024) } : {}),
              mime_type: SOURCE_MIME[req.kind],
              source: { kind: req.kind, ref: req.ref },
              ...(req.source_url ? { source_url: req.source_url.slice(0, 2048) } : {}),
              // The loader fetches the page and indexes the ACL of what it fetched; this is the ACL known now.
              acl: acl ?? (existing?.acl.length ? existing.acl : this.opts.defaultAcl),
              metadata: { source: req.kind },
            };
      await this.bus.publish(Topic.SourceEvents, [{ key: documentId, value: event }]);
      await this.state.complete(req.event_id);
      return { status: 'queued', document_id: req.document_id, version: record.version, op: req.op };
    } catch (e) {
      await this.state.abandon(req.event_id).catch((ae: unknown) => this.log.warn('could not undo an admission', { error: String(ae) }));
      throw e;
    }
  }

  /**
   * The page's ACL from its connector; undefined when unknown (no connector, the page is gone — the loader will
   * delete it — or the source did not answer: then the registry keeps the ACL it had and the loader still indexes
   * the ACL of the page it fetches).
   */
  private async currentAcl(req: SourceChangeRequest): Promise<string[] | undefined> {
    const connector = this.connectors.get(req.kind);
    if (!connector) return undefined;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const timeoutMs = this.opts.aclTimeoutMs ?? 5_000;
    try {
      const timeout = new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs);
      });
      return (await Promise.race([connector.acl(req.ref), timeout])) ?? undefined;
    } catch (e) {
      this.log.warn('could not read the page ACL at admission; the loader applies it', { document_id: req.document_id, error: e instanceof Error ? e.message : String(e) });
      return undefined;
    } finally {
      clearTimeout(timer);
    }
  }
}
