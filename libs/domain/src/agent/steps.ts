import { actionKey, type AgentAction } from './action';

/** RAG_AGENT_MAX_STEPS: default and hard upper bound of the agent's hops per question. */
export const AGENT_DEFAULT_STEPS = 3;
export const AGENT_MAX_STEPS = 5;

/** A configured step cap brought into 1..AGENT_MAX_STEPS (a non-number gives the default). */
export function clampAgentSteps(n: number | undefined): number {
  if (n === undefined || !Number.isFinite(n)) return AGENT_DEFAULT_STEPS;
  return Math.min(AGENT_MAX_STEPS, Math.max(1, Math.floor(n)));
}

export type AgentStop =
  /** The LLM said the passages suffice. */
  | 'answer'
  /** The cap of hops was reached. */
  | 'cap'
  /** The LLM asked for a tool call it had already made (nothing new to learn). */
  | 'repeat'
  /** The LLM failed or wrote no usable action. */
  | 'llm_error';

/**
 * Step accounting of one agent run: at most `max` hops (each an LLM decision, plus the tool call it chose), never
 * the same tool call twice. The loop asks `next()` before each hop; it is false once the cap is reached.
 */
export class AgentSteps {
  readonly max: number;
  private used = 0;
  private readonly done = new Set<string>();
  constructor(max: number) {
    this.max = clampAgentSteps(max);
  }
  get taken(): number {
    return this.used;
  }
  get left(): number {
    return this.max - this.used;
  }
  /** Starts a hop; false (and nothing counted) when the cap is reached. */
  next(): boolean {
    if (this.used >= this.max) return false;
    this.used++;
    return true;
  }
  /** Records a tool call; false when the same call was made before (the caller stops). */
  record(a: AgentAction): boolean {
    const key = actionKey(a);
    if (this.done.has(key)) return false;
    this.done.add(key);
    return true;
  }
}
