import type { GroundingResult, GroundingTask } from '@rag/domain';

/**
 * Runs the generator's CPU-heavy text work — the relevance gate and the extractive answerer (tokenizing and
 * sentence-splitting the sources, see @rag/domain runGrounding) — in process or off the event loop (a worker pool),
 * so that on a multi-core machine query work is not bound to the one thread that also serves HTTP and the stores.
 * Same task, same result wherever it runs. An implementation must never leave a call hanging: a crashed worker is
 * retried (in process), a task past its time limit resolves `{ timedOut: true }` so the caller can degrade.
 * Throws only for a task that fails in process too (a bug or malformed input), or after close().
 */
export interface Grounding {
  run(task: GroundingTask): Promise<GroundingOutcome>;
  close(): Promise<void>;
}

export type GroundingOutcome = ({ timedOut?: false } & GroundingResult) | { timedOut: true };

export const GROUNDING = Symbol('GROUNDING');
