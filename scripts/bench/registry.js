'use strict';
// bench registry: write latency of the document registry, SQLite (RAG_DATA_DIR) vs PostgreSQL (RAG_DATABASE_URL).
const { mkdtempSync } = require('node:fs');
const os = require('node:os');
const { join } = require('node:path');
const c = require('./lib/common');
const p = require('./lib/platform');

const spec = {
  documents: { type: 'int', default: 2000, help: 'documents per backend and concurrency level' },
  concurrency: { type: 'intlist', default: [1, 8], help: 'documents written at a time, one level after the other' },
  'database-url': { type: 'string', default: process.env.RAG_BENCH_DATABASE_URL || 'postgres://rag@127.0.0.1:55432/rag', help: 'PostgreSQL server to create a scratch database on (RAG_BENCH_DATABASE_URL; default the one of servers.sh)' },
  backends: { type: 'string', default: 'sqlite,postgres', help: 'comma-separated: sqlite, postgres' },
  'max-seconds': { type: 'int', default: 1800, help: 'hard limit for the whole run' },
};

const HELP = `usage: npm run bench -- registry [options]

The registry writes one document makes on its way through the pipeline, through the real adapters the services use
(createRegistry of libs/adapters: SqliteRegistry in a temporary RAG_DATA_DIR, PgRegistry on a scratch database
created on --database-url and dropped afterwards): accept (upsert + its outbox message, one transaction),
completeOutbox, markProcessing, markIndexed. Latency per call (P50/P95/P99 ms) and documents/s at each
--concurrency (that many documents written at a time). The PostgreSQL server is the local one of
deploy/local/servers.sh (loopback, same machine): no network in the figures.`;

async function measure(registry, label, n, conc) {
  const lat = { accept: [], completeOutbox: [], markProcessing: [], markIndexed: [] };
  const timed = async (op, fn) => {
    const t = process.hrtime.bigint();
    const r = await fn();
    lat[op].push(Number(process.hrtime.bigint() - t) / 1e6);
    return r;
  };
  let next = 0;
  const one = async (i) => {
    const id = `${label}-${i}`;
    const rec = await timed('accept', () =>
      registry.accept({ document_id: id, tenant: 'default', op: 'upsert', title: `Doc ${i}`, raw_hash: `h${i}` }, (r) => ({ topic: 'rag.documents.v1', key: id, value: { document_id: id, version: r.version } })),
    );
    const claimed = await registry.claimOutbox(conc, 30_000);
    if (claimed.length) await timed('completeOutbox', () => registry.completeOutbox(claimed.map((e) => e.id)));
    await timed('markProcessing', () => registry.markProcessing(id, rec.version));
    await timed('markIndexed', () => registry.markIndexed(id, rec.version, `c${i}`, 3));
  };
  const t0 = process.hrtime.bigint();
  await Promise.all(
    Array.from({ length: conc }, async () => {
      while (next < n) await one(next++);
    }),
  );
  const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
  const indexed = (await registry.countByStatus()).indexed;
  if (indexed < n) throw new Error(`${label}: ${indexed} of ${n} documents indexed`);
  const ops = {};
  for (const [op, xs] of Object.entries(lat)) {
    const s = xs.sort((a, b) => a - b);
    ops[op] = { calls: s.length, p50_ms: c.quantile(s, 0.5), p95_ms: c.quantile(s, 0.95), p99_ms: c.quantile(s, 0.99) };
  }
  return { seconds, docs_per_s: n / seconds, ops };
}

async function run(argv) {
  const opts = c.parseArgs(argv, spec);
  if (opts.help) return process.stdout.write(c.usage(HELP, spec));
  const backends = opts.backends.split(',').map((s) => s.trim()).filter(Boolean);
  for (const b of backends) if (!['sqlite', 'postgres'].includes(b)) throw new Error(`--backends: unknown ${b}`);
  const stopWatchdog = c.watchdog(opts.maxSeconds, 'registry');
  const started = new Date();
  const hw = c.hardware();
  const adapters = c.requireDist('libs/adapters/src/index.js');
  const pg = require('pg');
  const results = [];
  for (const backend of backends) {
    for (const conc of opts.concurrency) {
      const dataDir = mkdtempSync(join(os.tmpdir(), 'rag-bench-registry-'));
      let dbName;
      let admin;
      const overrides = {};
      if (backend === 'postgres') {
        dbName = `rag_bench_${Date.now().toString(36)}_${conc}`;
        admin = new pg.Client({ connectionString: opts.databaseUrl });
        await admin.connect().catch((e) => {
          throw new Error(`PostgreSQL at ${opts.databaseUrl}: ${e.message} (bash deploy/local/servers.sh start postgres)`);
        });
        await admin.query(`CREATE DATABASE ${dbName}`);
        const u = new URL(opts.databaseUrl);
        u.pathname = `/${dbName}`;
        overrides.RAG_DATABASE_URL = u.toString();
      } else {
        overrides.RAG_DATABASE_URL = undefined;
      }
      const cfg = p.embeddedConfig({ dataDir, overrides });
      const registry = await adapters.createRegistry(cfg);
      try {
        c.log(`${backend}: ${opts.documents} documents, ${conc} at a time …`);
        const r = await measure(registry, `bench-${backend}-${conc}`, opts.documents, conc);
        results.push({ backend, concurrency: conc, documents: opts.documents, ...(backend === 'sqlite' ? { synchronous: cfg.RAG_SQLITE_SYNCHRONOUS } : { pool_max: cfg.RAG_DATABASE_POOL_MAX }), ...r });
        c.log(`  ${r.docs_per_s.toFixed(0)} docs/s, accept P50 ${r.ops.accept.p50_ms.toFixed(2)} ms, markIndexed P50 ${r.ops.markIndexed.p50_ms.toFixed(2)} ms`);
      } finally {
        await registry.close();
        p.removeDir(dataDir);
        if (admin) {
          await admin.query(`DROP DATABASE IF EXISTS ${dbName} WITH (FORCE)`).catch(() => undefined);
          await admin.end();
        }
      }
    }
  }
  stopWatchdog();
  const rows = [];
  for (const r of results) {
    for (const [op, s] of Object.entries(r.ops)) rows.push([r.backend, r.concurrency, op, s.calls, c.fmt(s.p50_ms, 2), c.fmt(s.p95_ms, 2), c.fmt(s.p99_ms, 2)]);
  }
  const sections = [
    { title: 'registry writes per call (ms)', head: ['backend', 'conc', 'call', 'calls', 'P50', 'P95', 'P99'], rows },
    { title: 'documents/s (all four writes of a document)', head: ['backend', 'conc', 'docs/s', 'wall s'], rows: results.map((r) => [r.backend, r.concurrency, r.docs_per_s.toFixed(0), r.seconds.toFixed(1)]) },
  ];
  const sq = results.filter((r) => r.backend === 'sqlite');
  const pgr = results.filter((r) => r.backend === 'postgres');
  if (sq.length && pgr.length) {
    sections.push({
      title: 'side by side (ratio = postgres / sqlite)',
      head: ['conc', 'x docs/s', 'x accept P50', 'x markIndexed P50'],
      rows: opts.concurrency.map((n) => {
        const a = sq.find((r) => r.concurrency === n);
        const b = pgr.find((r) => r.concurrency === n);
        return [n, `${(b.docs_per_s / a.docs_per_s).toFixed(2)}x`, `${(b.ops.accept.p50_ms / a.ops.accept.p50_ms).toFixed(2)}x`, `${(b.ops.markIndexed.p50_ms / a.ops.markIndexed.p50_ms).toFixed(2)}x`];
      }),
    });
  }
  const notes = [
    'One process, the adapters the services use; SQLite is a file in a temporary folder (RAG_SQLITE_SYNCHRONOUS from the environment), PostgreSQL the local server over loopback TCP with its default fsync settings.',
    'completeOutbox is measured when the claim found entries (the relay of the gateway does this in the background).',
  ];
  c.report({ bench: 'registry', hw, started, sections, notes, json: { results } });
}

module.exports = { run, HELP };
