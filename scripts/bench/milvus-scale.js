'use strict';
// bench milvus-scale: the distributed mode's vector store at scale (issue 13's Milvus targets). Vectors go in through
// the platform's own MilvusVectorStore (upserts with tenant, ACL and metadata, as the indexer writes
// them) in steps (default 10k and 100k; `--sizes 100000,1000000` for the 1M target); at each step, for HNSW and
// then IVF_SQ8 over the same rows: recall@10 against exact cosine search, latency (P50/P95/P99) of searches sent at a
// fixed rate (default 50 per second, open loop: a late answer does not delay the next request), and the memory the
// loaded index costs per vector against the vectors' float32 bytes.
const c = require('./lib/common');

const spec = {
  sizes: { type: 'intlist', default: [10_000, 100_000], help: 'collection sizes in vectors (steps; e.g. 100000,1000000)' },
  dim: { type: 'int', default: 384, help: 'vector dimension (384: bge-small-en-v1.5, the hashing embedder)' },
  latent: { type: 'int', default: 32, help: 'intrinsic dimension of the synthetic vectors (see --help)' },
  clusters: { type: 'int', default: 1000, help: 'topics (mixture components) of the synthetic vectors' },
  queries: { type: 'int', default: 100, help: 'held-out query vectors (recall and the paced load draw from them)' },
  k: { type: 'int', default: 100, help: 'hits per search (the retriever asks for 100 dense candidates; recall@10 is over the first 10)' },
  rates: { type: 'intlist', default: [50], help: 'searches per second of the paced load, one after the other (e.g. 10,25,50)' },
  unfiltered: { type: 'bool', default: false, help: 'also time the same searches without the tenant/ACL expression (the SDK directly): what the filter costs' },
  duration: { type: 'int', default: 20, help: 'seconds of paced load per index and step' },
  index: { type: 'list', default: ['HNSW', 'IVF_SQ8'], help: 'index types to measure at each step' },
  m: { type: 'int', default: 16, help: 'HNSW M (RAG_HNSW_M default)' },
  'ef-construction': { type: 'int', default: 200, help: 'HNSW efConstruction (RAG_HNSW_EF_CONSTRUCTION default)' },
  ef: { type: 'int', default: 128, help: 'HNSW ef (RAG_HNSW_EF default; raised to k)' },
  nlist: { type: 'int', default: 1024, help: 'IVF_SQ8 nlist (RAG_MILVUS_NLIST default)' },
  nprobe: { type: 'int', default: 16, help: 'IVF_SQ8 nprobe (RAG_MILVUS_NPROBE default)' },
  seed: { type: 'int', default: 13, help: 'seed of the synthetic vectors' },
  milvus: { type: 'string', default: process.env.RAG_MILVUS_ADDRESS || '127.0.0.1:19530', help: 'Milvus address (RAG_MILVUS_ADDRESS)' },
  'milvus-metrics': { type: 'string', default: 'http://127.0.0.1:9091/metrics', help: "Milvus health port's Prometheus endpoint (entity_size)" },
  keep: { type: 'bool', default: false, help: 'keep the collection (default: dropped at the end)' },
  reuse: { type: 'string', default: '', help: 'measure a collection a --keep run left (its name; its rows must be the first --sizes vectors of the same --seed/--dim/--latent/--clusters); no upserts' },
  'max-seconds': { type: 'int', default: 7200, help: 'hard limit for the whole run' },
};

const HELP = `usage: npm run bench -- milvus-scale [options]

Needs Milvus (\`bash deploy/local/servers.sh start milvus\`) and \`npm run build\`. A throw-away collection
rag_bench_scale_<pid> is filled through MilvusVectorStore (dist/) and dropped at the end (--keep keeps it).

The vectors are synthetic, deterministic per --seed: text embeddings are not isotropic (their neighbourhoods live
on a low-dimensional manifold, grouped by topic), and uniform random vectors in 384 dimensions would make every
approximate index look worse than on real data; so each vector is a random linear image (384 × --latent) of a point
drawn from a mixture of --clusters Gaussians in --latent dimensions, plus small isotropic noise, normalised. Queries
are drawn from the same mixture and are not in the collection. Every row is tenant "t1", ACL ["*"] (public), so the
platform's filter expression (tenant and array_contains_any on the ACL) runs on every search but excludes nothing.

Per step: upsert up to the size, flush, then per index type: (re)build the index over the whole collection, wait
until every row is indexed, load; recall@10 of --queries searches one at a time; then --rate searches per second
for --duration seconds, each timed from when it was due (open loop); then the Milvus processes' RSS with the
collection loaded minus released, per vector, against 4·dim bytes of float32 (noisy: the allocator keeps some
memory), and milvus_querynode_entity_size (the raw fields loaded, without the index).`;

/** Standard normal pairs (Box–Muller) from the seeded PRNG. */
function gaussian(rand) {
  let spare;
  return () => {
    if (spare !== undefined) {
      const s = spare;
      spare = undefined;
      return s;
    }
    let u = 0;
    while (u === 0) u = rand();
    const v = rand();
    const r = Math.sqrt(-2 * Math.log(u));
    spare = r * Math.sin(2 * Math.PI * v);
    return r * Math.cos(2 * Math.PI * v);
  };
}

/** The synthetic vector source: mixture in `latent` dims, random projection to `dim`, noise, unit length. */
function vectorSource({ dim, latent, clusters, seed }) {
  const g = gaussian(c.rng(seed));
  const proj = new Float32Array(dim * latent);
  for (let i = 0; i < proj.length; i++) proj[i] = g() / Math.sqrt(latent);
  const centers = new Float32Array(clusters * latent);
  for (let i = 0; i < centers.length; i++) centers[i] = g();
  const z = new Float32Array(latent);
  return (out, offset, streamRand) => {
    const cl = Math.floor(streamRand.u() * clusters);
    for (let j = 0; j < latent; j++) z[j] = centers[cl * latent + j] + 0.6 * streamRand.n();
    let norm = 0;
    for (let d = 0; d < dim; d++) {
      let s = 0.03 * streamRand.n();
      const row = d * latent;
      for (let j = 0; j < latent; j++) s += proj[row + j] * z[j];
      out[offset + d] = s;
      norm += s * s;
    }
    norm = Math.sqrt(norm) || 1;
    for (let d = 0; d < dim; d++) out[offset + d] /= norm;
  };
}

function stream(seed) {
  const u = c.rng(seed);
  return { u, n: gaussian(u) };
}

/** Exact top-10 (cosine = dot on unit vectors) of each query over base[0, n), snapshotted at every size. */
function groundTruth(base, dim, queries, nq, sizes) {
  const K = 10;
  const topIds = Array.from({ length: nq }, () => new Int32Array(K).fill(-1));
  const topScores = Array.from({ length: nq }, () => new Float64Array(K).fill(-Infinity));
  const out = new Map();
  let from = 0;
  for (const size of [...sizes].sort((a, b) => a - b)) {
    for (let i = from; i < size; i++) {
      const bo = i * dim;
      for (let q = 0; q < nq; q++) {
        const qo = q * dim;
        let s = 0;
        for (let d = 0; d < dim; d++) s += base[bo + d] * queries[qo + d];
        const sc = topScores[q];
        if (s <= sc[K - 1]) continue;
        let p = K - 1;
        while (p > 0 && sc[p - 1] < s) {
          sc[p] = sc[p - 1];
          topIds[q][p] = topIds[q][p - 1];
          p--;
        }
        sc[p] = s;
        topIds[q][p] = i;
      }
    }
    from = size;
    out.set(size, topIds.map((t) => Array.from(t)));
  }
  return out;
}


async function run(argv) {
  const opts = c.parseArgs(argv, spec);
  if (opts.help) return void process.stdout.write(c.usage(HELP, spec));
  const stop = c.watchdog(opts.maxSeconds, 'milvus-scale');
  const started = new Date();
  const hw = c.hardware();
  const sizes = [...opts.sizes].sort((a, b) => a - b);
  if (!sizes.length || sizes.some((s) => !(s > 0))) throw new Error('--sizes: positive sizes, e.g. 100000,1000000');
  const indexes = opts.index.map((s) => s.toUpperCase());
  for (const ix of indexes) if (ix !== 'HNSW' && ix !== 'IVF_SQ8') throw new Error(`--index: HNSW or IVF_SQ8, not ${ix}`);
  const addr = c.assertLoopbackAddress(opts.milvus, 'milvus');
  if (!(await c.tcpReachable(addr.host, addr.port))) throw new Error(`Milvus is not reachable at ${opts.milvus}: start it with \`bash deploy/local/servers.sh start milvus\``);
  const { MilvusVectorStore } = c.requireDist('libs/adapters/src/milvus/index.js');
  const { MilvusClient } = require('@zilliz/milvus2-sdk-node');
  const client = new MilvusClient({ address: opts.milvus, logLevel: 'error', timeout: 600_000 });
  const check = (what, r) => {
    const status = r?.status ?? r;
    if (status && status.error_code && status.error_code !== 'Success') throw new Error(`milvus ${what}: ${status.error_code} ${status.reason ?? ''}`);
    return r;
  };
  const dim = opts.dim;
  const top = sizes[sizes.length - 1];
  const collection = opts.reuse || `rag_bench_scale_${process.pid}`;
  if (opts.reuse && sizes.length !== 1) throw new Error('--reuse measures one collection as it is: give its row count as the only --sizes');
  const pid = c.milvusPid();

  c.log(`generating ${top} + ${opts.queries} vectors (dim ${dim}, latent ${opts.latent}, ${opts.clusters} clusters) …`);
  const tg = Date.now();
  const make = vectorSource({ dim, latent: opts.latent, clusters: opts.clusters, seed: opts.seed });
  const base = new Float32Array(top * dim);
  const bs = stream(opts.seed + 1);
  for (let i = 0; i < top; i++) make(base, i * dim, bs);
  const queries = new Float32Array(opts.queries * dim);
  const qs = stream(opts.seed + 2);
  for (let q = 0; q < opts.queries; q++) make(queries, q * dim, qs);
  c.log(`  ${((Date.now() - tg) / 1000).toFixed(1)} s; exact top-10 of ${opts.queries} queries at each size …`);
  const tgt = Date.now();
  const truth = groundTruth(base, dim, queries, opts.queries, sizes);
  const gtSeconds = (Date.now() - tgt) / 1000;
  c.log(`  ${gtSeconds.toFixed(1)} s`);

  const storeFor = (indexType) =>
    new MilvusVectorStore({
      address: opts.milvus,
      modelId: 'bench-scale',
      dim,
      indexType,
      m: opts.m,
      efConstruction: opts.efConstruction,
      ef: opts.ef,
      nlist: opts.nlist,
      nprobe: opts.nprobe,
      collectionName: collection,
      adminTimeoutMs: 3_600_000,
      timeoutMs: 60_000,
    });
  const scope = { tenant: 't1', principals: ['g1'] };
  const rows = [];
  let writer = storeFor(indexes[0]);
  let currentIndex = indexes[0];
  let filled = 0;
  let collectionId;
  if (opts.reuse) {
    const stats = await client.getCollectionStatistics({ collection_name: collection });
    const n = Number(stats.data?.row_count ?? stats.stats?.find?.((x) => x.key === 'row_count')?.value);
    if (n !== sizes[0]) throw new Error(`--reuse ${collection}: it holds ${n} rows, --sizes says ${sizes[0]}`);
    const d = await client.describeIndex({ collection_name: collection, field_name: 'vector' });
    currentIndex = d.index_descriptions?.[0]?.params?.find?.((x) => x.key === 'index_type')?.value ?? currentIndex;
    filled = sizes[0];
    c.log(`reusing ${collection}: ${n} rows, index ${currentIndex}`);
  }
  try {
    for (const size of sizes) {
      // 1. Fill through the platform's adapter (the index the collection has keeps building meanwhile).
      const ti = Date.now();
      if (size > filled) c.log(`step ${size}: upserting vectors ${filled}–${size} …`);
      for (let s = filled; s < size; s += 2000) {
        const batch = [];
        for (let i = s; i < Math.min(size, s + 2000); i++) {
          batch.push({
            chunk_id: `c${i}`,
            document_id: `d${Math.floor(i / 4)}`,
            tenant: 't1',
            version: 1,
            acl: ['*'],
            metadata: { source: 'bench' },
            vector: base.subarray(i * dim, (i + 1) * dim),
          });
        }
        await writer.upsert(batch);
        if ((s - filled) % 100_000 === 0 && s > filled) c.log(`  ${s} upserted (${Math.round((s - filled) / ((Date.now() - ti) / 1000))} vectors/s)`);
      }
      const reused = size === filled;
      if (!reused) await writer.sealSegments();
      const insertS = reused ? undefined : (Date.now() - ti) / 1000;
      if (!reused) c.log(`  upsert + flush ${insertS.toFixed(1)} s (${Math.round((size - filled) / insertS)} vectors/s)`);
      filled = size;
      if (collectionId === undefined) {
        const desc = await client.describeCollection({ collection_name: collection });
        collectionId = String(desc.collectionID ?? desc.collection_id ?? '');
      }

      for (const indexType of indexes) {
        // 2. The index over every row: rebuilt when the type changes, otherwise waited for (segments sealed by the
        //    flush get their index built in the background).
        const tb = Date.now();
        if (indexType !== currentIndex) {
          c.log(`  switching the index to ${indexType} …`);
          check('release', await client.releaseCollection({ collection_name: collection }));
          const d = await client.describeIndex({ collection_name: collection, field_name: 'vector' });
          for (const ix of d.index_descriptions ?? []) check('dropIndex', await client.dropIndex({ collection_name: collection, field_name: 'vector', index_name: ix.index_name }));
          await c.sleep(2000);
          const params = indexType === 'HNSW' ? { M: opts.m, efConstruction: opts.efConstruction } : { nlist: opts.nlist };
          check('createIndex', await client.createIndex({ collection_name: collection, field_name: 'vector', index_name: 'vector_idx', index_type: indexType, metric_type: 'COSINE', params }));
          currentIndex = indexType;
        }
        c.log(`  ${indexType}: waiting for the index over ${size} rows …`);
        for (let last = -1; ; ) {
          const p = await client.getIndexBuildProgress({ collection_name: collection, field_name: 'vector', index_name: 'vector_idx' });
          const done = Number(p.indexed_rows);
          if (Number(p.total_rows) >= size && done >= Number(p.total_rows)) break;
          if (done !== last && Date.now() - tb > 30_000) c.log(`    ${done}/${p.total_rows} indexed`);
          last = done;
          await c.sleep(2000);
        }
        const buildS = (Date.now() - tb) / 1000;
        const tl = Date.now();
        check('load', await client.loadCollectionSync({ collection_name: collection }));
        const loadS = (Date.now() - tl) / 1000;
        await c.sleep(3000);
        const store = storeFor(indexType);
        try {
          // 3. Recall@10, one search at a time (the first 10 of k).
          const gt = truth.get(size);
          let hit = 0;
          const serial = [];
          for (let q = 0; q < opts.queries; q++) {
            const t0 = performance.now();
            const hits = await store.search({ vector: queries.subarray(q * dim, (q + 1) * dim), k: opts.k, scope });
            serial.push(performance.now() - t0);
            const want = new Set(gt[q].map((i) => `c${i}`));
            for (const h of hits.slice(0, 10)) if (want.has(h.chunk_id)) hit++;
          }
          const recall = hit / (opts.queries * 10);
          // 4. Paced load: one search every 1000/rate ms, each timed from when it was due.
          const paced = [];
          const variants = [{ filter: 'tenant+ACL', search: (v) => store.search({ vector: v, k: opts.k, scope }) }];
          if (opts.unfiltered) {
            const params = indexType === 'HNSW' ? { ef: Math.max(opts.ef, opts.k) } : { nprobe: opts.nprobe };
            variants.push({
              filter: 'none',
              search: async (v) =>
                check('search', await client.search({ collection_name: collection, vector: Array.from(v), limit: opts.k, params, metric_type: 'COSINE', output_fields: ['chunk_id'], consistency_level: 'Bounded' })),
            });
          }
          for (const variant of variants) {
            for (const rate of opts.rates) {
              c.log(`  ${indexType}: recall@10 ${recall.toFixed(3)}; ${rate} searches/s for ${opts.duration} s, filter ${variant.filter} …`);
              const n = rate * opts.duration;
              const interval = 1000 / rate;
              const lat = [];
              let failed = 0;
              const t0 = performance.now();
              const pending = [];
              for (let i = 0; i < n; i++) {
                const due = t0 + i * interval;
                const wait = due - performance.now();
                if (wait > 0) await c.sleep(wait);
                const q = i % opts.queries;
                pending.push(
                  variant.search(queries.subarray(q * dim, (q + 1) * dim)).then(
                    () => lat.push(performance.now() - due),
                    () => failed++,
                  ),
                );
              }
              await Promise.all(pending);
              const p = { filter: variant.filter, rate, achieved_rate: n / ((performance.now() - t0) / 1000), searches: n, failed, ...c.latencySummary(lat) };
              paced.push(p);
              c.log(`    P50/P95/P99 ${c.fmt(p.p50)}/${c.fmt(p.p95)}/${c.fmt(p.p99)} ms at ${p.achieved_rate.toFixed(1)}/s (${failed} failed)`);
            }
          }
          // 5. Memory of the loaded collection: Milvus RSS loaded minus released.
          const rssLoaded = pid ? c.procTreeRssMiB(pid) : undefined;
          const es = collectionId ? await c.milvusEntitySize(opts.milvusMetrics, collectionId) : undefined;
          check('release', await client.releaseCollection({ collection_name: collection }));
          await c.sleep(5000);
          const rssReleased = pid ? c.procTreeRssMiB(pid) : undefined;
          const rssPerVector = rssLoaded !== undefined && rssReleased !== undefined ? ((rssLoaded - rssReleased) * 2 ** 20) / size : undefined;
          const row = {
            size,
            index: indexType,
            params: indexType === 'HNSW' ? `M=${opts.m} efC=${opts.efConstruction} ef=${Math.max(opts.ef, opts.k)}` : `nlist=${opts.nlist} nprobe=${opts.nprobe}`,
            insert_s: insertS,
            build_wait_s: buildS,
            load_s: loadS,
            recall_at_10: recall,
            serial_ms: c.latencySummary(serial),
            paced,
            rss_loaded_mib: rssLoaded,
            rss_released_mib: rssReleased,
            rss_bytes_per_vector: rssPerVector,
            rss_vs_float32: rssPerVector !== undefined ? rssPerVector / (4 * dim) : undefined,
            entity_bytes_per_vector: es !== undefined ? es / size : undefined,
          };
          rows.push(row);
          c.log(`  ${indexType}: RSS ${c.fmt(rssPerVector, 0)} B/vector (${c.fmt(row.rss_vs_float32, 2)}× float32)`);
        } finally {
          await store.close();
        }
      }
      // the next step writes into the collection; it needs to be loaded (and indexed as the first type again)
      if (size !== top) {
        if (currentIndex !== indexes[0]) {
          const d = await client.describeIndex({ collection_name: collection, field_name: 'vector' });
          for (const ix of d.index_descriptions ?? []) check('dropIndex', await client.dropIndex({ collection_name: collection, field_name: 'vector', index_name: ix.index_name }));
          await c.sleep(2000);
          const p = indexes[0] === 'HNSW' ? { M: opts.m, efConstruction: opts.efConstruction } : { nlist: opts.nlist };
          check('createIndex', await client.createIndex({ collection_name: collection, field_name: 'vector', index_name: 'vector_idx', index_type: indexes[0], metric_type: 'COSINE', params: p }));
          currentIndex = indexes[0];
        }
        check('load', await client.loadCollectionSync({ collection_name: collection }));
        await writer.close();
        writer = storeFor(indexes[0]);
      }
    }
  } finally {
    await writer.close().catch(() => {});
    if (!opts.keep && !opts.reuse) await client.dropCollection({ collection_name: collection }).catch(() => {});
    client.closeConnection();
    stop();
  }

  const sections = [
    {
      title: `Milvus through MilvusVectorStore (filter tenant+ACL) or the SDK directly (filter none): k=${opts.k}, searches sent at a fixed rate (open loop) for ${opts.duration} s each`,
      head: ['vectors', 'index', 'params', 'upsert s', 'index wait s', 'recall@10', 'serial P50 ms', 'filter', 'rate /s', 'achieved /s', 'P50/P95/P99 ms', 'failed', 'RSS B/vector', '× float32', 'entity B/vector'],
      rows: rows.flatMap((r) =>
        r.paced.map((p) => [
          r.size.toLocaleString('en-US'),
          r.index,
          r.params,
          c.fmt(r.insert_s, 1),
          c.fmt(r.build_wait_s, 1),
          c.fmt(r.recall_at_10, 3),
          c.fmt(r.serial_ms.p50, 1),
          p.filter,
          p.rate,
          c.fmt(p.achieved_rate, 1),
          `${c.fmt(p.p50, 1)}/${c.fmt(p.p95, 1)}/${c.fmt(p.p99, 1)}`,
          p.failed,
          c.fmt(r.rss_bytes_per_vector, 0),
          c.fmt(r.rss_vs_float32, 2),
          c.fmt(r.entity_bytes_per_vector, 0),
        ]),
      ),
    },
  ];
  const notes = [
    `synthetic vectors (see --help): dim ${dim}, latent ${opts.latent}, ${opts.clusters} clusters, seed ${opts.seed}; exact top-10 of ${opts.queries} held-out queries computed here in ${gtSeconds.toFixed(0)} s`,
    'upsert s: the platform adapter\'s upserts (its default rows per request) plus a flush; index wait s: until every row is indexed (a type switch rebuilds over all rows)',
    'RSS B/vector: the Milvus processes loaded minus released, per vector (allocators keep memory: a lower bound of what the index holds); float32 is 4·dim bytes',
    `this process generated the load on the same ${hw.nproc} cores as Milvus`,
  ];
  c.report({ bench: 'milvus-scale', hw, started, sections, notes, json: { options: { ...opts }, rows } });
}

module.exports = { run, HELP, groundTruth, vectorSource };
