'use strict';
// bench keyword-writes: bytes the embedded keyword index writes per chunk, by WAL checkpoint interval and page size,
// on an existing index (what the keyword writer does at 100k+ chunks) and on an empty one (the first 10k).
const { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } = require('node:fs');
const os = require('node:os');
const { join, resolve } = require('node:path');
const c = require('./lib/common');
const { reidentifiedRuns } = require('./lib/keyword-source');

const spec = {
  from: { type: 'string', default: undefined, help: 'keyword.db of an existing index (e.g. <folder>/keyword.db after `bench scale --data-dir <folder>`); its chunks are also the ones written' },
  chunks: { type: 'int', default: 30_000, help: 'chunk rows written into each copy (whole documents, new ids)' },
  run: { type: 'int', default: 80, help: 'chunks per upsert (one transaction, as the keyword writer gets them from the indexer)' },
  variants: { type: 'string', default: '4:4096,256:4096,256:2048,256:1024', help: 'checkpoint MiB : page size, comma-separated (4 MiB ≈ SQLite\'s default of 1,000 pages)' },
  empty: { type: 'bool', default: true, help: 'also write the same chunks into an empty index per variant' },
  'max-seconds': { type: 'int', default: 1800, help: 'hard limit for the whole run' },
};

const HELP = `usage: npm run bench -- keyword-writes --from <keyword.db> [options]

The embedded keyword index (EmbeddedBm25KeywordIndex from dist/, or RAG_DIST_DIR) as the keyword writer opens it (no
term cache, one transaction per upsert, synchronous NORMAL). For each variant (WAL checkpoint interval, page size) the
--from index is copied and rebuilt with that page size (VACUUM, so every copy starts equally compact), then --chunks
chunk rows of --from, re-identified as new documents, are upserted in runs of --run chunks, and the index closed (its
last checkpoint counted). Bytes come from /proc/self/io of this process: write_bytes (what reached the block layer,
what bench scale reports) and wchar (bytes handed to write()). With --empty the same chunks also go into an empty index
per variant: the regime of a small corpus, where one run's terms share few pages.`;

function io() {
  const text = readFileSync('/proc/self/io', 'utf8');
  const get = (k) => Number(new RegExp(`^${k}:\\s*(\\d+)`, 'm').exec(text)?.[1] ?? NaN);
  return { wchar: get('wchar'), write_bytes: get('write_bytes') };
}

function parseVariants(text) {
  return text.split(',').map((v) => {
    const [mib, page] = v.split(':').map(Number);
    if (!(Number.isInteger(mib) && mib >= 1) || ![512, 1024, 2048, 4096, 8192, 16384, 32768, 65536].includes(page)) {
      throw new Error(`--variants: "${v}" is not <checkpoint MiB>:<page size> (e.g. 256:1024)`);
    }
    return { mib, page };
  });
}

async function run(argv) {
  const opts = c.parseArgs(argv, spec);
  if (opts.help) return void process.stdout.write(c.usage(HELP, spec));
  if (!opts.from || !existsSync(opts.from)) throw new Error('--from <keyword.db> is required: an existing embedded keyword index (bench scale --data-dir <folder> leaves one)');
  const variants = parseVariants(opts.variants);
  const stop = c.watchdog(opts.maxSeconds, 'keyword-writes');
  const started = new Date();
  const hw = c.hardware();
  const distDir = process.env.RAG_DIST_DIR ? resolve(c.root, process.env.RAG_DIST_DIR) : c.distDir;
  const { EmbeddedBm25KeywordIndex } = require(join(distDir, 'libs/adapters/src/embedded-bm25/index.js'));
  const platform = require(join(distDir, 'libs/platform/src/index.js'));
  if (!process.env.RAG_LOG_LEVEL) platform.setLogLevel('warn');
  const Database = require('better-sqlite3');

  // The chunks to write: the first --chunks rows of the source, whole documents, under new ids.
  const src = new Database(opts.from, { readonly: true, fileMustExist: true });
  const sourceChunks = src.prepare('SELECT COUNT(*) FROM chunks').pluck().get();
  const sourcePage = src.pragma('page_size', { simple: true });
  const bodies = src.prepare('SELECT body FROM chunks ORDER BY id LIMIT ?').pluck().all(opts.chunks);
  src.close();
  // Runs of whole documents, as the indexer hands them over.
  const { runs: full, documents } = reidentifiedRuns(bodies, 'kwb-', opts.run);
  c.log(`source ${opts.from}: ${sourceChunks} chunks, page size ${sourcePage}; writing ${bodies.length} chunks of ${documents} documents in ${full.length} runs of ≈ ${opts.run}`);

  const root = mkdtempSync(join(os.tmpdir(), 'rag-bench-keyword-writes-'));
  const results = [];
  try {
    for (const into of opts.empty ? ['existing', 'empty'] : ['existing']) {
      for (const v of variants) {
        const dir = join(root, `${into}-${v.mib}-${v.page}`);
        if (into === 'existing') {
          mkdirSync(dir);
          copyFileSync(opts.from, join(dir, 'keyword.db'));
          const db = new Database(join(dir, 'keyword.db'));
          db.pragma('journal_mode = DELETE');
          db.pragma(`page_size = ${v.page}`);
          db.exec('VACUUM');
          db.pragma('journal_mode = WAL');
          db.close();
        }
        const index = new EmbeddedBm25KeywordIndex({ dir, termCacheBytes: 0, writeRunItems: 1_000_000, synchronous: 'NORMAL', walCheckpointMiB: v.mib, pageSize: v.page });
        c.gc();
        const before = io();
        const t0 = process.hrtime.bigint();
        for (const r of full) await index.upsert(r);
        await index.close();
        const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
        const after = io();
        const n = bodies.length;
        const r = { into, checkpoint_mib: v.mib, page_size: v.page, chunks: n, runs: full.length, seconds, chunks_per_s: n / seconds, write_bytes_per_chunk: (after.write_bytes - before.write_bytes) / n, wchar_per_chunk: (after.wchar - before.wchar) / n };
        results.push(r);
        c.log(`${into} index, checkpoint ${v.mib} MiB, page ${v.page}: ${c.fmt(r.write_bytes_per_chunk / 1024, 1)} KiB/chunk written, ${c.fmt(r.chunks_per_s, 0)} chunks/s`);
        rmSync(dir, { recursive: true, force: true });
      }
    }
  } finally {
    rmSync(root, { recursive: true, force: true });
    stop();
  }
  const base = (into) => results.find((r) => r.into === into);
  const rows = results.map((r) => [
    r.into,
    r.checkpoint_mib,
    r.page_size,
    c.fmt(r.write_bytes_per_chunk / 1024, 1),
    c.fmt(r.wchar_per_chunk / 1024, 1),
    `${c.fmt(base(r.into).write_bytes_per_chunk / r.write_bytes_per_chunk, 2)}×`,
    c.fmt(r.chunks_per_s, 0),
  ]);
  const growth = variants.map((v) => {
    const e = results.find((r) => r.into === 'existing' && r.checkpoint_mib === v.mib && r.page_size === v.page);
    const m = results.find((r) => r.into === 'empty' && r.checkpoint_mib === v.mib && r.page_size === v.page);
    return [v.mib, v.page, m ? `${c.fmt(e.write_bytes_per_chunk / m.write_bytes_per_chunk, 2)}×` : '–'];
  });
  c.report({
    bench: 'keyword-writes',
    hw,
    started,
    sections: [
      { title: `${bodies.length} chunks in runs of ≈ ${opts.run} into a copy of ${sourceChunks} chunks (existing) and into an empty index`, head: ['into', 'checkpoint MiB', 'page B', 'KiB written/chunk (write_bytes)', 'KiB to write()/chunk (wchar)', 'less than the first variant', 'chunks/s'], rows },
      ...(opts.empty ? [{ title: 'existing ÷ empty, per variant (how the cost per chunk grows with the index)', head: ['checkpoint MiB', 'page B', 'written/chunk'], rows: growth }] : []),
    ],
    notes: [
      'checkpoint MiB = walCheckpointMiB (RAG_KEYWORD_CHECKPOINT_MIB): the WAL is copied into keyword.db once it holds that much; the close at the end checkpoints what is left, and is counted',
      'page B = page size of the copy (a new keyword.db gets 1,024 B; an existing file keeps its own unless VACUUMed)',
    ],
    json: { options: opts, source_chunks: sourceChunks, results },
  });
}

module.exports = { run };
