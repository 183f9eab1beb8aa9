import { basename, join } from 'node:path';
import { Command } from 'commander';
import { AgentLoop } from '@rag/application';
import { evaluateRun } from '@rag/domain';
import type { AppConfig } from '@rag/platform';
import { LLM, type Llm } from '@rag/ports';
import { createEmbeddedContext, lockDataDir, type EmbeddedHandles } from '@rag/services';
import { ingestDataset, readDataset } from './eval';
import { InProcessClient } from './platform-client';
import { Progress } from './progress';

interface MultiHopQuery {
  _id: string;
  text: string;
  /** [first hop, second hop] document ids (test/fixtures/multihop: built by scripts/eval/multihop-build.js). */
  hops?: string[];
}

const K = 10;
const round = (x: number) => Math.round(x * 10000) / 10000;

/**
 * `rag multihop --dataset DIR` (issue 16 item 7): Recall@10 over both hops of a two-hop set, single-shot (one hybrid
 * retrieval of the question, top 10) vs the agent (the AgentLoop of `mode: "agent"`, its evidence fused over every hop,
 * top 10), on the same embedded index; plus each hop's own recall and the share of questions with both hops found.
 * The agent needs RAG_LLM; without one only the single-shot line is printed. The agent's evidence is read from the
 * loop itself (the same class and search function the orchestrator's agent path uses) because /v1/query returns only
 * the cited passages, not the whole evidence.
 */
export function multihopCommand(config: (overrides?: Partial<AppConfig>) => AppConfig, out: (s: string) => void = (s) => process.stdout.write(s)): Command {
  return new Command('multihop')
    .description('two-hop evaluation: single-shot vs agent Recall@10 over both hops (test/fixtures/multihop/cmrc2018-2hop)')
    .requiredOption('--dataset <dir>', 'BEIR folder whose qrels list both hops of each question')
    .option('--limit <n>', 'the first n questions only', (v) => Number(v))
    .option('--agent-limit <n>', 'the agent on the first n of those only (it is slow on a CPU model); single-shot is also reported on them', (v) => Number(v))
    .option('--no-agent', 'single-shot only')
    .action(async (o: { dataset: string; limit?: number; agentLimit?: number; agent: boolean }) => {
      for (const n of [o.limit, o.agentLimit]) if (n !== undefined && !(Number.isInteger(n) && n > 0)) throw new Error('--limit and --agent-limit must be positive integers');
      const base = config();
      const cfg = config({ RAG_DATA_DIR: join(base.dataDir, 'eval', basename(o.dataset)), RAG_CANDIDATES: Math.max(base.RAG_CANDIDATES, 100) });
      const unlock = lockDataDir(cfg.dataDir);
      const handles = await createEmbeddedContext(cfg);
      try {
        await ingestDataset(new InProcessClient(handles), o.dataset);
        await multihopRun(handles, cfg, o.dataset, { limit: o.limit, agentLimit: o.agentLimit, agent: o.agent, onLine: (line) => out(JSON.stringify(line) + '\n') });
      } finally {
        await handles.close();
        unlock();
      }
    });
}

export async function multihopRun(
  handles: EmbeddedHandles,
  cfg: AppConfig,
  dataset: string,
  o: { limit?: number; agentLimit?: number; agent: boolean; onLine?: (line: Record<string, unknown>) => void },
): Promise<Record<string, unknown>[]> {
  const { queries, qrels } = readDataset(dataset);
  const judged = (queries as MultiHopQuery[]).filter((q) => qrels.has(q._id)).slice(0, o.limit ?? Infinity);
  const scope = { tenant: 'default' };
  const llm = handles.context.get<Llm | null>(LLM, { strict: false });
  const systems: { name: 'single-shot' | 'agent'; limit?: number; run: (q: string) => Promise<{ docs: string[]; hops?: number }> }[] = [
    {
      name: 'single-shot',
      run: async (q) => {
        const r = await handles.query.retrieve({ question: q, mode: 'hybrid', top_k: K }, scope);
        return { docs: r.results.map((x) => x.document_id) };
      },
    },
  ];
  if (o.agent && llm) {
    const loop = new AgentLoop(llm, { maxSteps: cfg.RAG_AGENT_MAX_STEPS, timeoutMs: cfg.RAG_LLM_TIMEOUT_MS, topK: K, rrfK: cfg.RAG_RRF_K });
    const single = systems[0]!;
    // Single-shot on exactly the agent's questions too, so the two are compared on the same questions.
    if (o.agentLimit !== undefined && o.agentLimit < judged.length) systems.push({ ...single, limit: o.agentLimit });
    systems.push({
      name: 'agent',
      limit: o.agentLimit,
      run: async (q) => {
        const run = await loop.run(q, undefined, scope.tenant, async (s) => {
          const r = await handles.query.retrieve({ question: s.query, mode: s.mode, filters: s.filters, top_k: K }, scope, undefined, { expand: false });
          return { chunks: r.chunks, degraded: r.degraded };
        });
        return { docs: run.evidence.map((c) => c.document_id), hops: run.hops.length };
      },
    });
  }
  const lines: Record<string, unknown>[] = [];
  for (const sys of systems) {
    const asked = judged.slice(0, sys.limit ?? Infinity);
    const runs = new Map<string, string[]>();
    const hopFound = [0, 0];
    let both = 0;
    let hopsTotal = 0;
    const latencies: number[] = [];
    const progress = new Progress(`multihop ${sys.name}`, asked.length);
    for (const [i, q] of asked.entries()) {
      const t0 = performance.now();
      const r = await sys.run(q.text);
      latencies.push(performance.now() - t0);
      const top = [...new Set(r.docs)].slice(0, K);
      runs.set(q._id, top);
      const hops = q.hops ?? [...(qrels.get(q._id)?.keys() ?? [])];
      hops.forEach((d, h) => {
        if (h < 2 && top.includes(d)) hopFound[h]!++;
      });
      if (hops.every((d) => top.includes(d))) both++;
      hopsTotal += r.hops ?? 0;
      progress.update(i + 1);
    }
    progress.finish(asked.length);
    const m = evaluateRun(runs, qrels, { queryIds: asked.map((q) => q._id) });
    latencies.sort((a, b) => a - b);
    const n = asked.length || 1;
    const line = {
      dataset: basename(dataset),
      system: sys.name,
      questions: asked.length,
      recall_at_10: round(m.recall_at_10),
      both_hops_at_10: round(both / n),
      hop1_recall_at_10: round(hopFound[0]! / n),
      hop2_recall_at_10: round(hopFound[1]! / n),
      ...(sys.name === 'agent' ? { llm: llm!.id, mean_hops: round(hopsTotal / n), max_steps: cfg.RAG_AGENT_MAX_STEPS } : {}),
      p50_ms: Math.round(latencies[Math.floor(latencies.length / 2)] ?? 0),
      embedder: cfg.RAG_EMBEDDER === 'onnx' ? cfg.RAG_EMBEDDING_MODEL : cfg.RAG_EMBEDDER,
    };
    lines.push(line);
    o.onLine?.(line);
  }
  if (o.agent && !llm) {
    const line = { dataset: basename(dataset), system: 'agent', skipped: 'no LLM configured (RAG_LLM=openai or local)' };
    lines.push(line);
    o.onLine?.(line);
  }
  return lines;
}
