import { Topic, type SourceEvent } from '@rag/contracts';
import { Logger } from '@rag/platform';
import type { Bus, Registry, SourceKind, SourceStateStore } from '@rag/ports';
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
    private readonly opts: { tenant: string; defaultAcl: string[] },
  ) {}

  apply(req: SourceChangeRequest): Promise<SourceChangeResult> {
    return this.lock.run(req.document_id, () => this.admit(req));
  }

  private async admit(req: SourceChangeRequest): Promise<SourceChangeResult> {
    const tenant = this.opts.tenant;
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
      const existing = await this.registry.get(req.document_id);
      if (req.op === 'delete' && (!existing || existing.status === 'deleted')) {
        await this.state.complete(req.event_id);
        return { status: 'ignored', document_id: req.document_id, reason: 'nothing to delete: the document is not indexed' };
      }
      const record = await this.registry.accept(
        req.op === 'delete'
          ? { document_id: req.document_id, tenant, op: 'delete' }
          : {
              document_id: req.document_id,
              tenant,
              op: 'upsert',
              mime_type: SOURCE_MIME[req.kind],
              ...(req.title ? { title: req.title.slice(0, 1024) } : {}),
              ...(req.source_url ? { source_url: req.source_url } : {}),
            },
      );
      const emitted_at = nowIso();
      const event: SourceEvent =
        req.op === 'delete'
          ? { event_id: req.event_id, op: 'delete', document_id: req.document_id, tenant, version: record.version, emitted_at }
          : {
              event_id: req.event_id,
              op: 'upsert',
              document_id: req.document_id,
              tenant,
              version: record.version,
              emitted_at,
              ...(req.title ? { title: req.title.slice(0, 1024) } : {}),
              mime_type: SOURCE_MIME[req.kind],
              source: { kind: req.kind, ref: req.ref },
              ...(req.source_url ? { source_url: req.source_url.slice(0, 2048) } : {}),
              acl: existing?.acl.length ? existing.acl : this.opts.defaultAcl,
              metadata: { source: req.kind },
            };
      await this.bus.publish(Topic.SourceEvents, [{ key: req.document_id, value: event }]);
      await this.state.complete(req.event_id);
      return { status: 'queued', document_id: req.document_id, version: record.version, op: req.op };
    } catch (e) {
      await this.state.abandon(req.event_id).catch((ae: unknown) => this.log.warn('could not undo an admission', { error: String(ae) }));
      throw e;
    }
  }
}
