/**
 * The parse worker (a piscina task module): runs in a worker thread, so a slow or hostile document occupies that thread
 * only; the pool terminates it past the time limit, and V8 stops it at the heap limit.
 */
import type { LoadResult, ParseLimits } from '@rag/domain';
import { loadDocument } from '../document-parsers';

export interface ParseTask {
  /** Arrives as a Uint8Array (structured clone of the caller's Buffer). */
  bytes: Uint8Array;
  mimeType: string;
  title?: string;
  filename?: string;
  limits: ParseLimits;
}

export default async function parseTask(task: ParseTask): Promise<LoadResult> {
  const bytes = Buffer.from(task.bytes.buffer, task.bytes.byteOffset, task.bytes.byteLength);
  return loadDocument(
    {
      bytes,
      mimeType: task.mimeType,
      ...(task.title !== undefined ? { title: task.title } : {}),
      ...(task.filename !== undefined ? { filename: task.filename } : {}),
    },
    task.limits,
  );
}
