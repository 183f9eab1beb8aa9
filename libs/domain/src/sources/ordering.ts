/**
 * Per-document ordering of source changes. Each change carries the source's own time for it (`changed_at`, epoch
 * ms: the Confluence event timestamp / page version time, the Notion event timestamp / `last_edited_time`, or
 * the reconciler's observation time for a delete). The registry keeps the latest admitted time per document and a
 * tombstone when the latest admitted change is a delete.
 *
 * Rules:
 * - a change older than the latest admitted one is stale (webhooks arrive out of order);
 * - an upsert at the same time as a tombstone is stale: a delete wins a tie, so a late update can never resurrect a
 *   deleted page (a restore/undelete is a newer event and passes);
 * - otherwise (newer, or the same time as an admitted upsert, i.e. a retry of an unfinished admission) it is admitted.
 */
export interface SourceOrderState {
  changed_at: number;
  deleted: boolean;
}

export type OrderDecision = { admit: true } | { admit: false; reason: string };

export function orderChange(state: SourceOrderState | null, change: { op: 'upsert' | 'delete'; changed_at: number }): OrderDecision {
  if (!state) return { admit: true };
  if (change.changed_at < state.changed_at) {
    return { admit: false, reason: `stale: a newer change (${new Date(state.changed_at).toISOString()}) was already admitted` };
  }
  if (change.changed_at === state.changed_at && state.deleted && change.op === 'upsert') {
    return { admit: false, reason: 'stale: the page was deleted at the same time' };
  }
  return { admit: true };
}
