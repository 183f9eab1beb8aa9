import { Injectable } from '@nestjs/common';
import type { ReconcileReport } from '@rag/application';

export type SourceKindName = 'confluence' | 'notion';

/** The last webhook a source delivered to this gateway: when, and what became of it. */
export interface WebhookSeen {
  at: string;
  /** `queued`, `duplicate`, `ignored`, `verified`, … on success; the error code (`unauthorized`, `invalid_request`, …) otherwise. */
  outcome: string;
  ok: boolean;
  detail?: string;
  document_id?: string;
}

/** The last reconciliation pass of a source: when, and the per-scope counts (added = upserts, pruned = deletes). */
export interface ReconcileSeen {
  at: string;
  trigger: 'schedule' | 'manual';
  scopes: { scope: string; listed: number; upserts: number; deletes: number; error?: string }[];
}

/**
 * What this gateway process saw of its sources, for the console's Sources page: the last webhook of each kind and
 * the last reconciliation. In memory on purpose: it describes this process's recent traffic (a restarted gateway
 * starts blank, and each replica of a distributed gateway reports its own), not a durable audit log.
 */
@Injectable()
export class SourceActivity {
  private readonly webhooks = new Map<SourceKindName, WebhookSeen>();
  private readonly reconciles = new Map<string, ReconcileSeen>();

  webhook(kind: SourceKindName, seen: Omit<WebhookSeen, 'at'>, at = new Date()): void {
    this.webhooks.set(kind, { at: at.toISOString(), ...seen });
  }

  reconciled(reports: ReconcileReport[], trigger: ReconcileSeen['trigger'], at = new Date()): void {
    const byKind = new Map<string, ReconcileSeen>();
    for (const r of reports) {
      const seen = byKind.get(r.kind) ?? { at: at.toISOString(), trigger, scopes: [] };
      seen.scopes.push({ scope: r.scope, listed: r.listed, upserts: r.upserts, deletes: r.deletes, ...(r.error ? { error: r.error } : {}) });
      byKind.set(r.kind, seen);
    }
    for (const [kind, seen] of byKind) this.reconciles.set(kind, seen);
  }

  lastWebhook(kind: SourceKindName): WebhookSeen | null {
    return this.webhooks.get(kind) ?? null;
  }

  lastReconcile(kind: SourceKindName): ReconcileSeen | null {
    return this.reconciles.get(kind) ?? null;
  }
}
