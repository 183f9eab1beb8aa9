/**
 * The ONNX models' worker (a piscina task module): loads the process's ONNX embedding models (OnnxEmbedder) and
 * cross-encoders (CrossEncoderReranker) in this one thread — each task names its model by a key; a load carries its
 * options — and runs them there. ONNX Runtime's Node binding runs a session synchronously on the calling thread (its
 * `run` is a native call inside a setImmediate), so on the main thread every inference blocked the event loop — ≈ 74 %
 * of the main thread's time during an ingestion with the default models (node --cpu-prof, scripts/bench/README.md,
 * ingest). Here only this thread waits for the models.
 *
 * Why one thread for every model, for the life of the process (see OnnxWorkerHost): the binding (1.21) keeps
 * process-wide state — sessions on a second thread abort the process ("Entering the V8 API without proper locking";
 * microsoft/onnxruntime#24486, reproduced here with the main thread and a worker, and with two workers) — and it is
 * not a context-aware addon: a thread started after the first one exited cannot load it ("Module did not
 * self-register").
 */
import type { EmbedInputType } from '@rag/ports';
import { AppError } from '@rag/platform';
import { CrossEncoderReranker, type CrossEncoderRerankerOptions } from '../cross-encoder/cross-encoder.adapter';
import { OnnxEmbedder, type OnnxEmbedderOptions } from './onnx-embedder.adapter';

export type EmbedModelOptions = Omit<OnnxEmbedderOptions, 'logger'>;
export type RerankModelOptions = Omit<CrossEncoderRerankerOptions, 'logger'>;

export type OnnxTask =
  | { op: 'load'; key: string; options: EmbedModelOptions }
  | { op: 'embed'; key: string; texts: string[]; inputType: EmbedInputType }
  | { op: 'load-reranker'; key: string; options: RerankModelOptions }
  | { op: 'logits'; key: string; query: string; passages: string[] }
  | { op: 'unload'; key: string };

export type OnnxTaskResult =
  | { ok: true; info: { modelId: string; dim: number; batchSize: number; maxLength: number } }
  | { ok: true; reranker: { id: string; maxLength: number; batchSize: number } }
  | { ok: true; vectors: Float32Array[] }
  | { ok: true; logits: number[] }
  | { ok: true }
  /** Errors cross the thread as values, so the caller can rebuild an AppError with its code. */
  | { ok: false; code: string; message: string };

const embedders = new Map<string, Promise<OnnxEmbedder>>();
const rerankers = new Map<string, Promise<CrossEncoderReranker>>();

const strings = (x: unknown): boolean => Array.isArray(x) && x.every((s) => typeof s === 'string');

function problemOf(task: unknown): string | null {
  if (typeof task !== 'object' || task === null) return 'a task must be an object';
  const t = task as Record<string, unknown>;
  if (typeof t['key'] !== 'string') return 'key must be a string';
  switch (t['op']) {
    case 'unload':
      return null;
    case 'load':
    case 'load-reranker':
      return typeof t['options'] === 'object' && t['options'] !== null ? null : 'options must be an object';
    case 'embed':
      if (!strings(t['texts'])) return 'texts must be an array of strings';
      return t['inputType'] === 'query' || t['inputType'] === 'passage' ? null : 'inputType must be "query" or "passage"';
    case 'logits':
      return typeof t['query'] === 'string' && strings(t['passages']) ? null : 'query must be a string and passages an array of strings';
    default:
      return 'op must be "load", "embed", "load-reranker", "logits" or "unload"';
  }
}

/** The model loaded under `key`, loading it on first use (a failed load is tried again by the next one). */
function loadOnce<T>(models: Map<string, Promise<T>>, key: string, create: () => Promise<T>): Promise<T> {
  let model = models.get(key);
  if (!model) {
    model = create();
    models.set(key, model);
    model.catch(() => models.delete(key));
  }
  return model;
}

const notLoaded = (key: string): OnnxTaskResult => ({
  ok: false,
  code: 'unavailable',
  message: `model ${key} is not loaded in the ONNX worker (it was closed, or the worker was replaced)`,
});

export default async function onnxTask(task: unknown): Promise<OnnxTaskResult> {
  try {
    // validated again here: this is the edge of the worker thread
    const problem = problemOf(task);
    if (problem) return { ok: false, code: 'invalid_request', message: `invalid ONNX task: ${problem}` };
    const t = task as OnnxTask;
    switch (t.op) {
      case 'load': {
        const m = await loadOnce(embedders, t.key, () => OnnxEmbedder.create(t.options));
        return { ok: true, info: { modelId: m.modelId, dim: m.dim, batchSize: m.batchSize, maxLength: m.maxLength } };
      }
      case 'load-reranker': {
        const r = await loadOnce(rerankers, t.key, () => CrossEncoderReranker.create(t.options));
        return { ok: true, reranker: { id: r.id, maxLength: r.maxLength, batchSize: r.batchSize } };
      }
      case 'embed': {
        const m = embedders.get(t.key);
        return m ? { ok: true, vectors: await (await m).embed(t.texts, t.inputType) } : notLoaded(t.key);
      }
      case 'logits': {
        const r = rerankers.get(t.key);
        return r ? { ok: true, logits: await (await r).logits(t.query, t.passages) } : notLoaded(t.key);
      }
      case 'unload': {
        const m = embedders.get(t.key);
        const r = rerankers.get(t.key);
        embedders.delete(t.key);
        rerankers.delete(t.key);
        await (await m?.catch(() => undefined))?.close();
        await (await r?.catch(() => undefined))?.close();
        return { ok: true };
      }
    }
  } catch (e) {
    return { ok: false, code: e instanceof AppError ? e.code : 'internal', message: e instanceof Error ? e.message : String(e) };
  }
}
