import { Piscina } from 'piscina';
import { workerEntry } from '../worker-parser/worker-support';
import type { Chunk } from '@rag/contracts';
import { Logger, metrics } from '@rag/platform';
import type { KeywordHit, KeywordIndex, KeywordSearchRequest } from '@rag/ports';
import type { KeywordWriteResult, KeywordWriteTask, KeywordWriterData } from './keyword-writer.worker';

export interface OffloadedKeywordWritesOptions {
  /** What the writer opens: the data folder of the embedded index, its `synchronous` and BM25 parameters. */
  index: KeywordWriterData;
  /** The worker module (`.ts` source or built `.js`); default: keyword-writer.worker of this folder. Tests pass their own. */
  workerFile?: string;
}

/** The `thread` label of rag_keyword_writes_total. */
type WriteThread = 'worker' | 'main_retry';

type WriteTask = Exclude<KeywordWriteTask, { op: 'close' }>;

/** A write waiting for the writer thread; `alone` after a merged task failed (it is then sent by itself). */
interface QueuedWrite {
  task: WriteTask;
  onMain: () => Promise<number>;
  /** Settles the write: a delete with its count, an upsert with 0, a recluster with its duration in ms. */
  resolve: (count: number) => void;
  reject: (err: unknown) => void;
  alone?: boolean;
}

/** After a recluster failed, the next is not tried for this long (it would redo its work up to the same failure). */
const RECLUSTER_BACKOFF_MS = 15 * 60_000;

/** Most chunks in one merged upsert (one transaction on the writer). */
export const MAX_MERGED_CHUNKS = 2048;

/** The chunks of merged upserts in order; a chunk id sent twice (the same content: ids carry the version) once, the last. */
function mergedChunks(batch: QueuedWrite[]): Chunk[] {
  const byId = new Map<string, Chunk>();
  for (const w of batch) {
    if (w.task.op !== 'upsert') continue;
    for (const c of w.task.chunks) {
      byId.delete(c.chunk_id); // keeps the order of the last occurrence
      byId.set(c.chunk_id, c);
    }
  }
  return [...byId.values()];
}

/**
 * The embedded keyword index with its writes on a worker thread of their own (RAG_KEYWORD_WRITE_WORKER, default on).
 * Embedded, every ingestion stage runs on the one event loop; profiled with the hashing embedder
 * (`node --cpu-prof scripts/bench/index.js ingest`), the keyword index's upserts — tokenizing each chunk, rewriting
 * the posting blocks it touches, the commit — were ≈ 25 % of that thread's busy time, while the second core had
 * little to do. Here they run on one worker with its own connection to the same `keyword.db`:
 * - searches, getChunks and counts stay on `inner` (this thread's connection, or the search workers above it). SQLite
 *   WAL lets them read while the writer writes, and a write has committed before its promise resolves, so a search
 *   that starts after an upsert returned sees it (read-your-writes, as before); the search connections' term caches
 *   are checked against `PRAGMA data_version`, which another connection's commit changes;
 * - one thread, one task at a time, in the order the writes were made: a delete made after an upsert runs after it;
 *   upserts queued behind one another go as one task (one transaction: each posting block they touch is rewritten
 *   once), and if that task fails each goes again alone, so only the faulty write fails;
 * - a write's own error (a malformed chunk, a full disk) is thrown to the caller as before; if the thread itself
 *   fails (exits, cannot start), the write is run again on `inner` — upserts and deletes are idempotent, so a write
 *   the dead thread had committed is simply written again — counted as `main_retry` and logged;
 * - the thread starts on the first write: a process that only searches never starts it;
 * - recluster (when `index.recluster` is set): an upsert after which one is due (reclusterDue) says so, and a
 *   recluster task is queued behind the writes already waiting — the upsert's caller is not held up, later writes wait
 *   for it (committed steps, swapped in at the end; searches go on). Logged and counted
 *   (rag_keyword_reclusters_total); one that fails leaves the old tables (its new ones dropped) and is not tried
 *   again for 15 minutes; it never runs on the main thread;
 * - close() waits for the writes in flight, closes the writer's connection, then `inner` — except a recluster in
 *   flight, which is abandoned (the thread is stopped; SQLite rolls the transaction back) rather than hold up a
 *   shutdown for minutes: the writes queued behind it are rejected (not written; a bus redelivers them).
 */
export class OffloadedKeywordWrites implements KeywordIndex {
  private readonly log = new Logger('keyword-writer');
  private pool: Piscina<KeywordWriteTask, KeywordWriteResult> | undefined;
  private readonly pending = new Set<Promise<unknown>>();
  /** Writes not yet sent, in the order they were made; one task is with the writer at a time (`sending`). */
  private readonly queue: QueuedWrite[] = [];
  private sending = false;
  private closed = false;
  /** Tasks sent to the writer (merged upserts count once). */
  private tasks = 0;
  private readonly counts: Record<WriteThread, number> = { worker: 0, main_retry: 0 };
  /** A recluster is queued or running. */
  private reclusterPending = false;
  private reclusterRunning = false;
  private reclusterNotBefore = 0;

  constructor(
    private readonly inner: KeywordIndex,
    private readonly options: OffloadedKeywordWritesOptions,
  ) {
    workerEntry(__dirname, 'keyword-writer.worker', 'keyword writer worker', options.workerFile); // fail at start-up when the module is missing
  }

  /** Writes by the thread that ran them (also in rag_keyword_writes_total). */
  stats(): Record<WriteThread, number> {
    return { ...this.counts };
  }

  /** A recluster is running on the writer thread now (keyword writes wait for it). */
  get reclustering(): boolean {
    return this.reclusterRunning;
  }

  /** Tasks sent to the writer thread so far (upserts merged into one task count once). */
  get tasksSent(): number {
    return this.tasks;
  }

  private poolOf(): Piscina<KeywordWriteTask, KeywordWriteResult> {
    if (this.pool) return this.pool;
    const entry = workerEntry(__dirname, 'keyword-writer.worker', 'keyword writer worker', this.options.workerFile);
    this.pool = new Piscina<KeywordWriteTask, KeywordWriteResult>({
      filename: entry.filename,
      workerData: { ...this.options.index, ...(entry.tsEntry ? { tsEntry: entry.tsEntry } : {}) },
      minThreads: 1,
      maxThreads: 1,
      concurrentTasksPerWorker: 1,
      idleTimeout: Number.POSITIVE_INFINITY,
      // Tasks arrive as messages, not through a blocking Atomics.wait: the thread's event loop must run between tasks
      // for its idle checkpoint (keyword-writer.worker); a task takes milliseconds, the hand-off microseconds either way.
      atomics: 'disabled',
    });
    // a worker failing outside any task must not crash the process
    this.pool.on('error', () => undefined);
    return this.pool;
  }

  private record(thread: WriteThread, op: 'upsert' | 'delete'): void {
    this.counts[thread]++;
    metrics.keywordWrites.inc({ thread, op });
  }

  /** Runs a write on the worker (or, when the thread fails, on `inner`), tracked so close() can wait for it. */
  private track<T>(work: Promise<T>): Promise<T> {
    this.pending.add(work);
    const forget = () => this.pending.delete(work);
    work.then(forget, forget);
    return work;
  }

  /** Queues a write; the sender takes the queue in order (see `takeBatch`). */
  private enqueue(task: WriteTask, onMain: () => Promise<number>): Promise<number> {
    if (this.closed) return Promise.reject(new Error('keyword index is closed'));
    return this.track(
      new Promise<number>((resolve, reject) => {
        this.queue.push({ task, onMain, resolve, reject });
        this.sendNext();
      }),
    );
  }

  private sendNext(): void {
    if (this.sending || this.queue.length === 0) return;
    this.sending = true;
    void this.send(this.takeBatch()).finally(() => {
      this.sending = false;
      this.sendNext();
    });
  }

  /**
   * The next task: a delete alone (it orders the writes around it); an upsert together with the upserts queued right
   * behind it, up to MAX_MERGED_CHUNKS chunks — one transaction on the writer rewrites each (term, block) they touch
   * once, where one per upsert rewrote a frequent term's last block for each of them.
   */
  private takeBatch(): QueuedWrite[] {
    const first = this.queue.shift()!;
    if (first.task.op !== 'upsert' || first.alone) return [first];
    const batch = [first];
    let chunks = first.task.chunks.length;
    for (let next = this.queue[0]; next && next.task.op === 'upsert' && !next.alone && chunks + next.task.chunks.length <= MAX_MERGED_CHUNKS; next = this.queue[0]) {
      batch.push(this.queue.shift()!);
      chunks += next.task.chunks.length;
    }
    return batch;
  }

  /** Queues a recluster behind the writes waiting (see the class comment); nobody awaits it. */
  private queueRecluster(): void {
    if (this.reclusterPending || this.closed || Date.now() < this.reclusterNotBefore) return;
    this.reclusterPending = true;
    const done = (outcome: 'done' | 'failed' | 'abandoned', err?: unknown): void => {
      this.reclusterPending = false;
      this.reclusterRunning = false;
      metrics.keywordReclusters.inc({ outcome });
      if (outcome === 'failed') {
        this.reclusterNotBefore = Date.now() + RECLUSTER_BACKOFF_MS;
        this.log.error('keyword index recluster failed (rolled back; tried again when due, in 15 minutes at the earliest)', { error: String(err) });
      }
      if (outcome === 'abandoned') this.log.warn('keyword index recluster abandoned: the index closed during it (rolled back; it runs again when due)');
    };
    this.queue.push({
      task: { op: 'recluster' },
      onMain: async () => {
        // never on the main thread: minutes of synchronous work would stall every request
        throw new Error('the keyword writer thread failed during a recluster');
      },
      // what the writer measured (the time it ran, not the time it waited behind the writes queued before it)
      resolve: (ms) => {
        metrics.keywordReclusterSeconds.set(ms / 1000);
        done('done');
      },
      reject: (err) => done(this.closed ? 'abandoned' : 'failed', err),
    });
    this.sendNext();
  }

  private async send(batch: QueuedWrite[]): Promise<void> {
    const task: WriteTask = batch.length === 1 ? batch[0]!.task : { op: 'upsert', chunks: mergedChunks(batch) };
    let result: KeywordWriteResult;
    if (task.op === 'recluster' && this.closed) {
      batch[0]!.reject(new Error('keyword index closed before the recluster started'));
      return;
    }
    try {
      this.tasks++;
      if (task.op === 'recluster') this.reclusterRunning = true;
      // plain data only across the thread boundary
      result = await this.poolOf().run(task);
    } catch (err) {
      if (this.closed) {
        for (const w of batch) w.reject(new Error('keyword index was closed during a write', { cause: err }));
        return;
      }
      if (task.op === 'recluster') {
        batch[0]!.reject(err);
        return;
      }
      this.log.warn('keyword writer thread failed; writing on the main thread', { op: task.op, writes: batch.length, error: String(err) });
      for (const w of batch) {
        this.record('main_retry', w.task.op as 'upsert' | 'delete');
        await w.onMain().then(w.resolve, w.reject);
      }
      return;
    }
    if (!result.ok && batch.length > 1) {
      // One transaction, so nothing of it was written: each write again on its own, in order and before what came
      // after them, so that only the write at fault fails.
      this.queue.unshift(...batch.map((w) => ({ ...w, alone: true })));
      return;
    }
    if (!result.ok) {
      batch[0]!.reject(result.invalid ? new TypeError(result.error) : new Error(result.error));
      return;
    }
    if (task.op === 'recluster') {
      batch[0]!.resolve(result.recluster?.ms ?? 0);
      return;
    }
    for (const w of batch) {
      this.record('worker', w.task.op as 'upsert' | 'delete');
      w.resolve(result.count);
    }
    if (result.reclusterDue) this.queueRecluster();
  }

  async upsert(chunks: Chunk[]): Promise<void> {
    if (chunks.length === 0) return;
    await this.enqueue({ op: 'upsert', chunks }, async () => (await this.inner.upsert(chunks), 0));
  }

  deleteDocument(documentId: string, keepVersion?: number): Promise<number> {
    const task: WriteTask = keepVersion === undefined ? { op: 'delete', documentId } : { op: 'delete', documentId, keepVersion };
    return this.enqueue(task, () => this.inner.deleteDocument(documentId, keepVersion));
  }

  search(req: KeywordSearchRequest): Promise<KeywordHit[]> {
    return this.inner.search(req);
  }

  getChunks(chunkIds: string[]): Promise<Chunk[]> {
    return this.inner.getChunks(chunkIds);
  }

  count(documentId?: string): Promise<number> {
    return this.inner.count(documentId);
  }

  async close(): Promise<void> {
    if (!this.closed) {
      // No new writes; the ones in flight finish (their callers are told how they ended), then the writer's connection closes.
      this.closed = true;
      if (this.reclusterRunning && this.pool) {
        // Abandon it (see the class comment): the writes queued behind it are not run.
        for (const w of this.queue.splice(0)) w.reject(new Error('keyword index was closed before this write ran (behind a recluster, abandoned)'));
        const pool = this.pool;
        this.pool = undefined;
        await pool.destroy();
      }
      await Promise.allSettled([...this.pending]);
      if (this.pool) {
        await this.pool.run({ op: 'close' }).catch(() => undefined);
        await this.pool.destroy();
      }
    }
    await this.inner.close();
  }
}
