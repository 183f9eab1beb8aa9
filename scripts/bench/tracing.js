'use strict';
// bench tracing: the overhead of OpenTelemetry tracing on query latency, three embedded platforms side by side.
const { spawn } = require('node:child_process');
const { createServer } = require('node:http');
const { existsSync, mkdtempSync, readFileSync } = require('node:fs');
const os = require('node:os');
const { join, resolve } = require('node:path');
const c = require('./lib/common');
const p = require('./lib/platform');

const spec = {
  docs: { type: 'int', default: 400, help: 'Cranfield documents ingested into each platform' },
  rounds: { type: 'int', default: 5, help: 'rounds; each runs --queries queries against every variant, the order rotating' },
  queries: { type: 'int', default: 40, help: 'queries per variant per round (Cranfield questions in rotation)' },
  warmup: { type: 'int', default: 10, help: 'unreported queries per variant before the first round' },
  concurrency: { type: 'int', default: 1, help: 'queries in flight per variant (1 = one after the other: plain latency)' },
  rerank: { type: 'bool', default: true, help: 'send rerank:true (the rerank stage runs, passing through when no reranker is configured)' },
  'eval-dir': { type: 'string', default: c.defaultEvalDir, help: 'evaluation data folder (cranfield/ inside)' },
  'max-seconds': { type: 'int', default: 1200, help: 'hard limit for the whole run' },
};

const HELP = `usage: npm run bench -- tracing [options]

Query latency (POST /v1/query, Cranfield questions) of three embedded platforms started side by side as child
processes from dist/ (apps/embedded), each with its own temporary RAG_DATA_DIR holding the same --docs documents:

  off       OTEL_SDK_DISABLED=true: no OpenTelemetry SDK at all (random trace ids) — the baseline
  ids-only  the default without an exporter: the SDK runs with an always-off sampler (trace ids generated and
            propagated, nothing recorded)
  otlp      spans recorded and exported over OTLP/HTTP JSON (batch processor, default OTEL_BSP_* settings) to a
            receiver in this process that decodes every request and counts the spans

Rounds interleave the variants (the order rotates each round) so that machine noise hits them alike; the ratios to
"off" are the result. Other settings (RAG_EMBEDDER, RAG_RERANKER, …) come from the environment.`;

/** An OTLP/HTTP JSON sink: decodes each export request and counts spans (what a collector would receive). */
function startSink() {
  const state = { requests: 0, spans: 0, bytes: 0, errors: 0 };
  const server = createServer((req, res) => {
    const chunks = [];
    req.on('data', (d) => chunks.push(d));
    req.on('end', () => {
      try {
        const body = Buffer.concat(chunks);
        state.bytes += body.length;
        const json = JSON.parse(body.toString('utf8'));
        for (const rs of json.resourceSpans ?? []) for (const ss of rs.scopeSpans ?? []) state.spans += (ss.spans ?? []).length;
        state.requests++;
        res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
      } catch {
        state.errors++;
        res.writeHead(400).end();
      }
    });
  });
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve({ state, url: `http://127.0.0.1:${server.address().port}`, close: () => new Promise((r) => server.close(() => r())) }));
  });
}

/** Starts apps/embedded from dist/ on a free loopback port; resolves with its URL (read from its banner). */
function startEmbedded(name, extraEnv) {
  // RAG_DIST_DIR (as for scripts/distributed.js): a private build inside the repository instead of dist/.
  const main = join(process.env.RAG_DIST_DIR ? resolve(c.root, process.env.RAG_DIST_DIR) : c.distDir, 'apps', 'embedded', 'src', 'main.js');
  if (!existsSync(main)) throw new Error(`${main} is missing: run \`npm run build\` first`);
  const dataDir = mkdtempSync(join(os.tmpdir(), `rag-bench-tracing-${name}-`));
  const env = { ...process.env, RAG_DATA_DIR: dataDir, RAG_PORT: '0', RAG_HOST: '127.0.0.1', RAG_API_KEYS: '', RAG_OPEN_BROWSER: 'false', RAG_LOG_LEVEL: process.env.RAG_LOG_LEVEL || 'warn', ...extraEnv };
  for (const k of Object.keys(env)) if (env[k] === undefined || env[k] === '') delete env[k];
  const child = spawn(process.execPath, [main], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stderr.setEncoding('utf8').on('data', (d) => (err = (err + d).slice(-4000)));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${name}: the embedded platform did not start within 120 s: ${err.slice(-1000)}`)), 120_000);
    child.once('exit', (code) => reject(new Error(`${name}: the embedded platform exited with ${code}: ${err.slice(-1000)}`)));
    child.stdout.setEncoding('utf8').on('data', (d) => {
      out += d;
      const m = /(?:console|playground)\s+(http:\/\/[^\s/]+)/.exec(out);
      if (m) {
        clearTimeout(timer);
        child.removeAllListeners('exit');
        resolve({ name, child, dataDir, url: m[1] });
      }
    });
  });
}

async function stopEmbedded(t) {
  if (t.child.exitCode === null) {
    t.child.kill('SIGTERM');
    await Promise.race([new Promise((r) => t.child.once('exit', r)), c.sleep(15_000)]);
    if (t.child.exitCode === null) t.child.kill('SIGKILL');
  }
  p.removeDir(t.dataDir);
}

/** Runs `n` queries with `concurrency` in flight; returns their latencies in ms and the trace ids seen. */
async function queryBatch(url, questions, offset, n, concurrency, rerank) {
  const latencies = [];
  let next = 0;
  let failures = 0;
  const worker = async () => {
    for (let i = next++; i < n; i = next++) {
      const question = questions[(offset + i) % questions.length];
      const t0 = process.hrtime.bigint();
      const r = await c.httpJson('POST', `${url}/v1/query`, { question, ...(rerank ? { rerank: true } : {}) }, { timeoutMs: 60_000 });
      const ms = Number(process.hrtime.bigint() - t0) / 1e6;
      if (!r.ok || !/^[0-9a-f]{32}$/.test(r.json?.trace_id ?? '')) failures++;
      else latencies.push(ms);
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  return { latencies, failures };
}

/** CPU seconds (user + system) a process has used so far, from /proc (Linux); NaN elsewhere. */
function cpuSeconds(pid) {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    // After "(comm) " the state is field 3, so utime (14) and stime (15) are at indexes 11 and 12; in ticks of
    // 1/100 s (USER_HZ, 100 on Linux).
    return (Number(fields[11]) + Number(fields[12])) / 100;
  } catch {
    return NaN;
  }
}

function summarize(ms) {
  const s = [...ms].sort((a, b) => a - b);
  const mean = s.reduce((a, b) => a + b, 0) / (s.length || 1);
  return { n: s.length, mean, p50: c.quantile(s, 0.5), p95: c.quantile(s, 0.95), p99: c.quantile(s, 0.99) };
}

async function run(argv) {
  const opts = c.parseArgs(argv, spec);
  if (opts.help) return process.stdout.write(c.usage(HELP, spec));
  const stopWatchdog = c.watchdog(opts.maxSeconds, 'tracing');
  const started = new Date();
  const hw = c.hardware();
  const { corpus, queries } = c.readCranfield(opts.evalDir);
  const docs = p.cranfieldDocs(corpus.slice(0, opts.docs), 'bench-tracing:');
  const questions = queries.map((q) => q.text).filter((t) => typeof t === 'string' && t.trim());

  const sink = await startSink();
  const variants = [
    { name: 'off', env: { OTEL_SDK_DISABLED: 'true' } },
    { name: 'ids-only', env: { OTEL_SDK_DISABLED: undefined, OTEL_TRACES_EXPORTER: undefined, OTEL_EXPORTER_OTLP_ENDPOINT: undefined, OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: undefined } },
    { name: 'otlp', env: { OTEL_SDK_DISABLED: undefined, OTEL_TRACES_EXPORTER: 'otlp', OTEL_EXPORTER_OTLP_ENDPOINT: sink.url, OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: undefined } },
  ];
  const targets = [];
  try {
    for (const v of variants) {
      c.log(`${v.name}: starting the embedded platform …`);
      targets.push({ ...v, ...(await startEmbedded(v.name, v.env)), latencies: [], failures: 0 });
    }
    // Same documents into every platform, one after the other (ingestion is not what is measured).
    for (const t of targets) {
      const r = await p.ingestAndWait(p.httpClient(t.url), docs, { label: t.name });
      if (r.failed || r.rejected) throw new Error(`${t.name}: ${r.failed} failed, ${r.rejected} rejected`);
      t.chunks = r.chunks;
    }
    for (const t of targets) await queryBatch(t.url, questions, 0, opts.warmup, opts.concurrency, opts.rerank);
    // The batch processor exports every 5 s by default: let the ingestion and warm-up spans arrive before counting.
    await c.sleep(6000);
    const spansBefore = sink.state.spans;
    for (const t of targets) t.cpuStart = cpuSeconds(t.child.pid);
    for (let round = 0; round < opts.rounds; round++) {
      const order = targets.map((_, i) => targets[(i + round) % targets.length]);
      for (const t of order) {
        const r = await queryBatch(t.url, questions, opts.warmup + round * opts.queries, opts.queries, opts.concurrency, opts.rerank);
        t.latencies.push(...r.latencies);
        t.failures += r.failures;
      }
      c.log(`round ${round + 1}/${opts.rounds}: ${order.map((t) => `${t.name} p50 ${c.fmt(summarize(t.latencies).p50, 2)} ms`).join(' · ')}`);
    }
    // Let the batch processor export what it holds (default schedule 5 s) before counting.
    await c.sleep(6000);
    for (const t of targets) {
      t.rssMiB = c.procRssMiB(t.child.pid);
      // The whole measured period of every platform (its own queries, then idle while the others are queried, and
      // the last export): the idle share is alike for all three, the difference is what tracing costs.
      t.cpuMsPerQuery = ((cpuSeconds(t.child.pid) - t.cpuStart) * 1000) / Math.max(1, t.latencies.length + t.failures);
    }
    const exportedSpans = sink.state.spans - spansBefore;
    stopWatchdog();

    const base = summarize(targets[0].latencies);
    const rows = targets.map((t) => {
      const s = summarize(t.latencies);
      t.summary = s;
      return [
        t.name,
        s.n,
        t.failures,
        c.fmt(s.mean, 2),
        c.fmt(s.p50, 2),
        c.fmt(s.p95, 2),
        c.fmt(s.p99, 2),
        `${(s.mean / base.mean).toFixed(3)}x`,
        `${(s.p50 / base.p50).toFixed(3)}x`,
        `${(s.p95 / base.p95).toFixed(3)}x`,
        c.fmt(t.cpuMsPerQuery, 2),
        `${(t.cpuMsPerQuery / targets[0].cpuMsPerQuery).toFixed(3)}x`,
        c.fmt(t.rssMiB, 0),
      ];
    });
    const otlp = targets.find((t) => t.name === 'otlp');
    const measured = otlp.latencies.length + otlp.failures;
    const notes = [
      `${docs.length} Cranfield documents per platform (${targets.map((t) => `${t.name} ${t.chunks} chunks`).join(', ')}); ${opts.rounds} rounds x ${opts.queries} queries per variant, ${opts.concurrency} in flight, rerank ${opts.rerank}; ${opts.warmup} warm-up queries per variant not reported.`,
      `otlp: ${exportedSpans} spans received for the ${measured} measured queries (${(exportedSpans / Math.max(1, measured)).toFixed(1)} per query); ${sink.state.requests} export requests, ${(sink.state.bytes / 1024).toFixed(0)} KiB in all since start, ${sink.state.errors} undecodable.`,
      'CPU ms/q = user+system CPU of the platform process over the whole measured period (its queries, its idle time while the others are queried, the last export) / its measured queries; less noisy than latency on a busy machine.',
      'Latency = client-side wall time of POST /v1/query over loopback HTTP. The three platforms run at once on the same machine; only one is queried at any time. Ratios are to "off" in this run; compare ratios, not absolute numbers across runs.',
    ];
    if (targets.some((t) => t.failures)) notes.push(`failed queries: ${targets.map((t) => `${t.name} ${t.failures}`).join(', ')}`);
    c.report({
      bench: 'tracing',
      hw,
      started,
      sections: [{ title: 'query latency by tracing variant (ms; ratio = variant / off)', head: ['variant', 'queries', 'failed', 'mean', 'p50', 'p95', 'p99', 'x mean', 'x p50', 'x p95', 'CPU ms/q', 'x CPU', 'RSS MiB'], rows }],
      notes,
      json: {
        documents: docs.length,
        rounds: opts.rounds,
        queries_per_round: opts.queries,
        concurrency: opts.concurrency,
        variants: targets.map((t) => ({ name: t.name, failures: t.failures, rss_mib: t.rssMiB, cpu_ms_per_query: t.cpuMsPerQuery, ...t.summary, ratio_mean: t.summary.mean / base.mean, ratio_p50: t.summary.p50 / base.p50, ratio_p95: t.summary.p95 / base.p95 })),
        otlp_spans: exportedSpans,
        otlp_spans_per_query: exportedSpans / Math.max(1, measured),
      },
    });
    if (targets.some((t) => t.failures)) process.exitCode = 1;
  } finally {
    for (const t of targets) await stopEmbedded(t);
    await sink.close();
  }
}

module.exports = { run, HELP };
