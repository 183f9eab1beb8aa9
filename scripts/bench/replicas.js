'use strict';
// bench replicas: `bench ingest` and `bench load` against the distributed platform (scripts/distributed.js) started
// with 1 and with 2 (--replicas) processes of every service, one after the other in one run, printed side by side.
const { spawn } = require('node:child_process');
const { mkdtempSync } = require('node:fs');
const os = require('node:os');
const { join } = require('node:path');
const c = require('./lib/common');
const p = require('./lib/platform');

const spec = {
  replicas: { type: 'intlist', default: [1, 2], help: 'replicas per service, one platform after the other' },
  limit: { type: 'int', default: undefined, help: 'bench ingest: only the first N Cranfield documents (default all 1,400)' },
  connections: { type: 'intlist', default: [10, 50], help: 'bench load: connection levels' },
  duration: { type: 'int', default: 30, help: 'bench load: seconds per level' },
  port: { type: 'int', default: 47000, help: 'gateway port of replica 1; replica r: port + 8(r-1), gRPC from port + 31' },
  'database-url': { type: 'string', default: process.env.RAG_BENCH_DATABASE_URL || 'postgres://rag@127.0.0.1:55432/rag', help: 'PostgreSQL server for the scratch databases (one per platform, dropped afterwards)' },
  'max-seconds': { type: 'int', default: 3600, help: 'hard limit for the whole run' },
};

const HELP = `usage: npm run bench -- replicas [options]

For each --replicas N: a scratch PostgreSQL database (the shared state, also for N=1 so both use the same backend),
fresh Kafka topic / Milvus collection / OpenSearch index prefixes, then \`node scripts/distributed.js --replicas N\`
(from RAG_DIST_DIR or dist/: npm run build first; servers from deploy/local/servers.sh), then
  bench ingest --url <gateway-1> --no-embedded --keep  (Cranfield; stages read from all 8N /metrics)
  bench load   --url <gateway-1> --no-ingest           (on the corpus that ingest left)
as child processes, then the platform is stopped and its data removed. RAG_EMBEDDER defaults to hashing here (set it
to measure a model). Both load levels go to the first gateway; with N=2 its gRPC clients balance over both
replicas of each query-path service.`;

function runChild(args, env, label, maxMs) {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [join(__dirname, 'index.js'), ...args], { env, stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout.setEncoding('utf8').on('data', (d) => (out += d));
    const timer = setTimeout(() => child.kill('SIGKILL'), maxMs);
    child.on('close', (code) => {
      clearTimeout(timer);
      const lines = out.trim().split('\n');
      try {
        const json = JSON.parse(lines.pop());
        resolve({ code, json, text: lines.join('\n') });
      } catch {
        reject(new Error(`${label} exited ${code} without a result: ${out.slice(-800)}`));
      }
    });
  });
}

/** Starts scripts/distributed.js and resolves once it printed its "ready" summary. */
function startPlatform(replicas, env) {
  const child = spawn(process.execPath, [join(c.root, 'scripts', 'distributed.js'), '--replicas', String(replicas)], { cwd: c.root, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let tail = '';
  const keep = (d) => (tail = (tail + d).slice(-4000));
  child.stderr.setEncoding('utf8').on('data', keep);
  const ready = new Promise((resolve, reject) => {
    child.stdout.setEncoding('utf8').on('data', (d) => {
      keep(d);
      if (/RAG platform \(distributed\) ready/.test(tail)) resolve();
    });
    child.once('exit', (code) => reject(new Error(`start:distributed --replicas ${replicas} exited ${code}: ${tail.slice(-1500)}`)));
  });
  const exited = new Promise((r) => child.once('exit', r));
  return { child, ready, stop: async () => (child.exitCode === null ? (child.kill('SIGTERM'), exited) : undefined) };
}

async function dropStores(prefix) {
  const { MilvusClient } = require('@zilliz/milvus2-sdk-node');
  const milvus = new MilvusClient({ address: process.env.RAG_MILVUS_ADDRESS || '127.0.0.1:19530', logLevel: 'error' });
  try {
    const res = await milvus.showCollections();
    for (const col of res.data ?? []) if (col.name.startsWith(prefix)) await milvus.dropCollection({ collection_name: col.name });
  } catch (e) {
    c.log(`could not drop the Milvus collections ${prefix}*: ${e.message}`);
  } finally {
    await milvus.closeConnection();
  }
  const os = (process.env.RAG_OPENSEARCH_URL || 'http://127.0.0.1:9200').replace(/\/$/, '');
  try {
    const r = await c.httpJson('GET', `${os}/_cat/indices/${prefix}*?format=json`);
    for (const ix of r.json ?? []) await c.httpJson('DELETE', `${os}/${ix.index}`);
  } catch (e) {
    c.log(`could not drop the OpenSearch indices ${prefix}*: ${e.message}`);
  }
  const { Kafka, logLevel } = require('kafkajs');
  const admin = new Kafka({ brokers: (process.env.RAG_KAFKA_BROKERS || '127.0.0.1:9092').split(','), logLevel: logLevel.NOTHING }).admin();
  try {
    await admin.connect();
    const topics = (await admin.listTopics()).filter((t) => t.startsWith(`${prefix}.`));
    if (topics.length) await admin.deleteTopics({ topics });
  } catch (e) {
    c.log(`could not delete the Kafka topics ${prefix}.*: ${e.message}`);
  } finally {
    await admin.disconnect().catch(() => undefined);
  }
}

async function run(argv) {
  const opts = c.parseArgs(argv, spec);
  if (opts.help) return process.stdout.write(c.usage(HELP, spec));
  for (const n of opts.replicas) if (!(n >= 1 && n <= 4)) throw new Error('--replicas: each from 1 to 4');
  const stopWatchdog = c.watchdog(opts.maxSeconds, 'replicas');
  const started = new Date();
  const hw = c.hardware();
  const pg = require('pg');
  const runId = Date.now().toString(36);
  const results = [];
  for (const n of opts.replicas) {
    const prefix = `benchrep${runId}r${n}`;
    const dbName = `rag_${prefix}`;
    const admin = new pg.Client({ connectionString: opts.databaseUrl });
    await admin.connect().catch((e) => {
      throw new Error(`PostgreSQL at ${opts.databaseUrl}: ${e.message} (bash deploy/local/servers.sh start postgres)`);
    });
    await admin.query(`CREATE DATABASE ${dbName}`);
    const dbUrl = Object.assign(new URL(opts.databaseUrl), { pathname: `/${dbName}` }).toString();
    const dataDir = mkdtempSync(join(os.tmpdir(), 'rag-bench-replicas-'));
    const port = opts.port;
    const env = {
      ...process.env,
      RAG_EMBEDDER: process.env.RAG_EMBEDDER || 'hashing',
      RAG_LOG_LEVEL: process.env.RAG_LOG_LEVEL || 'warn',
      // 8N Node processes starting at once on a small machine: the launcher's 180 s default is too short for N=2 on 2 cores.
      RAG_START_TIMEOUT_MS: process.env.RAG_START_TIMEOUT_MS || String(300_000 * n),
      RAG_PORT: String(port),
      RAG_EMBEDDER_GRPC: `127.0.0.1:${port + 31}`,
      RAG_RETRIEVER_GRPC: `127.0.0.1:${port + 32}`,
      RAG_RERANKER_GRPC: `127.0.0.1:${port + 33}`,
      RAG_GENERATOR_GRPC: `127.0.0.1:${port + 34}`,
      RAG_DATA_DIR: dataDir,
      RAG_DATABASE_URL: dbUrl,
      RAG_KAFKA_TOPIC_PREFIX: `${prefix}.`,
      RAG_MILVUS_COLLECTION_PREFIX: prefix,
      RAG_KEYWORD_INDEX_PREFIX: `${prefix}-chunks`,
    };
    c.log(`replicas ${n}: starting ${8 * n} service processes (gateway ${port}, database ${dbName}) …`);
    const t0 = Date.now();
    const platform = startPlatform(n, env);
    try {
      await platform.ready;
      const startS = (Date.now() - t0) / 1000;
      const url = `http://127.0.0.1:${port}`;
      const metrics = Array.from({ length: 8 * n }, (_, i) => ['--metrics-url', `http://127.0.0.1:${port + i}/metrics`]).flat();
      c.log(`replicas ${n}: ready in ${startS.toFixed(1)} s; bench ingest …`);
      const ingest = await runChild(['ingest', '--url', url, '--no-embedded', '--keep', ...metrics, ...(opts.limit ? ['--limit', String(opts.limit)] : [])], env, 'bench ingest', 1800_000);
      process.stderr.write(ingest.text + '\n');
      c.log(`replicas ${n}: bench load …`);
      const load = await runChild(['load', '--url', url, '--no-ingest', '--connections', opts.connections.join(','), '--duration', String(opts.duration)], env, 'bench load', 1800_000);
      process.stderr.write(load.text + '\n');
      if (ingest.code || load.code) process.exitCode = 1;
      const ir = ingest.json.runs[0];
      results.push({ replicas: n, processes: 8 * n, start_s: startS, ingest: ir, load: load.json.results, load_exit: load.code });
    } finally {
      await platform.stop();
      await admin.query(`DROP DATABASE IF EXISTS ${dbName} WITH (FORCE)`).catch(() => undefined);
      await admin.end();
      await dropStores(prefix);
      p.removeDir(dataDir);
    }
  }
  stopWatchdog();

  const ingestRows = results.map((r) => [r.replicas, r.processes, r.start_s.toFixed(1), r.ingest.indexed, r.ingest.failed + r.ingest.rejected, r.ingest.chunks, r.ingest.seconds.toFixed(1), r.ingest.docs_per_s.toFixed(1), r.ingest.chunks_per_s.toFixed(1)]);
  const loadRows = results.flatMap((r) =>
    r.load.map((l) => [r.replicas, l.connections, l.responses, l.throughput_rps.toFixed(1), c.fmt(l.latency_ms.p50, 0), c.fmt(l.latency_ms.p95, 0), c.fmt(l.latency_ms.p99, 0), (l.non2xx || 0) + (l.errors || 0) + (l.timeouts || 0)]),
  );
  const sections = [
    { title: 'bench ingest (Cranfield through the first gateway)', head: ['replicas', 'processes', 'start s', 'indexed', 'failed', 'chunks', 'wall s', 'docs/s', 'chunks/s'], rows: ingestRows },
    { title: 'bench load (POST /v1/query at the first gateway; latency ms)', head: ['replicas', 'conns', 'responses', 'req/s', 'P50', 'P95', 'P99', 'non-2xx+errors'], rows: loadRows },
  ];
  if (results.length > 1) {
    const ref = results[0];
    sections.push({
      title: `side by side (ratio = replicas N / replicas ${ref.replicas})`,
      head: ['replicas', 'x docs/s', ...opts.connections.flatMap((k) => [`x req/s @${k}`, `x P95 @${k}`])],
      rows: results.slice(1).map((r) => [
        r.replicas,
        `${(r.ingest.docs_per_s / ref.ingest.docs_per_s).toFixed(2)}x`,
        ...opts.connections.flatMap((k) => {
          const a = ref.load.find((l) => l.connections === k);
          const b = r.load.find((l) => l.connections === k);
          return [`${(b.throughput_rps / a.throughput_rps).toFixed(2)}x`, `${(b.latency_ms.p95 / a.latency_ms.p95).toFixed(2)}x`];
        }),
      ]),
    });
  }
  const notes = [
    `RAG_EMBEDDER=${process.env.RAG_EMBEDDER || 'hashing'}; shared state in PostgreSQL for every N; all processes and servers on this machine (${hw.nproc} CPUs), so N replicas share the same cores.`,
    'The per-stage breakdown and the full load report of each platform are printed on stderr above.',
  ];
  c.report({ bench: 'replicas', hw, started, sections, notes, json: { results } });
}

module.exports = { run, HELP };
