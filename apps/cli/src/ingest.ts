import type { PlatformClient } from './platform-client';
import { Progress } from './progress';
import type { SourceDoc } from './sources';

export interface IngestSummary {
  submitted: number;
  rejected: { document_id: string; error: string }[];
  indexed: number;
  failed: { document_id: string; error: string }[];
  unchanged: number;
  /** From the first submission to the last terminal status (or to the end of submission without --wait). */
  seconds: number;
}

const TERMINAL = new Set(['indexed', 'failed', 'deleted']);

/** Submits documents and follows them to a terminal status with a progress line. */
export async function ingest(client: PlatformClient, docs: SourceDoc[], opts: { wait: boolean; timeoutMs?: number; label?: string }): Promise<IngestSummary> {
  const progress = new Progress(opts.label ?? 'ingest', docs.length);
  const rejected: IngestSummary['rejected'] = [];
  const pending = new Set<string>();
  let unchanged = 0;
  let submitted = 0;
  for (let i = 0; i < docs.length; i += 100) {
    const outcomes = await client.submit(docs.slice(i, i + 100));
    for (const o of outcomes) {
      if (!o.ok) rejected.push({ document_id: o.document_id, error: o.error ?? 'rejected' });
      else {
        submitted++;
        if (o.unchanged) unchanged++;
        pending.add(o.document_id);
      }
    }
    progress.update(i + outcomes.length, 'submitted');
  }
  const summary: IngestSummary = { submitted, rejected, indexed: 0, failed: [], unchanged, seconds: 0 };
  if (!opts.wait) {
    summary.seconds = progress.elapsedSeconds;
    return summary;
  }
  // Same start as the submission phase: the rate shown is documents finished per second of the whole run (the
  // pipeline works while documents are still being submitted), not per second since the last submission.
  const tracker = new Progress(opts.label ?? 'ingest', pending.size, progress.startedAt);
  const deadline = Date.now() + (opts.timeoutMs ?? 60 * 60 * 1000);
  let done = 0;
  while (pending.size > 0) {
    const views = await client.statuses([...pending]);
    for (const v of views) {
      if (!TERMINAL.has(v.status)) continue;
      pending.delete(v.document_id);
      done++;
      if (v.status === 'indexed') summary.indexed++;
      else if (v.status === 'failed') summary.failed.push({ document_id: v.document_id, error: v.error ?? 'failed' });
    }
    tracker.update(done, `done (${summary.indexed} indexed, ${summary.failed.length} failed)`, pending.size === 0);
    if (pending.size === 0) break;
    if (Date.now() > deadline) throw new Error(`${pending.size} documents still not indexed after the timeout`);
    await new Promise((r) => setTimeout(r, 300));
  }
  tracker.finish(done, `done (${summary.indexed} indexed, ${summary.failed.length} failed)`);
  summary.seconds = progress.elapsedSeconds;
  return summary;
}
