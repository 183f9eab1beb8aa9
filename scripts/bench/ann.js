'use strict';
// bench ann: recall@10 and queries/second of exact search, the embedded HNSW index (hnswlib-node) and Milvus
// (HNSW, IVF_SQ8) on bigann10k, plus build time and memory per vector.
const { existsSync, mkdtempSync, rmSync, statSync } = require('node:fs');
const os = require('node:os');
const { join, resolve } = require('node:path');
const c = require('./lib/common');

const spec = {
  dataset: { type: 'string', default: join(c.defaultEvalDir, 'bigann10k'), help: 'folder with base.fvecs, query.fvecs, groundtruth.ivecs' },
  k: { type: 'int', default: 10, help: 'neighbours per query (recall@k)' },
  ef: { type: 'intlist', default: [16, 32, 64, 128, 256], help: 'hnswlib ef values' },
  m: { type: 'int', default: 16, help: 'HNSW M (hnswlib and Milvus)' },
  'ef-construction': { type: 'int', default: 200, help: 'HNSW efConstruction (hnswlib and Milvus)' },
  'milvus-ef': { type: 'intlist', default: [16, 64, 256], help: 'Milvus HNSW ef values' },
  'milvus-nprobe': { type: 'intlist', default: [1, 8, 32], help: 'Milvus IVF_SQ8 nprobe values' },
  'milvus-nlist': { type: 'int', default: 128, help: 'Milvus IVF_SQ8 nlist' },
  milvus: { type: 'string', default: process.env.RAG_MILVUS_ADDRESS || '127.0.0.1:19530', help: 'Milvus address (RAG_MILVUS_ADDRESS)' },
  'milvus-metrics': { type: 'string', default: 'http://127.0.0.1:9091/metrics', help: "Milvus health port's Prometheus endpoint (entity_size)" },
  'skip-milvus': { type: 'bool', default: false, help: 'do not measure Milvus' },
  store: { type: 'bool', default: true, help: 'measure the embedded vector store (EmbeddedHnswVectorStore from dist/ or RAG_DIST_DIR) against raw hnswlib-node on held-out queries (--no-store to skip)' },
  'rss-runs': { type: 'int', default: 3, help: 'store vs raw: fresh child processes per memory measurement (the median is reported: one process moves by ±5 MB with what V8 and the allocator keep, ±500 B a vector at 10k)' },
  'rss-synthetic': { type: 'int', min: 0, default: 100000, help: 'store vs raw: also measure memory per vector at this many synthetic vectors (one fresh process per mode; efConstruction 32, which does not change what is allocated); 0 skips' },
  'store-rounds': { type: 'int', default: 6, help: 'store vs raw: interleaved rounds per ef (each variant runs min-seconds/rounds per round)' },
  'min-seconds': { type: 'number', default: 1, help: 'repeat the query set until each measurement ran this long' },
  'max-passes': { type: 'int', default: 100, help: 'at most this many passes over the query set per measurement' },
  'max-seconds': { type: 'int', default: 900, help: 'hard limit for the whole run' },
};

const HELP = `usage: npm run bench -- ann [options]

Recall@k and single-query throughput on bigann10k (10,000 x 128, 100 queries = base vectors 0-99):
  exact L2 and exact cosine brute force, hnswlib-node (cosine, the embedded store's index) over a range of ef,
  Milvus HNSW and IVF_SQ8 (skipped when Milvus is not reachable; start it with
  \`bash deploy/local/servers.sh start milvus\`). Recall is given against BOTH the file's exact L2 ground truth and
  exact cosine brute force (our stores use cosine, so the cosine column is the one that measures the index).
Then the embedded vector store against raw hnswlib-node on the same graph: the store is filled with base vectors
100.. (held out: the queries are not in it; half the documents readable by group:a, half by group:b, metadata
half=true on the group:a half), closed (checkpoint), and raw hnswlib-node loads that checkpoint, so both search the
identical graph. Per ef, interleaved: raw unfiltered vs the store unrestricted (no filter callback), raw with the
cheapest JS filter callback vs the store for principals [group:a] (oversampled, then filtered) and vs the store with
filter {half: true} (callback inside the search). Resident memory per vector of raw hnswlib-node (capacity = n), the
store filled from empty, and the store reopened from its checkpoint, each in a fresh child process.`;

/** Ids of the k smallest values of dist (ascending). */
function topK(dist, k) {
  const ids = new Int32Array(k).fill(-1);
  const ds = new Float64Array(k).fill(Infinity);
  for (let i = 0; i < dist.length; i++) {
    const d = dist[i];
    if (d >= ds[k - 1]) continue;
    let j = k - 1;
    while (j > 0 && ds[j - 1] > d) {
      ds[j] = ds[j - 1];
      ids[j] = ids[j - 1];
      j--;
    }
    ds[j] = d;
    ids[j] = i;
  }
  return Array.from(ids);
}

function bruteL2(base, q, k, dist) {
  const { n, dim, data } = base;
  for (let i = 0; i < n; i++) {
    let s = 0;
    const off = i * dim;
    for (let j = 0; j < dim; j++) {
      const t = data[off + j] - q[j];
      s += t * t;
    }
    dist[i] = s;
  }
  return topK(dist, k);
}

/** Cosine brute force over pre-normalised base rows; the query is normalised here (part of the timed work). */
function bruteCos(normBase, q, k, dist) {
  const { n, dim, data } = normBase;
  let qn = 0;
  for (let j = 0; j < dim; j++) qn += q[j] * q[j];
  qn = Math.sqrt(qn) || 1;
  for (let i = 0; i < n; i++) {
    let s = 0;
    const off = i * dim;
    for (let j = 0; j < dim; j++) s += data[off + j] * q[j];
    dist[i] = 1 - s / qn;
  }
  return topK(dist, k);
}

function normalise(base) {
  const out = new Float32Array(base.data.length);
  for (let i = 0; i < base.n; i++) {
    let s = 0;
    for (let j = 0; j < base.dim; j++) s += base.data[i * base.dim + j] ** 2;
    const norm = Math.sqrt(s) || 1;
    for (let j = 0; j < base.dim; j++) out[i * base.dim + j] = base.data[i * base.dim + j] / norm;
  }
  return { n: base.n, dim: base.dim, data: out };
}

/** Mean over queries of |result ∩ truth[:k]| / k. */
function recall(results, truth, k) {
  let s = 0;
  for (let i = 0; i < results.length; i++) {
    const t = new Set(truth[i].slice(0, k));
    s += results[i].slice(0, k).filter((id) => t.has(id)).length / k;
  }
  return s / results.length;
}

/** Runs `one(qi)` over all queries, repeating passes until minSeconds (or maxPasses); returns results of the first pass and q/s. */
async function measure(nq, one, { minSeconds, maxPasses }) {
  const results = new Array(nq);
  let queries = 0;
  const t0 = process.hrtime.bigint();
  let elapsed = 0;
  for (let pass = 0; pass < maxPasses; pass++) {
    for (let i = 0; i < nq; i++) {
      const r = await one(i);
      if (pass === 0) results[i] = r;
    }
    queries += nq;
    elapsed = Number(process.hrtime.bigint() - t0) / 1e9;
    if (elapsed >= minSeconds) break;
  }
  return { results, qps: queries / elapsed, queries, seconds: elapsed };
}

async function run(argv) {
  const opts = c.parseArgs(argv, spec);
  if (opts.help) return process.stdout.write(c.usage(HELP, spec));
  const stopWatchdog = c.watchdog(opts.maxSeconds, 'ann');
  const started = new Date();
  const hw = c.hardware();
  const k = opts.k;
  const dir = resolve(opts.dataset);
  for (const f of ['base.fvecs', 'query.fvecs', 'groundtruth.ivecs']) if (!existsSync(join(dir, f))) throw new Error(`${join(dir, f)} is missing (set --dataset)`);
  const base = c.readVecs(join(dir, 'base.fvecs'), 'fvecs');
  const query = c.readVecs(join(dir, 'query.fvecs'), 'fvecs');
  const gt = c.readVecs(join(dir, 'groundtruth.ivecs'), 'ivecs');
  if (query.dim !== base.dim) throw new Error(`query dim ${query.dim} != base dim ${base.dim}`);
  if (gt.n !== query.n) throw new Error(`ground truth has ${gt.n} rows for ${query.n} queries`);
  if (gt.dim < k) throw new Error(`ground truth has only ${gt.dim} neighbours per query, k = ${k}`);
  const nq = query.n;
  const gtL2 = Array.from({ length: nq }, (_, i) => Array.from(gt.row(i)));
  let queriesAreBase = true;
  for (let i = 0; i < nq && queriesAreBase; i++) {
    const q = query.row(i);
    const b = base.row(i);
    for (let j = 0; j < base.dim; j++) if (q[j] !== b[j]) queriesAreBase = false;
  }
  const selfFirst = gtL2.filter((t, i) => t[0] === i).length;
  c.log(`bigann: ${base.n} x ${base.dim} base, ${nq} queries (queries = base 0..${nq - 1}: ${queriesAreBase}), ground truth top-${gt.dim}`);
  const mopts = { minSeconds: opts.minSeconds, maxPasses: opts.maxPasses };
  const rows = [];
  const notes = [];

  // (a) exact brute force
  const dist = new Float64Array(base.n);
  c.log('brute force L2 …');
  const l2 = await measure(nq, (i) => bruteL2(base, query.row(i), k, dist), mopts);
  const normBase = normalise(base);
  c.log('brute force cosine …');
  const cos = await measure(nq, (i) => bruteCos(normBase, query.row(i), k, dist), mopts);
  const gtCos = cos.results;
  const add = (r) => {
    r.recall_l2 = recall(r.results, gtL2, k);
    r.recall_cos = recall(r.results, gtCos, k);
    delete r.results;
    rows.push(r);
    c.log(`  ${r.method} ${r.param ?? ''}: recall@${k} L2 ${r.recall_l2.toFixed(3)} cos ${r.recall_cos.toFixed(3)}, ${r.qps.toFixed(0)} q/s`);
  };
  add({ method: 'brute force L2 (JS Float32Array)', param: '', ...l2 });
  add({ method: 'brute force cosine (JS Float32Array)', param: '', ...cos });
  const overlap = recall(gtCos, gtL2, k);

  // (b) hnswlib-node, as the embedded store uses it
  const { HierarchicalNSW } = require('hnswlib-node');
  const baseArrays = Array.from({ length: base.n }, (_, i) => Array.from(base.row(i)));
  const queryArrays = Array.from({ length: nq }, (_, i) => Array.from(query.row(i)));
  c.gc();
  const rssBefore = c.rssMiB();
  const index = new HierarchicalNSW('cosine', base.dim);
  c.log(`hnswlib: building (M=${opts.m}, efConstruction=${opts.efConstruction}) …`);
  const tb = process.hrtime.bigint();
  index.initIndex(base.n, opts.m, opts.efConstruction, 100);
  for (let i = 0; i < base.n; i++) index.addPoint(baseArrays[i], i);
  const hnswBuildS = Number(process.hrtime.bigint() - tb) / 1e9;
  c.gc();
  const rssAfter = c.rssMiB();
  const tmp = mkdtempSync(join(os.tmpdir(), 'rag-bench-ann-'));
  let fileBytes;
  try {
    index.writeIndexSync(join(tmp, 'index.hnsw'));
    fileBytes = statSync(join(tmp, 'index.hnsw')).size;
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
  const hnswMem = { build_s: hnswBuildS, file_bytes_per_vector: fileBytes / base.n, rss_delta_bytes_per_vector: ((rssAfter - rssBefore) * 2 ** 20) / base.n, raw_vector_bytes: base.dim * 4 };
  c.log(`  built in ${hnswBuildS.toFixed(2)} s; file ${(fileBytes / base.n).toFixed(0)} B/vector; RSS delta ${hnswMem.rss_delta_bytes_per_vector.toFixed(0)} B/vector`);
  for (const ef of opts.ef) {
    index.setEf(Math.max(ef, k));
    const r = await measure(nq, (i) => index.searchKnn(queryArrays[i], k).neighbors, mopts);
    add({ method: 'hnswlib-node HNSW cosine', param: `ef=${ef}`, ...r });
  }

  // (c) the embedded store against raw hnswlib-node
  let store = { skipped: 'skipped (--no-store)' };
  if (opts.store) {
    try {
      store = await benchStore({ opts, dir, base, query, nq, k, queriesAreBase });
    } catch (e) {
      c.log(`store: failed: ${e.stack || e.message}`);
      store = { skipped: `failed: ${e.message}` };
    }
    if (store.skipped) notes.push(`embedded store vs raw: ${store.skipped}`);
  }

  // (d) Milvus
  let milvus = { skipped: opts.skipMilvus ? 'skipped (--skip-milvus)' : undefined };
  if (!opts.skipMilvus) {
    milvus = await benchMilvus({ opts, base, baseArrays, queryArrays, nq, k, mopts, add });
    if (milvus.skipped) notes.push(`Milvus ${milvus.skipped}`);
  }

  stopWatchdog();
  const ratioBase = rows[1].qps;
  const resultRows = rows.map((r) => [r.method, r.param, r.recall_l2.toFixed(3), r.recall_cos.toFixed(3), r.qps.toFixed(0), `${(r.qps / ratioBase).toFixed(1)}x`, r.batch_qps === undefined ? '–' : r.batch_qps.toFixed(0), r.queries]);
  const na = (v) => (v === undefined ? 'n/a' : v.toFixed(0));
  const memRows = [
    ['raw float32 vector', '–', String(base.dim * 4), '–', '–', '–', '–', '–'],
    ['hnswlib-node HNSW', `M=${opts.m} efC=${opts.efConstruction}`, hnswMem.file_bytes_per_vector.toFixed(0), '–', '–', hnswMem.rss_delta_bytes_per_vector.toFixed(0), hnswBuildS.toFixed(2), '–'],
  ];
  for (const b of milvus.builds ?? []) {
    memRows.push([`Milvus ${b.index}`, b.params, 'n/a', na(b.loaded_data_bytes_per_vector), na(b.getmetric_mem_delta_bytes_per_vector), na(b.rss_delta_bytes_per_vector), b.build_s.toFixed(2), b.load_s.toFixed(2)]);
  }
  notes.push(
    `recall@${k} "vs L2 GT" is against groundtruth.ivecs (exact L2); "vs cosine" is against this run's exact cosine brute force. ` +
      `The embedded store and Milvus use COSINE, so "vs cosine" measures the index; exact cosine and exact L2 top-${k} agree on ${(overlap * 100).toFixed(1)} % here (bigann vectors are not normalised).`,
  );
  notes.push(`queries are base vectors 0..${nq - 1} (${queriesAreBase ? 'verified' : 'NOT the case in this file'}): every query finds itself, worth 1/${k} of each recall value; ground truth lists the query itself first for ${selfFirst}/${nq}.`);
  notes.push('q/s: one query per call, one at a time, from this process (Milvus: one gRPC search per query, so mostly per-call overhead); "batch q/s": Milvus given all queries in one search call; "x cos BF" = q/s relative to cosine brute force in this same run.');
  notes.push('memory per vector: "index file" = hnswlib writeIndex size / n; "RSS delta" = growth of this process (hnswlib build) or of the Milvus processes (launcher pid in .local/run/milvus.pid plus children) from just before createIndex to after load, / n. Milvus "loaded data" = milvus_querynode_entity_size of the collection (health-port /metrics: raw loaded fields, excludes the index); "getMetric delta" = change of the querynode memory_usage reported by the SDK getMetric(system_info) over build+load (standalone: the whole process). getQuerySegmentInfo mem_size is 0 on Milvus 2.3, so no index size per segment is available (n/a). Milvus RSS/getMetric deltas are noisy (allocator, caches, other collections on a shared server).');
  if (milvus.insert_flush_s !== undefined) notes.push(`Milvus insert + flush of ${base.n} vectors: ${milvus.insert_flush_s.toFixed(1)} s (not part of "build s").`);
  c.report({
    bench: 'ann',
    hw,
    started,
    sections: [
      { title: `recall@${k} and throughput (${base.n} x ${base.dim}, ${nq} queries)`, head: ['method', 'param', `recall vs L2 GT`, 'recall vs cosine', 'q/s', 'x cos BF', 'batch q/s', 'queries timed'], rows: resultRows },
      { title: 'build time and memory per vector (bytes)', head: ['index', 'params', 'index file', 'loaded data', 'getMetric delta', 'RSS delta', 'build s', 'load s'], rows: memRows },
      ...(store.sections ?? []),
    ],
    notes,
    json: {
      dataset: dir,
      n: base.n,
      dim: base.dim,
      queries: nq,
      k,
      queries_are_base_vectors: queriesAreBase,
      cosine_vs_l2_topk_overlap: overlap,
      results: rows,
      hnswlib: hnswMem,
      store: { ...store, sections: undefined },
      milvus,
    },
  });
}

/** Cosine top-k over the rows of normBase that `allowed(i)` admits (the query normalised here). */
function bruteCosMasked(normBase, q, k, dist, allowed) {
  bruteCos(normBase, q, normBase.n, dist); // fills dist; the returned order is not used
  for (let i = 0; i < normBase.n; i++) if (!allowed(i)) dist[i] = Infinity;
  return topK(dist, k);
}

/**
 * The embedded vector store vs raw hnswlib-node on the identical graph (the store's checkpoint), held-out queries:
 * recall@k and q/s per ef, interleaved; and RSS per vector of each, measured in child processes.
 */
async function benchStore({ opts, dir, base, query, nq, k, queriesAreBase }) {
  const { execFileSync } = require('node:child_process');
  const { storeRecord, requireStore } = require('./lib/ann-rss');
  const { EmbeddedHnswVectorStore } = requireStore();
  const { HierarchicalNSW } = require('hnswlib-node');
  const skip = queriesAreBase ? nq : 0; // held out: the queries are base vectors 0..nq-1
  const n = base.n - skip;
  const held = { n, dim: base.dim, data: base.data.subarray(skip * base.dim) };
  const normHeld = normalise(held);
  const dist = new Float64Array(n);
  const even = (i) => i % 2 === 0;
  const queries = Array.from({ length: nq }, (_, i) => new Float32Array(query.row(i)));
  const queryArrays = queries.map((q) => Array.from(q));
  const gtAll = queries.map((q) => bruteCos(normHeld, q, k, dist));
  const gtEven = queries.map((q) => bruteCosMasked(normHeld, q, k, dist, even));
  const tmp = mkdtempSync(join(os.tmpdir(), 'rag-bench-ann-store-'));
  const out = { held_out: skip > 0, n, variants: [] };
  try {
    c.log(`store: filling EmbeddedHnswVectorStore with ${n} held-out vectors (M=${opts.m}, efConstruction=${opts.efConstruction}) …`);
    const tb = process.hrtime.bigint();
    let st = new EmbeddedHnswVectorStore({ dir: tmp, modelId: 'bench-ann', dim: base.dim, m: opts.m, efConstruction: opts.efConstruction, persistIntervalMs: 0, synchronous: 'NORMAL' });
    for (let i = 0; i < n; i += 500) {
      const recs = [];
      for (let j = i; j < Math.min(n, i + 500); j++) recs.push(storeRecord(j, new Float32Array(held.data.subarray(j * base.dim, (j + 1) * base.dim))));
      await st.upsert(recs);
    }
    out.store_build_s = Number(process.hrtime.bigint() - tb) / 1e9;
    const storeDir = st.storeDir;
    await st.close();
    const raw = new HierarchicalNSW('cosine', base.dim);
    raw.readIndexSync(join(storeDir, 'index.hnsw'));
    // Results are turned into base-vector ids for recall after timing: the timed calls return what each API returns
    // (labels from the library, chunk ids from the store), so the bench's own conversion is charged to neither.
    const rawIds = (res) => res.neighbors.map((l) => l - 1);
    const storeIds = (hits) => hits.map((h) => Number(/^bench:(\d+)#/.exec(h.chunk_id)[1]));
    const scopeAll = { tenant: 'default' };
    const scopeA = { tenant: 'default', principals: ['group:a'] };
    const perRound = opts.minSeconds / opts.storeRounds;
    for (const ef of opts.ef) {
      st = new EmbeddedHnswVectorStore({ dir: tmp, modelId: 'bench-ann', dim: base.dim, ef, persistIntervalMs: 0, synchronous: 'NORMAL' });
      const variants = [
        { method: 'raw hnswlib-node', scope: 'all', gt: gtAll, one: (i) => { raw.setEf(Math.max(ef, k)); return raw.searchKnn(queryArrays[i], k); }, ids: rawIds },
        { method: 'embedded store', scope: 'unrestricted', gt: gtAll, one: (i) => st.search({ vector: queries[i], k, scope: scopeAll }), ids: storeIds },
        { method: 'raw hnswlib-node + JS filter', scope: '50 % (label parity)', gt: gtEven, one: (i) => { raw.setEf(Math.max(ef, k)); return raw.searchKnn(queryArrays[i], k, (l) => (l & 1) === 1); }, ids: rawIds },
        { method: 'embedded store', scope: 'principals [group:a] (50 %)', gt: gtEven, one: (i) => st.search({ vector: queries[i], k, scope: scopeA }), ids: storeIds },
        { method: 'embedded store', scope: 'filter {half: true} (50 %)', gt: gtEven, one: (i) => st.search({ vector: queries[i], k, scope: scopeAll, filters: { half: true } }), ids: storeIds },
      ].map((v) => ({ ...v, queries: 0, seconds: 0, results: undefined }));
      for (let round = 0; round < opts.storeRounds; round++) {
        for (const v of round % 2 === 0 ? variants : [...variants].reverse()) {
          const r = await measure(nq, v.one, { minSeconds: perRound, maxPasses: opts.maxPasses });
          v.queries += r.queries;
          v.seconds += r.seconds;
          if (!v.results) v.results = r.results;
        }
      }
      for (const v of variants) {
        const row = { ef, method: v.method, scope: v.scope, recall: recall(v.results.map(v.ids), v.gt, k), qps: v.queries / v.seconds, queries: v.queries };
        out.variants.push(row);
        c.log(`  ef=${ef} ${v.method} [${v.scope}]: recall@${k} ${row.recall.toFixed(3)}, ${row.qps.toFixed(0)} q/s`);
      }
      await st.close();
    }
    // RSS per vector, each in a fresh process.
    const child = (mode, extra = [], data = [dir, opts.efConstruction, skip]) => {
      const args = ['--expose-gc', join(__dirname, 'lib', 'ann-rss.js'), mode, data[0], String(opts.m), String(data[1]), String(data[2]), ...extra];
      return JSON.parse(execFileSync(process.execPath, args, { encoding: 'utf8', env: process.env, stdio: ['ignore', 'pipe', 'inherit'] }).trim().split('\n').pop());
    };
    c.log('store: RSS per vector in child processes …');
    // Several fresh processes per mode, the median reported: identical runs at 9,900 vectors spread 880–2,411 B a vector
    // (2026-12-06: the anonymous mappings of V8's heap and the allocator's arenas moved by 5–7 MB between them).
    const runs = { raw: [], store_grow: [], store_open: [] };
    for (let r = 0; r < Math.max(1, opts.rssRuns); r++) {
      const growDir = mkdtempSync(join(os.tmpdir(), 'rag-bench-ann-grow-'));
      try {
        runs.raw.push(child('raw'));
        runs.store_grow.push(child('store-grow', [growDir]));
        runs.store_open.push(child('store-open', [growDir]));
      } finally {
        rmSync(growDir, { recursive: true, force: true });
      }
    }
    const median = (list) => [...list].sort((a, b) => a.rss_bytes_per_vector - b.rss_bytes_per_vector)[(list.length - 1) >> 1];
    out.rss = Object.fromEntries(Object.entries(runs).map(([mode, list]) => [mode, { ...median(list), runs: list.map((x) => Math.round(x.rss_bytes_per_vector)) }]));
    // At 9,900 vectors a few MB of fixed cost (the store's code pages and SQLite page cache) is hundreds of bytes a
    // vector; a larger synthetic index says what each vector costs once they no longer dominate (one run per mode:
    // ±5 MB is ±50 B a vector at 100k).
    if (opts.rssSynthetic > 0) {
      const data = [`synthetic:${opts.rssSynthetic}:${base.dim}`, Math.min(32, opts.efConstruction), 0];
      c.log(`store: RSS per vector at ${opts.rssSynthetic} synthetic vectors …`);
      const growDir = mkdtempSync(join(os.tmpdir(), 'rag-bench-ann-grow-'));
      try {
        const one = (r) => ({ ...r, runs: [Math.round(r.rss_bytes_per_vector)] });
        out.rss_synthetic = { raw: one(child('raw', [], data)), store_grow: one(child('store-grow', [growDir], data)), store_open: one(child('store-open', [growDir], data)) };
      } finally {
        rmSync(growDir, { recursive: true, force: true });
      }
    }
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
  const rawQps = (ef, filtered) => out.variants.find((v) => v.ef === ef && v.method === (filtered ? 'raw hnswlib-node + JS filter' : 'raw hnswlib-node')).qps;
  const rows = out.variants.map((v) => [v.method, v.scope, `ef=${v.ef}`, v.recall.toFixed(3), v.qps.toFixed(0), `${(v.qps / rawQps(v.ef, v.scope !== 'all' && v.scope !== 'unrestricted')).toFixed(2)}x`, v.queries]);
  const memRows = [];
  for (const [set, label] of [[out.rss, `${n} held-out`], [out.rss_synthetic, `${opts.rssSynthetic} synthetic`]]) {
    if (!set) continue;
    const rawRss = set.raw.rss_bytes_per_vector;
    for (const [name, r] of [
      ['raw hnswlib-node (capacity n)', set.raw],
      ['embedded store, filled from empty (capacity doubling)', set.store_grow],
      ['embedded store, reopened from its checkpoint', set.store_open],
    ]) memRows.push([name, label, r.rss_bytes_per_vector.toFixed(0), r.runs.join(', '), r.heap_used_bytes_per_vector.toFixed(0), r.external_bytes_per_vector.toFixed(0), `${(r.rss_bytes_per_vector / rawRss).toFixed(2)}x`]);
  }
  out.sections = [
    { title: `embedded store vs raw hnswlib-node, same graph (${n} x ${base.dim}${skip ? ', held-out queries' : ''}; recall@${k} vs exact cosine over the permitted vectors)`, head: ['method', 'scope', 'ef', `recall@${k}`, 'q/s', 'x raw', 'queries timed'], rows },
    { title: `resident memory per vector, a fresh process per run (bytes; at ${n}: median of ${out.rss.raw.runs.length} runs, heap and external from the median run)`, head: ['index', 'vectors', 'RSS delta', 'runs', 'V8 heap used', 'external (typed arrays)', 'x raw (medians)'], rows: memRows },
  ];
  return out;
}

async function benchMilvus({ opts, base, baseArrays, queryArrays, nq, k, mopts, add }) {
  let addr;
  try {
    addr = c.assertLoopbackAddress(opts.milvus, 'milvus');
  } catch (e) {
    return { skipped: `skipped: ${e.message}` };
  }
  const hint = 'start it with `bash deploy/local/servers.sh start milvus` to measure it';
  if (!(await c.tcpReachable(addr.host, addr.port))) return { skipped: `skipped: not reachable at ${opts.milvus} (${hint})` };
  const { MilvusClient, DataType } = require('@zilliz/milvus2-sdk-node');
  const client = new MilvusClient({ address: opts.milvus, logLevel: 'error', timeout: 60_000 });
  client.connectPromise?.catch?.(() => {});
  try {
    const health = await client.checkHealth();
    if (health && health.isHealthy === false) return { skipped: `skipped: not healthy at ${opts.milvus} (${JSON.stringify(health.reasons ?? [])})` };
  } catch (e) {
    return { skipped: `skipped: not reachable at ${opts.milvus}: ${e.message} (${hint})` };
  }
  const pid = c.milvusPid();
  const collection = `rag_bench_ann_${process.pid}_${Date.now()}`;
  const check = (what, r) => {
    const status = r?.status ?? r;
    if (status && status.error_code && status.error_code !== 'Success') throw new Error(`milvus ${what}: ${status.error_code} ${status.reason ?? ''}`);
    return r;
  };
  /** Memory the Milvus node reports through the SDK (getMetric system_info → querynode hardware_infos.memory_usage), bytes. */
  const nodeMemory = async () => {
    try {
      const m = await client.getMetric({ request: { metric_type: 'system_info' } });
      const resp = typeof m.response === 'string' ? JSON.parse(m.response) : m.response;
      const qn = (resp?.nodes_info ?? []).find((nd) => /querynode/i.test(nd?.infos?.name ?? nd?.identifier ?? ''));
      const used = Number(qn?.infos?.hardware_infos?.memory_usage);
      return Number.isFinite(used) && used > 0 ? used : undefined;
    } catch {
      return undefined;
    }
  };
  const out = { address: opts.milvus, collection, builds: [] };
  try {
    c.log(`milvus: collection ${collection}, inserting ${base.n} vectors …`);
    check('createCollection', await client.createCollection({
      collection_name: collection,
      fields: [
        { name: 'id', data_type: DataType.Int64, is_primary_key: true, autoID: false },
        { name: 'vector', data_type: DataType.FloatVector, dim: base.dim },
      ],
    }));
    const desc = await client.describeCollection({ collection_name: collection });
    const collectionId = String(desc.collectionID ?? desc.collection_id ?? '');
    const ti = process.hrtime.bigint();
    for (let s = 0; s < base.n; s += 2000) {
      const data = [];
      for (let i = s; i < Math.min(base.n, s + 2000); i++) data.push({ id: i, vector: baseArrays[i] });
      check('insert', await client.insert({ collection_name: collection, data }));
    }
    check('flush', await client.flushSync({ collection_names: [collection] }));
    out.insert_flush_s = Number(process.hrtime.bigint() - ti) / 1e9;
    const variants = [
      { index: 'HNSW', params: { M: opts.m, efConstruction: opts.efConstruction }, search: opts.milvusEf.map((ef) => ({ label: `ef=${ef}`, params: { ef: Math.max(ef, k) } })) },
      { index: 'IVF_SQ8', params: { nlist: opts.milvusNlist }, search: opts.milvusNprobe.map((p) => ({ label: `nprobe=${p}`, params: { nprobe: p } })) },
    ];
    for (const [vi, v] of variants.entries()) {
      if (vi > 0) {
        check('release', await client.releaseCollection({ collection_name: collection }));
        check('dropIndex', await client.dropIndex({ collection_name: collection, field_name: 'vector', index_name: 'vector_idx' }));
        await c.sleep(1000);
      }
      const rssBefore = pid ? c.procTreeRssMiB(pid) : undefined;
      const memBefore = await nodeMemory();
      c.log(`milvus: building ${v.index} ${JSON.stringify(v.params)} …`);
      const tb = process.hrtime.bigint();
      check('createIndex', await client.createIndex({ collection_name: collection, field_name: 'vector', index_name: 'vector_idx', index_type: v.index, metric_type: 'COSINE', params: v.params }));
      const deadline = Date.now() + 300_000;
      for (;;) {
        const p = await client.getIndexBuildProgress({ collection_name: collection, field_name: 'vector', index_name: 'vector_idx' });
        if (Number(p.total_rows) > 0 && Number(p.indexed_rows) >= Number(p.total_rows)) break;
        if (Date.now() > deadline) throw new Error(`milvus ${v.index} build did not finish in 300 s (${p.indexed_rows}/${p.total_rows})`);
        await c.sleep(100);
      }
      const buildS = Number(process.hrtime.bigint() - tb) / 1e9;
      const tl = process.hrtime.bigint();
      check('load', await client.loadCollectionSync({ collection_name: collection }));
      const loadS = Number(process.hrtime.bigint() - tl) / 1e9;
      await c.sleep(1000);
      const build = { index: v.index, params: Object.entries(v.params).map(([a, b]) => `${a}=${b}`).join(' '), build_s: buildS, load_s: loadS };
      try {
        const seg = await client.getQuerySegmentInfo({ collectionName: collection });
        const infos = seg.infos ?? [];
        const mem = infos.reduce((a, s) => a + Number(s.mem_size || 0), 0);
        build.segments = infos.length;
        build.segment_rows = infos.reduce((a, s) => a + Number(s.num_rows || 0), 0);
        build.segment_mem_size_sum = mem; // 0 on Milvus 2.3: not reported
      } catch (e) {
        build.segment_info_error = e.message;
      }
      const es = collectionId ? await c.milvusEntitySize(opts.milvusMetrics, collectionId) : undefined;
      if (es !== undefined) build.loaded_data_bytes_per_vector = es / base.n;
      const memAfter = await nodeMemory();
      if (memBefore !== undefined && memAfter !== undefined) build.getmetric_mem_delta_bytes_per_vector = (memAfter - memBefore) / base.n;
      const rssAfter = pid ? c.procTreeRssMiB(pid) : undefined;
      if (rssBefore !== undefined && rssAfter !== undefined) build.rss_delta_bytes_per_vector = ((rssAfter - rssBefore) * 2 ** 20) / base.n;
      out.builds.push(build);
      c.log(`  built in ${buildS.toFixed(2)} s, loaded in ${loadS.toFixed(2)} s; loaded data ${build.loaded_data_bytes_per_vector?.toFixed(0) ?? 'n/a'} B/vector, getMetric delta ${build.getmetric_mem_delta_bytes_per_vector?.toFixed(0) ?? 'n/a'} B/vector, RSS delta ${build.rss_delta_bytes_per_vector?.toFixed(0) ?? 'n/a'} B/vector`);
      for (const s of v.search) {
        const search = (vectors) => client.search({ collection_name: collection, vectors, limit: k, metric_type: 'COSINE', params: s.params, output_fields: ['id'], consistency_level: 'Bounded' });
        const r = await measure(
          nq,
          async (i) => {
            const res = check('search', await search([queryArrays[i]]));
            const hits = Array.isArray(res.results[0]) ? res.results[0] : res.results;
            return hits.map((x) => Number(x.id));
          },
          mopts,
        );
        // The same queries in one call (nq = all queries): the per-call overhead shared, the server's search speed.
        let batchQueries = 0;
        const tb2 = process.hrtime.bigint();
        let batchS = 0;
        for (let pass = 0; pass < opts.maxPasses; pass++) {
          check('search', await search(queryArrays));
          batchQueries += nq;
          batchS = Number(process.hrtime.bigint() - tb2) / 1e9;
          if (batchS >= opts.minSeconds) break;
        }
        add({ method: `Milvus ${v.index} cosine`, param: s.label, ...r, batch_qps: batchQueries / batchS });
      }
    }
  } catch (e) {
    c.log(`milvus: failed: ${e.stack || e.message}`);
    out.error = e.message;
    out.skipped = `failed part-way: ${e.message}`;
  } finally {
    try {
      await client.dropCollection({ collection_name: collection });
      c.log(`milvus: dropped ${collection}`);
    } catch (e) {
      c.log(`milvus: could not drop ${collection}: ${e.message}`);
    }
    try {
      await client.closeConnection();
    } catch {
      /* ignore */
    }
  }
  return out;
}

/** The local Milvus server's pid (from deploy/local's pid file), to read its RSS; undefined otherwise. */

module.exports = { run, HELP };
