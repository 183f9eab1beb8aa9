/**
 * Test worker: the real keyword-search worker, except that every other worker thread (an even thread id: a pool's
 * threads get consecutive ids) takes 4 s to load — as a worker does on a busy machine — so the other is ready first.
 */
import { threadId } from 'node:worker_threads';
import keywordSearchTask from '../keyword-search.worker';

if (threadId % 2 === 0) Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 4_000);

export default keywordSearchTask;
