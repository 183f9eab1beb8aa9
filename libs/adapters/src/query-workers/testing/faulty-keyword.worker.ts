/**
 * Test worker: the real keyword-search worker, except that a query starting with CRASH exits the worker thread and
 * one starting with HANG spins forever (posting hangStarted first).
 */
import { parentPort } from 'node:worker_threads';
import keywordSearchTask from '../keyword-search.worker';

export default function faultyKeywordTask(req: { query?: unknown }): unknown {
  const q = typeof req?.query === 'string' ? req.query : '';
  if (q.startsWith('CRASH')) process.exit(3);
  if (q.startsWith('HANG')) {
    parentPort?.postMessage({ hangStarted: true });
    for (;;) {
      // busy: only terminating the thread ends this
    }
  }
  return keywordSearchTask(req);
}
