import './tracing';
import 'reflect-metadata';
import { basename, isAbsolute, join, relative, resolve } from 'node:path';
import { Command, Option } from 'commander';
import { QueryModeSchema, type QueryMode } from '@rag/contracts';
import { setLogLevel, type AppConfig, loadConfigOrExit } from '@rag/platform';
import { createEmbeddedContext, lockDataDir, runEmbedded, writeLatestEval } from '@rag/services';
import { calibrateGate, translationReady, defaultOodFile, evaluateMode, ingestDataset, readDataset, readOodQuestions, repoRoot, type EvalMode } from './eval';
import { ingest } from './ingest';
import { dbCommand } from './db';
import { keysCommand } from './keys';
import { reindexCommand } from './reindex';
import { judgeFor } from './judge';
import { multihopCommand } from './multihop';
import { HttpClient, InProcessClient, type PlatformClient } from './platform-client';
import { collectSources } from './sources';

function config(overrides: Partial<AppConfig> = {}): AppConfig {
  return loadConfigOrExit('rag', process.env, overrides);
}

/** A running server at --url when one answers, else an embedded platform in this process. */
async function connect(url: string, cfg: AppConfig): Promise<PlatformClient> {
  if (await HttpClient.reachable(url)) {
    process.stderr.write(`rag: using the server at ${url}\n`);
    return new HttpClient(url, process.env.RAG_API_KEY);
  }
  const unlock = lockDataDir(cfg.dataDir);
  process.stderr.write(`rag: no server at ${url}; running embedded on ${cfg.dataDir}\n`);
  const handles = await createEmbeddedContext(cfg);
  const client = new InProcessClient(handles);
  const close = client.close.bind(client);
  client.close = async () => {
    await close();
    unlock();
  };
  return client;
}

const program = new Command();
program.name('rag').description('Enterprise RAG platform: ingest documents, ask questions, evaluate retrieval.').version(process.env.npm_package_version ?? '0.1.0');
const urlOption = new Option('--url <url>', 'gateway to talk to when it is running').default(process.env.RAG_URL ?? 'http://127.0.0.1:8080');

/** The CLI's commands log warnings only (their output is progress and results), unless RAG_LOG_LEVEL asks for more. */
function quietLogs(): void {
  if (!process.env.RAG_LOG_LEVEL?.trim()) setLogLevel('warn');
}

program
  .command('start')
  .description('run the whole platform in this process (gateway on RAG_HOST:RAG_PORT, default 127.0.0.1:8080)')
  .action(async () => {
    await runEmbedded(config());
  });

program
  .command('ingest')
  .description('ingest files, folders and .jsonl corpora (one {_id,title,text} per line)')
  .argument('<paths...>')
  .addOption(urlOption)
  .option('--no-wait', 'return once queued instead of waiting until indexed')
  .action(async (paths: string[], opts: { url: string; wait: boolean }) => {
    quietLogs();
    const cfg = config();
    const { docs, problems } = collectSources(paths);
    for (const p of problems.slice(0, 20)) process.stderr.write(`skipped ${p.where}: ${p.error}\n`);
    if (problems.length > 20) process.stderr.write(`… and ${problems.length - 20} more skipped\n`);
    if (docs.length === 0) {
      process.stderr.write('rag ingest: nothing to ingest\n');
      process.exit(problems.length ? 1 : 0);
    }
    const client = await connect(opts.url, cfg);
    try {
      const s = await ingest(client, docs, { wait: opts.wait });
      for (const f of [...s.rejected, ...s.failed].slice(0, 20)) process.stderr.write(`failed ${f.document_id}: ${f.error}\n`);
      process.stdout.write(
        JSON.stringify({
          documents: docs.length,
          submitted: s.submitted,
          indexed: s.indexed,
          unchanged: s.unchanged,
          failed: s.failed.length,
          rejected: s.rejected.length + problems.length,
          seconds: Math.round(s.seconds * 10) / 10,
          // Overall rate: finished documents over the whole run, submission included (null without --wait).
          docs_per_s: opts.wait && s.seconds > 0 ? Math.round(((s.indexed + s.failed.length) / s.seconds) * 10) / 10 : null,
        }) + '\n',
      );
      process.exitCode = s.failed.length || s.rejected.length || problems.length ? 1 : 0;
    } finally {
      await client.close();
    }
  });

program
  .command('ask')
  .description('ask a question; prints the answer with its citations')
  .argument('<question>')
  .addOption(urlOption)
  .addOption(new Option('--mode <mode>', 'retrieval mode, or agent (multi-hop, needs RAG_LLM) / auto (routed)').choices(QueryModeSchema.options).default('hybrid'))
  .option('--top-k <n>', 'sources to use', (v) => Number(v))
  .option('--json', 'print the whole JSON answer')
  .action(async (question: string, opts: { url: string; mode: QueryMode; topK?: number; json?: boolean }) => {
    quietLogs();
    const client = await connect(opts.url, config());
    try {
      const a = await client.ask(question, { mode: opts.mode, ...(opts.topK ? { top_k: opts.topK } : {}) });
      if (opts.json) {
        process.stdout.write(JSON.stringify(a, null, 2) + '\n');
        return;
      }
      process.stdout.write(`${a.answer}\n\n`);
      // The verified statements (issue 15): each with its support and the refs it cites; ✗ = under the verifier's threshold.
      if (a.statements?.length) {
        for (const st of a.statements) {
          const refs = st.source_ids.map((r) => `[${r}]`).join('') || '(no source)';
          process.stdout.write(`${st.supported ? '✓' : '✗'} ${st.support.toFixed(2)} ${refs} ${st.text}\n`);
        }
        process.stdout.write('\n');
      }
      for (const c of a.citations) process.stdout.write(`[${c.ref}] ${c.title} (${c.document_id}) score ${c.score.toFixed(4)}\n`);
      const extra = [a.refused ? 'refused' : '', a.degraded.length ? `degraded: ${a.degraded.join(', ')}` : ''].filter(Boolean).join(' · ');
      process.stdout.write(`\n${extra ? extra + ' · ' : ''}${a.timings_ms.total} ms · trace ${a.trace_id}\n`);
    } finally {
      await client.close();
    }
  });

program
  .command('eval')
  .description(
    'ingest a BEIR dataset through the real pipeline and score retrieval, answers and refusals (in-domain and out-of-domain); prints one JSON line per mode',
  )
  .requiredOption('--dataset <dir>', 'folder with corpus.jsonl, queries.jsonl, qrels/*.tsv')
  .addOption(new Option('--mode <mode>', 'retrieval mode').choices(['keyword', 'dense', 'hybrid', 'hybrid+rerank']).default('hybrid'))
  .option('--compare', 'run every mode side by side')
  .option('--no-answers', 'skip the answer pass (in-domain refusal rate, and gold-answer metrics where queries carry answers)')
  .option('--limit <n>', 'evaluate the first n judged queries only', (v) => Number(v))
  .option(
    '--ood <file>',
    'out-of-domain questions ({_id,text,lang} per line) to ask through the answer path; the refused share is ood_refused_rate (default: test/fixtures/ood/<dataset folder name>.jsonl in this repository, when it exists)',
  )
  .option('--no-ood', 'skip the out-of-domain refusal measurement')
  .option('--judge', 'LLM-judged faithfulness and answer relevancy of the answers (RAGAS), by the configured RAG_LLM')
  .action(async (opts: { dataset: string; mode: EvalMode; compare?: boolean; answers: boolean; limit?: number; ood?: string | boolean; judge?: boolean }) => {
    quietLogs();
    readDataset(opts.dataset);
    if (opts.limit !== undefined && !(Number.isInteger(opts.limit) && opts.limit > 0)) throw new Error('--limit must be a positive integer');
    const oodFile = typeof opts.ood === 'string' ? resolve(opts.ood) : opts.ood === false ? undefined : defaultOodFile(opts.dataset);
    const ood = oodFile ? readOodQuestions(oodFile) : [];
    if (oodFile) process.stderr.write(`eval: ${ood.length} out-of-domain questions from ${oodFile}\n`);
    else if (opts.ood !== false) process.stderr.write(`eval: no out-of-domain question set for ${basename(resolve(opts.dataset))} (pass --ood <file>)\n`);
    const base = config();
    // Each dataset gets its own data folder so evaluation never touches the platform's own documents.
    const cfg = config({ RAG_DATA_DIR: join(base.dataDir, 'eval', basename(opts.dataset)), RAG_CANDIDATES: Math.max(base.RAG_CANDIDATES, 100) });
    const unlock = lockDataDir(cfg.dataDir);
    const client = new InProcessClient(await createEmbeddedContext(cfg));
    try {
      await ingestDataset(client, opts.dataset);
      // Questions never wait for the gate's calibration (it runs in the background once ingestion settles); a
      // measurement must not start before it exists, or its first questions are gated with the fallback threshold.
      if (opts.answers || ood.length) await calibrateGate(client.handles);
      await translationReady(client.handles);
      const modes: EvalMode[] = opts.compare
        ? ['keyword', 'dense', 'hybrid', ...(cfg.RAG_RERANKER !== 'none' ? (['hybrid+rerank'] as const) : [])]
        : [opts.mode];
      const results: Record<string, unknown>[] = [];
      for (const mode of modes) {
        const judge = opts.judge ? judgeFor(client.handles, cfg, opts.answers) : undefined;
        const result = await evaluateMode(client, opts.dataset, mode, { answers: opts.answers, limit: opts.limit, ood, judge });
        const line = {
          dataset: basename(opts.dataset),
          embedder: cfg.RAG_EMBEDDER === 'onnx' ? cfg.RAG_EMBEDDING_MODEL : cfg.RAG_EMBEDDER,
          ...result,
          ...(oodFile ? { ood_file: displayPath(oodFile) } : {}),
        };
        results.push(line);
        process.stdout.write(JSON.stringify(line) + '\n');
      }
      // The latest report, for the web console's Overview (GET /v1/overview reads RAG_DATA_DIR/eval/latest.json).
      writeLatestEval(base.dataDir, { finished_at: new Date().toISOString(), dataset: basename(opts.dataset), results });
    } finally {
      await client.close();
      unlock();
    }
  });

program.addCommand(keysCommand(() => config()));
program.addCommand(dbCommand(() => config()));
program.addCommand(reindexCommand(config));
program.addCommand(multihopCommand(config));

/** A path relative to the repository root when it lies inside it, else absolute. */
function displayPath(file: string): string {
  const rel = relative(repoRoot(), file);
  return rel && !rel.startsWith('..') && !isAbsolute(rel) ? rel : file;
}

program.parseAsync(process.argv).catch((e: unknown) => {
  process.stderr.write(`rag: ${e instanceof Error ? e.message : String(e)}\n`);
  process.exit(1);
});
