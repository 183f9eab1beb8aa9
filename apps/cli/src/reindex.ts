import { setTimeout as sleep } from 'node:timers/promises';
import { Command } from 'commander';
import { createBus, createKeywordIndex, createLlm, createRegistry, EmbeddedBm25KeywordIndex } from '@rag/adapters';
import { ContextualReindex, type ContextualReindexSummary } from '@rag/application';
import type { AppConfig } from '@rag/platform';
import { KEYWORD_INDEX, LLM, type KeywordIndex, type Llm } from '@rag/ports';
import { contextualizerFor, createEmbeddedContext, lockDataDir } from '@rag/services';

interface ReindexOpts {
  contextual?: boolean;
  recluster?: boolean;
  force?: boolean;
  limit?: number;
  tenant?: string;
  wait: boolean;
  waitSeconds: number;
}

/**
 * `rag reindex --contextual`: writes the LLM contexts of the documents indexed before RAG_CONTEXTUAL_CHUNKS was on
 * (see libs/application ingestion/contextualizer.reindex.ts), from the chunks the keyword index holds, so no source
 * is read again. Runs with RAG_CONTEXTUAL_CHUNKS=on for this command whatever the environment says (keep it on for the
 * platform too, or new documents come without contexts).
 * - Embedded (RAG_BUS=embedded): the platform runs in this process on RAG_DATA_DIR (stop `rag start` first: the data
 *   folder is locked), its own embedder and indexer stages write the republished chunks.
 * - Distributed (RAG_BUS=kafka): this process only reads the registry and keyword index and publishes on
 *   rag.chunks.v1; the running embedder and indexer services do the rest.
 * Not built: an API endpoint for it (deviation, see the report of issue 16): a running gateway has no reindex route.
 * Prints one JSON line: documents, republished, skipped, missing (no stored chunks), contexts written, failed calls.
 *
 * `rag reindex --recluster`: renumbers the embedded keyword index's chunks by topic now (EmbeddedBm25KeywordIndex.
 * recluster: same hits, fewer posting sub-blocks per search), e.g. after a bulk import with
 * RAG_KEYWORD_RECLUSTER_RATIO=0, in a maintenance window. The data folder is locked (stop `rag start` first); one
 * transaction, so an interrupted run leaves the index as it was. Prints what it did as one JSON line.
 */
export function reindexCommand(config: (overrides?: Partial<AppConfig>) => AppConfig, out: (s: string) => void = (s) => process.stdout.write(s)): Command {
  return new Command('reindex')
    .description('re-index stored documents; --contextual: give every chunk its LLM-written context (RAG_LLM needed); --recluster: renumber the embedded keyword index by topic')
    .option('--contextual', 'write the contextual-retrieval context of every chunk of the indexed documents')
    .option('--recluster', 'renumber the embedded keyword index\'s chunks by topic now (faster searches, same hits; stop `rag start` first)')
    .option('--force', 'ask again for chunks that already have a context')
    .option('--limit <n>', 'at most n documents', (v) => Number(v))
    .option('--tenant <tenant>', 'only this tenant')
    .option('--no-wait', 'return once republished instead of waiting until indexed')
    .option('--wait-seconds <s>', 'how long to wait for the indexer', (v) => Number(v), 3600)
    .action(async (o: ReindexOpts) => {
      if (o.recluster && o.contextual) throw new Error('reindex: --recluster and --contextual are separate runs');
      if (o.recluster) {
        out(JSON.stringify(await recluster(config())) + '\n');
        return;
      }
      if (!o.contextual) throw new Error('reindex: say what to re-index (--contextual or --recluster)');
      if (o.limit !== undefined && !(Number.isInteger(o.limit) && o.limit > 0)) throw new Error('--limit must be a positive integer');
      const cfg = config({ RAG_CONTEXTUAL_CHUNKS: 'on' });
      if (process.env.RAG_CONTEXTUAL_CHUNKS !== 'on') process.stderr.write('rag reindex: RAG_CONTEXTUAL_CHUNKS is not on in this environment: documents ingested later get no context\n');
      const summary = cfg.RAG_BUS === 'embedded' ? await embedded(cfg, o) : await distributed(cfg, o);
      out(JSON.stringify(summary) + '\n');
      // Failed LLM calls leave chunks without context (reported, not an error); chunks not seen indexed in time are.
      if (summary.unsettled > 0) process.exitCode = 1;
    });
}

type Summary = ContextualReindexSummary & { unsettled: number; seconds: number };

async function recluster(cfg: AppConfig): Promise<Record<string, number>> {
  if (cfg.RAG_KEYWORD_INDEX !== 'embedded') throw new Error(`reindex --recluster: only the embedded keyword index is reclustered (RAG_KEYWORD_INDEX is ${cfg.RAG_KEYWORD_INDEX}; OpenSearch/Elasticsearch order their own segments)`);
  const unlock = lockDataDir(cfg.dataDir);
  try {
    const index = new EmbeddedBm25KeywordIndex({ dir: cfg.dataDir, synchronous: cfg.RAG_SQLITE_SYNCHRONOUS, termCacheBytes: 0 });
    try {
      const { ms, ...rest } = index.recluster();
      return { ...rest, seconds: Math.round(ms / 100) / 10 };
    } finally {
      await index.close();
    }
  } finally {
    unlock();
  }
}

async function embedded(cfg: AppConfig, o: ReindexOpts): Promise<Summary> {
  const unlock = lockDataDir(cfg.dataDir);
  const handles = await createEmbeddedContext(cfg);
  try {
    const keywords = handles.context.get<KeywordIndex>(KEYWORD_INDEX, { strict: false });
    const llm = handles.context.get<Llm | null>(LLM, { strict: false });
    return await runReindex(new ContextualReindex(handles.registry, keywords, handles.bus, contextualizerFor(cfg, llm)!), o);
  } finally {
    await handles.close();
    unlock();
  }
}

async function distributed(cfg: AppConfig, o: ReindexOpts): Promise<Summary> {
  const [registry, keywords, bus, llm] = await Promise.all([createRegistry(cfg), createKeywordIndex(cfg), createBus(cfg), createLlm(cfg)]);
  try {
    await bus.start();
    return await runReindex(new ContextualReindex(registry, keywords, bus, contextualizerFor(cfg, llm)!), o);
  } finally {
    await bus.close().catch(() => undefined);
    await keywords.close().catch(() => undefined);
    await registry.close().catch(() => undefined);
    await llm?.close?.().catch(() => undefined);
  }
}

async function runReindex(job: ContextualReindex, o: ReindexOpts): Promise<Summary> {
  const started = Date.now();
  const s = await job.run({
    ...(o.tenant ? { tenant: o.tenant } : {}),
    ...(o.limit ? { limit: o.limit } : {}),
    force: o.force ?? false,
    onDocument: (d) => process.stderr.write(`${d.outcome} ${d.document_id}${d.outcome === 'republished' ? ` (${d.written}/${d.children} contexts)` : ''}\n`),
  });
  let unsettled = (await job.unsettled()).length;
  const deadline = started + o.waitSeconds * 1000;
  while (o.wait && unsettled > 0 && Date.now() < deadline) {
    await sleep(250);
    unsettled = (await job.unsettled()).length;
  }
  return { ...s, unsettled: o.wait ? unsettled : 0, seconds: Math.round((Date.now() - started) / 100) / 10 };
}
