/**
 * The embedding worker (a piscina task module): loads ONNX embedding models (OnnxEmbedder; each task names its model by
 * a key and carries its options) in this one thread and embeds there. ONNX Runtime's Node binding runs a session
 * synchronously on the calling thread (its `run` is a native call inside a setImmediate), so on the main thread every
 * inference blocked the event loop — ≈ 74 % of the main thread's time during an ingestion with the default models
 * (node --cpu-prof, scripts/bench/README.md, ingest). Here only this thread waits for the models.
 *
 * Why one thread for every model, for the life of the process (see OnnxWorkerHost): the binding (1.21) keeps
 * process-wide state — sessions on a second thread abort the process ("Entering the V8 API without proper locking";
 * microsoft/onnxruntime#24486, reproduced here with the main thread and a worker, and with two workers) — and it is
 * not a context-aware addon: a thread started after the first one exited cannot load it ("Module did not
 * self-register").
 */
import type { EmbedInputType } from '@rag/ports';
import { AppError } from '@rag/platform';
import { OnnxEmbedder, type OnnxEmbedderOptions } from './onnx-embedder.adapter';

export type EmbedModelOptions = Omit<OnnxEmbedderOptions, 'logger'>;

export type EmbedTask =
  | { op: 'load'; key: string; options: EmbedModelOptions }
  | { op: 'embed'; key: string; texts: string[]; inputType: EmbedInputType }
  | { op: 'unload'; key: string };

export type EmbedTaskResult =
  | { ok: true; info: { modelId: string; dim: number; batchSize: number; maxLength: number } }
  | { ok: true; vectors: Float32Array[] }
  | { ok: true }
  /** Errors cross the thread as values, so the caller can rebuild an AppError with its code. */
  | { ok: false; code: string; message: string };

const models = new Map<string, Promise<OnnxEmbedder>>();

function problemOf(task: unknown): string | null {
  if (typeof task !== 'object' || task === null) return 'a task must be an object';
  const t = task as Record<string, unknown>;
  if (typeof t['key'] !== 'string') return 'key must be a string';
  if (t['op'] === 'unload') return null;
  if (t['op'] === 'load') return typeof t['options'] === 'object' && t['options'] !== null ? null : 'options must be an object';
  if (t['op'] !== 'embed') return 'op must be "load", "embed" or "unload"';
  if (!Array.isArray(t['texts']) || !t['texts'].every((x) => typeof x === 'string')) return 'texts must be an array of strings';
  if (t['inputType'] !== 'query' && t['inputType'] !== 'passage') return 'inputType must be "query" or "passage"';
  return null;
}

export default async function embedTask(task: unknown): Promise<EmbedTaskResult> {
  try {
    // validated again here: this is the edge of the worker thread
    const problem = problemOf(task);
    if (problem) return { ok: false, code: 'invalid_request', message: `invalid embedding task: ${problem}` };
    const t = task as EmbedTask;
    if (t.op === 'load') {
      let model = models.get(t.key);
      if (!model) {
        model = OnnxEmbedder.create(t.options);
        models.set(t.key, model);
        model.catch(() => models.delete(t.key)); // a failed load is tried again by the next load
      }
      const m = await model;
      return { ok: true, info: { modelId: m.modelId, dim: m.dim, batchSize: m.batchSize, maxLength: m.maxLength } };
    }
    const model = models.get(t.key);
    if (t.op === 'unload') {
      models.delete(t.key);
      await (await model?.catch(() => undefined))?.close();
      return { ok: true };
    }
    if (!model) return { ok: false, code: 'unavailable', message: `embedding model ${t.key} is not loaded in the worker (it was closed, or the worker was replaced)` };
    return { ok: true, vectors: await (await model).embed(t.texts, t.inputType) };
  } catch (e) {
    return { ok: false, code: e instanceof AppError ? e.code : 'internal', message: e instanceof Error ? e.message : String(e) };
  }
}
