/**
 * Test worker: the real keyword-writer worker, except that an upsert whose first chunk's text starts with CRASH exits
 * the worker thread before writing anything.
 */
import keywordWriteTask from '../keyword-writer.worker';

export default function faultyKeywordWriteTask(task: { op?: unknown; chunks?: { text?: unknown }[] }): unknown {
  const first = task?.op === 'upsert' && Array.isArray(task.chunks) ? task.chunks[0]?.text : undefined;
  if (typeof first === 'string' && first.startsWith('CRASH')) process.exit(3);
  return keywordWriteTask(task);
}
