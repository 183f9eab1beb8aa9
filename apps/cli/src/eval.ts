import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import type { SearchMode } from '@rag/contracts';
import { QUERY_TRANSLATOR } from '@rag/ports';
import { GATE_CALIBRATION, type EmbeddedHandles } from '@rag/services';
import { answerContainsGold, evaluateRun, goldInFirstSentence, parseQrels, statementSupport } from '@rag/domain';
import { ingest } from './ingest';
import type { AnswerJudge } from './judge';
import type { PlatformClient } from './platform-client';
import { Progress } from './progress';
import { collectSources } from './sources';

export interface EvalQuery {
  _id: string;
  text: string;
  answers?: string[];
}

/** A question the corpus cannot answer: the platform should refuse it. */
export interface OodQuestion {
  _id: string;
  text: string;
  lang: 'en' | 'zh';
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

/** The repository root: the nearest folder above this file holding both package.json and nx.json (works from src/ and dist/). */
export function repoRoot(from: string = __dirname): string {
  let dir = resolve(from);
  for (;;) {
    if (existsSync(join(dir, 'package.json')) && existsSync(join(dir, 'nx.json'))) return dir;
    const up = dirname(dir);
    if (up === dir) return resolve(from);
    dir = up;
  }
}

/** The default OOD question set of a dataset: `<repo>/test/fixtures/ood/<dataset folder name>.jsonl`, when it exists. */
export function defaultOodFile(datasetDir: string): string | undefined {
  const f = join(repoRoot(), 'test', 'fixtures', 'ood', `${basename(resolve(datasetDir))}.jsonl`);
  return existsSync(f) ? f : undefined;
}

/** Reads an OOD question file (one `{_id, text, lang: "en"|"zh"}` per line); throws naming the first bad line. */
export function readOodQuestions(file: string): OodQuestion[] {
  if (!existsSync(file)) throw new Error(`--ood: ${file} does not exist`);
  const out: OodQuestion[] = [];
  readFileSync(file, 'utf8')
    .split('\n')
    .forEach((line, i) => {
      if (!line.trim()) return;
      let v: unknown;
      try {
        v = JSON.parse(line);
      } catch {
        throw new Error(`${file}:${i + 1}: not JSON`);
      }
      const o = (typeof v === 'object' && v !== null ? v : {}) as Record<string, unknown>;
      const { _id, text, lang } = o;
      if (typeof _id !== 'string' || typeof text !== 'string' || !text.trim() || (lang !== 'en' && lang !== 'zh')) {
        throw new Error(`${file}:${i + 1}: expected {"_id": string, "text": string, "lang": "en"|"zh"}`);
      }
      out.push({ _id, text, lang });
    });
  if (out.length === 0) throw new Error(`${file}: no questions`);
  return out;
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

/**
 * Makes the relevance gate's calibration of the evaluated (default) tenant before measuring (GateCalibrator.ensure):
 * on a running platform it is made in the background after ingestion settles, and questions meanwhile are gated with
 * the fixed fallback threshold. No-op when calibration is off (RAG_GATE_CALIBRATION=off, RAG_REFUSAL_THRESHOLD set).
 */
export async function calibrateGate(handles: Pick<EmbeddedHandles, 'context'>, tenant = 'default'): Promise<void> {
  let gate: { ensure(tenant: string): Promise<void> } | null = null;
  try {
    gate = handles.context.get(GATE_CALIBRATION, { strict: false });
  } catch {
    return;
  }
  const started = Date.now();
  await gate?.ensure(tenant);
  if (gate) process.stderr.write(`eval: relevance gate calibrated (${((Date.now() - started) / 1000).toFixed(1)} s)\n`);
}

/**
 * Waits until cross-lingual query translation is ready (RAG_TRANSLATION=auto; its dictionary loads in the background
 * and questions are answered untranslated until then), so that a measurement never mixes untranslated and translated
 * questions. No-op when translation is off.
 */
export async function translationReady(handles: Pick<EmbeddedHandles, 'context'>): Promise<void> {
  let translator: { whenReady(): Promise<void> } | null = null;
  try {
    translator = handles.context.get(QUERY_TRANSLATOR, { strict: false });
  } catch {
    return;
  }
  if (!translator) return;
  const started = Date.now();
  await translator.whenReady();
  process.stderr.write(`eval: query translation ready (${((Date.now() - started) / 1000).toFixed(1)} s)\n`);
}

export interface EvaluateModeOptions {
  /** Run the answer pass: ask every judged query (in-domain refusal rate; answer-gold metrics where queries carry `answers`). */
  answers: boolean;
  limit?: number;
  /** Out-of-domain questions to ask through the answer path (refusal rate); none or empty skips them. */
  ood?: readonly OodQuestion[];
  /** `--judge`: LLM-judged faithfulness and answer relevancy of each answer of the answer pass (apps/cli/src/judge.ts). */
  judge?: AnswerJudge;
}

const round = (x: number) => Math.round(x * 10000) / 10000;

/**
 * Runs every judged query through the real retrieval path and, unless `answers` is off, through the answer path
 * (`in_domain_refused_rate`; gold-answer metrics when the queries carry `answers`); then asks the OOD questions
 * (`ood_refused_rate`, the share refused, overall and per language).
 */
export async function evaluateMode(client: PlatformClient, dir: string, mode: EvalMode, opts: EvaluateModeOptions) {
  const { queries, qrels } = readDataset(dir);
  const judged = queries.filter((q) => qrels.has(q._id)).slice(0, opts.limit ?? Infinity);
  const run = new Map<string, string[]>();
  const progress = new Progress(`eval ${mode}`, judged.length);
  const searchMode: SearchMode = mode === 'hybrid+rerank' ? 'hybrid' : mode;
  let asked = 0;
  let refused = 0;
  let withGold = 0;
  let containsGold = 0;
  let firstCitationGold = 0;
  let refusedWithGold = 0;
  let goldFirstSentence = 0;
  // Statements of the answers that were not refused (issue 15 item 3: `statements[].support`, when answers carry them).
  let statements = 0;
  let supportedStatements = 0;
  const latencies: number[] = [];
  for (const [i, q] of judged.entries()) {
    const t0 = performance.now();
    const r = await client.retrieve(q.text, { mode: searchMode, top_k: 100, rerank: mode === 'hybrid+rerank' });
    latencies.push(performance.now() - t0);
    const seen = new Set<string>();
    for (const x of r.results) seen.add(x.document_id);
    run.set(q._id, [...seen]);
    if (opts.answers) {
      const a = await client.ask(q.text, { mode: searchMode });
      asked++;
      if (a.refused) refused++;
      else {
        const st = statementSupport([a as { statements?: readonly unknown[] }]);
        statements += st.statements;
        supportedStatements += st.supported;
      }
      await opts.judge?.add(q.text, a, r.results);
      if (q.answers?.length) {
        withGold++;
        if (a.refused) refusedWithGold++;
        if (answerContainsGold(a.answer, q.answers)) containsGold++;
        if (!a.refused && goldInFirstSentence(a.answer, q.answers)) goldFirstSentence++;
        const first = a.citations[0];
        if (first && (qrels.get(q._id)?.get(first.document_id) ?? 0) > 0) firstCitationGold++;
      }
    }
    progress.update(i + 1);
  }
  progress.finish(judged.length);
  // Score only the queries that ran, so --limit gives the mean over those rather than diluting it over all judged queries.
  const metrics = evaluateRun(run, qrels, { queryIds: judged.map((q) => q._id) });
  latencies.sort((a, b) => a - b);
  const ood = opts.ood?.length ? await askOod(client, mode, searchMode, opts.ood) : undefined;
  return {
    mode,
    ...Object.fromEntries(Object.entries(metrics).map(([k, v]) => [k, typeof v === 'number' ? round(v) : v])),
    ...(withGold
      ? {
          answers: withGold,
          answer_contains_gold: round(containsGold / withGold),
          gold_in_first_sentence: round(goldFirstSentence / withGold),
          first_citation_gold: round(firstCitationGold / withGold),
          refused_rate: round(refusedWithGold / withGold),
        }
      : {}),
    ...(asked ? { in_domain_asked: asked, in_domain_refused_rate: round(refused / asked) } : {}),
    ...(statements ? { statements, statement_support_rate: round(supportedStatements / statements) } : {}),
    ...(ood ?? {}),
    ...(opts.judge?.report() ?? {}),
    retrieve_p50_ms: round(latencies[Math.floor(latencies.length * 0.5)] ?? 0),
  };
}

/** Asks every OOD question through the answer path; the share refused, overall and per language (higher is better). */
async function askOod(client: PlatformClient, mode: EvalMode, searchMode: SearchMode, questions: readonly OodQuestion[]) {
  const progress = new Progress(`eval ${mode} ood`, questions.length);
  const asked = { en: 0, zh: 0 };
  const refused = { en: 0, zh: 0 };
  for (const [i, q] of questions.entries()) {
    const a = await client.ask(q.text, { mode: searchMode });
    asked[q.lang]++;
    if (a.refused) refused[q.lang]++;
    progress.update(i + 1);
  }
  progress.finish(questions.length);
  const rate = (r: number, n: number) => (n ? round(r / n) : null);
  return {
    ood_questions: questions.length,
    ood_refused_rate: rate(refused.en + refused.zh, asked.en + asked.zh),
    ood_refused_rate_en: rate(refused.en, asked.en),
    ood_refused_rate_zh: rate(refused.zh, asked.zh),
  };
}
