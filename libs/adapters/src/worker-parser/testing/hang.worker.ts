/**
 * Test-only worker module: a parse that never ends (a busy loop, as a pathological parser would spin) for the media type
 * `application/x-test-hang`, announcing that it started; every other document goes to the real parse worker. Every task
 * announces its media type first (`taskStarted`), so a test sees which documents reached a worker.
 */
import { parentPort } from 'node:worker_threads';
import parseTask, { type ParseTask } from '../parse.worker';

export const HANG_MIME = 'application/x-test-hang';

export default async function hangOrParse(task: ParseTask): Promise<unknown> {
  parentPort?.postMessage({ taskStarted: task.mimeType });
  if (task.mimeType === HANG_MIME) {
    parentPort?.postMessage({ hangStarted: true });
    for (;;) {
      // spins until the pool terminates the thread
    }
  }
  return parseTask(task);
}
