'use strict';
// bench hnsw-persist: what persisting the embedded vector store costs per ingested document, old design (the graph
// rewritten on every flush) vs checkpoints (SQLite as the write-ahead log, the graph rewritten once enough changed),
// at two store sizes, plus the time to open after a crash (catch-up vs rebuild).
const { cpSync, existsSync, mkdtempSync, readFileSync, rmSync, statSync } = require('node:fs');
const os = require('node:os');
const { join, resolve } = require('node:path');
const c = require('./lib/common');

const spec = {
  sizes: { type: 'intlist', default: [10_000, 50_000], help: 'records in the store before each measured batch' },
  dim: { type: 'int', default: 384, help: 'vector dimension' },
  chunks: { type: 'int', default: 5, help: 'chunks (vectors) per document' },
  'old-docs': { type: 'int', default: 10, help: 'documents per batch for the old design (each one rewrites the graph)' },
  'checkpoint-ops': { type: 'int', default: 10_000, help: 'RAG_HNSW_CHECKPOINT_OPS of the new design' },
  'checkpoint-fraction': { type: 'number', default: 0.1, help: 'RAG_HNSW_CHECKPOINT_FRACTION of the new design' },
  'crash-ops': { type: 'intlist', default: [1000, 9995], help: 'un-checkpointed adds before a simulated crash (at the largest size)' },
  rebuild: { type: 'bool', default: true, help: 'also time the full rebuild (what the old design did after a crash)' },
  'max-seconds': { type: 'int', default: 600, help: 'hard limit for the whole run' },
};

const HELP = `usage: npm run bench -- hnsw-persist [options]

Embedded vector store (EmbeddedHnswVectorStore from dist/, or RAG_DIST_DIR), random unit vectors of --dim, one document
= --chunks vectors, ingested as the indexer does it (upsert, then flush). For each size a store is filled once (bulk
upserts, one close), copied, and a batch of documents is ingested into each copy:
  old  checkpointOps=1, checkpointFraction=0: every flush rewrites the graph file — the design before checkpoints
       (which also rewrote index.hnsw on every flush; it did not fsync, so its time was a little lower than this)
  new  the defaults: a checkpoint once max(checkpointOps, fraction x records) adds+deletes accumulated; the batch is
       sized to end with exactly one checkpoint, so its bytes/document include the amortised checkpoint
Bytes come from /proc/self/io of this process (wchar: bytes handed to write(); write_bytes: bytes sent to storage).
Then, at the largest size: N un-checkpointed adds, a simulated crash (the SQLite handle closed, no checkpoint), and
the time of the next open (load + catch-up), vs a full rebuild from SQLite (the old design's open after a crash).`;

function io() {
  const text = readFileSync('/proc/self/io', 'utf8');
  const get = (k) => Number(new RegExp(`^${k}:\\s*(\\d+)`, 'm').exec(text)?.[1] ?? NaN);
  return { wchar: get('wchar'), write_bytes: get('write_bytes') };
}

const MiB = 2 ** 20;

async function run(argv) {
  const opts = c.parseArgs(argv, spec);
  if (opts.help) return void process.stdout.write(c.usage(HELP, spec));
  const stop = c.watchdog(opts.maxSeconds, 'hnsw-persist');
  const started = new Date();
  const hw = c.hardware();
  if (!(opts.checkpointFraction >= 0 && opts.checkpointFraction < 1)) throw new Error('--checkpoint-fraction must be in [0, 1) here');
  // RAG_DIST_DIR (as for the tracing bench): a private build inside the repository instead of dist/.
  const distDir = process.env.RAG_DIST_DIR ? resolve(c.root, process.env.RAG_DIST_DIR) : c.distDir;
  const fromDist = (rel) => {
    const file = join(distDir, rel);
    if (!existsSync(file)) throw new Error(`${file} is missing: run \`npm run build\` first`);
    return require(file);
  };
  const { EmbeddedHnswVectorStore } = fromDist('libs/adapters/src/embedded-hnsw/index.js');
  const platform = fromDist('libs/platform/src/index.js');
  if (!process.env.RAG_LOG_LEVEL) platform.setLogLevel('warn');
  const sizes = [...opts.sizes].sort((a, b) => a - b);
  const { dim, chunks } = opts;
  const rand = c.rng(7);
  const vector = () => {
    const v = new Float32Array(dim);
    let n = 0;
    for (let i = 0; i < dim; i++) {
      v[i] = rand() * 2 - 1;
      n += v[i] * v[i];
    }
    n = Math.sqrt(n);
    for (let i = 0; i < dim; i++) v[i] /= n;
    return v;
  };
  let nextDoc = 0;
  const doc = () => {
    const d = `bench:${nextDoc++}`;
    return Array.from({ length: chunks }, (_, i) => ({ chunk_id: `${d}#v1#${i}`, document_id: d, tenant: 'default', version: 1, acl: ['*'], metadata: {}, vector: vector() }));
  };
  const root = mkdtempSync(join(os.tmpdir(), 'rag-bench-hnsw-persist-'));
  const modelId = 'bench-random';
  const open = (dir, o = {}) => new EmbeddedHnswVectorStore({ dir, modelId, dim, persistIntervalMs: 0, synchronous: 'NORMAL', ...o });
  const crash = (s) => s.db.close(); // a process death: committed SQLite transactions stay, no checkpoint is written
  const designs = {
    old: { checkpointOps: 1, checkpointFraction: 0 },
    new: { checkpointOps: opts.checkpointOps, checkpointFraction: opts.checkpointFraction },
  };
  const rows = [];
  const results = [];
  const crashRows = [];
  try {
    // Fill once, bulk (no flush per document), snapshotting each size.
    const fill = join(root, 'fill');
    let store = open(fill, designs.new);
    let records = 0;
    const snapshots = {};
    for (const size of sizes) {
      const t0 = Date.now();
      while (records < size) {
        const batch = [];
        while (batch.length < 500 && records + batch.length < size) batch.push(...doc());
        await store.upsert(batch);
        records += batch.length;
      }
      await store.close();
      snapshots[size] = join(root, `snap-${size}`);
      cpSync(fill, snapshots[size], { recursive: true });
      c.log(`filled ${size} records (${((Date.now() - t0) / 1000).toFixed(1)} s)`);
      if (size !== sizes[sizes.length - 1]) store = open(fill, designs.new);
    }
    rmSync(fill, { recursive: true, force: true });

    for (const size of sizes) {
      // New design: enough documents for one checkpoint at the end of the batch: T adds are due once
      // T >= max(ops, f × (size + T)), i.e. T >= max(ops, f × size / (1 - f)).
      const due = Math.max(opts.checkpointOps, Math.ceil((opts.checkpointFraction * size) / (1 - opts.checkpointFraction)));
      const newDocs = Math.ceil(due / chunks);
      const order = size === sizes[0] ? ['old', 'new'] : ['new', 'old'];
      for (const design of order) {
        const docs = design === 'old' ? opts.oldDocs : newDocs;
        const dir = join(root, `${design}-${size}`);
        cpSync(snapshots[size], dir, { recursive: true });
        const s = open(dir, designs[design]);
        c.gc();
        const before = io();
        const t0 = process.hrtime.bigint();
        for (let i = 0; i < docs; i++) {
          await s.upsert(doc());
          await s.flush();
        }
        const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
        const after = io();
        const r = {
          design,
          size,
          docs,
          seconds,
          docs_per_s: docs / seconds,
          wchar_per_doc: (after.wchar - before.wchar) / docs,
          write_bytes_per_doc: (after.write_bytes - before.write_bytes) / docs,
          graph_bytes_per_record: statSync(join(s.storeDir, 'index.hnsw')).size / (await s.count()),
        };
        results.push(r);
        c.log(`${design} @ ${size}: ${docs} docs in ${seconds.toFixed(1)} s, ${(r.wchar_per_doc / MiB).toFixed(2)} MiB/doc`);
        if (design === 'new' && size === sizes[sizes.length - 1]) {
          // Crash after N un-checkpointed adds; time the next open (load + catch-up).
          let live = s;
          for (const n of opts.crashOps) {
            for (let added = 0; added < n; added += chunks) await live.upsert(doc());
            crash(live);
            const t1 = process.hrtime.bigint();
            live = open(dir, designs.new);
            const ms = Number(process.hrtime.bigint() - t1) / 1e6;
            crashRows.push({ what: `open after a crash, ${n} un-checkpointed adds (catch-up)`, records: await live.count(), ms });
            c.log(`crash with ${n} un-checkpointed adds: open ${ms.toFixed(0)} ms`);
            await live.close(); // checkpoint, so the next N counts from zero
            live = open(dir, designs.new);
          }
          if (opts.rebuild) {
            const records = await live.count();
            await live.close();
            rmSync(join(live.storeDir, 'index.hnsw'));
            const t1 = process.hrtime.bigint();
            live = open(dir, designs.new);
            const ms = Number(process.hrtime.bigint() - t1) / 1e6;
            crashRows.push({ what: 'open after a crash, old design (stale index: full rebuild)', records, ms });
            c.log(`rebuild of ${records}: ${ms.toFixed(0)} ms`);
          }
          await live.close();
        } else {
          await s.close();
        }
        rmSync(dir, { recursive: true, force: true });
      }
    }
  } finally {
    rmSync(root, { recursive: true, force: true });
    stop();
  }

  const get = (design, size) => results.find((r) => r.design === design && r.size === size);
  const table = results.map((r) => [
    r.design,
    r.size,
    r.docs,
    c.fmt(r.docs_per_s, 1),
    c.fmt(r.wchar_per_doc / 1024, 1),
    c.fmt(r.write_bytes_per_doc / 1024, 1),
    r.design === 'new' && opts.checkpointFraction > 0 ? c.fmt((chunks * r.graph_bytes_per_record) / opts.checkpointFraction / 1024, 1) : '–',
  ]);
  const ratios = sizes.map((size) => {
    const o = get('old', size);
    const n = get('new', size);
    return [size, `${c.fmt(o.wchar_per_doc / n.wchar_per_doc, 1)}×`, `${c.fmt(n.docs_per_s / o.docs_per_s, 1)}×`];
  });
  const [small, large] = [sizes[0], sizes[sizes.length - 1]];
  const growth = ['old', 'new'].map((d) => [
    d,
    `${c.fmt(get(d, large).wchar_per_doc / get(d, small).wchar_per_doc, 2)}×`,
    `${c.fmt(get(d, large).docs_per_s / get(d, small).docs_per_s, 2)}×`,
  ]);
  const rebuild = crashRows.find((r) => r.what.includes('rebuild'));
  const sections = [
    { title: `Ingestion, one document = ${chunks} vectors of dim ${dim}, upsert + flush per document`, head: ['design', 'records', 'docs', 'docs/s', 'KiB written/doc (wchar)', 'KiB to storage/doc (write_bytes)', 'graph KiB/doc bound'], rows: table },
    { title: 'old / new per size', head: ['records', 'bytes/doc old÷new', 'docs/s new÷old'], rows: ratios },
    { title: `growth from ${small} to ${large} records (1.00× = cost independent of the corpus)`, head: ['design', 'bytes/doc', 'docs/s'], rows: growth },
    {
      title: 'Open after a crash',
      head: ['what', 'records', 'ms', 'vs rebuild'],
      rows: crashRows.map((r) => [r.what, r.records, c.fmt(r.ms, 0), rebuild ? `${c.fmt(r.ms / rebuild.ms, 3)}×` : '–']),
    },
  ];
  c.report({
    bench: 'hnsw-persist',
    hw,
    started,
    sections,
    notes: [
      'old = checkpointOps 1 / fraction 0 (a graph rewrite + fsync per flush); new = checkpoints; same code, same data, one process',
      `new batches end with exactly one checkpoint (max(${opts.checkpointOps}, ${opts.checkpointFraction} × records) ops), so their bytes/doc are amortised`,
      `graph KiB/doc bound = ${chunks} × graph file bytes per record / fraction: the most a checkpoint costs per document at any size; below ${Math.ceil(opts.checkpointOps / (opts.checkpointFraction || 1))} records checkpoints come every ${opts.checkpointOps} ops, so their cost per document still grows with the store until it reaches the bound`,
      'write_bytes can read 0 or lag where the file system does not account it per process; wchar counts every write() of SQLite and hnswlib',
      'SQLite synchronous NORMAL (the default of RAG_SQLITE_SYNCHRONOUS); random unit vectors (the hardest case for HNSW inserts)',
    ],
    json: { options: opts, results, crash: crashRows },
  });
}

module.exports = { run };
