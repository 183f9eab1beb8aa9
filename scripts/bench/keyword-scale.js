'use strict';
// bench keyword-scale: query latency of the embedded keyword index as it grows (10k, 100k, optionally 1M chunks),
// the pruned evaluation (block-max, `search`) vs the exhaustive one (every posting of the query terms scored,
// `searchExhaustive`) on the same file, and SQLite FTS5's own bm25() over the same pre-segmented tokens, side by side, ratios to the first step.
const { existsSync, mkdtempSync, rmSync, statSync } = require('node:fs');
const os = require('node:os');
const { join, resolve } = require('node:path');
const c = require('./lib/common');

const spec = {
  sizes: { type: 'intlist', default: [10_000, 100_000], help: 'index sizes in chunks (steps; e.g. 10000,100000,1000000)' },
  queries: { type: 'int', default: 80, help: 'queries per step: Cranfield queries, then CMRC 2018 (Chinese) ones, 3:1' },
  k: { type: 'int', default: 50, help: 'hits per query (50 keeps the figures comparable with earlier runs; the retriever asks each search for RAG_CANDIDATES, default 100)' },
  'block-bits': { type: 'int', min: 0, default: 0, help: 'log2 of chunk ids per posting block for the new index (0: the adapter default)' },
  fts5: { type: 'bool', default: true, help: 'also build an FTS5 table over the same tokens and time its bm25()' },
  'eval-dir': { type: 'string', default: c.defaultEvalDir, help: 'folder with cranfield/ and cmrc2018-trial/' },
  dir: { type: 'string', default: '', help: 'keep the index in this folder and reuse it next time (skips filling up to what it holds; FTS5 off)' },
  'max-seconds': { type: 'int', default: 480, help: 'hard limit for the whole run' },
  recluster: {
    type: 'bool',
    default: true,
    help: 'per step, after the other measurements: recluster the index (renumber the chunks by topic, as the keyword writer does when due), time it, and time the pruned searches again; the next step fills on top of the reclustered file',
  },
  'term-cache-mb': {
    type: 'int',
    min: 0,
    default: 512,
    help: 'per step, also time the searches through a second connection with this term cache (RAG_KEYWORD_TERM_CACHE_MB): cold, questions not asked before after 40 others, all asked again; 0: skip (the main columns always run uncached)',
  },
};

const HELP = `usage: npm run bench -- keyword-scale [options]

EmbeddedBm25KeywordIndex from dist/ (or RAG_DIST_DIR). A synthetic corpus is drawn from the dev sets: each chunk is a
window of 40–120 words of one Cranfield abstract plus 10–40 words of another (3 in 4 chunks), or 80–250 + 20–80
characters of two CMRC 2018 passages (1 in 4), with unique ids; 1 in 10 chunks is in a second tenant, 1 in 3 is
ACL-restricted. The index is filled step by step (upserts of 500 chunks, synchronous=NORMAL); at each step the same
queries (tenant "t1" + principals ["g2"], k hits) run through:
  pruned      search(): block-max over packed posting blocks, exact (sub-blocks of 64 chunk ids, with bounds
              stored in each block row, visited by descending upper bound until none can reach the k-th score)
  exhaustive  searchExhaustive(): every posting of the query terms decoded and scored, filters on every scored
              chunk, on the same file (the cost of evaluation without skipping)
  fts5        FTS5 (unicode61, remove_diacritics 0) over the space-joined tokens of tokenize(), MATCH of the OR of
              the query tokens, joined on a tenant/ACL table, ORDER BY rank (bm25(), fixed k1=1.2 b=0.75) LIMIT k
  reclustered search() again after recluster() renumbered the chunks by topic (EmbeddedBm25KeywordIndex.recluster,
              what the keyword writer runs when due); the next step fills on top of it, so a step's first columns
              read a file whose earlier chunks are clustered and whose new ones are in ingestion order
Every pruned result list is compared with the exhaustive one (ids in order), every reclustered one with the pruned
one (ids and scores); mismatches are counted.`;

async function run(argv) {
  const opts = c.parseArgs(argv, spec);
  if (opts.help) return void process.stdout.write(c.usage(HELP, spec));
  const stop = c.watchdog(opts.maxSeconds, 'keyword-scale');
  const started = new Date();
  const hw = c.hardware();
  const distDir = process.env.RAG_DIST_DIR ? resolve(c.root, process.env.RAG_DIST_DIR) : c.distDir;
  const fromDist = (rel) => {
    const file = join(distDir, rel);
    if (!existsSync(file)) throw new Error(`${file} is missing: run \`npm run build\` first`);
    return require(file);
  };
  const { EmbeddedBm25KeywordIndex, indexedText } = fromDist('libs/adapters/src/embedded-bm25/index.js');
  const { tokenize } = fromDist('libs/domain/src/index.js');
  const platform = fromDist('libs/platform/src/index.js');
  if (!process.env.RAG_LOG_LEVEL) platform.setLogLevel('warn');
  const Database = require('better-sqlite3');

  const sizes = [...opts.sizes].sort((a, b) => a - b);
  if (sizes.length === 0 || sizes[0] < 1) throw new Error('--sizes needs positive sizes');
  const evalDir = resolve(opts.evalDir);
  const cran = c.readCranfield(evalDir);
  const cmrcDir = join(evalDir, 'cmrc2018-trial');
  for (const f of ['corpus.jsonl', 'queries.jsonl']) if (!existsSync(join(cmrcDir, f))) throw new Error(`${join(cmrcDir, f)} is missing (set --eval-dir)`);
  const cmrc = { corpus: c.readJsonl(join(cmrcDir, 'corpus.jsonl')), queries: c.readJsonl(join(cmrcDir, 'queries.jsonl')) };
  const enWords = cran.corpus.map((d) => d.text.split(/\s+/).filter(Boolean)).filter((w) => w.length > 0);
  const zhTexts = cmrc.corpus.map((d) => d.text).filter((t) => t.length > 0);
  const nZh = Math.floor(opts.queries / 4);
  const queries = [
    ...cran.queries.slice(0, opts.queries - nZh).map((q) => q.text),
    ...cmrc.queries.filter((_, i) => i % 7 === 0).slice(0, nZh).map((q) => q.text),
  ];

  const rand = c.rng(13);
  const int = (lo, hi) => lo + Math.floor(rand() * (hi - lo + 1));
  const window = (arr, lo, hi) => {
    const len = Math.min(arr.length, int(lo, hi));
    const start = int(0, Math.max(0, arr.length - len));
    return arr.slice(start, start + len);
  };
  const makeChunk = (i) => {
    let title;
    let text;
    if (i % 4 === 3) {
      const a = int(0, zhTexts.length - 1);
      text = window(zhTexts[a], 80, 250) + window(zhTexts[int(0, zhTexts.length - 1)], 20, 80);
      title = cmrc.corpus[a].title ?? '';
    } else {
      const a = int(0, enWords.length - 1);
      text = [...window(enWords[a], 40, 120), ...window(enWords[int(0, enWords.length - 1)], 10, 40)].join(' ');
      title = cran.corpus[a].title ?? '';
    }
    return {
      chunk_id: `s${i}#v1#0`,
      document_id: `s${i}`,
      tenant: i % 10 === 9 ? 't2' : 't1',
      version: 1,
      ordinal: 0,
      kind: 'child',
      parent_id: null,
      acl: i % 3 === 0 ? ['g1'] : ['*'],
      title,
      heading_path: [],
      metadata: { n: i },
      text,
      token_count: 0,
    };
  };

  if (opts.dir) opts.fts5 = false; // the FTS5 table is not kept
  const dir = opts.dir ? resolve(opts.dir) : mkdtempSync(join(os.tmpdir(), 'rag-bench-keyword-'));
  // Uncached: the main columns measure the index's own cost per search (the term cache is timed apart, below).
  const index = new EmbeddedBm25KeywordIndex({ dir, synchronous: 'NORMAL', termCacheBytes: 0, ...(opts.blockBits ? { blockBits: opts.blockBits } : {}) });
  let fts;
  if (opts.fts5) {
    fts = new Database(join(dir, 'fts5.db'));
    fts.pragma('journal_mode = WAL');
    fts.pragma('synchronous = NORMAL');
    fts.exec(`CREATE VIRTUAL TABLE f USING fts5(body, tokenize = "unicode61 remove_diacritics 0");
      CREATE TABLE m (id INTEGER PRIMARY KEY, tenant TEXT NOT NULL, acl TEXT NOT NULL);`);
  }
  const ftsInsert = fts && fts.prepare('INSERT INTO f (rowid, body) VALUES (?, ?)');
  const ftsMeta = fts && fts.prepare('INSERT INTO m (id, tenant, acl) VALUES (?, ?, ?)');
  const ftsSearch =
    fts &&
    fts.prepare(`SELECT f.rowid AS id, bm25(f) AS score FROM f JOIN m ON m.id = f.rowid
      WHERE f MATCH @q AND m.tenant = @tenant AND EXISTS (SELECT 1 FROM json_each(m.acl) a WHERE a.value IN ('*', @principal))
      ORDER BY rank LIMIT @k`);
  const ftsQuery = (q) => {
    const toks = [...new Set(tokenize(q))];
    return toks.length ? toks.map((t) => `"${t.replace(/"/g, '""')}"`).join(' OR ') : null;
  };
  const scope = { tenant: 't1', principals: ['g2'] };

  const steps = [];
  let filled = await index.count();
  const reused = filled;
  let ingestMs = 0;
  let ftsMs = 0;
  try {
    for (const size of sizes) {
      c.log(`keyword-scale: filling to ${size} chunks`);
      while (filled < size) {
        const batch = [];
        for (let j = 0; j < 500 && filled + batch.length < size; j++) batch.push(makeChunk(filled + batch.length));
        let t0 = performance.now();
        await index.upsert(batch);
        ingestMs += performance.now() - t0;
        if (fts) {
          t0 = performance.now();
          fts.transaction(() => {
            for (let j = 0; j < batch.length; j++) {
              const ch = batch[j];
              ftsInsert.run(filled + j + 1, tokenize(indexedText(ch)).join(' '));
              ftsMeta.run(filled + j + 1, ch.tenant, JSON.stringify(ch.acl));
            }
          })();
          ftsMs += performance.now() - t0;
        }
        filled += batch.length;
        await new Promise((r) => setImmediate(r)); // let the --max-seconds watchdog fire
      }
      c.gc();
      // Warm-up (page cache, statement cache), then the timed runs, the three evaluations interleaved per query.
      for (const q of queries.slice(0, 10)) {
        index.searchWithStats({ query: q, k: opts.k, scope });
        index.searchExhaustive({ query: q, k: opts.k, scope });
      }
      const t = { pruned: [], exhaustive: [], fts5: [], reclustered: [] };
      const prunedHits = [];
      let mismatches = 0;
      let read = 0;
      let total = 0;
      let fullScans = 0;
      let terms = 0;
      let blocksVisited = 0;
      let blocksTotal = 0;
      let filterChecks = 0;
      for (const q of queries) {
        const req = { query: q, k: opts.k, scope };
        let t0 = performance.now();
        const { hits, stats } = index.searchWithStats(req);
        t.pruned.push(performance.now() - t0);
        prunedHits.push(JSON.stringify(hits));
        t0 = performance.now();
        const exact = index.searchExhaustive(req);
        t.exhaustive.push(performance.now() - t0);
        if (hits.map((h) => h.chunk_id).join() !== exact.map((h) => h.chunk_id).join()) mismatches++;
        read += stats.postingsRead;
        total += stats.postingsTotal;
        fullScans += stats.fullScans;
        terms += stats.terms;
        blocksVisited += stats.blocksVisited ?? 0;
        blocksTotal += stats.blocksTotal ?? 0;
        filterChecks += stats.filterChecks ?? 0;
        if (fts) {
          const m = ftsQuery(q);
          t0 = performance.now();
          if (m) ftsSearch.all({ q: m, tenant: scope.tenant, principal: scope.principals[0], k: opts.k });
          t.fts5.push(performance.now() - t0);
        }
      }
      const bytes = statSync(index.file).size + (existsSync(`${index.file}-wal`) ? statSync(`${index.file}-wal`).size : 0);
      // The term cache: a second connection with it, the queries in halves (interleaved) — the first half into an
      // empty cache, the second half (questions not asked before, sharing the frequent terms), then all again.
      // Timed again after the recluster (below), where the searches' directories come from the cache as in a server.
      const measureCache = () => {
        const cached = new EmbeddedBm25KeywordIndex({ dir, synchronous: 'NORMAL', termCacheBytes: opts.termCacheMb * 2 ** 20 });
        try {
          let fetched = 0;
          const timeAll = (qs) => qs.map((q) => {
            const t0 = performance.now();
            fetched += cached.searchWithStats({ query: q, k: opts.k, scope }).stats.blocksFetched ?? 0;
            return performance.now() - t0;
          });
          const cold = c.latencySummary(timeAll(queries.filter((_, i) => i % 2 === 0)));
          const unseen = c.latencySummary(timeAll(queries.filter((_, i) => i % 2 === 1)));
          const fetchedBefore = fetched;
          const repeated = c.latencySummary(timeAll(queries));
          const st = cached.termCacheStats();
          // Blocks read from the file per question in the repeated round: 0 when the budget holds what the questions read.
          const repeatedFetched = (fetched - fetchedBefore) / queries.length;
          return { mb: opts.termCacheMb, cold, unseen, repeated, cached_mib: st.bytes / 2 ** 20, term_hit_rate: st.hits / Math.max(1, st.hits + st.misses), repeated_blocks_fetched_per_query: repeatedFetched };
        } finally {
          void cached.close(); // synchronous underneath (the connection closes before the promise returns)
        }
      };
      const cache = opts.termCacheMb > 0 ? measureCache() : null;
      // Reclustered: the same searches on the renumbered file (after the term-cache section, which reads the file as filled).
      let recluster = null;
      if (opts.recluster) {
        c.log(`keyword-scale: reclustering ${size} chunks`);
        const r = index.recluster();
        for (const q of queries.slice(0, 10)) index.searchWithStats({ query: q, k: opts.k, scope });
        let visited = 0;
        let holding = 0;
        let differ = 0;
        queries.forEach((q, i) => {
          const t0 = performance.now();
          const { hits, stats } = index.searchWithStats({ query: q, k: opts.k, scope });
          t.reclustered.push(performance.now() - t0);
          if (JSON.stringify(hits) !== prunedHits[i]) differ++;
          visited += stats.blocksVisited;
          holding += stats.blocksTotal;
        });
        recluster = { term_cache: opts.termCacheMb > 0 ? measureCache() : null, ms: r.ms, chunks_per_s: Math.round((r.children + r.parents) / (r.ms / 1000)), keyed_share: r.keyed / Math.max(1, r.children), blocks_visited_per_query: visited / queries.length, blocks_visited_share: holding ? visited / holding : 0, mismatches: differ };
      }
      const step = {
        chunks: size,
        ingest_chunks_per_s: filled > reused ? Math.round((filled - reused) / (ingestMs / 1000)) : null,
        fts5_ingest_chunks_per_s: fts ? Math.round(filled / (ftsMs / 1000)) : null,
        keyword_db_bytes_per_chunk: Math.round(bytes / size),
        postings_read_share: total ? read / total : 0,
        full_scans_share: terms ? fullScans / terms : 0,
        blocks_visited_share: blocksTotal ? blocksVisited / blocksTotal : 0,
        filter_checks_per_query: filterChecks / queries.length,
        mismatches,
        pruned: c.latencySummary(t.pruned),
        exhaustive: c.latencySummary(t.exhaustive),
        fts5: fts ? c.latencySummary(t.fts5) : null,
        term_cache: cache,
        blocks_visited_per_query: blocksVisited / queries.length,
        reclustered: opts.recluster ? c.latencySummary(t.reclustered) : null,
        recluster,
      };
      steps.push(step);
      c.log(
        `keyword-scale: ${size} chunks: pruned P50 ${c.fmt(step.pruned.p50, 2)} ms, exhaustive P50 ${c.fmt(step.exhaustive.p50, 2)} ms` +
          (fts ? `, fts5 P50 ${c.fmt(step.fts5.p50, 2)} ms` : '') +
          `, ${mismatches} mismatches` +
          (recluster ? `; reclustered in ${c.fmt(recluster.ms / 1000, 1)} s, P50 ${c.fmt(step.reclustered.p50, 2)} ms, ${recluster.mismatches} mismatches` : ''),
      );
    }
  } finally {
    await index.close();
    if (fts) fts.close();
    if (!opts.dir) rmSync(dir, { recursive: true, force: true });
    stop();
  }

  const base = steps[0];
  const kinds = ['pruned', 'exhaustive', ...(opts.fts5 ? ['fts5'] : []), ...(opts.recluster ? ['reclustered'] : [])];
  const rows = [];
  for (const s of steps) {
    for (const kind of kinds) {
      const l = s[kind];
      rows.push([
        s.chunks,
        kind,
        c.fmt(l.mean, 2),
        c.fmt(l.p50, 2),
        c.fmt(l.p95, 2),
        c.fmt(l.p99, 2),
        `${c.fmt(l.p50 / base[kind].p50, 2)}×`,
        `${c.fmt(l.p99 / base[kind].p99, 2)}×`,
        kind === 'pruned' ? `${c.fmt(s.exhaustive.p50 / l.p50, 1)}×` : kind === 'fts5' || kind === 'reclustered' ? `${c.fmt(l.p50 / s.pruned.p50, 2)}×` : '',
      ]);
    }
  }
  const stepRows = steps.map((s) => [
    s.chunks,
    s.ingest_chunks_per_s ?? 'reused',
    s.fts5_ingest_chunks_per_s ?? '–',
    s.keyword_db_bytes_per_chunk,
    `${c.fmt(100 * s.postings_read_share, 1)} %`,
    `${c.fmt(100 * s.full_scans_share, 1)} %`,
    `${c.fmt(100 * s.blocks_visited_share, 1)} %`,
    c.fmt(s.filter_checks_per_query, 0),
    s.mismatches,
  ]);
  c.report({
    bench: 'keyword-scale',
    hw,
    started,
    sections: [
      {
        title: `query latency, ms (${queries.length} queries, k=${opts.k}, tenant + ACL scope); ratios to the ${base.chunks}-chunk step; last column: exhaustive÷pruned P50, or fts5÷pruned, reclustered÷pruned P50`,
        head: ['chunks', 'evaluation', 'mean', 'P50', 'P95', 'P99', 'P50 ratio', 'P99 ratio', 'vs pruned'],
        rows,
      },
      {
        title: 'index: cumulative ingest rate, keyword.db size, share of the query terms\' postings the pruned search read, share of terms fully scanned, share of the sub-blocks (64 chunk ids at the default size) holding a query term visited, chunks whose filter was evaluated per query, pruned≠exhaustive result lists',
        head: ['chunks', 'chunks/s', 'fts5 chunks/s', 'B/chunk', 'postings read', 'full scans', 'sub-blocks visited', 'filter checks/query', 'mismatches'],
        rows: stepRows,
      },
      ...(opts.termCacheMb > 0
        ? [
            {
              title: `term cache (${opts.termCacheMb} MiB, a second connection): pruned P50 / mean ms of the even-numbered queries into an empty cache, then the odd-numbered ones (not asked before), then all again; the cache's size after, the share of query terms it served, and the posting blocks still read from the file per question asked again (0 when the budget holds what they read); with --recluster a second row per step after it (its ratio against the reclustered uncached P50)`,
              head: ['chunks', 'cold', 'not asked before', 'asked again', 'again ÷ uncached P50', 'cached MiB', 'term hits', 'blocks read/q again'],
              // per step: the file as filled, then (with --recluster) reclustered — its ratio against the reclustered uncached P50
              rows: steps.flatMap((s) => [
                ...(s.term_cache ? [{ s, tc: s.term_cache, label: '', uncached: s.pruned }] : []),
                ...(s.recluster?.term_cache ? [{ s, tc: s.recluster.term_cache, label: ' reclustered', uncached: s.reclustered }] : []),
              ]).map(({ s, tc, label, uncached }) => [
                  `${s.chunks}${label}`,
                  `${c.fmt(tc.cold.p50, 2)} / ${c.fmt(tc.cold.mean, 2)}`,
                  `${c.fmt(tc.unseen.p50, 2)} / ${c.fmt(tc.unseen.mean, 2)}`,
                  `${c.fmt(tc.repeated.p50, 2)} / ${c.fmt(tc.repeated.mean, 2)}`,
                  `${c.fmt(tc.repeated.p50 / uncached.p50, 2)}×`,
                  c.fmt(tc.cached_mib, 1),
                  `${c.fmt(100 * tc.term_hit_rate, 0)} %`,
                  c.fmt(tc.repeated_blocks_fetched_per_query, 1),
                ]),
            },
          ]
        : []),
      ...(opts.recluster
        ? [
            {
              title: 'recluster (renumbering the chunks by topic, one transaction): its time and rate, the share of children grouped by a topic term, the sub-blocks a search visits before and after it (share of those holding a query term), reclustered≠pruned result lists (ids and scores)',
              head: ['chunks', 'recluster s', 'chunks/s', 'grouped', 'sub-blocks visited/q before', 'after', 'after ÷ before', 'visited share after', 'mismatches'],
              rows: steps.map((s) => [
                s.chunks,
                c.fmt(s.recluster.ms / 1000, 1),
                s.recluster.chunks_per_s,
                `${c.fmt(100 * s.recluster.keyed_share, 0)} %`,
                c.fmt(s.blocks_visited_per_query, 0),
                c.fmt(s.recluster.blocks_visited_per_query, 0),
                `${c.fmt(s.recluster.blocks_visited_per_query / Math.max(1, s.blocks_visited_per_query), 2)}×`,
                `${c.fmt(100 * s.recluster.blocks_visited_share, 1)} %`,
                s.recluster.mismatches,
              ]),
            },
          ]
        : []),
    ],
    notes: [
      'pruned and exhaustive run on the same keyword.db; exhaustive scores every posting of the query terms (searchExhaustive: every block read, no bound used)',
      'fts5 ranks with its own bm25() (k1=1.2, b=0.75, a different idf), so its lists differ from ours: it is timed for cost only',
      'one process, synchronous better-sqlite3 calls; nothing else runs in the process meanwhile',
    ],
    json: { options: { sizes, queries: queries.length, k: opts.k, fts5: opts.fts5, term_cache_mb: opts.termCacheMb, recluster: opts.recluster }, steps },
  });
}

module.exports = { run };
