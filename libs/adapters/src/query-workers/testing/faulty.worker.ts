/**
 * Test worker: the real grounding worker, except that a question starting with CRASH exits the worker thread (as a
 * native fault or an uncaught error would) and one starting with HANG spins forever (posting hangStarted first).
 */
import { parentPort } from 'node:worker_threads';
import groundTask from '../grounding.worker';

export default function faultyTask(task: { question?: unknown }): unknown {
  const q = typeof task?.question === 'string' ? task.question : '';
  if (q.startsWith('CRASH')) process.exit(3);
  if (q.startsWith('HANG')) {
    parentPort?.postMessage({ hangStarted: true });
    for (;;) {
      // busy: only terminating the thread ends this
    }
  }
  return groundTask(task);
}
