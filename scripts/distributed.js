#!/usr/bin/env node
// `npm run start:distributed`: the eight services as separate Node processes on this machine, in distributed mode —
// Kafka between the ingestion stages, gRPC on the query path, Milvus + OpenSearch/Elasticsearch as stores.
//
// It builds nothing: run `npm run build` first (dist/apps/<service>/src/main.js), and start the servers
// (`bash deploy/local/servers.sh start all`). Every service gets RAG_PORT for /healthz, /readyz and /metrics
// (gateway RAG_PORT or 8080, then loader..generator on the next seven ports), the query-path services their
// RAG_GRPC_PORT (50051-50054, or the ports of RAG_EMBEDDER_GRPC..RAG_GENERATOR_GRPC), and all share RAG_DATA_DIR
// (default .rag-data/distributed) for the SQLite registry. Output is prefixed with the service name; the launcher
// waits for every /healthz, prints a summary, and stops every child on Ctrl-C/SIGTERM or as soon as one dies.
//
// The embedded vector store and keyword index live inside one process, so they cannot be shared by the indexer
// and the retriever running apart: this launcher refuses RAG_VECTOR_STORE=embedded and RAG_KEYWORD_INDEX=embedded.
//
// usage: node scripts/distributed.js [--no-preflight] [--dry-run]
//   --no-preflight  skip the TCP checks of Kafka, Milvus and the keyword index before starting
//   --dry-run       print the plan (services, ports, environment) as JSON and exit
// environment: RAG_DIST_DIR (default <repo>/dist), RAG_START_TIMEOUT_MS (default 180000 × replicas), RAG_STOP_GRACE_MS (15000)
'use strict';
const { spawn } = require('node:child_process');
const { existsSync, mkdirSync } = require('node:fs');
const http = require('node:http');
const net = require('node:net');
const { join, resolve } = require('node:path');

const root = resolve(__dirname, '..');
const args = new Set();
// --replicas N: N processes of every service (issue 14). Replica r (0-based) listens on HTTP port + 8r and gRPC
// port + 4r; the gRPC clients get every replica's address (`ipv4:a,b`, balanced round robin).
let replicas = 1;
for (let i = 2, argv = process.argv; i < argv.length; i++) {
  const a = argv[i];
  const m = /^--replicas(?:=(.*))?$/.exec(a);
  if (m) {
    const v = m[1] ?? argv[++i];
    replicas = Number(v);
    if (!Number.isInteger(replicas) || replicas < 1 || replicas > 8) fail(`--replicas ${v}: a whole number from 1 to 8`);
    continue;
  }
  if (!['--no-preflight', '--dry-run', '--help', '-h'].includes(a)) fail(`unknown option ${a} (see --help)`);
  args.add(a);
}
if (args.has('--help') || args.has('-h')) {
  process.stdout.write(
    'usage: npm run start:distributed [-- --no-preflight] [-- --dry-run] [-- --replicas N]\n' +
      '  starts the eight services from dist/ (npm run build first) in distributed mode: Kafka, gRPC, Milvus, OpenSearch\n' +
      '  --no-preflight  skip the TCP checks of Kafka, Milvus and the keyword index\n' +
      '  --dry-run       print the plan (services, ports, environment) as JSON and exit\n' +
      '  --replicas N    N processes of every service (needs RAG_DATABASE_URL and RAG_BUS=kafka); replica r on ports + 8r (gRPC + 4r)\n' +
      '  env: RAG_PORT (gateway, others on the next 7 ports), RAG_*_GRPC, RAG_DATA_DIR, RAG_BUS, RAG_VECTOR_STORE,\n' +
      '       RAG_KEYWORD_INDEX, RAG_DATABASE_URL (PostgreSQL shared state), RAG_DIST_DIR, RAG_START_TIMEOUT_MS, RAG_STOP_GRACE_MS\n',
  );
  process.exit(0);
}

function fail(message) {
  process.stderr.write(`start:distributed: ${message}\n`);
  process.exit(1);
}

const env = process.env;
const distDir = resolve(env.RAG_DIST_DIR || join(root, 'dist'));
// 8 × N processes start at once: on a small machine N=2 needs longer than one set, so the default grows with N.
const startTimeoutMs = Number(env.RAG_START_TIMEOUT_MS || 180_000 * replicas);
const stopGraceMs = Number(env.RAG_STOP_GRACE_MS || 15_000);
const host = env.RAG_HOST || '127.0.0.1';
const connectHost = host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host;

// ---- mode and stores ------------------------------------------------------------------------------------------

const mode = {
  RAG_BUS: env.RAG_BUS || 'kafka',
  RAG_VECTOR_STORE: env.RAG_VECTOR_STORE || 'milvus',
  RAG_KEYWORD_INDEX: env.RAG_KEYWORD_INDEX || 'opensearch',
};
const embeddedStores = ['RAG_VECTOR_STORE', 'RAG_KEYWORD_INDEX'].filter((k) => mode[k] === 'embedded');
if (embeddedStores.length) {
  fail(
    `${embeddedStores.map((k) => `${k}=embedded`).join(' and ')}: the embedded stores live inside one process, so the ` +
      'indexer and the retriever cannot share them when they run apart.\n' +
      '  Use the server-backed stores (RAG_VECTOR_STORE=milvus, RAG_KEYWORD_INDEX=opensearch|elasticsearch; start them with\n' +
      '  `bash deploy/local/servers.sh start all`), or run everything in one process with `npm start`.',
  );
}
if (mode.RAG_BUS !== 'kafka') {
  process.stderr.write(`start:distributed: RAG_BUS=${mode.RAG_BUS}: the stages share the SQLite log in RAG_DATA_DIR and the gateway runs the query path in-process\n`);
}

// ---- services, ports --------------------------------------------------------------------------------------------

const gatewayPort = Number(env.RAG_PORT || 8080);
if (!Number.isInteger(gatewayPort) || gatewayPort <= 0 || gatewayPort + 8 * replicas - 1 > 65535) fail(`RAG_PORT=${env.RAG_PORT} is not a usable port`);
if (replicas > 1 && !env.RAG_DATABASE_URL) {
  fail('--replicas needs RAG_DATABASE_URL (PostgreSQL: registry, API keys, rate limits and the reconciler leader shared by the replicas; start one with `bash deploy/local/servers.sh start postgres`)');
}
if (replicas > 1 && (env.RAG_BUS || 'kafka') !== 'kafka') fail('--replicas needs RAG_BUS=kafka (consumer groups spread the partitions over the replicas)');

function grpcPort(key, fallback) {
  const v = env[key];
  if (!v) return fallback;
  const m = /:(\d+)$/.exec(v);
  if (!m) fail(`${key}=${v} must be host:port`);
  return Number(m[1]);
}
/** The gRPC target of a query-path service: one address, or with --replicas every replica's (round robin). */
function grpcTarget(key, port) {
  if (replicas === 1) return env[key] || `${connectHost}:${port}`;
  const host = env[key] ? hostPort(env[key], port).hostname : connectHost;
  return `ipv4:${Array.from({ length: replicas }, (_, r) => `${host}:${port + 4 * r}`).join(',')}`;
}
const grpc = {
  embedder: grpcPort('RAG_EMBEDDER_GRPC', 50051),
  retriever: grpcPort('RAG_RETRIEVER_GRPC', 50052),
  reranker: grpcPort('RAG_RERANKER_GRPC', 50053),
  generator: grpcPort('RAG_GENERATOR_GRPC', 50054),
};

// Query-path and ingestion services first in the table; the gateway last (it is what users talk to).
const services = [
  { name: 'loader', port: gatewayPort + 1 },
  { name: 'chunker', port: gatewayPort + 2 },
  { name: 'embedder', port: gatewayPort + 3, grpc: grpc.embedder },
  { name: 'indexer', port: gatewayPort + 4 },
  { name: 'retriever', port: gatewayPort + 5, grpc: grpc.retriever },
  { name: 'reranker', port: gatewayPort + 6, grpc: grpc.reranker },
  { name: 'generator', port: gatewayPort + 7, grpc: grpc.generator },
  { name: 'gateway', port: gatewayPort },
];

const dataDir = resolve(env.RAG_DATA_DIR || join(root, '.rag-data', 'distributed'));
const shared = {
  ...mode,
  RAG_HOST: host,
  RAG_DATA_DIR: dataDir,
  RAG_EMBEDDER_GRPC: grpcTarget('RAG_EMBEDDER_GRPC', grpc.embedder),
  RAG_RETRIEVER_GRPC: grpcTarget('RAG_RETRIEVER_GRPC', grpc.retriever),
  RAG_RERANKER_GRPC: grpcTarget('RAG_RERANKER_GRPC', grpc.reranker),
  RAG_GENERATOR_GRPC: grpcTarget('RAG_GENERATOR_GRPC', grpc.generator),
  // Shared state (registry, API keys, source state, rate limits, leader locks) in PostgreSQL when set, e.g. the local
  // server of `bash deploy/local/servers.sh start postgres`: postgres://rag@127.0.0.1:55432/rag. Unset: SQLite in RAG_DATA_DIR.
  ...(env.RAG_DATABASE_URL ? { RAG_DATABASE_URL: env.RAG_DATABASE_URL } : {}),
};
// One entry per process: `id` is the service name, or `<name>-<r+1>` with --replicas.
const plan = services.flatMap((base) =>
  Array.from({ length: replicas }, (_, r) => {
    const s = { ...base, id: replicas === 1 ? base.name : `${base.name}-${r + 1}`, port: base.port + 8 * r, ...(base.grpc ? { grpc: base.grpc + 4 * r } : {}) };
    return {
      ...s,
      main: join(distDir, 'apps', s.name, 'src', 'main.js'),
      env: { ...shared, RAG_PORT: String(s.port), RAG_GRPC_PORT: String(s.grpc ?? 0) },
    };
  }),
);

if (args.has('--dry-run')) {
  process.stdout.write(JSON.stringify({ distDir, dataDir, replicas, services: plan.map(({ id, name, port, grpc: g, main, env: e }) => ({ id, name, port, grpc: g ?? null, main, env: e })) }, null, 2) + '\n');
  process.exit(0);
}

const missing = plan.filter((s) => !existsSync(s.main));
if (missing.length) fail(`${missing.map((s) => s.main).join(', ')} missing: run \`npm run build\` first`);

// ---- output ----------------------------------------------------------------------------------------------------

const tty = process.stdout.isTTY && !env.NO_COLOR;
const COLORS = [36, 32, 33, 35, 34, 96, 92, 93];
const width = Math.max(...plan.map((s) => s.id.length), 'launcher'.length);
const tag = (name, i) => {
  const label = `[${name.padEnd(width)}]`;
  return tty && i !== undefined ? `\x1b[${COLORS[i % COLORS.length]}m${label}\x1b[0m` : label;
};
const say = (line) => process.stdout.write(`${tag('launcher')} ${line}\n`);

/** Writes a child's stream line by line, each line prefixed with the service name. */
function pipeLines(stream, out, prefix) {
  let rest = '';
  stream.setEncoding('utf8');
  stream.on('data', (chunk) => {
    const lines = (rest + chunk).split('\n');
    rest = lines.pop();
    for (const l of lines) out.write(`${prefix} ${l}\n`);
  });
  stream.on('end', () => {
    if (rest) out.write(`${prefix} ${rest}\n`);
  });
}

// ---- checks ------------------------------------------------------------------------------------------------------

function tcpReachable(hostname, port, timeoutMs = 2_000) {
  return new Promise((done) => {
    const socket = net.connect({ host: hostname, port });
    const finish = (ok) => {
      socket.destroy();
      done(ok);
    };
    socket.setTimeout(timeoutMs, () => finish(false));
    socket.once('connect', () => finish(true));
    socket.once('error', () => finish(false));
  });
}

function portFree(port) {
  return new Promise((done) => {
    const srv = net.createServer();
    srv.once('error', () => done(false));
    srv.listen(port, host, () => srv.close(() => done(true)));
  });
}

function hostPort(value, defaultPort) {
  const s = String(value).replace(/^[a-z]+:\/\//i, '').replace(/\/.*$/, '');
  const m = /^(.*?)(?::(\d+))?$/.exec(s);
  return { hostname: (m[1] || '127.0.0.1').replace(/^\[|\]$/g, ''), port: Number(m[2] || defaultPort) };
}

async function preflight() {
  const deps = [];
  if (mode.RAG_BUS === 'kafka') {
    for (const b of (env.RAG_KAFKA_BROKERS || '127.0.0.1:9092').split(',')) deps.push({ what: `Kafka broker ${b.trim()}`, ...hostPort(b.trim(), 9092) });
  }
  if (mode.RAG_VECTOR_STORE === 'milvus') deps.push({ what: 'Milvus', ...hostPort(env.RAG_MILVUS_ADDRESS || '127.0.0.1:19530', 19530) });
  if (mode.RAG_KEYWORD_INDEX === 'opensearch') deps.push({ what: 'OpenSearch', ...hostPort(env.RAG_OPENSEARCH_URL || 'http://127.0.0.1:9200', 9200) });
  if (mode.RAG_KEYWORD_INDEX === 'elasticsearch') deps.push({ what: 'Elasticsearch', ...hostPort(env.RAG_ELASTICSEARCH_URL || 'http://127.0.0.1:9200', 9200) });
  if (env.RAG_DATABASE_URL) deps.push({ what: 'PostgreSQL', ...hostPort(env.RAG_DATABASE_URL.replace(/^[a-z]+:\/\/[^@/]*@/i, ''), 5432) });
  const down = [];
  for (const d of deps) if (!(await tcpReachable(d.hostname, d.port))) down.push(`${d.what} (${d.hostname}:${d.port})`);
  if (down.length) {
    fail(`not reachable: ${down.join(', ')}.\n  Start the servers with \`bash deploy/local/servers.sh start all\` (or pass --no-preflight).`);
  }
  const busy = [];
  for (const s of plan) {
    if (!(await portFree(s.port))) busy.push(`${s.port} (${s.id} HTTP)`);
    if (s.grpc && !(await portFree(s.grpc))) busy.push(`${s.grpc} (${s.id} gRPC)`);
  }
  if (busy.length) fail(`ports already in use: ${busy.join(', ')}; stop what holds them or set RAG_PORT / RAG_*_GRPC`);
}

function healthy(port) {
  return new Promise((done) => {
    const req = http.get({ host: connectHost, port, path: '/healthz', timeout: 2_000 }, (res) => {
      res.resume();
      done(res.statusCode === 200);
    });
    req.on('timeout', () => req.destroy());
    req.on('error', () => done(false));
  });
}

// ---- processes ---------------------------------------------------------------------------------------------------

const children = new Map();
let stopping = false;

function startService(s, i) {
  const child = spawn(process.execPath, ['--enable-source-maps', s.main], {
    cwd: root,
    env: { ...env, ...s.env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const prefix = tag(s.id, i);
  pipeLines(child.stdout, process.stdout, prefix);
  pipeLines(child.stderr, process.stderr, prefix);
  const entry = { ...s, child, state: 'starting', exited: new Promise((r) => child.once('exit', (code, signal) => r({ code, signal }))) };
  children.set(s.id, entry);
  child.once('error', (e) => say(`${s.id} could not be started: ${e.message}`));
  entry.exited.then(({ code, signal }) => {
    entry.state = 'exited';
    if (stopping) return;
    say(`${s.id} exited unexpectedly (${signal ? `signal ${signal}` : `code ${code}`}); stopping the others`);
    void stopAll(code && code !== 0 ? code : 1);
  });
}

async function stopAll(exitCode) {
  if (stopping) return;
  stopping = true;
  const live = [...children.values()].filter((c) => c.state !== 'exited');
  if (live.length) say(`stopping ${live.map((c) => c.id).join(', ')}`);
  for (const c of live) c.child.kill('SIGTERM');
  const timer = setTimeout(() => {
    for (const c of live) {
      if (c.state !== 'exited') {
        say(`${c.id} did not stop within ${stopGraceMs} ms; killing it`);
        c.child.kill('SIGKILL');
      }
    }
  }, stopGraceMs);
  await Promise.all(live.map((c) => c.exited));
  clearTimeout(timer);
  say('all services stopped');
  process.exit(exitCode);
}

process.on('SIGINT', () => void stopAll(130));
process.on('SIGTERM', () => void stopAll(143));

async function waitHealthy(entry) {
  const deadline = Date.now() + startTimeoutMs;
  while (!stopping) {
    if (entry.state === 'exited') return false;
    if (await healthy(entry.port)) {
      entry.state = 'ready';
      if (entry.grpc && !(await tcpReachable(connectHost, entry.grpc))) {
        entry.state = 'starting';
      } else {
        return true;
      }
    }
    if (Date.now() > deadline) return false;
    await new Promise((r) => setTimeout(r, 250));
  }
  return false;
}

function summary() {
  const rows = [['service', 'pid', 'http (healthz, readyz, metrics)', 'grpc', 'status']];
  for (const s of plan) {
    const c = children.get(s.id);
    rows.push([s.id, String(c.child.pid), `http://${connectHost}:${s.port}`, s.grpc ? `${connectHost}:${s.grpc}` : '-', c.state]);
  }
  const widths = rows[0].map((_, i) => Math.max(...rows.map((r) => r[i].length)));
  const line = (r) => r.map((v, i) => v.padEnd(widths[i])).join('  ').trimEnd();
  return [line(rows[0]), line(widths.map((w) => '-'.repeat(w))), ...rows.slice(1).map(line)].join('\n');
}

async function main() {
  if (!args.has('--no-preflight')) await preflight();
  mkdirSync(dataDir, { recursive: true });
  say(`starting ${plan.length} services (bus ${mode.RAG_BUS}, vectors ${mode.RAG_VECTOR_STORE}, keywords ${mode.RAG_KEYWORD_INDEX}, data ${dataDir})`);
  const started = Date.now();
  plan.forEach((s, i) => startService(s, i));
  const results = await Promise.all(plan.map((s) => waitHealthy(children.get(s.id))));
  if (stopping) return;
  const late = plan.filter((_, i) => !results[i]).map((s) => s.id);
  if (late.length) {
    say(`not healthy within ${startTimeoutMs} ms: ${late.join(', ')}`);
    await stopAll(1);
    return;
  }
  process.stdout.write(
    `\nRAG platform (distributed) ready in ${((Date.now() - started) / 1000).toFixed(1)} s\n\n${summary()}\n\n` +
      `  gateway     http://${connectHost}:${gatewayPort}/  (API docs /docs)\n  data        ${dataDir}\n  stop        Ctrl-C\n\n`,
  );
}

main().catch((e) => {
  say(`failed: ${e && e.message ? e.message : String(e)}`);
  void stopAll(1);
});
