'use strict';
// bench ingest: documents and chunks per second through the ingestion pipeline, with each stage's share of the time.
const { monitorEventLoopDelay } = require('node:perf_hooks');
const c = require('./lib/common');
const p = require('./lib/platform');

/** Stages measured inside another stage (the indexer's per-store writes run within its `index` stage). */
const WITHIN = { 'index-dense': 'index', 'index-keyword': 'index' };

const spec = {
  url: { type: 'repeat', default: [], help: 'also (or, with --no-embedded, only) measure a running gateway, e.g. http://127.0.0.1:8080 (repeatable)' },
  embedded: { type: 'bool', default: true, help: 'measure the embedded platform in this process (--no-embedded to skip)' },
  'metrics-url': { type: 'repeat', default: [], help: 'with --url: /metrics URLs to read the stage histogram from (default: the gateway port and the next 7, as scripts/distributed.js assigns them)' },
  'api-key': { type: 'string', default: process.env.RAG_BENCH_API_KEY, help: 'Bearer key for --url (RAG_BENCH_API_KEY)' },
  limit: { type: 'int', default: undefined, help: 'only the first N Cranfield documents' },
  repeat: { type: 'int', default: 1, help: 'rounds; targets alternate within each round (A B A B)' },
  'eval-dir': { type: 'string', default: c.defaultEvalDir, help: 'evaluation data folder (cranfield/ inside)' },
  keep: { type: 'bool', default: false, help: 'with --url: keep the ingested documents (default: delete them afterwards)' },
  'timeout-s': { type: 'int', default: 1800, help: 'give up waiting for one ingestion after this long' },
  'embedder-alone': { type: 'bool', default: true, help: 'embedded: after each round, time the configured embedder alone over the same chunk texts (pipeline efficiency = pipeline chunks/s ÷ that); --no-embedder-alone to skip' },
  'max-seconds': { type: 'int', default: 3600, help: 'hard limit for the whole run' },
};

const HELP = `usage: npm run bench -- ingest [options]

Ingests the Cranfield corpus (1,400 documents) under fresh ids and reports documents/s and chunks/s from the
first submit to the last "indexed" status, and the share of the time spent in each pipeline stage (the
rag_stage_duration_seconds histogram: loader, chunker, embedder, indexer, registry; plus the submit call).
Embedded: createEmbeddedContext in this process with a temporary RAG_DATA_DIR and the environment's settings
(RAG_EMBEDDER etc.). --url: a running gateway over HTTP (POST /v1/documents:batch, polling GET /v1/documents/{id});
start it with the same RAG_EMBEDDER/RAG_EMBEDDING_MODEL so the two are comparable. Both given: printed side by side.
Embedded rounds also time the configured embedder alone (createEmbedder, one batch of RAG_EMBEDDING_BATCH texts after
another, after the platform has closed) over the child chunks' embedding texts, chunked here as the chunker does, and
print the pipeline efficiency: pipeline chunks/s ÷ embedder-alone chunks/s (issue 13's target ≥ 0.5 with hashing).`;

async function measureEmbedded(corpus, opts, round) {
  const services = c.requireDist('libs/services/src/index.js');
  const { metricsRegistry } = c.requireDist('libs/platform/src/index.js');
  const dataDir = p.tempDataDir('ingest');
  const cfg = p.embeddedConfig({ dataDir });
  c.log(`embedded: starting (data ${dataDir}, embedder ${p.describeConfig(cfg).embedder}) …`);
  const tStart = Date.now();
  const handles = await services.createEmbeddedContext(cfg);
  const startS = (Date.now() - tStart) / 1000;
  try {
    const docs = p.cranfieldDocs(corpus, `bench-ingest-r${round}:`);
    const before = p.stagesFromJson(await metricsRegistry.getMetricsAsJSON());
    // How long the event loop was held at a time during the ingestion: what a query or a health check arriving then waits
    // before the process even reads it (embedded, every stage and the HTTP server share this loop).
    const lag = monitorEventLoopDelay({ resolution: 10 });
    lag.enable();
    const r = await p.ingestAndWait(p.inProcessClient(handles), docs, { timeoutMs: opts.timeoutS * 1000, label: 'embedded' });
    lag.disable();
    const after = p.stagesFromJson(await metricsRegistry.getMetricsAsJSON());
    const loopDelayMs = { p50: lag.percentile(50) / 1e6, p99: lag.percentile(99) / 1e6, max: lag.max / 1e6 };
    return { target: 'embedded', where: 'in-process', config: p.describeConfig(cfg), start_s: startS, ...r, loop_delay_ms: loopDelayMs, stages: p.diffStages(before, after), stage_source: 'metricsRegistry.getMetricsAsJSON() of this process' };
  } finally {
    await handles.close();
    p.removeDir(dataDir);
  }
}

/**
 * The child chunks' embedding texts of `docs`, made as the pipeline makes them (the loader's parse of a text upload,
 * the chunker with the configured sizes); the caller checks their count against the chunks the pipeline indexed.
 */
async function childTexts(docs, cfg) {
  const domain = c.requireDist('libs/domain/src/index.js');
  const opts = { chunkTokens: cfg.RAG_CHUNK_TOKENS, overlapTokens: cfg.RAG_CHUNK_OVERLAP_TOKENS, parentTokens: cfg.RAG_PARENT_CHUNK_TOKENS };
  const texts = [];
  for (const d of docs) {
    const loaded = await domain.loadContent({ bytes: Buffer.from(d.text, 'utf8'), mimeType: 'text/plain', title: d.title });
    if (!loaded.ok) continue;
    const doc = { document_id: d.id, tenant: 'default', version: 1, title: loaded.title, mime_type: 'text/plain', content_hash: '0'.repeat(64), acl: ['*'], metadata: {}, blocks: loaded.blocks };
    const chunked = domain.chunkDocumentWithin(doc, opts, cfg.RAG_MAX_CHUNKS_PER_DOCUMENT);
    if (chunked.ok) for (const ch of chunked.chunks) if (ch.kind === 'child') texts.push(domain.embeddingText(ch));
  }
  return texts;
}

/**
 * The configured embedder alone over the child-chunk texts of `docs`: one batch of RAG_EMBEDDING_BATCH after another
 * (a first batch unmeasured).
 */
async function measureEmbedderAlone(docs) {
  const { createEmbedder } = c.requireDist('libs/adapters/src/index.js');
  const dataDir = p.tempDataDir('embed-alone'); // model embedders cache in it: fresh, so every text is a miss as in the pipeline
  const cfg = p.embeddedConfig({ dataDir });
  const texts = await childTexts(docs, cfg);
  const embedder = await createEmbedder(cfg);
  try {
    const batch = cfg.RAG_EMBEDDING_BATCH;
    await embedder.embed(texts.slice(0, batch), 'passage'); // start-up (a worker thread, a model session)
    const t0 = process.hrtime.bigint();
    for (let i = 0; i < texts.length; i += batch) await embedder.embed(texts.slice(i, i + batch), 'passage');
    const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
    return { texts: texts.length, seconds, chunks_per_s: texts.length / seconds, embedder: embedder.constructor.name };
  } finally {
    await embedder.close?.();
    p.removeDir(dataDir);
  }
}

async function measureRemote(url, corpus, opts, round) {
  const client = p.httpClient(url, opts.apiKey);
  if (!(await client.healthy())) throw new Error(`${client.origin}/healthz does not answer: is the gateway running?`);
  const urls = p.metricsUrls(client.origin, opts.metricsUrl);
  const docs = p.cranfieldDocs(corpus, `bench-ingest-${Date.now().toString(36)}-r${round}:`);
  const b = await p.scrape(urls, opts.apiKey);
  c.log(`${client.origin}: stage histogram from ${b.answered.length} /metrics endpoint(s): ${b.answered.join(' ') || 'none'}`);
  try {
    const r = await p.ingestAndWait(client, docs, { timeoutMs: opts.timeoutS * 1000, label: client.origin });
    const a = await p.scrape(b.answered, opts.apiKey);
    return { target: client.origin, where: 'HTTP', ...r, stages: p.diffStages(p.stagesFromText(b.texts), p.stagesFromText(a.texts)), stage_source: b.answered.length ? b.answered.join(' ') : 'no /metrics answered' };
  } finally {
    if (!opts.keep) {
      c.log(`${client.origin}: deleting the ${docs.length} benchmark documents (--keep to keep them) …`);
      await client.remove(docs.map((d) => d.id));
    }
  }
}

async function run(argv) {
  const opts = c.parseArgs(argv, spec);
  if (opts.help) return process.stdout.write(c.usage(HELP, spec));
  const stopWatchdog = c.watchdog(opts.maxSeconds, 'ingest');
  const started = new Date();
  const hw = c.hardware();
  const remotes = opts.url.map((u) => c.assertLoopbackUrl(u, '--url'));
  const useEmbedded = opts.embedded;
  if (!useEmbedded && !remotes.length) throw new Error('nothing to measure: --no-embedded needs --url');
  let { corpus } = c.readCranfield(opts.evalDir);
  if (opts.limit) corpus = corpus.slice(0, opts.limit);
  const nDocs = p.cranfieldDocs(corpus, '').length;

  const runs = [];
  for (let round = 1; round <= opts.repeat; round++) {
    if (useEmbedded) {
      const r = { round, ...(await measureEmbedded(corpus, opts, round)) };
      if (opts.embedderAlone) {
        r.embedder_alone = await measureEmbedderAlone(p.cranfieldDocs(corpus, `bench-ingest-r${round}:`));
        c.log(`embedded: the embedder alone (${r.embedder_alone.embedder}): ${r.embedder_alone.chunks_per_s.toFixed(1)} chunks/s over ${r.embedder_alone.texts} chunk texts`);
      }
      runs.push(r);
    }
    for (const u of remotes) runs.push({ round, ...(await measureRemote(u, corpus, opts, round)) });
  }
  stopWatchdog();

  const notes = [];
  const rows = [];
  const stageRows = [];
  const byTarget = new Map();
  for (const r of runs) {
    r.docs_per_s = r.indexed / r.seconds;
    r.chunks_per_s = r.chunks / r.seconds;
    if (!byTarget.has(r.target)) byTarget.set(r.target, []);
    byTarget.get(r.target).push(r);
    const lag = r.loop_delay_ms;
    const alone = r.embedder_alone;
    if (alone) r.pipeline_efficiency = r.chunks_per_s / alone.chunks_per_s;
    if (alone && alone.texts !== r.chunks) notes.push(`${r.target} round ${r.round}: the embedder-alone texts (${alone.texts}) are not the pipeline's chunks (${r.chunks}): this script's chunking no longer matches the chunker's; read the efficiency with care`);
    rows.push([r.target, r.round, r.indexed, r.failed + r.rejected, r.chunks, r.seconds.toFixed(1), r.submit_s.toFixed(1), r.docs_per_s.toFixed(1), r.chunks_per_s.toFixed(1), alone ? alone.chunks_per_s.toFixed(1) : '–', alone ? r.pipeline_efficiency.toFixed(2) : '–', lag ? `${lag.p50.toFixed(0)} / ${lag.p99.toFixed(0)} / ${lag.max.toFixed(0)}` : '–']);
    if (r.failed || r.rejected) notes.push(`${r.target} round ${r.round}: ${r.failed} failed, ${r.rejected} rejected (${JSON.stringify(r.failed_examples)})`);
    const stages = { ...r.stages };
    // The edge: the submit calls themselves (validation, registry accept, bus publish; HTTP for --url).
    stages['submit (measured here)'] = { sum: r.submit_s, count: r.accepted };
    // Sub-stages (the indexer's writes to each store, inside its `index` stage) are shown but not added to the total:
    // until 2026-12-05 they were, which counted the indexer's time twice and lowered every other share.
    const total = Object.entries(stages).reduce((a, [stage, s]) => a + (WITHIN[stage] ? 0 : s.sum), 0);
    r.stage_share = {};
    for (const [stage, s] of Object.entries(stages).sort((x, y) => y[1].sum - x[1].sum)) {
      const within = WITHIN[stage];
      if (!within) r.stage_share[stage] = s.sum / total;
      stageRows.push([r.target, r.round, within ? `${stage} (in ${within})` : stage, s.count, s.sum.toFixed(2), s.count ? ((s.sum / s.count) * 1000).toFixed(2) : '–', `${within ? '(' : ''}${((s.sum / total) * 100).toFixed(1)} %${within ? ')' : ''}`, `${((s.sum / r.seconds) * 100).toFixed(0)} %`]);
    }
  }
  const sections = [
    { title: `ingestion throughput (Cranfield, ${nDocs} documents per run${nDocs < corpus.length ? `; ${corpus.length - nDocs} with empty text skipped` : ''})`, head: ['target', 'round', 'indexed', 'failed', 'chunks', 'wall s', 'submit s', 'docs/s', 'chunks/s', 'embedder alone chunks/s', 'efficiency', 'loop delay P50/P99/max ms'], rows },
    { title: 'time by stage (rag_stage_duration_seconds, summed over messages)', head: ['target', 'round', 'stage', 'messages', 'sum s', 'ms/message', 'share', 'of wall'], rows: stageRows },
  ];
  const targets = [...byTarget.keys()];
  if (targets.length > 1) {
    const med = (t, k) => c.median(byTarget.get(t).map((r) => r[k]));
    const ref = targets[0];
    sections.push({
      title: `side by side (median of rounds; ratio = target / ${ref})`,
      head: ['target', 'docs/s', 'chunks/s', 'x docs/s'],
      rows: targets.map((t) => [t, med(t, 'docs_per_s').toFixed(1), med(t, 'chunks_per_s').toFixed(1), `${(med(t, 'docs_per_s') / med(ref, 'docs_per_s')).toFixed(2)}x`]),
    });
  }
  const emb = runs.find((r) => r.config);
  if (emb) notes.push(`embedded config: ${JSON.stringify(emb.config)} (from the environment; fresh temporary RAG_DATA_DIR per round).`);
  notes.push('chunks = the "chunks" of each indexed document (child chunks written to the indexes). wall s = first submit → last terminal status; docs/s and chunks/s use it.');
  notes.push('share = stage sum / sum of the pipeline stages (a sub-stage, shown "(in index)", is part of its stage\'s time and not added again); "of wall" = stage sum / wall time (stages overlap: partitions run in parallel and stages pipeline, so the column can add up past 100 %). The "registry" stage is the status projector consuming index events. Embedded, every stage shares one event loop, so the time of a stage includes waiting for the others: the shares say where messages spend their time, not CPU.');
  notes.push('embedder alone = the configured embedder by itself over the same child-chunk texts (one batch after another, after the platform closed); efficiency = pipeline chunks/s ÷ embedder-alone chunks/s (1.0: the pipeline adds nothing to the embedder\'s own time).');
  notes.push('loop delay = monitorEventLoopDelay over the ingestion (embedded: the process that also serves queries), how long the event loop was held at a time; – for --url targets.');
  if (remotes.length) notes.push('--url: the remote stages are read from every /metrics that answered (gateway port and the next 7 by default); run it with the same RAG_EMBEDDER/RAG_EMBEDDING_MODEL as the embedded run, which this script cannot check.');
  c.report({ bench: 'ingest', hw, started, sections, notes, json: { documents_per_run: nDocs, runs } });
}

module.exports = { run, HELP };
