'use strict';
// bench scale: ingest a synthetic corpus in steps (10k, 100k, 1M chunks) and measure, at each step, ingestion rate,
// bytes written per document, data size per chunk, RSS, and retrieve/query latency at 10 connections.
const { spawn, spawnSync } = require('node:child_process');
const { mkdtempSync, readFileSync, rmSync, writeFileSync, existsSync } = require('node:fs');
const net = require('node:net');
const os = require('node:os');
const { join } = require('node:path');
const c = require('./lib/common');
const p = require('./lib/platform');
const { runCannon } = require('./load');

const SIZES = { '10k': 10_000, '100k': 100_000, '1m': 1_000_000 };

const spec = {
  top: { type: 'string', default: '100k', help: 'largest step: 10k | 100k | 1m (or a number of chunks)' },
  steps: { type: 'intlist', default: undefined, help: 'explicit chunk counts per step (default 10000,100000,1000000 up to --top)' },
  url: { type: 'string', default: undefined, help: 'measure a running gateway (distributed) instead of starting the embedded platform' },
  'api-key': { type: 'string', default: process.env.RAG_BENCH_API_KEY, help: 'Bearer key for --url (RAG_BENCH_API_KEY)' },
  pid: { type: 'intlist', default: [], help: 'with --url: PIDs whose /proc io and RSS to sum (e.g. every service of scripts/distributed.js)' },
  'data-dir': { type: 'string', default: undefined, help: 'embedded: RAG_DATA_DIR to use and keep (default: a temporary folder, removed afterwards); a folder holding this corpus from an earlier run is resumed: its documents are not re-submitted, and steps it already reaches are only measured' },
  connections: { type: 'int', default: 10, help: 'connections for the latency measurement' },
  duration: { type: 'int', default: 15, help: 'seconds of load per endpoint and step' },
  warmup: { type: 'int', default: 3, help: 'seconds of unreported warm-up per endpoint and step' },
  'batch-docs': { type: 'int', default: 100, help: 'documents per POST /v1/documents:batch' },
  'in-flight': { type: 'int', default: 4, help: 'batch requests in flight while submitting' },
  'backlog-docs': { type: 'int', default: 20000, help: 'submit at most this many documents ahead of the indexed count (bounded queue)' },
  'eval-dir': { type: 'string', default: c.defaultEvalDir, help: 'evaluation data folder (cranfield/ and cmrc2018-trial/ inside)' },
  seed: { type: 'int', default: 13, help: 'corpus generator seed' },
  'max-seconds': { type: 'int', default: 6 * 3600, help: 'hard limit for the whole run' },
};

const HELP = `usage: npm run bench -- scale [--top 10k|100k|1m] [options]

Builds a synthetic corpus from the dev sets (Cranfield abstracts and CMRC paragraphs, 1–3 per document, each
document with a unique id and a unique reference line, so no two documents share their text) and ingests it
through the public API in steps until the index holds 10k, 100k (and, with --top 1m, 1M) chunks. At each step it
prints: documents/s and chunks/s of that step (first submit to last "indexed"), bytes written per document of the
step (/proc/<pid>/io write_bytes of the server), data size per chunk (du of RAG_DATA_DIR), RSS, and P50/P95/P99 and
req/s of POST /v1/retrieve and POST /v1/query at --connections connections, with ratios to the first step, as one
table and one JSON line.

Embedded (default): starts \`node bin/rag.js start\` as a child process (RAG_EMBEDDER defaults to hashing here unless
set in the environment; other settings from the environment) on a free loopback port with its own data folder.
Distributed: --url <gateway> (and --pid for the processes to account I/O and RSS to; data size is then not known).
Chunk counts come from the documents' own statuses (a 400-document sample per step scaled to the step, printed
as such) because listing a million documents per step would dominate the run.`;

// ---------- corpus ----------

function readPool(evalDir) {
  const pool = [];
  for (const name of ['cranfield', 'cmrc2018-trial']) {
    const f = join(evalDir, name, 'corpus.jsonl');
    if (!existsSync(f)) throw new Error(`${f} is missing (set --eval-dir)`);
    for (const d of c.readJsonl(f)) if (typeof d.text === 'string' && d.text.trim().length > 40) pool.push({ title: d.title || '', text: d.text.trim(), zh: name.startsWith('cmrc') });
  }
  return pool;
}

const REF_WORDS = ['ledger', 'harbor', 'quartz', 'meadow', 'signal', 'copper', 'lantern', 'orbit', 'willow', 'summit', 'prism', 'delta', 'ember', 'falcon', 'glacier', 'island'];

/** Document k of the synthetic corpus: deterministic, unique text (a reference line no other document has). */
function makeDoc(pool, k, seed) {
  const r = c.rng(seed * 1_000_003 + k);
  const n = 1 + Math.floor(r() * 3);
  const parts = [];
  let zh = false;
  for (let i = 0; i < n; i++) {
    const d = pool[Math.floor(r() * pool.length)];
    if (i === 0) zh = d.zh;
    parts.push(d.text);
  }
  const ref = `Reference ${k.toString(36)} ${REF_WORDS[k % 16]} ${REF_WORDS[Math.floor(k / 16) % 16]} ${REF_WORDS[Math.floor(k / 256) % 16]}.`;
  const first = pool[Math.floor(c.rng(seed + k)() * pool.length)];
  return { id: `scale-${seed}-${k}`, title: (first.title || (zh ? '文档' : 'Document')) + ` #${k}`, text: [ref, ...parts].join('\n\n') };
}

// ---------- targets ----------

function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.unref();
    s.on('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

function procIo(pid) {
  try {
    const t = readFileSync(`/proc/${pid}/io`, 'utf8');
    const get = (k) => Number(new RegExp(`^${k}:\\s+(\\d+)`, 'm').exec(t)?.[1] ?? NaN);
    return { write_bytes: get('write_bytes'), wchar: get('wchar') };
  } catch {
    return undefined;
  }
}

function duBytes(dir) {
  const r = spawnSync('du', ['-sb', dir], { encoding: 'utf8' });
  return r.status === 0 ? Number(r.stdout.split(/\s/)[0]) : undefined;
}

async function startEmbedded(dataDir) {
  const port = await freePort();
  const env = {
    ...process.env,
    RAG_EMBEDDER: process.env.RAG_EMBEDDER || 'hashing',
    RAG_DATA_DIR: dataDir,
    RAG_PORT: String(port),
    RAG_HOST: '127.0.0.1',
    RAG_OPEN_BROWSER: 'false',
    RAG_LOG_LEVEL: process.env.RAG_LOG_LEVEL || 'warn',
  };
  delete env.RAG_API_KEYS;
  const child = spawn(process.execPath, [join(c.root, 'bin', 'rag.js'), 'start'], { env, stdio: ['ignore', 'ignore', 'pipe'] });
  let err = '';
  child.stderr.setEncoding('utf8').on('data', (d) => (err = (err + d).slice(-4000)));
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 180_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`rag start exited ${child.exitCode}: ${err.trim().slice(-1500)}`);
    try {
      if ((await c.httpJson('GET', `${url}/healthz`, undefined, { timeoutMs: 2000 })).ok) break;
    } catch {
      /* not yet */
    }
    if (Date.now() > deadline) throw new Error(`rag start did not answer /healthz within 180 s: ${err.trim().slice(-1500)}`);
    await c.sleep(300);
  }
  return {
    url,
    pids: [child.pid],
    embedder: env.RAG_EMBEDDER,
    async stop() {
      child.kill('SIGTERM');
      await new Promise((r) => (child.exitCode !== null ? r() : child.once('exit', r)));
    },
  };
}

// ---------- where a retrieve's time goes ----------

/** The query-path stages a /v1/retrieve runs, as the server's rag_stage_duration_seconds names them. */
const RETRIEVE_STAGES = ['retrieve', 'retrieve-keyword', 'retrieve-dense', 'query-embed'];

/**
 * Sum and count of rag_stage_duration_seconds per stage (p.stagesFromText: all label sets and processes added), and
 * rag_keyword_searches_total per thread, from the /metrics of every URL in `urls` that answers (embedded: the
 * server's; distributed: each service's — the stages run in the retriever and embedder processes, not the gateway).
 */
async function stageTotals(urls, apiKey) {
  const { texts } = await p.scrape(urls, apiKey);
  if (texts.length === 0) return undefined;
  const threads = {};
  for (const m of texts.join('\n').matchAll(/^rag_keyword_searches_total\{thread="([a-z_]+)"\} ([0-9.eE+-]+)$/gm)) threads[m[1]] = (threads[m[1]] ?? 0) + Number(m[2]);
  return { stages: p.stagesFromText(texts), threads };
}

/**
 * Mean ms per call of each stage between two stageTotals readings (undefined where it did not run), and where the
 * embedded keyword index ran its searches meanwhile (`keyword_threads`: share per thread label, when it counted any).
 */
function stageMeans(before, after) {
  if (!before || !after) return undefined;
  const out = {};
  for (const stage of RETRIEVE_STAGES) {
    const a = after.stages[stage];
    const b = before.stages[stage] ?? { sum: 0, count: 0 };
    if (a && a.count > b.count) out[stage] = (1000 * (a.sum - b.sum)) / (a.count - b.count);
  }
  const grown = Object.entries(after.threads).map(([k, v]) => [k, v - (before.threads[k] ?? 0)]).filter(([, v]) => v > 0);
  const total = grown.reduce((n, [, v]) => n + v, 0);
  if (total > 0) out.keyword_threads = Object.fromEntries(grown.map(([k, v]) => [k, Number((v / total).toFixed(3))]));
  return out;
}

// ---------- one step ----------

/** A status or submit call that timed out or lost its connection is retried (a slow poll is a measurement, not an error). */
const RETRIES = 10;
const isTransient = (e) => e && (e.name === 'TimeoutError' || e.name === 'AbortError' || /fetch failed|ECONNRESET|socket/i.test(String(e.message)));

/**
 * Calls `fn`, retrying transient failures (timeouts, dropped connections) up to RETRIES times 5 s apart; records the
 * slowest call and every retry in `stats` (reported per step as "max call ms" and "stalls"), so a server that stops
 * answering for a while shows up in the table instead of ending a multi-hour run.
 */
async function patient(what, stats, fn) {
  for (let attempt = 0; ; attempt++) {
    const t0 = Date.now();
    try {
      const out = await fn();
      stats.maxMs = Math.max(stats.maxMs, Date.now() - t0);
      return out;
    } catch (e) {
      stats.maxMs = Math.max(stats.maxMs, Date.now() - t0);
      if (!isTransient(e) || attempt >= RETRIES) throw e;
      stats.stalls++;
      c.log(`  ${what}: ${e.name === 'TimeoutError' ? `no answer in ${((Date.now() - t0) / 1000).toFixed(0)} s` : e.message}; retry ${attempt + 1}/${RETRIES} in 5 s`);
      await c.sleep(5000);
    }
  }
}

async function counts(client, stats = { maxMs: 0, stalls: 0 }) {
  const r = await patient('GET /v1/documents', stats, () => c.httpJson('GET', `${client.origin}/v1/documents?limit=1`, undefined, { apiKey: client.apiKey, timeoutMs: 60_000 }));
  if (!r.ok) throw new Error(`GET /v1/documents: ${r.status} ${r.text.slice(0, 200)}`);
  return r.json.counts ?? {};
}

/** Submits documents [from, to) with bounded batches in flight and a bounded backlog, then waits until all are terminal. */
async function ingestRange(client, pool, opts, from, to, base) {
  const t0 = process.hrtime.bigint();
  const elapsed = () => Number(process.hrtime.bigint() - t0) / 1e9;
  let rejected = 0;
  let lastLog = Date.now();
  let lastCount = 0;
  let terminal = { indexed: 0, failed: 0 };
  const stats = { maxMs: 0, stalls: 0 };
  const refresh = async () => {
    const k = await counts(client, stats);
    terminal = { indexed: (k.indexed ?? 0) - base.indexed, failed: (k.failed ?? 0) - base.failed };
    lastCount = Date.now();
  };
  const submitBatch = async (start, end) => {
    const docs = [];
    for (let k = start; k < end; k++) docs.push(makeDoc(pool, k, opts.seed));
    for (;;) {
      // A resubmitted batch is idempotent: the same id with the same content is answered `unchanged`.
      const r = await patient('POST /v1/documents:batch', stats, () =>
        c.httpJson('POST', `${client.origin}/v1/documents:batch`, { documents: docs }, { apiKey: client.apiKey, timeoutMs: 120_000 }),
      );
      if (r.status === 429 || r.status === 503) {
        await c.sleep(1000); // back-pressure from the gateway: retry the same documents
        continue;
      }
      if (!r.ok) throw new Error(`POST /v1/documents:batch: ${r.status} ${r.text.slice(0, 300)}`);
      rejected += (r.json.rejected ?? []).length;
      return;
    }
  };
  const inflight = new Set();
  let next = from;
  while (next < to || inflight.size) {
    const done = terminal.indexed + terminal.failed;
    while (inflight.size < opts.inFlight && next < to && next - from - done < opts.backlogDocs) {
      const start = next;
      next = Math.min(to, start + opts.batchDocs);
      const pr = submitBatch(start, next).finally(() => inflight.delete(pr));
      inflight.add(pr);
    }
    if (inflight.size) await Promise.race(inflight);
    else await c.sleep(500); // backlog full: let indexing catch up
    if (Date.now() - lastCount > 1000) await refresh();
    if (Date.now() - lastLog > 10_000) {
      c.log(`  submitted ${next - from}/${to - from}, terminal ${terminal.indexed + terminal.failed} (${((terminal.indexed + terminal.failed) / elapsed()).toFixed(0)} docs/s)`);
      lastLog = Date.now();
    }
  }
  const submitS = elapsed();
  for (;;) {
    await refresh();
    if (terminal.indexed + terminal.failed >= to - from - rejected) break;
    if (Date.now() - lastLog > 10_000) {
      c.log(`  waiting: ${terminal.indexed + terminal.failed}/${to - from - rejected} terminal`);
      lastLog = Date.now();
    }
    await c.sleep(500);
  }
  return { documents: to - from, rejected, indexed: terminal.indexed, failed: terminal.failed, submit_s: submitS, seconds: elapsed(), max_call_ms: stats.maxMs, stalls: stats.stalls };
}

/** Average chunks per document of [from, to) from a sample of their statuses. */
async function sampleChunks(client, opts, from, to) {
  const n = Math.min(400, to - from);
  const r = c.rng(opts.seed + to);
  const ids = Array.from({ length: n }, () => `scale-${opts.seed}-${from + Math.floor(r() * (to - from))}`);
  const views = await client.statuses(ids);
  const chunks = views.filter((v) => v.status === 'indexed').map((v) => Number(v.chunks) || 0);
  return chunks.length ? chunks.reduce((a, b) => a + b, 0) / chunks.length : 0;
}

function sumProc(pids, f) {
  let total = 0;
  for (const pid of pids) {
    const v = f(pid);
    if (v === undefined || Number.isNaN(v)) return undefined;
    total += v;
  }
  return total;
}

// ---------- run ----------

async function run(argv) {
  const opts = c.parseArgs(argv, spec);
  if (opts.help) return process.stdout.write(c.usage(HELP, spec));
  const top = SIZES[String(opts.top).toLowerCase()] ?? Number(opts.top);
  if (!Number.isInteger(top) || top < 1000) throw new Error('--top must be 10k, 100k, 1m or a number of chunks ≥ 1000');
  const steps = (opts.steps ?? [10_000, 100_000, 1_000_000]).filter((s) => s <= top);
  if (!steps.includes(top) && !opts.steps) steps.push(top);
  if (!steps.length || steps.some((s, i) => i > 0 && s <= steps[i - 1])) throw new Error('--steps must be increasing chunk counts');
  const stopWatchdog = c.watchdog(opts.maxSeconds, 'scale');
  const started = new Date();
  const hw = c.hardware();
  const pool = readPool(opts.evalDir);
  const questions = [
    ...c.readJsonl(join(opts.evalDir, 'cranfield', 'queries.jsonl')).slice(0, 100),
    ...c.readJsonl(join(opts.evalDir, 'cmrc2018-trial', 'queries.jsonl')).slice(0, 100),
  ].map((q) => q.text);
  const tmp = mkdtempSync(join(os.tmpdir(), 'rag-bench-scale-'));
  // POST /v1/query takes {question}, POST /v1/retrieve {query}.
  const bodies = { '/v1/query': join(tmp, 'query.jsonl'), '/v1/retrieve': join(tmp, 'retrieve.jsonl') };
  writeFileSync(bodies['/v1/query'], questions.map((q) => JSON.stringify({ question: q })).join('\n') + '\n');
  writeFileSync(bodies['/v1/retrieve'], questions.map((q) => JSON.stringify({ query: q })).join('\n') + '\n');

  let target;
  let dataDir;
  const rows = [];
  try {
    if (opts.url) {
      const origin = c.assertLoopbackUrl(opts.url, '--url');
      target = { url: origin, pids: opts.pid, embedder: 'as configured on the gateway', stop: async () => {} };
    } else {
      dataDir = opts.dataDir ? p.resolve(opts.dataDir) : p.tempDataDir('scale');
      c.log(`embedded: starting bin/rag.js start (data ${dataDir}) …`);
      target = await startEmbedded(dataDir);
    }
    const client = { ...p.httpClient(target.url, opts.apiKey), apiKey: opts.apiKey };
    c.log(`target ${target.url} (pids ${target.pids.join(',') || 'unknown'}), steps ${steps.join(', ')} chunks`);
    // Where the query-path stage histograms are: the server's /metrics, or (distributed) every service's.
    const metricsAt = opts.url ? p.metricsUrls(target.url) : [`${target.url}/metrics`];

    let docsSoFar = 0;
    let chunksSoFar = 0;
    let perDoc = undefined;
    // A kept --data-dir that already holds this corpus (an earlier run, finished or stopped): go on from its documents
    // (they are numbered, so the next run submits the next ones) instead of re-submitting them — unchanged documents never
    // become terminal again, so a re-submission would wait forever. A step the folder already reaches is only measured.
    let heldDocs = 0;
    for (;;) {
      const held = await counts(client);
      heldDocs = Object.values(held).reduce((n, v) => n + (Number(v) || 0), 0);
      const pending = heldDocs - (Number(held.indexed) || 0) - (Number(held.failed) || 0);
      if (pending <= 0) break;
      c.log(`the data folder's queue still holds ${pending} documents: waiting for them to finish`);
      await c.sleep(2000);
    }
    if (heldDocs > 0) {
      perDoc = await sampleChunks(client, opts, 0, heldDocs);
      docsSoFar = heldDocs;
      chunksSoFar = Math.round(heldDocs * perDoc);
      c.log(`resuming: the data folder holds ${heldDocs} documents (≈ ${chunksSoFar} chunks, ${perDoc.toFixed(2)} per document)`);
    }
    for (const step of steps) {
      const before = await counts(client);
      const base = { indexed: before.indexed ?? 0, failed: before.failed ?? 0 };
      const io0 = sumProc(target.pids, (pid) => procIo(pid)?.write_bytes);
      // The first step learns chunks/document from a small probe; later steps size themselves from it.
      if (perDoc === undefined) {
        const probe = await ingestRange(client, pool, opts, 0, 300, base);
        perDoc = await sampleChunks(client, opts, 0, 300);
        if (!(perDoc > 0)) throw new Error(`the probe documents were not indexed (${JSON.stringify(probe)})`);
        docsSoFar = 300;
        chunksSoFar = Math.round(300 * perDoc);
        base.indexed += probe.indexed;
        base.failed += probe.failed;
        c.log(`probe: ${perDoc.toFixed(2)} chunks per document`);
      }
      const need = Math.max(0, Math.ceil((step - chunksSoFar) / perDoc));
      const from = docsSoFar;
      const to = from + need;
      c.log(`step ${step}: documents ${from}–${to} …`);
      const r = need > 0 ? await ingestRange(client, pool, opts, from, to, base) : { documents: 0, rejected: 0, indexed: 0, failed: 0, submit_s: 0, seconds: 0, max_call_ms: 0, stalls: 0 };
      const stepPerDoc = need > 0 ? await sampleChunks(client, opts, from, to) : perDoc;
      const stepChunks = Math.round(r.indexed * stepPerDoc);
      docsSoFar = to;
      chunksSoFar += stepChunks;
      const io1 = sumProc(target.pids, (pid) => procIo(pid)?.write_bytes);
      const bytes = dataDir ? duBytes(dataDir) : undefined;
      const rss = sumProc(target.pids, (pid) => c.procRssMiB(pid));
      const load = {};
      let stages;
      for (const path of ['/v1/retrieve', '/v1/query']) {
        const bodiesFile = bodies[path];
        if (opts.warmup > 0) await runCannon({ url: target.url, path, connections: opts.connections, duration: opts.warmup, bodiesFile, apiKey: opts.apiKey, timeout: 30 }, (opts.warmup + 60) * 1000);
        c.log(`step ${step}: ${path} at ${opts.connections} connections for ${opts.duration} s …`);
        const before = path === '/v1/retrieve' ? await stageTotals(metricsAt, opts.apiKey) : undefined;
        load[path] = await runCannon({ url: target.url, path, connections: opts.connections, duration: opts.duration, bodiesFile, apiKey: opts.apiKey, timeout: 30 }, (opts.duration + 60) * 1000);
        if (path === '/v1/retrieve') stages = stageMeans(before, await stageTotals(metricsAt, opts.apiKey));
      }
      const row = {
        step_chunks: step,
        index_chunks: chunksSoFar,
        index_documents: docsSoFar,
        step_documents: r.indexed,
        failed: r.failed,
        rejected: r.rejected,
        chunks_per_document: Number(stepPerDoc.toFixed(2)),
        seconds: Number(r.seconds.toFixed(1)),
        // undefined for a step the data folder already reached (only measured)
        docs_per_s: r.indexed > 0 ? r.indexed / r.seconds : undefined,
        chunks_per_s: r.indexed > 0 ? stepChunks / r.seconds : undefined,
        bytes_written_per_doc: io0 !== undefined && io1 !== undefined && r.indexed ? (io1 - io0) / r.indexed : undefined,
        data_bytes_per_chunk: bytes !== undefined && chunksSoFar ? bytes / chunksSoFar : undefined,
        rss_mib: rss,
        max_call_ms: r.max_call_ms,
        stalls: r.stalls,
        retrieve: summarize(load['/v1/retrieve']),
        query: summarize(load['/v1/query']),
        // mean ms per call of the retrieve's stages under the /v1/retrieve load (the server's own histogram)
        retrieve_stage_ms: stages,
      };
      rows.push(row);
      c.log(
        `step ${step}: ${c.fmt(row.docs_per_s, 1)} docs/s, ${c.fmt(row.chunks_per_s, 0)} chunks/s, ${c.fmt(row.bytes_written_per_doc / 1024, 1)} KiB written/doc, ` +
          `retrieve P50 ${c.fmt(row.retrieve.p50, 0)} ms, query P50 ${c.fmt(row.query.p50, 0)} ms`,
      );
    }
    stopWatchdog();
    const first = rows[0];
    const ratio = (v, b) => (v !== undefined && b ? `${(v / b).toFixed(2)}x` : '–');
    const kib = (v) => (v === undefined ? undefined : v / 1024);
    const sections = [
      {
        title: `scale (${target.embedder === 'as configured on the gateway' ? 'distributed' : `embedded, RAG_EMBEDDER=${target.embedder}`}; latency in ms at ${opts.connections} connections, ${opts.duration} s per endpoint)`,
        head: ['chunks', 'docs', 'docs/s', 'chunks/s', 'KiB written/doc', 'B data/chunk', 'RSS MiB', 'retr req/s', 'retr P50', 'P95', 'P99', 'query req/s', 'query P50', 'P95', 'P99', 'max call ms', 'stalls', 'bad'],
        rows: rows.map((r) => [
          r.index_chunks,
          r.index_documents,
          c.fmt(r.docs_per_s, 1),
          c.fmt(r.chunks_per_s, 0),
          c.fmt(kib(r.bytes_written_per_doc), 1),
          c.fmt(r.data_bytes_per_chunk, 0),
          c.fmt(r.rss_mib, 0),
          c.fmt(r.retrieve.rps, 1),
          c.fmt(r.retrieve.p50, 0),
          c.fmt(r.retrieve.p95, 0),
          c.fmt(r.retrieve.p99, 0),
          c.fmt(r.query.rps, 1),
          c.fmt(r.query.p50, 0),
          c.fmt(r.query.p95, 0),
          c.fmt(r.query.p99, 0),
          r.max_call_ms,
          r.stalls,
          r.retrieve.bad + r.query.bad + r.failed + r.rejected,
        ]),
      },
      {
        title: `ratios to the first step (${first.index_chunks} chunks)`,
        head: ['chunks', 'docs/s', 'written/doc', 'data/chunk', 'RSS', 'retrieve P50', 'retrieve P99', 'query P50', 'query P99'],
        rows: rows.map((r) => [
          r.index_chunks,
          ratio(r.docs_per_s, first.docs_per_s),
          ratio(r.bytes_written_per_doc, first.bytes_written_per_doc),
          ratio(r.data_bytes_per_chunk, first.data_bytes_per_chunk),
          ratio(r.rss_mib, first.rss_mib),
          ratio(r.retrieve.p50, first.retrieve.p50),
          ratio(r.retrieve.p99, first.retrieve.p99),
          ratio(r.query.p50, first.query.p50),
          ratio(r.query.p99, first.query.p99),
        ]),
      },
    ];
    if (rows.some((r) => r.retrieve_stage_ms)) {
      const ms = (r, stage) => c.fmt(r.retrieve_stage_ms?.[stage], 1);
      sections.push({
        title: 'inside /v1/retrieve under that load: mean ms per call of each stage (the server\'s rag_stage_duration_seconds; keyword and dense run in parallel inside retrieve, keyword includes waiting for a worker, and wall time includes waiting for the event loop), and where the embedded keyword index ran its searches (rag_keyword_searches_total)',
        head: ['chunks', 'query-embed', 'retrieve', 'retrieve-keyword', 'retrieve-dense', 'keyword searches by thread'],
        rows: rows.map((r) => [
          r.index_chunks,
          ms(r, 'query-embed'),
          ms(r, 'retrieve'),
          ms(r, 'retrieve-keyword'),
          ms(r, 'retrieve-dense'),
          Object.entries(r.retrieve_stage_ms?.keyword_threads ?? {})
            .map(([k, v]) => `${k} ${Math.round(100 * v)} %`)
            .join(', ') || '–',
        ]),
      });
    }
    const notes = [
      'docs/s and chunks/s are per step: from the step\'s first submit to its last terminal status (submission runs at most --backlog-docs ahead of indexing).',
      'chunks: a 400-document sample of each step\'s statuses × the step\'s indexed documents (the synthetic documents are 1–3 dev-set passages each).',
      'KiB written/doc: the server processes\' /proc/<pid>/io write_bytes over the step ÷ documents indexed in it (what reached the block layer).',
      'bad = failed + rejected documents + non-2xx/errors/timeouts under load; it must be 0.',
      'max call ms: the slowest status poll or batch submit of the step; stalls: calls that timed out (60 s poll, 120 s submit) or lost their connection and were retried (5 s apart, 10 tries).',
    ];
    if (rows.some((r) => r.retrieve.bad + r.query.bad + r.failed + r.rejected > 0)) process.exitCode = 1;
    c.report({ bench: 'scale', hw, started, sections, notes, json: { target: opts.url ? 'distributed' : 'embedded', embedder: target.embedder, connections: opts.connections, duration_s: opts.duration, steps: rows } });
  } finally {
    if (target) await target.stop().catch((e) => c.log(`stopping: ${e.message}`));
    if (dataDir && !opts.dataDir) p.removeDir(dataDir);
    rmSync(tmp, { recursive: true, force: true });
  }
}

function summarize(r) {
  return {
    rps: r.throughput_rps,
    p50: r.latency_ms.p50,
    p95: r.latency_ms.p95,
    p99: r.latency_ms.p99,
    bad: (r.non2xx || 0) + (r.errors || 0) + (r.timeouts || 0),
  };
}

module.exports = { run, HELP, makeDoc };
