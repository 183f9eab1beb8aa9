import { Piscina } from 'piscina';
import type { EmbedInputType, Embedder } from '@rag/ports';
import { AppError, type ErrorCode, Logger, markUnrecoverable } from '@rag/platform';
import { workerEntry } from '../worker-parser/worker-support';
import type { OnnxEmbedderOptions } from './onnx-embedder.adapter';
import { longestFirstRuns } from './transformers-runtime';
import type { EmbedModelOptions, OnnxTask, OnnxTaskResult, RerankModelOptions } from './onnx-models.worker';

interface Pending {
  task: OnnxTask;
  resolve: (r: OnnxTaskResult) => void;
  reject: (err: unknown) => void;
}

export function failure(r: OnnxTaskResult, what: string): AppError {
  return r.ok ? new AppError('internal', `the ONNX worker answered without ${what}`) : new AppError(r.code as ErrorCode, r.message);
}

/**
 * Runs the process's ONNX models (embedding models, and the cross-encoder when one is configured) in one worker thread,
 * so that inference never blocks the event loop.
 *
 * ONNX Runtime's Node binding runs a session synchronously on the calling thread: in-process, each passage's run
 * (≈ 20–40 ms on 2 cores) held the event loop, which was inside ONNX ≈ 74 % of the time during an ingestion with the
 * default models — the other stages, health checks, /metrics and any query waited behind it (scripts/bench/README.md,
 * ingest). One run is in the worker at a time, and a query's runs (its embedding, its rerank) go before every waiting
 * passage run, so a question asked during an ingestion waits for at most the run in progress.
 *
 * One host per process, never stopped (`shared()`; its idle thread does not keep the process alive): the binding
 * serves one thread per process, and only the first thread that loads it (see onnx-models.worker) — so a platform closed
 * and started again in the same process (tests, bench rounds) reuses this thread, and no other code of the process
 * may load ONNX Runtime on another thread (with RAG_ONNX_WORKER=false every model stays on the main thread instead).
 * If the worker dies (piscina replaces it), the new thread cannot load the binding: every run then fails at once with
 * `unavailable`, and the process is marked for a restart (`/healthz` 503, `rag_unrecoverable{part="onnx-worker"}`).
 */
export class OnnxWorkerHost {
  private static instance: OnnxWorkerHost | undefined;
  private readonly pool: Piscina<OnnxTask, OnnxTaskResult>;
  private readonly queries: Pending[] = [];
  private readonly passages: Pending[] = [];
  private readonly users = new Map<string, number>();
  private running = false;
  /** Why the worker thread failed, once it has: every later run fails at once (see `run`). */
  private failed: string | undefined;
  private readonly log = new Logger('onnx-worker');

  /** The host of this process, or (tests) a host of its own over another worker module. */
  private constructor(workerFile?: string) {
    const entry = workerEntry(__dirname, 'onnx-models.worker', 'ONNX models worker', workerFile);
    this.pool = new Piscina<OnnxTask, OnnxTaskResult>({
      filename: entry.filename,
      ...(entry.tsEntry ? { workerData: { tsEntry: entry.tsEntry } } : {}),
      minThreads: 1,
      maxThreads: 1,
      idleTimeout: Number.POSITIVE_INFINITY,
    });
    // a worker failing outside any task must not crash the process
    this.pool.on('error', () => undefined);
  }

  /** The process's host (started on first use). */
  static shared(): OnnxWorkerHost {
    return (OnnxWorkerHost.instance ??= new OnnxWorkerHost());
  }

  /** Tests only: a host over another worker module (not the process's; it never loads a model unless that module does). */
  static forTests(workerFile: string): OnnxWorkerHost {
    return new OnnxWorkerHost(workerFile);
  }

  /** Why the worker thread failed, or undefined while it serves. */
  get failure(): string | undefined {
    return this.failed;
  }

  /**
   * Loads the models in the worker (a model already loaded there with the same options is shared) and returns an
   * Embedder per model, in order; fails as OnnxEmbedder.create does (same codes and messages).
   */
  static async create(models: OnnxEmbedderOptions[]): Promise<WorkerOnnxEmbedder[]> {
    const host = OnnxWorkerHost.shared();
    const log = models[0]?.logger ?? new Logger('onnx-embedder');
    const embedders: WorkerOnnxEmbedder[] = [];
    try {
      for (const { logger: _l, ...options } of models) embedders.push(await host.load(options));
    } catch (e) {
      await Promise.all(embedders.map((m) => m.close()));
      throw e;
    }
    log.info('embedding models run in a worker thread', { models: embedders.map((e) => e.modelId) });
    return embedders;
  }

  async load(options: EmbedModelOptions): Promise<WorkerOnnxEmbedder> {
    const key = JSON.stringify(options);
    const r = await this.run({ op: 'load', key, options });
    if (!r.ok || !('info' in r)) throw failure(r, 'model info');
    this.users.set(key, (this.users.get(key) ?? 0) + 1);
    return new WorkerOnnxEmbedder(this, key, r.info);
  }

  /** Loads a cross-encoder in the worker (shared like a model; see WorkerCrossEncoderReranker). */
  async loadReranker(options: RerankModelOptions): Promise<{ key: string; id: string; maxLength: number; batchSize: number }> {
    const key = JSON.stringify(options);
    const r = await this.run({ op: 'load-reranker', key, options });
    if (!r.ok || !('reranker' in r)) throw failure(r, 'reranker info');
    this.users.set(key, (this.users.get(key) ?? 0) + 1);
    return { key, ...r.reranker };
  }

  /** One user of a model is done; the last one unloads it from the worker (the thread stays for the next load). */
  async release(key: string): Promise<void> {
    const n = (this.users.get(key) ?? 1) - 1;
    if (n > 0) {
      this.users.set(key, n);
      return;
    }
    this.users.delete(key);
    await this.run({ op: 'unload', key });
  }

  /**
   * Queues a task and sends it when the worker is free: queries' runs (a query's embedding, a rerank) first, everything
   * else (passage runs, loads, unloads) in arrival order, so an unload never overtakes its model's waiting runs.
   */
  run(task: OnnxTask): Promise<OnnxTaskResult> {
    if (this.failed) return Promise.reject(this.unavailable());
    const forQuery = (task.op === 'embed' && task.inputType === 'query') || task.op === 'logits';
    return new Promise((resolve, reject) => {
      (forQuery ? this.queries : this.passages).push({ task, resolve, reject });
      this.pump();
    });
  }

  private unavailable(): AppError {
    return new AppError('unavailable', `the ONNX worker thread failed (${this.failed}); inference needs a process restart (/healthz answers 503 until then)`);
  }

  private pump(): void {
    if (this.running) return;
    const next = this.queries.shift() ?? this.passages.shift();
    if (!next) return;
    this.running = true;
    this.pool
      .run(next.task)
      .then(next.resolve, (err: unknown) => {
        // The worker returns every error of a task as a value, so a rejected task means the thread itself failed (it
        // exited, or threw outside the task's handling). Piscina starts a new thread, but ONNX Runtime's binding cannot
        // be loaded into it (not context-aware: "Module did not self-register"), and the models are gone with the old
        // one: only a restart repairs this. Everything waiting fails now, /healthz turns 503 so the orchestrator
        // restarts the process, and every later run fails at once with the reason.
        this.failed ??= err instanceof Error ? err.message : String(err);
        this.log.error('the ONNX worker thread failed; inference is unavailable until the process restarts', { error: this.failed });
        markUnrecoverable('onnx-worker', this.failed);
        next.reject(this.unavailable());
        for (const waiting of [...this.queries.splice(0), ...this.passages.splice(0)]) waiting.reject(this.unavailable());
      })
      .finally(() => {
        this.running = false;
        this.pump();
      });
  }
}

/** One model in the OnnxWorkerHost: the same vectors as OnnxEmbedder, computed in the worker. */
export class WorkerOnnxEmbedder implements Embedder {
  readonly modelId: string;
  readonly dim: number;
  readonly batchSize: number;
  readonly maxLength: number;
  private closed = false;

  constructor(
    private readonly host: OnnxWorkerHost,
    private readonly key: string,
    info: { modelId: string; dim: number; batchSize: number; maxLength: number },
  ) {
    this.modelId = info.modelId;
    this.dim = info.dim;
    this.batchSize = info.batchSize;
    this.maxLength = info.maxLength;
  }

  async embed(texts: string[], inputType: EmbedInputType): Promise<Float32Array[]> {
    if (this.closed) throw new AppError('unavailable', `${this.modelId} is closed`);
    if (texts.length === 0) return [];
    // The runs OnnxEmbedder would make (the prefix is the same for every text, so the order is too), each its own task:
    // a query waits for one passage run, not for a whole call's.
    const out = new Array<Float32Array>(texts.length);
    await Promise.all(
      longestFirstRuns(texts, this.batchSize).map((idx) =>
        this.host.run({ op: 'embed', key: this.key, texts: idx.map((i) => texts[i]!), inputType }).then((r) => {
          if (!r.ok || !('vectors' in r)) throw failure(r, 'vectors');
          idx.forEach((i, k) => (out[i] = r.vectors[k]!));
        }),
      ),
    );
    return out;
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.host.release(this.key);
  }
}
