#!/usr/bin/env node
// RSS and start-up time of every distributed service, and which SDK packages each process loaded.
//
// Starts each service's compiled main (<dist>/apps/<name>/src/main.js) ALONE, one after the other, with the
// environment of the distributed infra suites (Kafka bus, Milvus, OpenSearch, hashing embedder, a unique topic /
// collection / index prefix), measures the time from spawn until GET /healthz answers 200, reads VmRSS from
// /proc/<pid>/status at that moment, then stops it with SIGTERM. A preload (--require) records on exit which of
// the SDK packages below were loaded into the process (require.cache, on SIGUSR2 right after the RSS), so the effect of lazy adapter loading is
// seen directly, not only through RSS.
//
// usage: node scripts/report/service-footprint.js [--dist DIR]... [--runs N] [--port-base P]
//   --dist       compiled tree (default: dist); build one with `RAG_DIST_DIR=.local/x npm run build`. Repeat it to
//                compare trees: their starts are interleaved (A, B, A, B…) so both see the same machine load
//   --runs       starts per service (default 3); the table shows the median of each
//   --port-base  HTTP port of the first service (default 31000); gRPC ports at +11..+14
// Needs Kafka, Milvus and OpenSearch on loopback (bash deploy/local/servers.sh start all). Numbers from a shared,
// noisy machine: compare two trees measured side by side, not runs from different days.
'use strict';
const { spawn } = require('node:child_process');
const { mkdtempSync, readFileSync, rmSync, writeFileSync, existsSync } = require('node:fs');
const { tmpdir } = require('node:os');
const { join, resolve } = require('node:path');

const root = resolve(__dirname, '../..');
const argv = process.argv.slice(2);
const opt = (name, dflt) => {
  const i = argv.indexOf(name);
  return i >= 0 ? argv[i + 1] : dflt;
};
const dists = argv.flatMap((a, i) => (a === '--dist' ? [resolve(root, argv[i + 1])] : []));
if (dists.length === 0) dists.push(resolve(root, 'dist'));
const runs = Number(opt('--runs', '3'));
const base = Number(opt('--port-base', '31000'));
if (!Number.isInteger(runs) || runs < 1) throw new Error('--runs must be a positive integer');
if (!Number.isInteger(base) || base < 1024 || base + 20 > 65535) throw new Error('--port-base must be a usable port');

const SDKS = [
  '@zilliz/milvus2-sdk-node',
  '@opensearch-project/opensearch',
  '@elastic/elasticsearch',
  'kafkajs',
  '@huggingface/transformers',
  'onnxruntime-node',
  'hnswlib-node',
  'better-sqlite3',
  'pdfjs-dist',
  'mammoth',
  'piscina',
  'pg',
];

const SERVICES = [
  { name: 'loader', port: base + 1 },
  { name: 'chunker', port: base + 2 },
  { name: 'embedder', port: base + 3, grpc: base + 11 },
  { name: 'indexer', port: base + 4 },
  { name: 'retriever', port: base + 5, grpc: base + 12 },
  { name: 'reranker', port: base + 6, grpc: base + 13 },
  { name: 'generator', port: base + 7, grpc: base + 14 },
  { name: 'gateway', port: base },
];

const preload = join(tmpdir(), `rag-footprint-preload-${process.pid}.js`);
writeFileSync(
  preload,
  `'use strict';
const sdks = ${JSON.stringify(SDKS)};
// On SIGUSR2 (sent once /healthz answers): Nest re-raises SIGTERM after its shutdown hooks, so no 'exit' event fires.
process.on('SIGUSR2', () => {
  const seen = new Set();
  for (const f of Object.keys(require.cache)) for (const s of sdks) if (f.includes('/node_modules/' + s + '/')) seen.add(s);
  require('node:fs').writeFileSync(process.env.RAG_FOOTPRINT_OUT, JSON.stringify([...seen]));
});
`,
);

/** The topic prefixes of every start: each service creates the bus's topics under its own prefix. */
const prefixes = [];

/** Deletes the topics the measured services created (the shared broker keeps no leftovers of a report). */
async function dropTopics() {
  const { Kafka, logLevel } = require('kafkajs');
  const admin = new Kafka({ brokers: (process.env.RAG_KAFKA_BROKERS || '127.0.0.1:9092').split(','), clientId: 'service-footprint', logLevel: logLevel.NOTHING }).admin();
  await admin.connect();
  try {
    const topics = (await admin.listTopics()).filter((t) => prefixes.some((p) => t.startsWith(p)));
    for (let i = 0; i < topics.length; i += 50) await admin.deleteTopics({ topics: topics.slice(i, i + 50), timeout: 30_000 });
    process.stderr.write(`deleted ${topics.length} topics of the measured starts\n`);
  } finally {
    await admin.disconnect();
  }
}

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor((s.length - 1) / 2)];
};
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function healthy(port) {
  try {
    return (await fetch(`http://127.0.0.1:${port}/healthz`)).ok;
  } catch {
    return false;
  }
}

async function measure(dist, svc, run) {
  const dataDir = mkdtempSync(join(tmpdir(), 'rag-footprint-'));
  const tag = `fp${Date.now().toString(36)}${run}`;
  prefixes.push(`${tag}.`);
  const out = join(dataDir, 'sdks.json');
  const env = {
    ...process.env,
    RAG_BUS: 'kafka',
    RAG_VECTOR_STORE: 'milvus',
    RAG_KEYWORD_INDEX: 'opensearch',
    RAG_EMBEDDER: 'hashing',
    RAG_DATA_DIR: dataDir,
    RAG_PORT: String(svc.port),
    RAG_GRPC_PORT: String(svc.grpc ?? 0),
    RAG_EMBEDDER_GRPC: `127.0.0.1:${base + 11}`,
    RAG_RETRIEVER_GRPC: `127.0.0.1:${base + 12}`,
    RAG_RERANKER_GRPC: `127.0.0.1:${base + 13}`,
    RAG_GENERATOR_GRPC: `127.0.0.1:${base + 14}`,
    RAG_KAFKA_TOPIC_PREFIX: `${tag}.`,
    RAG_MILVUS_COLLECTION_PREFIX: tag,
    RAG_KEYWORD_INDEX_PREFIX: `${tag}-chunks`,
    RAG_LOG_LEVEL: 'error',
    RAG_FOOTPRINT_OUT: out,
    NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ''} --require ${preload}`.trim(),
  };
  const started = process.hrtime.bigint();
  const child = spawn(process.execPath, [join(dist, 'apps', svc.name, 'src', 'main.js')], { cwd: root, env, stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (d) => (stderr += d));
  const exited = new Promise((r) => child.once('exit', r));
  try {
    const deadline = Date.now() + 120_000;
    while (!(await healthy(svc.port))) {
      if (child.exitCode !== null) throw new Error(`${svc.name} exited with ${child.exitCode}: ${stderr.slice(-2000)}`);
      if (Date.now() > deadline) throw new Error(`${svc.name} not healthy within 120 s: ${stderr.slice(-2000)}`);
      await sleep(25);
    }
    const startMs = Number(process.hrtime.bigint() - started) / 1e6;
    const status = readFileSync(`/proc/${child.pid}/status`, 'utf8');
    const rssMb = Number(/VmRSS:\s+(\d+) kB/.exec(status)[1]) / 1024;
    child.kill('SIGUSR2');
    for (let i = 0; i < 200 && !existsSync(out); i++) await sleep(25);
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
    await exited;
    clearTimeout(timer);
    const sdks = existsSync(out) ? JSON.parse(readFileSync(out, 'utf8')) : null;
    return { startMs, rssMb, sdks };
  } finally {
    if (child.exitCode === null) child.kill('SIGKILL');
    rmSync(dataDir, { recursive: true, force: true });
  }
}

async function main() {
  const rows = dists.map(() => []);
  for (const svc of SERVICES) {
    const samples = dists.map(() => []);
    for (let i = 0; i < runs; i++) {
      for (const [d, dist] of dists.entries()) {
        const m = await measure(dist, svc, i);
        samples[d].push(m);
        process.stderr.write(`${rel(dist)} ${svc.name} run ${i + 1}/${runs}: ${m.startMs.toFixed(0)} ms, ${m.rssMb.toFixed(1)} MB\n`);
      }
    }
    for (const [d, s] of samples.entries()) {
      rows[d].push({
        service: svc.name,
        start_ms: Math.round(median(s.map((x) => x.startMs))),
        rss_mb: Math.round(median(s.map((x) => x.rssMb)) * 10) / 10,
        sdks: s.at(-1).sdks,
      });
    }
  }
  rmSync(preload, { force: true });
  await dropTopics().catch((e) => process.stderr.write(`could not delete the topics of the measured starts: ${e}\n`));
  const header = `median of ${runs} starts each, one service at a time; nproc ${require('node:os').cpus().length}, Node ${process.version}`;
  for (const [d, dist] of dists.entries()) {
    process.stdout.write(`service footprint of ${rel(dist)} (${header})\n\n`);
    process.stdout.write('| service | start-up to /healthz (ms) | RSS at /healthz (MB) | SDK packages loaded |\n|---|---:|---:|---|\n');
    for (const r of rows[d]) process.stdout.write(`| ${r.service} | ${r.start_ms} | ${r.rss_mb} | ${r.sdks ? r.sdks.join(', ') || '—' : '(not recorded)'} |\n`);
    process.stdout.write('\n');
  }
  process.stdout.write(`${JSON.stringify({ runs, trees: dists.map((dist, d) => ({ dist: rel(dist), services: rows[d] })) })}\n`);
}

const rel = (dist) => (dist.startsWith(root + '/') ? dist.slice(root.length + 1) : dist);

main().catch((e) => {
  rmSync(preload, { force: true });
  process.stderr.write(`service-footprint: ${e.stack ?? e}\n`);
  process.exit(1);
});
