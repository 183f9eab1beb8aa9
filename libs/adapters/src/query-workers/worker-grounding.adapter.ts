import { Piscina } from 'piscina';
import { isAbort, Slots, workerEntry } from '../worker-parser/worker-support';
import { groundingTaskProblem, LexicalMemo, runGrounding, type GroundingResult, type GroundingTask, type LexicalMemoOptions } from '@rag/domain';
import { Logger } from '@rag/platform';
import type { Grounding, GroundingOutcome } from '@rag/ports';

export interface WorkerGroundingOptions {
  /** Worker threads (RAG_QUERY_WORKERS, ≥ 1); tasks beyond them wait for a free one. */
  workers: number;
  /** Time limit of one task from when a worker takes it (RAG_QUERY_WORKER_TIMEOUT_MS); past it the thread is terminated. */
  timeoutMs: number;
  /** Text-analysis memo of each worker (and of the in-process fallback); maxEntries 0 = none. */
  memo?: LexicalMemoOptions;
  /** The worker module (`.ts` source or built `.js`); default: grounding.worker of this folder. Tests pass their own. */
  workerFile?: string;
}

export interface WorkerGroundingStats {
  /** Tasks answered by a worker. */
  inWorker: number;
  /** Tasks whose worker failed (crashed, exited) and that were run again in process. */
  retriedInProcess: number;
  /** Tasks stopped at the time limit. */
  timedOut: number;
}

/**
 * Grounding (relevance gate + extractive answer) on a piscina worker-thread pool, so this per-query CPU work runs on
 * the other cores while the event loop serves HTTP and the stores (issue 13 item 3). Failure handling, so no request
 * hangs or gets a 5xx because of the pool:
 * - a worker that dies (exit, native fault, uncaught error) fails its task; the task is run again in process (same
 *   result, the memo of the fallback is this thread's) and piscina replaces the worker;
 * - a task past `timeoutMs` terminates its thread (even one spinning) and resolves `{ timedOut: true }`: the caller
 *   degrades (the generator refuses) instead of waiting; it is not retried in process, where it would block the loop;
 * - a malformed task is rejected before it is posted (TypeError: a caller bug, not the worker's).
 * Workers stay up (minThreads = workers) so each keeps its memo warm.
 */
export class WorkerGrounding implements Grounding {
  private readonly log = new Logger('grounding');
  private readonly pool: Piscina<GroundingTask, GroundingResult>;
  private readonly slots: Slots;
  private readonly fallbackMemo: LexicalMemo | undefined;
  private readonly counts: WorkerGroundingStats = { inWorker: 0, retriedInProcess: 0, timedOut: 0 };
  private closed = false;

  constructor(private readonly options: WorkerGroundingOptions) {
    if (!Number.isInteger(options.workers) || options.workers < 1) throw new RangeError(`WorkerGrounding needs at least 1 worker (got ${options.workers})`);
    const entry = workerEntry(__dirname, 'grounding.worker', 'grounding worker', options.workerFile);
    this.slots = new Slots(options.workers);
    this.fallbackMemo = options.memo && options.memo.maxEntries > 0 ? new LexicalMemo(options.memo) : undefined;
    this.pool = new Piscina<GroundingTask, GroundingResult>({
      filename: entry.filename,
      workerData: { ...(entry.tsEntry ? { tsEntry: entry.tsEntry } : {}), ...(options.memo ? { memo: options.memo } : {}) },
      minThreads: options.workers,
      maxThreads: options.workers,
      idleTimeout: Number.POSITIVE_INFINITY,
    });
    // a worker failing outside any task must not crash the process
    this.pool.on('error', () => undefined);
  }

  /** Messages a worker posts (tests use them to see a task start). */
  onWorkerMessage(listener: (message: unknown) => void): void {
    this.pool.on('message', listener);
  }

  stats(): WorkerGroundingStats {
    return { ...this.counts };
  }

  async run(task: GroundingTask): Promise<GroundingOutcome> {
    if (this.closed) throw new Error('grounding pool is closed');
    const problem = groundingTaskProblem(task);
    if (problem) throw new TypeError(`invalid grounding task: ${problem}`);
    await this.slots.acquire();
    try {
      const result = await this.pool.run(task, { signal: AbortSignal.timeout(this.options.timeoutMs) });
      this.counts.inWorker++;
      return result;
    } catch (err) {
      if (this.closed) throw new Error('grounding pool was closed during a task', { cause: err });
      if (isAbort(err)) {
        this.counts.timedOut++;
        this.log.warn(`grounding task ran past ${this.options.timeoutMs} ms (RAG_QUERY_WORKER_TIMEOUT_MS); its worker was stopped`);
        return { timedOut: true };
      }
      this.counts.retriedInProcess++;
      this.log.warn('grounding worker failed; running the task in process', { error: String(err) });
      return runGrounding(task, this.fallbackMemo);
    } finally {
      this.slots.release();
    }
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.pool.destroy();
  }
}
