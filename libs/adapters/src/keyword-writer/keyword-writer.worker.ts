/**
 * The keyword-writer worker (a piscina task module, one thread): holds its own connection to the embedded BM25 index
 * (`keyword.db` in workerData.dir) and runs its upserts and deletes there — tokenizing, posting blocks, the commit —
 * off the event loop. Tasks run one at a time in the order they were sent. A write's own error (a bad chunk, a full
 * disk) comes back as a value, so the caller can tell it from the thread failing (a rejected task).
 */
import { workerData } from 'node:worker_threads';
import type { Chunk } from '@rag/contracts';
import { EmbeddedBm25KeywordIndex, type ReclusterPolicy, type ReclusterResult } from '../embedded-bm25';

export interface KeywordWriterData {
  dir: string;
  synchronous?: 'FULL' | 'NORMAL';
  k1?: number;
  b?: number;
  /** When to recluster (EmbeddedBm25KeywordIndex.reclusterDue), checked after each upsert; absent: never. */
  recluster?: ReclusterPolicy;
  /**
   * MiB of WAL before a commit checkpoints it (EmbeddedBm25KeywordIndexOptions.walCheckpointMiB). The platform passes
   * RAG_KEYWORD_CHECKPOINT_MIB (create.ts), whose default lives in the configuration only; absent: the index's own.
   */
  walCheckpointMiB?: number;
  /** ms without a write task after which the writer checkpoints its log (default IDLE_CHECKPOINT_MS). */
  idleCheckpointMs?: number;
}

export type KeywordWriteTask =
  | { op: 'upsert'; chunks: Chunk[] }
  | { op: 'delete'; documentId: string; keepVersion?: number }
  | { op: 'recluster' }
  | { op: 'close' };

/**
 * What a task returns: the deleted count of a delete (0 otherwise), or the write's own error. An upsert after which a
 * recluster is due says so (the caller queues one: its write is not held up by it); a recluster returns what it did.
 */
export type KeywordWriteResult = { ok: true; count: number; reclusterDue?: boolean; recluster?: ReclusterResult } | { ok: false; error: string; invalid?: boolean };

/** Chunks per write transaction on this thread: in effect a whole task (see EmbeddedBm25KeywordIndexOptions.writeRunItems). */
const WRITER_RUN_ITEMS = 1_000_000;

/** After this long without a write task, the writer checkpoints its log (EmbeddedBm25KeywordIndex.checkpoint). */
export const IDLE_CHECKPOINT_MS = 5_000;

let index: EmbeddedBm25KeywordIndex | undefined;
let idleCheckpoint: NodeJS.Timeout | undefined;

/** Arms the idle checkpoint after a task; the next task disarms it first, so it never runs inside one. */
function checkpointWhenIdle(): void {
  clearTimeout(idleCheckpoint);
  idleCheckpoint = setTimeout(() => {
    try {
      index?.checkpoint();
    } catch {
      // best effort: the next commit past walCheckpointMiB, or the close, checkpoints anyway
    }
  }, (workerData as KeywordWriterData | null)?.idleCheckpointMs ?? IDLE_CHECKPOINT_MS);
  idleCheckpoint.unref();
}

function problemOf(task: unknown): string | null {
  if (typeof task !== 'object' || task === null) return 'a write task must be an object';
  const t = task as Record<string, unknown>;
  if (t['op'] === 'upsert') return Array.isArray(t['chunks']) ? null : 'upsert needs a chunks array';
  if (t['op'] === 'delete') {
    if (typeof t['documentId'] !== 'string') return 'delete needs a documentId string';
    if (t['keepVersion'] !== undefined && !Number.isInteger(t['keepVersion'])) return 'keepVersion must be an integer';
    return null;
  }
  if (t['op'] === 'close' || t['op'] === 'recluster') return null;
  return `unknown op ${JSON.stringify(t['op'])}`;
}

export default async function keywordWriteTask(task: unknown): Promise<KeywordWriteResult> {
  // validated again here: this is the edge of the worker thread
  const problem = problemOf(task);
  if (problem) return { ok: false, error: `invalid keyword write task: ${problem}`, invalid: true };
  if ((task as KeywordWriteTask).op === 'close') {
    // the last task before the pool is destroyed: close the connection here rather than with the thread
    clearTimeout(idleCheckpoint);
    await index?.close();
    index = undefined;
    return { ok: true, count: 0 };
  }
  try {
    const data = workerData as KeywordWriterData;
    // No term cache: this connection never searches. One transaction per task: this thread serves nothing else, so
    // an upsert need not yield between runs, and each (term, block) it touches is rewritten once.
    index ??= new EmbeddedBm25KeywordIndex({
      dir: data.dir,
      termCacheBytes: 0,
      writeRunItems: WRITER_RUN_ITEMS,
      ...(data.walCheckpointMiB !== undefined ? { walCheckpointMiB: data.walCheckpointMiB } : {}),
      ...(data.synchronous !== undefined ? { synchronous: data.synchronous } : {}),
      ...(data.k1 !== undefined ? { k1: data.k1 } : {}),
      ...(data.b !== undefined ? { b: data.b } : {}),
    });
    const t = task as Exclude<KeywordWriteTask, { op: 'close' }>;
    clearTimeout(idleCheckpoint); // not during a task (see checkpointWhenIdle)
    if (t.op === 'upsert') {
      await index.upsert(t.chunks);
      return data.recluster && index.reclusterDue(data.recluster) ? { ok: true, count: 0, reclusterDue: true } : { ok: true, count: 0 };
    }
    if (t.op === 'recluster') return { ok: true, count: 0, recluster: index.recluster() };
    return { ok: true, count: await index.deleteDocument(t.documentId, t.keepVersion) };
  } catch (err) {
    return { ok: false, error: err instanceof Error ? err.message : String(err) };
  } finally {
    if (index) checkpointWhenIdle();
  }
}
