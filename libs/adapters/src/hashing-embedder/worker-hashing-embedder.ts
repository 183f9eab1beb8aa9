import { Piscina } from 'piscina';
import { Logger } from '@rag/platform';
import type { EmbedInputType, Embedder } from '@rag/ports';
import { workerEntry } from '../worker-parser/worker-support';
import { HashingEmbedder, type HashingEmbedderOptions } from './hashing-embedder.adapter';
import { hashingTaskProblem, type HashingTask } from './hashing-embedder.worker';

export interface WorkerHashingEmbedderOptions extends HashingEmbedderOptions {
  /** The worker module (`.ts` source or built `.js`); default: hashing-embedder.worker of this folder. Tests pass their own. */
  workerFile?: string;
}

export interface WorkerHashingEmbedderStats {
  /** Passage batches hashed by the worker. */
  inWorker: number;
  /** Batches whose worker failed (crashed, exited) and that were hashed again on the calling thread. */
  retriedInProcess: number;
}

/**
 * The hashing embedder with its passages hashed on one worker thread (RAG_HASHING_WORKER, default true), so that
 * during an embedded ingestion the hashing — ≈ 20 % of the main thread's time in a `--cpu-prof` of `bench ingest`,
 * beside the bus, chunking and the HNSW insert — runs on the second core. Same vectors as `HashingEmbedder` (the
 * worker runs it). Queries are hashed on the calling thread: one short text costs less than a round trip to the
 * worker and must not wait behind an ingestion's batches. One thread: the keyword writer already has one, and on the
 * two cores this runs on a second hashing thread would only compete with them.
 *
 * A worker that fails (exit, native fault, uncaught error) fails its batch, which is hashed again here (the same
 * vectors); piscina replaces the thread. A malformed call is rejected before it is posted (TypeError).
 */
export class WorkerHashingEmbedder implements Embedder {
  readonly modelId: string;
  readonly dim: number;
  private readonly log = new Logger('hashing-embedder');
  private readonly local: HashingEmbedder;
  private readonly options: HashingEmbedderOptions;
  private readonly entry: { filename: string; tsEntry?: string };
  private pool: Piscina<HashingTask, Float32Array> | undefined;
  private readonly counts: WorkerHashingEmbedderStats = { inWorker: 0, retriedInProcess: 0 };
  private closed = false;

  constructor(options: WorkerHashingEmbedderOptions = {}) {
    const { workerFile, ...hashing } = options;
    // validates the options here, before any thread starts, and answers queries
    this.local = new HashingEmbedder(hashing);
    this.options = hashing;
    this.modelId = this.local.modelId;
    this.dim = this.local.dim;
    this.entry = workerEntry(__dirname, 'hashing-embedder.worker', 'hashing embedder worker', workerFile);
  }

  /** The thread starts with the first passage batch: a process that only embeds queries never starts it. */
  private workers(): Piscina<HashingTask, Float32Array> {
    if (!this.pool) {
      this.pool = new Piscina<HashingTask, Float32Array>({
        filename: this.entry.filename,
        workerData: this.entry.tsEntry ? { tsEntry: this.entry.tsEntry } : {},
        minThreads: 1,
        maxThreads: 1,
        idleTimeout: Number.POSITIVE_INFINITY,
      });
      // a worker failing outside any task must not crash the process
      this.pool.on('error', () => undefined);
    }
    return this.pool;
  }

  stats(): WorkerHashingEmbedderStats {
    return { ...this.counts };
  }

  async embed(texts: string[], inputType: EmbedInputType): Promise<Float32Array[]> {
    if (inputType === 'query' || texts.length === 0) return this.local.embed(texts, inputType);
    if (this.closed) throw new Error('hashing embedder is closed');
    const task: HashingTask = { options: this.options, texts };
    const problem = hashingTaskProblem(task);
    if (problem) throw new TypeError(`invalid hashing task: ${problem}`);
    let packed: Float32Array;
    try {
      packed = await this.workers().run(task);
      this.counts.inWorker++;
    } catch (err) {
      if (this.closed) throw new Error('hashing embedder was closed during a batch', { cause: err });
      this.counts.retriedInProcess++;
      this.log.warn('hashing worker failed; hashing the batch on this thread', { error: String(err) });
      return this.local.embed(texts, inputType);
    }
    if (packed.length !== texts.length * this.dim) throw new Error(`hashing worker returned ${packed.length} values for ${texts.length} texts of dim ${this.dim}`);
    // copies, not views of the one transferred buffer: a consumer that stores `vector.buffer` gets its own vector only
    return texts.map((_, i) => packed.slice(i * this.dim, (i + 1) * this.dim));
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.pool?.destroy();
  }
}
