'use strict';
// Child process of `bench ann`: the resident memory one index adds, measured in a fresh process (so nothing freed by
// an earlier measurement is reused) as the RSS growth from just before building/opening to after, both after a full GC.
//   node ann-rss.js raw <dataset> <m> <efConstruction> <skip>           hnswlib-node, capacity = n, as the library is used
//   node ann-rss.js store-grow <dataset> <m> <efConstruction> <skip> <dir>   EmbeddedHnswVectorStore filled from empty
//   node ann-rss.js store-open <dataset> <m> <efConstruction> <skip> <dir>   the same store reopened from its checkpoint
// Prints one JSON line. <skip> = base vectors left out (the held-out queries).
const { join } = require('node:path');
const c = require('./common');

async function main() {
  const [mode, dataset, m, efc, skip, dir] = process.argv.slice(2);
  const base = c.readVecs(join(dataset, 'base.fvecs'), 'fvecs');
  const from = Number(skip);
  const n = base.n - from;
  const rows = Array.from({ length: n }, (_, i) => new Float32Array(base.row(i + from)));
  const arrays = mode === 'raw' ? rows.map((r) => Array.from(r)) : [];
  const records = mode === 'store-grow' ? rows.map((v, i) => storeRecord(i, v)) : [];
  const snap = async () => {
    await c.sleep(50);
    c.gc();
    c.gc();
    return process.memoryUsage();
  };
  let store;
  // Code is loaded before the first snapshot: only what the index holds is measured.
  const { HierarchicalNSW } = require('hnswlib-node');
  const { EmbeddedHnswVectorStore } = mode === 'raw' ? {} : requireStore();
  const before = await snap();
  if (mode === 'raw') {
    const index = new HierarchicalNSW('cosine', base.dim);
    index.initIndex(n, Number(m), Number(efc), 100);
    for (let i = 0; i < n; i++) index.addPoint(arrays[i], i + 1);
    globalThis.keep = index;
  } else {
    store = new EmbeddedHnswVectorStore({ dir, modelId: 'bench-ann', dim: base.dim, m: Number(m), efConstruction: Number(efc), persistIntervalMs: 0, synchronous: 'NORMAL' });
    for (let i = 0; i < records.length; i += 500) await store.upsert(records.slice(i, i + 500));
  }
  const after = await snap();
  const per = (k) => (after[k] - before[k]) / n;
  const out = { mode, n, rss_bytes_per_vector: per('rss'), heap_used_bytes_per_vector: per('heapUsed'), external_bytes_per_vector: per('external') };
  if (store) {
    out.store = store.memoryStats();
    await store.close();
  }
  process.stdout.write(`${JSON.stringify(out)}\n`);
}

/** The store record for held-out base vector i: half the documents readable by group:a, half by group:b. */
function storeRecord(i, vector) {
  const even = i % 2 === 0;
  return { chunk_id: `bench:${i}#v1#0`, document_id: `bench:${i}`, tenant: 'default', version: 1, acl: [even ? 'group:a' : 'group:b'], metadata: { half: even }, vector };
}

function requireStore() {
  const { existsSync } = require('node:fs');
  const { resolve } = require('node:path');
  const distDir = process.env.RAG_DIST_DIR ? resolve(c.root, process.env.RAG_DIST_DIR) : c.distDir;
  const file = join(distDir, 'libs/adapters/src/embedded-hnsw/embedded-hnsw.adapter.js');
  if (!existsSync(file)) throw new Error(`${file} is missing: run \`npm run build\` first (or set RAG_DIST_DIR)`);
  const platform = require(join(distDir, 'libs/platform/src/index.js'));
  if (!process.env.RAG_LOG_LEVEL) platform.setLogLevel('warn');
  return require(file);
}

if (require.main === module) {
  main().catch((e) => {
    process.stderr.write(`${e.stack || e.message}\n`);
    process.exit(1);
  });
}

module.exports = { storeRecord, requireStore };
