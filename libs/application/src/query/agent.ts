import type { Degraded, Filters, ScoredChunk, SearchMode } from '@rag/contracts';
import {
  agentActionSchema,
  AgentSteps,
  buildAgentPrompt,
  externalDocumentId,
  parseAgentAction,
  reciprocalRankFusion,
  validateAgentAction,
  validateFilterKeys,
  type AgentAction,
  type AgentHistoryItem,
  type AgentStop,
  type ParsedAgentAction,
} from '@rag/domain';
import { inStage, Logger, setSpanAttributes } from '@rag/platform';
import type { Llm } from '@rag/ports';
import { round } from './retriever.service';

/** One search the agent asks for; `filters` name documents by the caller's (external) ids, as in a request. */
export interface AgentSearch {
  query: string;
  mode: SearchMode;
  filters?: Filters;
}
export type AgentSearchFn = (s: AgentSearch) => Promise<{ chunks: ScoredChunk[]; degraded: Degraded[] }>;

export interface AgentOptions {
  /** Hops per question (RAG_AGENT_MAX_STEPS; brought into 1..5). */
  maxSteps: number;
  /** Time limit of each planning call to the LLM. */
  timeoutMs: number;
  /** Passages the final answer gets (and the planner sees): the fused top of all hops. */
  topK: number;
  rrfK?: number;
  /** Completion tokens of one planning reply (a JSON action is short). */
  maxTokens?: number;
}

/** What one hop did; `action` is null when the LLM gave none and nothing ran. */
export interface AgentHop {
  step: number;
  /** The tool that ran: the LLM's choice (`question_search`: the seed, the question itself searched hybrid). */
  tool: AgentAction['action'] | 'question_search' | null;
  action: AgentAction | null;
  /** Passages the tool returned, and how many of them were new to the evidence. */
  found: number;
  added: number;
  plan_ms: number;
  tool_ms: number;
  /** The LLM's reply needed repair (aliases, quotes, a cut-off end) to be a valid action. */
  repaired: boolean;
  error?: string;
}

export interface AgentRun {
  /** The fused top `topK` of every hop's results, in the order the answer cites them. */
  evidence: ScoredChunk[];
  hops: AgentHop[];
  stop: AgentStop;
  degraded: Degraded[];
  timings: Record<string, number>;
}

/**
 * The agent loop of `mode: "agent"` (issue 16 item 3). Each hop is one `agent-hop` span: the LLM reads the question,
 * the passages found so far and the calls made, and names the next action as JSON (grammar-constrained with
 * generateJson where the adapter has it, else parsed and repaired from the text); the chosen tool runs — dense,
 * keyword or filtered (hybrid + one metadata equality) search, or fetch_document (more chunks of the document a
 * passage came from, its parent sections with them) — and its results join the evidence. The loop stops when the
 * LLM answers `answer`, when it repeats a call, at the cap, or when the LLM fails or writes nothing usable (then
 * `llm` is degraded). Before the first hop the question itself is searched as single-shot does (the seed, not a
 * hop), so the evidence always holds the single-shot evidence at least — a weak planner (a small base model) costs
 * latency, never recall. The caller's filters and scope apply to every tool call: the agent can narrow a search,
 * never widen it.
 */
export class AgentLoop {
  private readonly log = new Logger('agent');
  constructor(
    private readonly llm: Llm,
    private readonly opts: AgentOptions,
  ) {}

  async run(question: string, filters: Filters | undefined, tenant: string, search: AgentSearchFn, signal?: AbortSignal): Promise<AgentRun> {
    const steps = new AgentSteps(this.opts.maxSteps);
    const lists: ScoredChunk[][] = [];
    const seen = new Set<string>();
    const history: AgentHistoryItem[] = [];
    const hops: AgentHop[] = [];
    const degraded = new Set<Degraded>();
    const timings: Record<string, number> = {};
    let evidence: ScoredChunk[] = [];
    let stop: AgentStop = 'cap';

    const runTool = async (tool: AgentHop['tool'], s: AgentSearch | null, hop: AgentHop) => {
      if (!s) return;
      const t0 = performance.now();
      try {
        const r = await search(s);
        r.degraded.forEach((d) => degraded.add(d));
        hop.found = r.chunks.length;
        for (const c of r.chunks) {
          if (!seen.has(c.chunk_id)) {
            seen.add(c.chunk_id);
            hop.added++;
          }
        }
        lists.push(r.chunks);
        evidence = fuseChunks(lists, this.opts.rrfK ?? 60, this.opts.topK);
      } finally {
        hop.tool = tool;
        hop.tool_ms = round(performance.now() - t0);
      }
    };

    // The seed: the question itself, searched as single-shot would (hybrid, the request's filters), before any hop.
    // The planner then sees what plain retrieval found (a multi-hop question's bridge entity is usually in it), and
    // the evidence is never worse than single-shot's: its list stays in the fusion. Not a hop (no LLM call).
    const seedHop: AgentHop = { step: 0, tool: null, action: null, found: 0, added: 0, plan_ms: 0, tool_ms: 0, repaired: false };
    await runTool('question_search', { query: question, mode: 'hybrid', filters }, seedHop);
    timings.agent_seed = seedHop.tool_ms;

    while (steps.next()) {
      const step = steps.taken;
      const hop: AgentHop = { step, tool: null, action: null, found: 0, added: 0, plan_ms: 0, tool_ms: 0, repaired: false };
      let done = false;
      await inStage('agent-hop', { 'rag.agent.step': step, 'rag.agent.max_steps': steps.max }, async () => {
        const t0 = performance.now();
        const passages = evidence.map((c, i) => ({ ref: i + 1, title: c.title, text: c.parent_text ?? c.text }));
        const decided = await this.decide(question, passages, history, steps.left + 1, signal);
        hop.plan_ms = round(performance.now() - t0);
        if (!decided.ok) {
          this.log.warn('the agent LLM gave no usable action; answering from the evidence so far', { step, error: decided.error });
          degraded.add('llm');
          hop.error = decided.error;
          stop = 'llm_error';
          done = true;
        } else {
          const action = decided.action;
          hop.action = action;
          hop.repaired = decided.repaired;
          if (action.action === 'answer') {
            stop = 'answer';
            done = true;
          } else if (!steps.record(action)) {
            stop = 'repeat';
            done = true;
          } else {
            const s = this.toSearch(action, evidence, filters, tenant, hop);
            await runTool(action.action, s, hop);
            history.push({ action, found: hop.added });
          }
        }
        setSpanAttributes({
          'rag.agent.action': hop.action?.action ?? 'none',
          'rag.agent.tool': hop.tool ?? 'none',
          'rag.agent.found': hop.found,
          'rag.agent.added': hop.added,
          'rag.agent.repaired': hop.repaired,
          ...(hop.error ? { 'rag.agent.error': hop.error.slice(0, 200) } : {}),
        });
      });
      hops.push(hop);
      timings[`agent_hop${step}`] = round(hop.plan_ms + hop.tool_ms);
      if (done) break;
    }
    timings.agent_plan = round(hops.reduce((s, h) => s + h.plan_ms, 0));
    timings.agent_search = round(hops.reduce((s, h) => s + h.tool_ms, 0));
    setSpanAttributes({ 'rag.agent.hops': hops.length, 'rag.agent.stop': stop });
    return { evidence, hops, stop, degraded: [...degraded], timings };
  }

  /** The next action from the LLM, or why there is none. */
  private async decide(question: string, passages: { ref: number; title: string; text: string }[], history: AgentHistoryItem[], left: number, signal?: AbortSignal): Promise<ParsedAgentAction> {
    const messages = buildAgentPrompt(question, passages, history, left);
    const timeout = AbortSignal.timeout(this.opts.timeoutMs);
    const s = signal ? AbortSignal.any([signal, timeout]) : timeout;
    const call = { signal: s, temperature: 0, maxTokens: this.opts.maxTokens ?? 128 };
    try {
      if (this.llm.generateJson) {
        try {
          const r = await this.llm.generateJson(messages, agentActionSchema(passages.length), call);
          return validateAgentAction(r.value, passages.length);
        } catch (e) {
          // A constrained reply that did not parse (cut at maxTokens) still carries its text: try to repair it.
          const text = (e as { details?: { text?: unknown } }).details?.text;
          if (typeof text === 'string' && text.trim()) return parseAgentAction(text, passages.length);
          throw e;
        }
      }
      const r = await this.llm.complete(messages, call);
      return parseAgentAction(r.text, passages.length);
    } catch (e) {
      if (signal?.aborted) throw signal.reason;
      return { ok: false, error: `LLM call failed: ${e instanceof Error ? e.message : String(e)}` };
    }
  }

  /** The search a tool call stands for; null (with the hop's error set) when its arguments cannot run. */
  private toSearch(action: Exclude<AgentAction, { action: 'answer' }>, evidence: ScoredChunk[], filters: Filters | undefined, tenant: string, hop: AgentHop): AgentSearch | null {
    switch (action.action) {
      case 'dense_search':
        return { query: action.query, mode: 'dense', filters };
      case 'keyword_search':
        return { query: action.query, mode: 'keyword', filters };
      case 'filtered_search': {
        // The caller's own filters win over the agent's on the same field: the agent narrows, never widens.
        const f: Filters = { [action.field]: action.value, ...filters };
        const problems = validateFilterKeys(f);
        if (problems.length) {
          hop.error = problems.join('; ');
          return null;
        }
        return { query: action.query, mode: 'hybrid', filters: f };
      }
      case 'fetch_document': {
        const c = evidence[action.ref - 1]!;
        const id = externalDocumentId(tenant, c.document_id) ?? c.document_id;
        return { query: `${c.title} ${c.text}`.slice(0, 1000), mode: 'hybrid', filters: { document_id: id, ...filters } };
      }
    }
  }
}

/** Reciprocal rank fusion of ranked chunk lists (the first chunk object seen for an id is kept, scored by RRF). */
export function fuseChunks(lists: readonly ScoredChunk[][], rrfK: number, limit: number): ScoredChunk[] {
  if (lists.length === 1) return lists[0]!.slice(0, limit);
  const byId = new Map<string, ScoredChunk>();
  for (const l of lists) for (const c of l) if (!byId.has(c.chunk_id)) byId.set(c.chunk_id, c);
  return reciprocalRankFusion(
    lists.map((l, i) => ({ name: `h${i}`, hits: l.map((c) => ({ id: c.chunk_id, score: c.score })) })),
    { k: rrfK, limit },
  ).map((f) => ({ ...byId.get(f.id)!, score: f.score }));
}
