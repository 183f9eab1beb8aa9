import { Logger } from '@rag/platform';
import type { SourceConnector, SourceStateStore } from '@rag/ports';
import type { SourceChangeService } from './source-change.service';

export interface ReconcileReport {
  kind: string;
  scope: string;
  listed: number;
  upserts: number;
  deletes: number;
  /** Set when the listing failed: nothing was pruned for this scope. */
  error?: string;
}

/**
 * Catches what webhooks missed. For each connector and configured scope (space / workspace) it lists every current
 * page, starting at time L:
 * - a page never admitted, admitted with another source version, or tombstoned before L → upsert, ordered at L
 *   (the page existed at some moment after L, so a delete that happened after L still wins);
 * - a live document of that scope that was not listed and whose latest change is older than L → delete, ordered
 *   at the end of the listing (a page created during the listing is never pruned).
 * A listing that fails part-way prunes nothing.
 */
export class SourceReconciler {
  private readonly log = new Logger('reconciler');
  private running: Promise<ReconcileReport[]> | null = null;

  constructor(
    private readonly connectors: SourceConnector[],
    private readonly state: SourceStateStore,
    private readonly changes: SourceChangeService,
    private readonly tenant: string,
  ) {}

  /** One pass over every scope; concurrent calls share the pass in progress. */
  runOnce(): Promise<ReconcileReport[]> {
    this.running ??= this.pass().finally(() => {
      this.running = null;
    });
    return this.running;
  }

  private async pass(): Promise<ReconcileReport[]> {
    const reports: ReconcileReport[] = [];
    for (const c of this.connectors) {
      let scopes: string[];
      try {
        scopes = await c.scopes();
      } catch (e) {
        reports.push({ kind: c.kind, scope: '*', listed: 0, upserts: 0, deletes: 0, error: String(e) });
        continue;
      }
      for (const scope of scopes) reports.push(await this.reconcileScope(c, scope));
    }
    for (const r of reports) {
      if (r.error) this.log.warn('reconciliation failed; nothing pruned', { ...r });
      else if (r.upserts || r.deletes) this.log.info('reconciled', { ...r });
    }
    await this.state.pruneEvents(7 * 24 * 3600 * 1000).catch(() => 0);
    return reports;
  }

  private async reconcileScope(c: SourceConnector, scope: string): Promise<ReconcileReport> {
    const report: ReconcileReport = { kind: c.kind, scope, listed: 0, upserts: 0, deletes: 0 };
    const started = Date.now();
    const seen = new Set<string>();
    try {
      for await (const page of c.list(scope)) {
        report.listed++;
        seen.add(page.document_id);
        const st = await this.state.get(page.document_id);
        const needed = !st || (st.deleted ? started > st.changed_at : st.source_version !== page.source_version);
        if (!needed) continue;
        const r = await this.changes.apply({
          event_id: `reconcile:${page.document_id}:${started}`,
          kind: c.kind,
          document_id: page.document_id,
          ref: page.ref,
          op: 'upsert',
          changed_at: st && !st.deleted ? Math.max(started, st.changed_at) : started,
          scope,
          source_version: page.source_version,
          ...(page.title ? { title: page.title } : {}),
        });
        if (r.status === 'queued') report.upserts++;
      }
    } catch (e) {
      return { ...report, error: e instanceof Error ? e.message : String(e) };
    }
    const ended = Date.now();
    for (const doc of await this.state.listLive(c.kind, { scope, tenant: this.tenant })) {
      if (seen.has(doc.document_id) || doc.changed_at >= started) continue;
      const r = await this.changes.apply({
        event_id: `reconcile:${doc.document_id}:gone:${ended}`,
        kind: c.kind,
        document_id: doc.document_id,
        ref: doc.document_id,
        op: 'delete',
        changed_at: ended,
        scope,
      });
      if (r.status === 'queued') report.deletes++;
    }
    return report;
  }
}
