'use strict';
// bench outbox: memory of the gateway's outbox relay over a backlog of large uploads, by claim budget.
const { spawnSync } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const { join } = require('node:path');
const c = require('./lib/common');

const spec = {
  uploads: { type: 'int', default: 60, help: 'uploads queued while the bus is down' },
  'upload-mb': { type: 'number', default: 5, help: 'size of each upload (plain text), MB' },
  budgets: { type: 'string', default: '0,33554432', help: 'comma-separated claim budgets in bytes (RAG_OUTBOX_CLAIM_BYTES; 0 = by count only, 100 at a time)' },
  rounds: { type: 'int', default: 2, help: 'relays per budget, alternating' },
};

const HELP = `usage: npm run bench -- outbox [options]

The gateway after a bus outage: --uploads plain-text uploads of --upload-mb MB are submitted through DocumentService
into a SqliteRegistry while every publish fails (their source events, base64, wait in the outbox); then, for each
--budgets value in turn, a fresh process opens a copy of that registry and relays the whole backlog to a bus that
accepts everything (a Kafka that came back). Printed: peak RSS of the relaying process above what it had before the
relay, the publish calls, the relay's seconds, and each budget's ratios to the first.`;

/** The child: `fill DIR N MB` or `relay DIR BUDGET`; one JSON line on stdout. */
async function child([mode, dir, a, b]) {
  const { SqliteRegistry } = c.requireDist('libs/adapters/src/index.js');
  const { DocumentService } = c.requireDist('libs/application/src/index.js');
  const registry = new SqliteRegistry({ dir, synchronous: 'NORMAL' });
  let down = mode === 'fill';
  let published = 0;
  let calls = 0;
  const bus = {
    async publish(_topic, messages) {
      if (down) throw new Error('bus unavailable');
      calls++;
      published += messages.length;
    },
    async subscribe() {},
    async start() {},
    async drain() {},
    async lag() {
      return [];
    },
    async close() {},
  };
  if (mode === 'fill') {
    const docs = new DocumentService(registry, bus, 1024 * 1024 * 1024, { relayIntervalMs: 3_600_000 });
    const words = Math.floor((Number(b) * 1024 * 1024) / 12);
    for (let i = 0; i < Number(a); i++) await docs.submit({ id: `upload-${i}`, text: `${i} ${'lorem ipsum '.repeat(words)}` }, 'default');
    await docs.stopRelay();
    await registry.close();
    return;
  }
  const docs = new DocumentService(registry, bus, 1024 * 1024 * 1024, { relayIntervalMs: 3_600_000, relayClaimBytes: Number(a) });
  c.gc();
  const before = process.memoryUsage().rss;
  let peak = before;
  const timer = setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss)), 2);
  const t0 = process.hrtime.bigint();
  await docs.relay();
  const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
  clearInterval(timer);
  peak = Math.max(peak, process.memoryUsage().rss);
  await docs.stopRelay();
  await registry.close();
  process.stdout.write(JSON.stringify({ published, calls, seconds, rss_before_mib: before / 1048576, peak_growth_mib: (peak - before) / 1048576 }) + '\n');
}

function spawnChild(args) {
  const r = spawnSync(process.execPath, ['--expose-gc', __filename, ...args], { encoding: 'utf8', maxBuffer: 1 << 20, env: { ...process.env, RAG_LOG_LEVEL: 'error' } });
  if (r.status !== 0) throw new Error(`bench outbox child ${args[0]} failed (${r.status}): ${r.stderr.slice(-2000)}`);
  const line = r.stdout.trim().split('\n').pop();
  return line ? JSON.parse(line) : null;
}

async function run(argv) {
  const opts = c.parseArgs(argv, spec);
  if (opts.help) return void process.stdout.write(c.usage(HELP, spec));
  const budgets = opts.budgets.split(',').map((x) => Number(x.trim()));
  if (!budgets.length || budgets.some((n) => !Number.isInteger(n) || n < 0)) throw new Error(`--budgets must be non-negative integers, got ${opts.budgets}`);
  const hw = c.hardware();
  const started = new Date();
  const base = fs.mkdtempSync(join(os.tmpdir(), 'bench-outbox-'));
  try {
    const filled = join(base, 'filled');
    fs.mkdirSync(filled);
    c.log(`queueing ${opts.uploads} uploads of ${opts.uploadMb} MB with the bus down`);
    spawnChild(['fill', filled, String(opts.uploads), String(opts.uploadMb)]);
    const results = budgets.map((budget) => ({ budget, runs: [] }));
    for (let round = 1; round <= opts.rounds; round++) {
      for (const r of results) {
        const copy = join(base, `relay-${r.budget}-${round}`);
        fs.cpSync(filled, copy, { recursive: true });
        const out = spawnChild(['relay', copy, String(r.budget)]);
        fs.rmSync(copy, { recursive: true, force: true });
        if (out.published !== opts.uploads) throw new Error(`budget ${r.budget}: ${out.published} of ${opts.uploads} published`);
        c.log(`round ${round}, budget ${r.budget}: +${out.peak_growth_mib.toFixed(0)} MiB, ${out.calls} publish calls, ${out.seconds.toFixed(2)} s`);
        r.runs.push(out);
      }
    }
    const med = (r, k) => c.median(r.runs.map((x) => x[k]));
    const first = results[0];
    const rows = results.map((r) => [
      r.budget === 0 ? '0 (100 a claim)' : `${(r.budget / 1048576).toFixed(1)} MiB`,
      c.median(r.runs.map((x) => x.calls)),
      med(r, 'peak_growth_mib').toFixed(0),
      `${(med(r, 'peak_growth_mib') / med(first, 'peak_growth_mib')).toFixed(2)}x`,
      med(r, 'seconds').toFixed(2),
      `${(med(r, 'seconds') / med(first, 'seconds')).toFixed(2)}x`,
    ]);
    c.report({
      bench: 'outbox',
      hw,
      started,
      sections: [{ title: `outbox relay of ${opts.uploads} uploads × ${opts.uploadMb} MB after a bus outage (medians of ${opts.rounds} rounds)`, head: ['claim budget', 'publish calls', 'peak RSS growth MiB', 'x growth', 'relay s', 'x time'], rows }],
      notes: [
        'peak RSS growth = the relaying process\'s RSS sampled every 2 ms during relay(), less its RSS just before (after a GC); the registry is a fresh copy for each relay.',
        'each upload\'s source event carries its bytes in base64 (≈ 4/3 of the upload); the bus accepts and drops every message (no broker in the figures).',
      ],
      json: { uploads: opts.uploads, upload_mb: opts.uploadMb, results },
    });
  } finally {
    fs.rmSync(base, { recursive: true, force: true });
  }
}

if (require.main === module && process.argv[2] && ['fill', 'relay'].includes(process.argv[2])) {
  child(process.argv.slice(2)).then(
    () => process.exit(0),
    (e) => {
      process.stderr.write(`${e?.stack ?? e}\n`);
      process.exit(1);
    },
  );
}

module.exports = { run, HELP };
