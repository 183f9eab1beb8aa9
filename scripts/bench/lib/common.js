'use strict';
// Shared helpers of the benchmark scripts: argument parsing, hardware description, progress on stderr,
// result tables and the one JSON line on stdout, time bounds, loopback checks, memory, dataset readers.
const { spawnSync } = require('node:child_process');
const { existsSync, readFileSync } = require('node:fs');
const net = require('node:net');
const os = require('node:os');
const { join, resolve } = require('node:path');
const v8 = require('node:v8');
const vm = require('node:vm');

const root = resolve(__dirname, '..', '..', '..');
const distDir = join(root, 'dist');
const defaultEvalDir = resolve(root, '..', 'shared', 'eval');

/** Requires a compiled module from dist/ with a clear message when `npm run build` has not been run. */
function requireDist(rel) {
  const file = join(distDir, rel);
  if (!existsSync(file)) throw new Error(`${file} is missing: run \`npm run build\` first`);
  return require(file);
}

// ---------- arguments ----------

/**
 * Parses `--name value`, `--name=value` and boolean `--flag` / `--no-flag` against a spec
 * `{ name: { type: 'string'|'number'|'int'|'list'|'bool'|'repeat', default, help, min? } }` (`min`: the least an 'int' takes, default 1). Unknown options throw.
 */
function parseArgs(argv, spec) {
  const out = {};
  for (const [k, s] of Object.entries(spec)) out[camel(k)] = s.type === 'repeat' ? [...(s.default ?? [])] : s.default;
  for (let i = 0; i < argv.length; i++) {
    let a = argv[i];
    if (a === '--help' || a === '-h') {
      out.help = true;
      continue;
    }
    if (!a.startsWith('--')) throw new Error(`unexpected argument ${a} (try --help)`);
    let value;
    const eq = a.indexOf('=');
    if (eq > 0) {
      value = a.slice(eq + 1);
      a = a.slice(0, eq);
    }
    let name = a.slice(2);
    let negated = false;
    if (!spec[name] && name.startsWith('no-') && spec[name.slice(3)]?.type === 'bool') {
      name = name.slice(3);
      negated = true;
    }
    const s = spec[name];
    if (!s) throw new Error(`unknown option ${a} (try --help)`);
    if (s.type === 'bool') {
      out[camel(name)] = value === undefined ? !negated : !['false', '0', 'no'].includes(value);
      continue;
    }
    if (value === undefined) {
      value = argv[++i];
      if (value === undefined || value.startsWith('--')) throw new Error(`${a} needs a value`);
    }
    out[camel(name)] = convert(name, s, value, out[camel(name)]);
  }
  return out;
}

function convert(name, s, value, previous) {
  switch (s.type) {
    case 'number': {
      const n = Number(value);
      if (!Number.isFinite(n) || n < 0) throw new Error(`--${name} must be a non-negative number, got ${value}`);
      return n;
    }
    case 'int': {
      const n = Number(value);
      // `min: 0` in the spec: an option whose help gives 0 a meaning (skip, off, the default)
      if (!Number.isInteger(n) || n < (s.min ?? 1)) throw new Error(`--${name} must be ${s.min === 0 ? 'a non-negative' : 'a positive'} integer, got ${value}`);
      return n;
    }
    case 'list':
      return value.split(',').map((x) => x.trim()).filter(Boolean);
    case 'intlist': {
      const xs = value.split(',').map((x) => Number(x.trim()));
      if (!xs.length || xs.some((n) => !Number.isInteger(n) || n <= 0)) throw new Error(`--${name} must be a comma-separated list of positive integers, got ${value}`);
      return xs;
    }
    case 'repeat':
      return [...(previous ?? []), value];
    default:
      return value;
  }
}

const camel = (s) => s.replace(/-([a-z])/g, (_, c) => c.toUpperCase());

function usage(text, spec) {
  const lines = [text.trimEnd(), '', 'options:'];
  for (const [k, s] of Object.entries(spec)) {
    const def = s.default === undefined || (Array.isArray(s.default) && !s.default.length) ? '' : ` (default ${Array.isArray(s.default) ? s.default.join(',') : s.default})`;
    const arg = s.type === 'bool' ? '' : s.type === 'list' || s.type === 'intlist' ? ' A,B,…' : ' X';
    lines.push(`  --${k}${arg}`.padEnd(30) + ` ${s.help ?? ''}${def}`);
  }
  return lines.join('\n') + '\n';
}

// ---------- environment ----------

function hardware() {
  let nproc = String(os.availableParallelism ? os.availableParallelism() : os.cpus().length);
  const r = spawnSync('nproc', [], { encoding: 'utf8' });
  if (r.status === 0 && r.stdout.trim()) nproc = r.stdout.trim();
  let cpu = os.cpus()[0]?.model ?? 'unknown';
  try {
    const m = /^model name\s*:\s*(.+)$/m.exec(readFileSync('/proc/cpuinfo', 'utf8'));
    if (m) cpu = m[1].trim();
  } catch {
    /* not Linux */
  }
  let load = os.loadavg().map((x) => x.toFixed(2)).join(' ');
  return { nproc: Number(nproc), cpu, mem_gib: Number((os.totalmem() / 2 ** 30).toFixed(1)), node: process.version, platform: `${os.type()} ${os.release()} ${os.arch()}`, loadavg_at_start: load };
}

const log = (msg) => process.stderr.write(`[bench] ${msg}\n`);

/** Exits with 124 when the whole run takes longer than `seconds` (every benchmark is bounded). */
function watchdog(seconds, what) {
  const t = setTimeout(() => {
    process.stderr.write(`[bench] ${what}: time limit of ${seconds} s reached; stopping (raise it with --max-seconds)\n`);
    process.exit(124);
  }, seconds * 1000);
  t.unref();
  return () => clearTimeout(t);
}

function isLoopbackHost(host) {
  const h = host.replace(/^\[|\]$/g, '');
  return h === 'localhost' || h === '::1' || /^127\.\d+\.\d+\.\d+$/.test(h);
}

/** Throws unless the URL (http://host:port/…) points at this machine's loopback interface. */
function assertLoopbackUrl(url, what) {
  let u;
  try {
    u = new URL(url);
  } catch {
    throw new Error(`${what}: ${url} is not a URL`);
  }
  if (!isLoopbackHost(u.hostname)) throw new Error(`${what}: ${url} is not on 127.0.0.1; the benchmarks only talk to loopback`);
  return u.origin;
}

/** `host:port` on loopback, or throws. */
function assertLoopbackAddress(addr, what) {
  const m = /^(\[[^\]]+\]|[^:]+):(\d+)$/.exec(addr);
  if (!m) throw new Error(`${what}: ${addr} is not host:port`);
  if (!isLoopbackHost(m[1])) throw new Error(`${what}: ${addr} is not on 127.0.0.1; the benchmarks only talk to loopback`);
  return { host: m[1].replace(/^\[|\]$/g, ''), port: Number(m[2]) };
}

function tcpReachable(host, port, timeoutMs = 2000) {
  return new Promise((res) => {
    const s = net.connect({ host, port });
    const done = (ok) => {
      s.destroy();
      res(ok);
    };
    s.setTimeout(timeoutMs, () => done(false));
    s.once('connect', () => done(true));
    s.once('error', () => done(false));
  });
}

let gcFn;
/** Full GC when possible (exposes V8's gc without a command-line flag). */
function gc() {
  try {
    if (!gcFn) {
      if (typeof global.gc === 'function') gcFn = global.gc;
      else {
        v8.setFlagsFromString('--expose-gc');
        gcFn = vm.runInNewContext('gc');
      }
    }
    gcFn();
    gcFn();
  } catch {
    /* best effort */
  }
}

const rssMiB = () => process.memoryUsage().rss / 2 ** 20;

/** RSS of another process from /proc (MiB), or undefined. */
function procRssMiB(pid) {
  try {
    const m = /^VmRSS:\s+(\d+)\s+kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) / 1024 : undefined;
  } catch {
    return undefined;
  }
}

/** RSS of a process and all its descendants (MiB), or undefined (Linux /proc). */
function procTreeRssMiB(pid, depth = 0) {
  const own = procRssMiB(pid);
  if (own === undefined) return undefined;
  let total = own;
  if (depth > 4) return total;
  let kids = [];
  try {
    for (const t of require('node:fs').readdirSync(`/proc/${pid}/task`)) {
      kids.push(...readFileSync(`/proc/${pid}/task/${t}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number));
    }
  } catch {
    kids = [];
  }
  for (const k of new Set(kids)) total += procTreeRssMiB(k, depth + 1) ?? 0;
  return total;
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/**
 * milvus_querynode_entity_size of one collection (its loaded raw fields, without the index), in bytes, from the
 * Milvus health port's Prometheus endpoint; undefined when the endpoint or the collection's series is not there.
 */
async function milvusEntitySize(metricsUrl, collectionId) {
  try {
    assertLoopbackUrl(metricsUrl, '--milvus-metrics');
    const r = await httpJson('GET', metricsUrl, undefined, { timeoutMs: 5000 });
    let sum = 0;
    let found = false;
    for (const m of r.text.matchAll(/^milvus_querynode_entity_size\{([^}]*)\}\s+(\S+)/gm)) {
      if (m[1].includes(`collection_id="${collectionId}"`)) {
        sum += Number(m[2]);
        found = true;
      }
    }
    return found ? sum : undefined;
  } catch {
    return undefined;
  }
}

/** Mean, P50/P95/P99 and max of a list of latencies (ms). */
function latencySummary(ms) {
  const s = [...ms].sort((a, b) => a - b);
  return { mean: s.reduce((a, b) => a + b, 0) / s.length, p50: quantile(s, 0.5), p95: quantile(s, 0.95), p99: quantile(s, 0.99), max: s[s.length - 1] };
}

/** The pid of the local Milvus launcher (deploy/local/servers.sh writes .local/run/milvus.pid), if it runs. */
function milvusPid() {
  try {
    const pid = Number(readFileSync(join(root, '.local', 'run', 'milvus.pid'), 'utf8').trim());
    return Number.isInteger(pid) && pid > 0 && existsSync(`/proc/${pid}`) ? pid : undefined;
  } catch {
    return undefined;
  }
}

/** fetch with a timeout; JSON body in, parsed JSON (or text) out. */
async function httpJson(method, url, body, { timeoutMs = 30_000, apiKey } = {}) {
  const res = await fetch(url, {
    method,
    headers: { ...(body !== undefined ? { 'content-type': 'application/json' } : {}), ...(apiKey ? { authorization: `Bearer ${apiKey}` } : {}) },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
    signal: AbortSignal.timeout(timeoutMs),
  });
  const text = await res.text();
  let json;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: res.status, ok: res.ok, json, text };
}

// ---------- datasets ----------

function readJsonl(file) {
  return readFileSync(file, 'utf8')
    .split('\n')
    .filter((l) => l.trim())
    .map((l) => JSON.parse(l));
}

function readCranfield(evalDir = defaultEvalDir) {
  const dir = join(evalDir, 'cranfield');
  for (const f of ['corpus.jsonl', 'queries.jsonl']) if (!existsSync(join(dir, f))) throw new Error(`${join(dir, f)} is missing (set --eval-dir)`);
  return { dir, corpus: readJsonl(join(dir, 'corpus.jsonl')), queries: readJsonl(join(dir, 'queries.jsonl')) };
}

/** texmex .fvecs/.ivecs: per row an int32 dimension then `dim` float32/int32 values. */
function readVecs(file, kind) {
  const buf = readFileSync(file);
  if (buf.length < 4) throw new Error(`${file} is empty`);
  const dim = buf.readInt32LE(0);
  const rowBytes = 4 + 4 * dim;
  if (dim <= 0 || buf.length % rowBytes !== 0) throw new Error(`${file}: not a texmex ${kind} file (dim ${dim}, ${buf.length} bytes)`);
  const n = buf.length / rowBytes;
  const data = kind === 'ivecs' ? new Int32Array(n * dim) : new Float32Array(n * dim);
  for (let i = 0; i < n; i++) {
    const off = i * rowBytes;
    if (buf.readInt32LE(off) !== dim) throw new Error(`${file}: row ${i} has dimension ${buf.readInt32LE(off)}, expected ${dim}`);
    for (let j = 0; j < dim; j++) data[i * dim + j] = kind === 'ivecs' ? buf.readInt32LE(off + 4 + 4 * j) : buf.readFloatLE(off + 4 + 4 * j);
  }
  return { n, dim, data, row: (i) => data.subarray(i * dim, (i + 1) * dim) };
}

// ---------- statistics and output ----------

function median(xs) {
  if (!xs.length) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

function quantile(sorted, q) {
  if (!sorted.length) return NaN;
  const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1));
  return sorted[i];
}

/** Formats a number for a table: fixed digits, '–' for missing. */
function fmt(v, digits = 1) {
  if (v === undefined || v === null || (typeof v === 'number' && !Number.isFinite(v))) return '–';
  if (typeof v === 'number') return v.toFixed(digits);
  return String(v);
}

/** A plain-text table with right-aligned numeric-looking cells. */
function table(head, rows) {
  const cells = rows.map((r) => r.map((c) => (c === undefined || c === null ? '–' : String(c))));
  const widths = head.map((h, i) => Math.max(String(h).length, ...cells.map((r) => (r[i] ?? '').length)));
  const isNum = (s) => /^[-+]?[\d.,]+( ?[%×x]| ?ms| ?s| ?MiB| ?B)?$|^–$/.test(s);
  const line = (r) => r.map((c, i) => (isNum(c) && i > 0 ? c.padStart(widths[i]) : c.padEnd(widths[i]))).join('  ').trimEnd();
  return [line(head.map(String)), widths.map((w) => '-'.repeat(w)).join('  '), ...cells.map(line)].join('\n');
}

/** Deterministic PRNG (mulberry32). */
function rng(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Prints the header (what, hardware, date), the tables and notes, and the one JSON line, on stdout. */
function report({ bench, hw, started, sections, notes, json }) {
  const out = [];
  out.push(`== bench ${bench} · ${started.toISOString().replace(/\.\d+Z$/, 'Z')} · ${hw.nproc} CPU(s) ${hw.cpu} · ${hw.mem_gib} GiB · Node ${hw.node} · load ${hw.loadavg_at_start}`);
  for (const s of sections) {
    out.push('');
    if (s.title) out.push(s.title);
    out.push(s.text ?? table(s.head, s.rows));
  }
  if (notes && notes.length) {
    out.push('');
    for (const n of notes) out.push(`note: ${n}`);
  }
  out.push('');
  process.stdout.write(out.join('\n') + '\n');
  process.stdout.write(JSON.stringify({ bench, date: started.toISOString(), hardware: hw, seconds: Number(((Date.now() - started.getTime()) / 1000).toFixed(1)), ...json }) + '\n');
}

module.exports = {
  root,
  rng,
  distDir,
  defaultEvalDir,
  requireDist,
  parseArgs,
  usage,
  hardware,
  log,
  watchdog,
  isLoopbackHost,
  assertLoopbackUrl,
  assertLoopbackAddress,
  tcpReachable,
  gc,
  rssMiB,
  procRssMiB,
  procTreeRssMiB,
  sleep,
  milvusPid,
  milvusEntitySize,
  latencySummary,
  httpJson,
  readJsonl,
  readCranfield,
  readVecs,
  median,
  quantile,
  fmt,
  table,
  report,
};
