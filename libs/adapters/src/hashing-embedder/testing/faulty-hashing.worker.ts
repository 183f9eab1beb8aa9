/**
 * Test worker: the real hashing worker, except that a batch whose first text starts with CRASH exits the worker thread
 * (as a native fault or an uncaught error would).
 */
import hashTask from '../hashing-embedder.worker';

export default function faultyHashTask(task: { texts?: unknown }): unknown {
  const first = Array.isArray(task?.texts) ? task.texts[0] : undefined;
  if (typeof first === 'string' && first.startsWith('CRASH')) process.exit(3);
  return hashTask(task);
}
