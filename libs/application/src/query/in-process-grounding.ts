import { LexicalMemo, runGrounding, type GroundingTask, type LexicalMemoOptions } from '@rag/domain';
import type { Grounding, GroundingOutcome } from '@rag/ports';

/**
 * Grounding on the calling thread (RAG_QUERY_WORKERS=0, tests, and the fallback of the worker pool), with the text
 * analysis memo (see LexicalMemo) when `memo.maxEntries` > 0.
 */
export class InProcessGrounding implements Grounding {
  /** Also used by the answer verifier of the same GeneratorService (the same source texts). */
  readonly memo: LexicalMemo | undefined;
  constructor(memo?: LexicalMemoOptions) {
    this.memo = memo && memo.maxEntries > 0 ? new LexicalMemo(memo) : undefined;
  }

  /** Hits, misses and size of the memo (null without one). */
  memoStats() {
    return this.memo?.stats() ?? null;
  }

  async run(task: GroundingTask): Promise<GroundingOutcome> {
    return runGrounding(task, this.memo);
  }

  async close(): Promise<void> {}
}
