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
 * - one thread, one task at a time, in the order they were sent: a delete sent after an upsert runs after it;
 * - a write's own error (a malformed chunk, a full disk) is thrown to the caller as before; if the thread itself
 *   fails (exits, cannot start), the write is run again on `inner` — upserts and deletes are idempotent, so a write
 *   the dead thread had committed is simply written again — counted as `main_retry` and logged;
 * - the thread starts on the first write: a process that only searches never starts it;
 * - close() waits for the writes in flight, closes the writer's connection, then `inner`.
 */
export class OffloadedKeywordWrites implements KeywordIndex {
  private readonly log = new Logger('keyword-writer');
  private pool: Piscina<KeywordWriteTask, KeywordWriteResult> | undefined;
  private readonly pending = new Set<Promise<unknown>>();
  private closed = false;
  private readonly counts: Record<WriteThread, number> = { worker: 0, main_retry: 0 };

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

  /** Messages the worker posts (tests use them); starts the thread. */
  onWorkerMessage(listener: (message: unknown) => void): void {
    this.poolOf().on('message', listener);
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

  private async write(task: Exclude<KeywordWriteTask, { op: 'close' }>, onMain: () => Promise<number>): Promise<number> {
    if (this.closed) throw new Error('keyword index is closed');
    let result: KeywordWriteResult;
    try {
      // plain data only across the thread boundary
      result = await this.poolOf().run(task);
    } catch (err) {
      if (this.closed) throw new Error('keyword index was closed during a write', { cause: err });
      this.record('main_retry', task.op);
      this.log.warn('keyword writer thread failed; writing on the main thread', { op: task.op, error: String(err) });
      return onMain();
    }
    if (!result.ok) throw result.invalid ? new TypeError(result.error) : new Error(result.error);
    this.record('worker', task.op);
    return result.count;
  }

  async upsert(chunks: Chunk[]): Promise<void> {
    if (chunks.length === 0) return;
    await this.track(this.write({ op: 'upsert', chunks }, async () => (await this.inner.upsert(chunks), 0)));
  }

  deleteDocument(documentId: string, keepVersion?: number): Promise<number> {
    const task: KeywordWriteTask = keepVersion === undefined ? { op: 'delete', documentId } : { op: 'delete', documentId, keepVersion };
    return this.track(this.write(task, () => this.inner.deleteDocument(documentId, keepVersion)));
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
      await Promise.allSettled([...this.pending]);
      if (this.pool) {
        await this.pool.run({ op: 'close' }).catch(() => undefined);
        await this.pool.destroy();
      }
    }
    await this.inner.close();
  }
}
