/**
 * Splits a batch write of the embedded stores into runs that keep each document's items together (one transaction per
 * run), each run at least `min` items long but for the last. Between runs the writer yields to the event loop
 * (`yieldToLoop`), so a batch of 64 documents (≈ 250 chunks) no longer holds the loop for the whole batch: under
 * ingestion load the indexer's keyword + vector write was one 2–3 s busy stretch (--cpu-prof of bench scale), a stall
 * of every query in the process. A crash between runs leaves whole documents written or not, and the indexer's
 * redelivery rewrites them (the upserts are idempotent), as after a crash before the batch's one transaction.
 */
export function documentRuns<T extends { document_id: string }>(items: readonly T[], min: number): T[][] {
  const runs: T[][] = [];
  let run: T[] = [];
  for (let i = 0; i < items.length; i++) {
    const item = items[i]!;
    run.push(item);
    const next = items[i + 1];
    if (run.length >= min && (next === undefined || next.document_id !== item.document_id)) {
      runs.push(run);
      run = [];
    }
  }
  if (run.length) runs.push(run);
  return runs;
}

/** Items per run of a batch write of the embedded stores (see documentRuns). */
export const WRITE_RUN_ITEMS = 32;

/** Lets queued I/O callbacks (HTTP requests) run before the next run of a batch write. */
export function yieldToLoop(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}
