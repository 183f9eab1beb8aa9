'use strict';
// Child process of `bench ann`: the resident memory one index adds, measured in a fresh process (so nothing freed by
// an earlier measurement is reused) as the RSS growth from just before building/opening to after, both after a full GC.
//   node ann-rss.js raw <dataset> <m> <efConstruction> <skip>           hnswlib-node, capacity = n, as the library is used
//   node ann-rss.js store-grow <dataset> <m> <efConstruction> <skip> <dir>   EmbeddedHnswVectorStore filled from empty
//   node ann-rss.js store-open <dataset> <m> <efConstruction> <skip> <dir>   the same store reopened from its checkpoint
// Prints one JSON line. <skip> = base vectors left out (the held-out queries). <dataset> may be `synthetic:<n>:<dim>`:
// n pseudo-random vectors (the same every run). What an index allocates per vector depends on the dimension and M
// only — hnswlib reserves M0 links at level 0 and M per upper level whatever it links — so synthetic vectors (and a
// small efConstruction, which only changes which neighbours are linked) measure the memory of a larger index in
// seconds, where the fixed costs (code pages, SQLite's page cache) no longer dominate the per-vector figure.
const { join } = require('node:path');
const c = require('./common');

async function main() {
  const [mode, dataset, m, efc, skip, dir] = process.argv.slice(2);
  const base = dataset.startsWith('synthetic:') ? synthetic(dataset) : c.readVecs(join(dataset, 'base.fvecs'), 'fvecs');
  const from = Number(skip);
  const n = base.n - from;
  const rows = Array.from({ length: n }, (_, i) => new Float32Array(base.row(i + from)));
  const records = mode === 'store-grow' ? rows.map((v, i) => storeRecord(i, v)) : [];
  // The inputs stay referenced to the end: were they collected during the fill, the growth would be understated.
  globalThis.keepInputs = { rows, records };
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
    // One reused JS array per point, as the store passes them (an array per vector held beforehand would be freed
    // part-way at 100k and make the delta negative).
    const point = new Array(base.dim).fill(0);
    for (let i = 0; i < n; i++) {
      const r = rows[i];
      for (let j = 0; j < base.dim; j++) point[j] = r[j];
      index.addPoint(point, i + 1);
    }
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

/** `synthetic:<n>:<dim>`: n vectors of uniform noise in [-0.5, 0.5) from a fixed-seed LCG. */
function synthetic(spec) {
  const [, n, dim] = spec.split(':').map(Number);
  if (!(n > 0 && dim > 0)) throw new Error(`bad synthetic dataset ${spec} (want synthetic:<n>:<dim>)`);
  let x = 12345;
  const next = () => {
    x = (Math.imul(x, 1103515245) + 12345) & 0x7fffffff;
    return x / 0x80000000 - 0.5;
  };
  return {
    n,
    dim,
    row: () => {
      const a = new Float32Array(dim);
      for (let j = 0; j < dim; j++) a[j] = next();
      return a;
    },
  };
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
