/**
 * The grounding worker (a piscina task module): runs the relevance gate and the extractive answerer in a worker
 * thread, with its own text-analysis memo (options in workerData.memo), so this CPU work leaves the event loop.
 */
import { workerData } from 'node:worker_threads';
import { groundingTaskProblem, LexicalMemo, runGrounding, type GroundingResult, type GroundingTask, type LexicalMemoOptions } from '@rag/domain';

const memoOptions = (workerData as { memo?: LexicalMemoOptions } | undefined)?.memo;
const memo = memoOptions && memoOptions.maxEntries > 0 ? new LexicalMemo(memoOptions) : undefined;

export default function groundTask(task: unknown): GroundingResult {
  // validated again here: this is the edge of the worker thread
  const problem = groundingTaskProblem(task);
  if (problem) throw new TypeError(`invalid grounding task: ${problem}`);
  return runGrounding(task as GroundingTask, memo);
}
