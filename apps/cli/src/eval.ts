import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { SearchMode } from '@rag/contracts';
import { answerContainsGold, evaluateRun, parseQrels } from '@rag/domain';
import { ingest } from './ingest';
import type { PlatformClient } from './platform-client';
import { Progress } from './progress';
import { collectSources } from './sources';

export interface EvalQuery {
  _id: string;
  text: string;
  answers?: string[];
}

export type EvalMode = SearchMode | 'hybrid+rerank';

/** Reads a BEIR-layout dataset: corpus.jsonl, queries.jsonl, qrels/{test,dev,…}.tsv. */
export function readDataset(dir: string) {
  for (const f of ['corpus.jsonl', 'queries.jsonl', 'qrels']) {
    if (!existsSync(join(dir, f))) throw new Error(`${dir} is not a BEIR dataset: ${f} is missing`);
  }
  const qrelFiles = readdirSync(join(dir, 'qrels')).filter((f) => f.endsWith('.tsv'));
  const qrelFile = ['test.tsv', 'dev.tsv', 'train.tsv'].find((f) => qrelFiles.includes(f)) ?? qrelFiles[0];
  if (!qrelFile) throw new Error(`${dir}/qrels has no .tsv file`);
  const queries = readFileSync(join(dir, 'queries.jsonl'), 'utf8')
    .split('\n')
    .filter((l) => l.trim())
    .map((l) => JSON.parse(l) as EvalQuery);
  const qrels = parseQrels(readFileSync(join(dir, 'qrels', qrelFile), 'utf8'));
  return { corpusPath: join(dir, 'corpus.jsonl'), queries, qrels };
}

/** Ingests the corpus through the real pipeline (idempotent: unchanged documents are skipped). */
export async function ingestDataset(client: PlatformClient, dir: string): Promise<void> {
  const { docs, problems } = collectSources([join(dir, 'corpus.jsonl')]);
  if (problems.length) process.stderr.write(`eval: ${problems.length} corpus lines skipped (${problems[0]!.error})\n`);
  const s = await ingest(client, docs, { wait: true, label: 'eval ingest' });
  if (s.failed.length || s.rejected.length) {
    process.stderr.write(`eval: ${s.failed.length} failed, ${s.rejected.length} rejected (first: ${JSON.stringify(s.failed[0] ?? s.rejected[0])})\n`);
  }
}

/** Runs every query through the real retrieval path (and the answerer when queries carry gold answers). */
export async function evaluateMode(client: PlatformClient, dir: string, mode: EvalMode, opts: { answers: boolean; limit?: number }) {
  const { queries, qrels } = readDataset(dir);
  const judged = queries.filter((q) => qrels.has(q._id)).slice(0, opts.limit ?? Infinity);
  const run = new Map<string, string[]>();
  const progress = new Progress(`eval ${mode}`, judged.length);
  const searchMode: SearchMode = mode === 'hybrid+rerank' ? 'hybrid' : mode;
  let answered = 0;
  let containsGold = 0;
  let firstCitationGold = 0;
  let refused = 0;
  const latencies: number[] = [];
  for (const [i, q] of judged.entries()) {
    const t0 = performance.now();
    const r = await client.retrieve(q.text, { mode: searchMode, top_k: 100, rerank: mode === 'hybrid+rerank' });
    latencies.push(performance.now() - t0);
    const seen = new Set<string>();
    for (const x of r.results) seen.add(x.document_id);
    run.set(q._id, [...seen]);
    if (opts.answers && q.answers?.length) {
      const a = await client.ask(q.text, { mode: searchMode });
      answered++;
      if (a.refused) refused++;
      if (answerContainsGold(a.answer, q.answers)) containsGold++;
      const first = a.citations[0];
      if (first && (qrels.get(q._id)?.get(first.document_id) ?? 0) > 0) firstCitationGold++;
    }
    progress.update(i + 1);
  }
  progress.finish(judged.length);
  const metrics = evaluateRun(run, qrels);
  latencies.sort((a, b) => a - b);
  const round = (x: number) => Math.round(x * 10000) / 10000;
  return {
    mode,
    ...Object.fromEntries(Object.entries(metrics).map(([k, v]) => [k, typeof v === 'number' ? round(v) : v])),
    ...(answered
      ? { answers: answered, answer_contains_gold: round(containsGold / answered), first_citation_gold: round(firstCitationGold / answered), refused_rate: round(refused / answered) }
      : {}),
    retrieve_p50_ms: round(latencies[Math.floor(latencies.length * 0.5)] ?? 0),
  };
}
