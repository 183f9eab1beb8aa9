#!/usr/bin/env node
'use strict';
// Benchmarks: `npm run bench -- <name> [options]` (package.json: "bench": "node scripts/bench/index.js").
//
//   ann     recall@10 and q/s: brute force, hnswlib-node HNSW, Milvus HNSW / IVF_SQ8 on bigann10k
//   embed   chunks/s of the embedders (hashing, ONNX models in .models/) at batch sizes 1, 8, 32
//   load    autocannon against POST /v1/query of the embedded platform (or --url) at 10/50/100 connections
//   ingest  documents and chunks per second through the pipeline, with the share of each stage
//   tracing query latency with OpenTelemetry off / ids only / exporting OTLP, three platforms side by side
//   hnsw-persist  bytes written and docs/s per document of the embedded vector store, rewrite-per-flush vs checkpoints
//   keyword-scale  embedded keyword index query latency at 10k/100k(/1M) chunks: pruned vs exhaustive vs FTS5
//   keyword-writes  bytes the embedded keyword index writes per chunk by WAL checkpoint interval and page size
//   keyword-churn  embedded keyword search latency while another connection commits: term cache follows / clears / off
//   llm     the in-process GGUF model (RAG_LLM=local): time to first token, decode and prompt tokens/s, queued pairs
//   registry  registry write latency per call and docs/s, SQLite vs PostgreSQL (the adapters of the services)
//   outbox  peak memory of the gateway's outbox relay over a backlog of large uploads, by claim budget (RAG_OUTBOX_CLAIM_BYTES)
//   replicas  bench ingest and bench load against the distributed platform with 1 and 2 replicas per service
//   milvus-scale  Milvus HNSW / IVF_SQ8 through the platform's adapter at 100k/1M vectors: recall@10, P99 at 50 searches/s, memory per vector
//   scale   synthetic corpus ingested in steps to 10k/100k(/1M) chunks: docs/s, bytes written/doc, data/chunk, RSS, retrieve/query P50-P99
//
// Each prints progress on stderr, then a results table and one JSON line on stdout (with hardware and date).
// `npm run bench -- <name> --help` lists the options. Needs `npm run build` (the scripts load dist/).
const BENCHES = {
  ann: () => require('./ann'),
  embed: () => require('./embed'),
  load: () => require('./load'),
  ingest: () => require('./ingest'),
  tracing: () => require('./tracing'),
  'hnsw-persist': () => require('./hnsw-persist'),
  'keyword-scale': () => require('./keyword-scale'),
  'keyword-writes': () => require('./keyword-writes'),
  'keyword-churn': () => require('./keyword-churn'),
  scale: () => require('./scale'),
  'milvus-scale': () => require('./milvus-scale'),
  llm: () => require('./llm'),
  registry: () => require('./registry'),
  outbox: () => require('./outbox'),
  replicas: () => require('./replicas'),
};

function help() {
  const text = require('node:fs').readFileSync(__filename, 'utf8').split('\n').slice(2).filter((l, i, ls) => ls.slice(0, i + 1).every((x) => x.startsWith('//'))).map((l) => l.replace(/^\/\/ ?/, ''));
  process.stdout.write(text.join('\n') + '\n');
}

async function main() {
  const [name, ...rest] = process.argv.slice(2);
  if (!name || name === '--help' || name === '-h' || name === 'help') {
    help();
    process.exit(name ? 0 : 2);
  }
  const bench = BENCHES[name];
  if (!bench) {
    process.stderr.write(`bench: unknown benchmark "${name}"; one of ${Object.keys(BENCHES).join(', ')}\n`);
    process.exit(2);
  }
  await bench().run(rest);
}

main().then(
  () => process.exit(process.exitCode ?? 0),
  (e) => {
    // Expected failures (bad option, missing build, unreachable target) read best as one line; BENCH_DEBUG=1 for the stack.
    process.stderr.write(`bench: ${process.env.BENCH_DEBUG && e && e.stack ? e.stack : e && e.message ? e.message : e}\n`);
    process.exit(1);
  },
);
