'use strict';
// bench load: autocannon against POST /v1/query of the embedded platform (in this process) or of a running gateway.
const { spawn } = require('node:child_process');
const { mkdtempSync, rmSync, writeFileSync } = require('node:fs');
const os = require('node:os');
const { join } = require('node:path');
const c = require('./lib/common');
const p = require('./lib/platform');

const spec = {
  connections: { type: 'intlist', default: [10, 50, 100], help: 'concurrent connections, one level after the other' },
  duration: { type: 'int', default: 60, help: 'seconds per level (and target)' },
  url: { type: 'repeat', default: [], help: 'target a running gateway instead, e.g. http://127.0.0.1:8080 (repeatable; add --embedded to run both)' },
  embedded: { type: 'bool', default: undefined, help: 'start the embedded platform in this process (default: only when no --url)' },
  'api-key': { type: 'string', default: process.env.RAG_BENCH_API_KEY, help: 'Bearer key for --url (RAG_BENCH_API_KEY)' },
  'min-chunks': { type: 'int', default: 10000, help: 'ingest copies of Cranfield until the target holds at least this many chunks' },
  'chunk-tokens': { type: 'int', default: undefined, help: 'embedded: RAG_CHUNK_TOKENS for the run (smaller chunks, fewer copies needed)' },
  'data-dir': { type: 'string', default: undefined, help: 'embedded: keep and reuse this RAG_DATA_DIR (default: a temporary folder, removed afterwards)' },
  ingest: { type: 'bool', default: true, help: 'with --url: make sure the benchmark corpus is there (--no-ingest: use what the gateway holds)' },
  cleanup: { type: 'bool', default: false, help: 'with --url: delete the benchmark corpus afterwards (default: keep it for the next run)' },
  'top-k': { type: 'int', default: undefined, help: 'top_k in the query body (default: the server default)' },
  mode: { type: 'string', default: undefined, help: 'mode in the query body: hybrid | dense | keyword (default: server default)' },
  path: { type: 'string', default: '/v1/query', help: 'endpoint under load: /v1/query (body {question}) or /v1/retrieve (body {query})' },
  warmup: { type: 'int', default: 3, help: 'seconds of unreported warm-up load per target' },
  timeout: { type: 'int', default: 30, help: 'per-request timeout in seconds (autocannon)' },
  'eval-dir': { type: 'string', default: c.defaultEvalDir, help: 'evaluation data folder (cranfield/ inside)' },
  'max-seconds': { type: 'int', default: undefined, help: 'hard limit for the whole run (default: 1800 + levels x targets x (duration + 60))' },
};

const HELP = `usage: npm run bench -- load [options]

Throughput and latency of POST /v1/query (or --path /v1/retrieve) (the 113 Cranfield questions in rotation) under autocannon at each
connection level, for the embedded platform started in this process (temporary RAG_DATA_DIR, RAG_PORT=0,
settings from the environment) and/or running gateways (--url, loopback only). Before the load the target is
filled with copies of Cranfield under distinct id prefixes (bench-load-c0:, bench-load-c1:, …) until it holds
--min-chunks chunks. autocannon runs in a child process. Non-2xx responses and errors must be zero: the run
says so and exits 1 when they are not. Memory: RSS of this process (embedded) or rag_process_resident_memory_bytes
from the gateway's /metrics (--url) before the first level and after each.`;

async function ensureCorpus(client, corpus, minChunks, label) {
  let chunks = 0;
  let documents = 0;
  const copies = [];
  for (let k = 0; chunks < minChunks; k++) {
    if (k >= 100) throw new Error(`${label}: 100 copies of the corpus still hold only ${chunks} chunks`);
    const r = await p.ingestAndWait(client, p.cranfieldDocs(corpus, `bench-load-c${k}:`), { label: `${label} copy ${k}` });
    if (r.failed || r.rejected) throw new Error(`${label}: copy ${k}: ${r.failed} failed, ${r.rejected} rejected ${JSON.stringify(r.failed_examples)}`);
    chunks += r.chunks;
    documents += r.indexed;
    copies.push({ copy: k, chunks: r.chunks, seconds: Number(r.seconds.toFixed(1)), unchanged: r.unchanged });
  }
  return { copies: copies.length, documents, chunks, per_copy: copies };
}

function runCannon(cfg, maxMs) {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [join(__dirname, 'lib', 'cannon-worker.js'), JSON.stringify(cfg)], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.setEncoding('utf8').on('data', (d) => (out += d));
    child.stderr.setEncoding('utf8').on('data', (d) => (err = (err + d).slice(-4000)));
    const timer = setTimeout(() => {
      c.log(`autocannon child ran past ${Math.round(maxMs / 1000)} s; stopping it (pid ${child.pid})`);
      child.kill('SIGKILL');
    }, maxMs);
    child.on('close', (code) => {
      clearTimeout(timer);
      const line = out.trim().split('\n').pop();
      try {
        const r = JSON.parse(line);
        if (r.error) return reject(new Error(`autocannon: ${r.error}`));
        resolve(r);
      } catch {
        reject(new Error(`autocannon child exited ${code} without a result: ${err.trim().slice(-1000)}`));
      }
    });
  });
}

async function run(argv) {
  const opts = c.parseArgs(argv, spec);
  if (opts.help) return process.stdout.write(c.usage(HELP, spec));
  const remotes = opts.url.map((u) => c.assertLoopbackUrl(u, '--url'));
  const useEmbedded = opts.embedded ?? remotes.length === 0;
  if (!useEmbedded && !remotes.length) throw new Error('nothing to measure: --no-embedded needs --url');
  if (opts.mode && !['hybrid', 'dense', 'keyword'].includes(opts.mode)) throw new Error('--mode must be hybrid, dense or keyword');
  if (!['/v1/query', '/v1/retrieve'].includes(opts.path)) throw new Error('--path must be /v1/query or /v1/retrieve');
  const textKey = opts.path === '/v1/retrieve' ? 'query' : 'question';
  const nTargets = remotes.length + (useEmbedded ? 1 : 0);
  const maxSeconds = opts.maxSeconds ?? 1800 + opts.connections.length * nTargets * (opts.duration + 60);
  const stopWatchdog = c.watchdog(maxSeconds, 'load');
  const started = new Date();
  const hw = c.hardware();
  const { corpus, queries } = c.readCranfield(opts.evalDir);
  const tmp = mkdtempSync(join(os.tmpdir(), 'rag-bench-load-'));
  const bodiesFile = join(tmp, 'bodies.jsonl');
  writeFileSync(bodiesFile, queries.map((q) => JSON.stringify({ [textKey]: q.text, ...(opts.topK ? { top_k: opts.topK } : {}), ...(opts.mode ? { mode: opts.mode } : {}) })).join('\n') + '\n');

  const targets = [];
  const notes = [];
  let server;
  let unlock;
  let embeddedDir;
  try {
    // ---- prepare targets ----
    if (useEmbedded) {
      const services = c.requireDist('libs/services/src/index.js');
      embeddedDir = opts.dataDir ? p.resolve(opts.dataDir) : p.tempDataDir('load');
      const overrides = {};
      if (opts.chunkTokens) {
        overrides.RAG_CHUNK_TOKENS = opts.chunkTokens;
        overrides.RAG_CHUNK_OVERLAP_TOKENS = Math.min(Number(process.env.RAG_CHUNK_OVERLAP_TOKENS ?? 30), Math.floor(opts.chunkTokens / 4));
      }
      const cfg = p.embeddedConfig({ dataDir: embeddedDir, overrides });
      unlock = services.lockDataDir(cfg.dataDir);
      c.log(`embedded: starting (data ${cfg.dataDir}, embedder ${p.describeConfig(cfg).embedder}) …`);
      server = await services.startEmbeddedServer(cfg);
      const filled = await ensureCorpus(p.inProcessClient(server), corpus, opts.minChunks, 'embedded');
      targets.push({ name: 'embedded', url: server.url, config: p.describeConfig(cfg), corpus: filled, rss: () => c.rssMiB() });
    }
    for (const origin of remotes) {
      const client = p.httpClient(origin, opts.apiKey);
      if (!(await client.healthy())) throw new Error(`${origin}/healthz does not answer: is the gateway running?`);
      const filled = opts.ingest ? await ensureCorpus(client, corpus, opts.minChunks, origin) : undefined;
      if (!filled) notes.push(`${origin}: --no-ingest, so the chunk count it holds was not checked.`);
      targets.push({
        name: origin,
        url: origin,
        client,
        corpus: filled,
        rss: async () => {
          const b = p.gaugeFromText(await client.metricsText().catch(() => undefined), 'rag_process_resident_memory_bytes');
          return b === undefined ? undefined : b / 2 ** 20;
        },
      });
    }

    // ---- sanity check and warm-up ----
    for (const t of targets) {
      const body = { question: queries[0].text, ...(opts.topK ? { top_k: opts.topK } : {}), ...(opts.mode ? { mode: opts.mode } : {}) };
      const r = await c.httpJson('POST', `${t.url}/v1/query`, body, { apiKey: opts.apiKey, timeoutMs: 30_000 });
      if (!r.ok) throw new Error(`${t.name}: POST /v1/query answered ${r.status}: ${r.text.slice(0, 300)}`);
      t.sample = { citations: r.json?.citations?.length ?? 0, refused: r.json?.refused, degraded: r.json?.degraded ?? [], timings_ms: r.json?.timings_ms };
      c.log(`${t.name}: sample query → ${t.sample.citations} citations, refused ${t.sample.refused}, degraded [${t.sample.degraded.join(', ')}], total ${t.sample.timings_ms?.total ?? '?'} ms`);
      if (opts.warmup > 0) {
        c.log(`${t.name}: warm-up ${opts.warmup} s at 10 connections …`);
        await runCannon({ url: t.url, path: opts.path, connections: 10, duration: opts.warmup, bodiesFile, apiKey: opts.apiKey, timeout: opts.timeout }, (opts.warmup + 60) * 1000);
      }
      c.gc();
      t.rssBefore = await t.rss();
    }

    // ---- load levels (targets alternate within each level) ----
    const results = [];
    for (const conns of opts.connections) {
      for (const t of targets) {
        c.log(`${t.name}: ${conns} connections for ${opts.duration} s …`);
        let peak = 0;
        const sampler = setInterval(async () => {
          const v = await t.rss();
          if (v !== undefined && v > peak) peak = v;
        }, 500);
        let r;
        try {
          r = await runCannon({ url: t.url, path: opts.path, connections: conns, duration: opts.duration, bodiesFile, apiKey: opts.apiKey, timeout: opts.timeout }, (opts.duration + 60) * 1000);
        } finally {
          clearInterval(sampler);
        }
        const rssAfter = await t.rss();
        const row = { target: t.name, ...r, rss_before_mib: t.rssBefore, rss_after_mib: rssAfter, rss_peak_mib: peak || undefined };
        results.push(row);
        const bad = (r.non2xx || 0) + (r.errors || 0) + (r.timeouts || 0);
        c.log(`  ${r.throughput_rps.toFixed(1)} req/s, p50 ${c.fmt(r.latency_ms.p50, 0)} ms, p95 ${c.fmt(r.latency_ms.p95, 0)} ms, p99 ${c.fmt(r.latency_ms.p99, 0)} ms, non-2xx ${r.non2xx}, errors ${r.errors}, timeouts ${r.timeouts}${bad ? '  <-- MUST BE ZERO' : ''}`);
      }
    }
    stopWatchdog();

    // ---- report ----
    const bad = results.filter((r) => (r.non2xx || 0) + (r.errors || 0) + (r.timeouts || 0) > 0);
    if (bad.length) {
      process.exitCode = 1;
      notes.push(`FAILED: non-2xx/errors/timeouts must be zero, but were not for ${bad.map((r) => `${r.target}@${r.connections} (${JSON.stringify(r.status_counts)}, errors ${r.errors}, timeouts ${r.timeouts})`).join('; ')}.`);
    }
    const rows = results.map((r) => [
      r.target,
      r.connections,
      r.duration_s,
      r.responses,
      r.throughput_rps.toFixed(1),
      c.fmt(r.latency_ms.p50, 0),
      c.fmt(r.latency_ms.p95, 0),
      c.fmt(r.latency_ms.p99, 0),
      c.fmt(r.latency_ms.max, 0),
      r.non2xx,
      r.errors,
      r.timeouts,
      c.fmt(r.rss_before_mib, 0),
      c.fmt(r.rss_after_mib, 0),
      c.fmt(r.rss_peak_mib, 0),
    ]);
    const sections = [
      { title: `POST ${opts.path} under load (${queries.length} Cranfield questions in rotation; latency in ms)`, head: ['target', 'conns', 's', 'responses', 'req/s', 'P50', 'P95', 'P99', 'max', 'non-2xx', 'errors', 'timeouts', 'RSS before MiB', 'RSS after MiB', 'RSS peak MiB'], rows },
      {
        title: 'targets',
        head: ['target', 'documents', 'chunks', 'copies of Cranfield', 'sample query'],
        rows: targets.map((t) => [t.name, t.corpus?.documents ?? '?', t.corpus?.chunks ?? '?', t.corpus?.copies ?? '?', `${t.sample.citations} citations, refused ${t.sample.refused}, degraded [${t.sample.degraded.join(',')}]`]),
      },
    ];
    if (targets.length > 1) {
      const ref = targets[0].name;
      sections.push({
        title: `side by side (ratio = target / ${ref}, same level)`,
        head: ['round', 'conns', ...targets.slice(1).flatMap((t) => [`${t.name} x req/s`, `${t.name} x P95`, `${t.name} x P99`])],
        // Round i of each target against round i of the reference (a level may repeat: --connections 10,10,10 is
        // three interleaved rounds at 10, each its own ratio).
        rows: opts.connections.map((n, i) => {
          const base = results.filter((r) => r.target === ref)[i];
          return [i + 1, n, ...targets.slice(1).flatMap((t) => {
            const r = results.filter((x) => x.target === t.name)[i];
            return [`${(r.throughput_rps / base.throughput_rps).toFixed(2)}x`, `${(r.latency_ms.p95 / base.latency_ms.p95).toFixed(2)}x`, `${(r.latency_ms.p99 / base.latency_ms.p99).toFixed(2)}x`];
          })];
        }),
      });
    }
    const emb = targets.find((t) => t.config);
    if (emb) {
      notes.push(`embedded: ${emb.corpus.copies} copies of Cranfield (ids bench-load-c<k>:<id>) → ${emb.corpus.chunks} chunks${opts.chunkTokens ? ` with RAG_CHUNK_TOKENS=${opts.chunkTokens}` : ' with the default chunking'}; config ${JSON.stringify(emb.config)}.`);
      notes.push('embedded: the server shares this process (RSS = this process: platform + bench driver); autocannon runs in a child process on the same 2 cores.');
    }
    if (remotes.length) notes.push(`--url: RSS is the gateway process's rag_process_resident_memory_bytes from its /metrics (not the other services); the benchmark corpus (bench-load-c*) is ${opts.cleanup ? 'deleted' : 'left in place for the next run (--cleanup to delete it)'}.`);
    notes.push(`latency percentiles are exact over every response (autocannon 'response' events); throughput = responses / duration. Warm-up of ${opts.warmup} s per target not counted.`);
    notes.push('requests still in flight when a level ends (up to one per connection) are not counted; when connections / (req/s) is well above the mean latency, the slowest requests were among them, so short runs at high concurrency under-state the latency (use the 60 s default for the numbers you keep).');
    c.report({
      bench: 'load',
      hw,
      started,
      sections,
      notes,
      json: {
        duration_s: opts.duration,
        connections: opts.connections,
        queries: queries.length,
        targets: targets.map((t) => ({ name: t.name, config: t.config, corpus: t.corpus, sample: t.sample })),
        results,
      },
    });
    if (opts.cleanup) {
      for (const t of targets.filter((x) => x.client)) {
        const ids = [];
        for (let k = 0; k < (t.corpus?.copies ?? 0); k++) ids.push(...p.cranfieldDocs(corpus, `bench-load-c${k}:`).map((d) => d.id));
        c.log(`${t.name}: deleting ${ids.length} benchmark documents …`);
        await t.client.remove(ids);
      }
    }
  } finally {
    if (server) await server.close().catch((e) => c.log(`closing the embedded server: ${e.message}`));
    if (unlock) unlock();
    if (embeddedDir && !opts.dataDir) p.removeDir(embeddedDir);
    rmSync(tmp, { recursive: true, force: true });
  }
}

module.exports = { run, HELP, runCannon };
