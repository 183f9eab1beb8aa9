/**
 * Per-document ordering of source changes. Each change carries the source's own time for it (`changed_at`, epoch
 * ms: the Confluence event timestamp / page version time, the Notion event timestamp / `last_edited_time`, or
 * the reconciler's observation time for a delete). The registry keeps the latest admitted time per document and a
 * tombstone when the latest admitted change is a delete.
 *
 * Rules:
 * - a change older than the latest admitted one is stale (webhooks arrive out of order);
 * - a change at the same time as the latest admitted one is admitted, whatever the two ops are. An admitted upsert
 *   never carries content: the loader fetches the page's current state and deletes the document when the page is
 *   gone at the source. So a tie is settled by the source itself — a late update of a really deleted page cannot
 *   resurrect it (the fetch finds it gone), and a delete at the same time as an update cannot suppress that update
 *   (it used to: "a delete wins a tie" let one duplicated or forged delete make the real update at the same
 *   timestamp `ignored`, leaving a live page out of the index).
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
  return { admit: true };
}
