import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

/*
 * scripts/distributed.js (`npm run start:distributed`) over stand-in service mains (a tiny HTTP /healthz plus a TCP
 * listener on RAG_GRPC_PORT), so the launcher's own behaviour is checked without Kafka, Milvus or OpenSearch:
 * refusal of embedded stores, the plan, prefixed output, readiness, and stopping every child.
 */

const launcher = resolve(__dirname, '../../scripts/distributed.js');
const SERVICES = ['loader', 'chunker', 'embedder', 'indexer', 'retriever', 'reranker', 'generator', 'gateway'];

const FAKE_MAIN = `
const http = require('node:http');
const net = require('node:net');
const name = process.argv[1].split('/').slice(-3)[0];
const server = http.createServer((req, res) => { res.writeHead(req.url === '/healthz' ? 200 : 404); res.end('{}'); });
server.listen(Number(process.env.RAG_PORT), process.env.RAG_HOST);
const grpcPort = Number(process.env.RAG_GRPC_PORT || 0);
if (grpcPort) net.createServer((s) => s.end()).listen(grpcPort, process.env.RAG_HOST);
console.log('service ' + name + ' up bus=' + process.env.RAG_BUS + ' grpc=' + grpcPort + ' data=' + process.env.RAG_DATA_DIR);
console.error('a warning from ' + name);
process.on('SIGTERM', () => process.exit(0));
if (process.env.FAKE_DIE === name) setTimeout(() => process.exit(3), Number(process.env.FAKE_DIE_AFTER_MS || 300));
`;

let dist: string;
beforeAll(() => {
  dist = mkdtempSync(join(tmpdir(), 'rag-dist-'));
  for (const s of SERVICES) {
    mkdirSync(join(dist, 'apps', s, 'src'), { recursive: true });
    writeFileSync(join(dist, 'apps', s, 'src', 'main.js'), FAKE_MAIN);
  }
});
afterAll(() => rmSync(dist, { recursive: true, force: true }));

function free(port: number): Promise<boolean> {
  return new Promise((done) => {
    const s = createServer();
    s.once('error', () => done(false));
    s.listen(port, '127.0.0.1', () => s.close(() => done(true)));
  });
}

/** A gateway port whose next 7 ports are free, and four free gRPC ports. */
async function ports(): Promise<{ base: number; grpc: number[] }> {
  for (;;) {
    const base = 20_000 + Math.floor(Math.random() * 20_000);
    const all = [...Array(12).keys()].map((i) => base + i);
    if ((await Promise.all(all.map(free))).every(Boolean)) return { base, grpc: all.slice(8) };
  }
}

interface Run {
  child: ChildProcess;
  out: () => string;
  exit: Promise<number | null>;
}

function runLauncher(args: string[], env: Record<string, string>): Run {
  const child = spawn(process.execPath, [launcher, ...args], {
    env: { PATH: process.env.PATH ?? '', NO_COLOR: '1', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (out += d.toString()));
  return { child, out: () => out, exit: new Promise((r) => child.once('exit', (code) => r(code))) };
}

async function baseEnv(): Promise<Record<string, string>> {
  const { base, grpc } = await ports();
  return {
    RAG_DIST_DIR: dist,
    RAG_DATA_DIR: join(dist, 'data'),
    RAG_PORT: String(base),
    RAG_EMBEDDER_GRPC: `127.0.0.1:${grpc[0]}`,
    RAG_RETRIEVER_GRPC: `127.0.0.1:${grpc[1]}`,
    RAG_RERANKER_GRPC: `127.0.0.1:${grpc[2]}`,
    RAG_GENERATOR_GRPC: `127.0.0.1:${grpc[3]}`,
    RAG_STOP_GRACE_MS: '3000',
  };
}

const pidsFromSummary = (out: string): number[] =>
  [...out.matchAll(/^(loader|chunker|embedder|indexer|retriever|reranker|generator|gateway)\s+(\d+)\s+http/gm)].map((m) => Number(m[2]));

const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

describe('start:distributed launcher', () => {
  it('refuses the embedded stores with a clear message', async () => {
    for (const env of [{ RAG_VECTOR_STORE: 'embedded' }, { RAG_KEYWORD_INDEX: 'embedded' }] as Record<string, string>[]) {
      const r = runLauncher([], { ...(await baseEnv()), ...env });
      expect(await r.exit).toBe(1);
      expect(r.out()).toMatch(/embedded stores live inside one process/);
      expect(r.out()).toMatch(/servers\.sh start all/);
    }
  });

  it('asks for a build when dist/ is missing', async () => {
    const r = runLauncher(['--no-preflight'], { ...(await baseEnv()), RAG_DIST_DIR: join(dist, 'nope') });
    expect(await r.exit).toBe(1);
    expect(r.out()).toMatch(/npm run build/);
  });

  it('plans the eight services with their ports and the distributed environment', async () => {
    const env = await baseEnv();
    const r = runLauncher(['--dry-run'], env);
    expect(await r.exit).toBe(0);
    const plan = JSON.parse(r.out()) as { services: { name: string; port: number; grpc: number | null; env: Record<string, string> }[] };
    const base = Number(env.RAG_PORT);
    expect(plan.services.map((s) => [s.name, s.port])).toEqual([
      ['loader', base + 1],
      ['chunker', base + 2],
      ['embedder', base + 3],
      ['indexer', base + 4],
      ['retriever', base + 5],
      ['reranker', base + 6],
      ['generator', base + 7],
      ['gateway', base],
    ]);
    const byName = Object.fromEntries(plan.services.map((s) => [s.name, s]));
    expect(byName.retriever!.env.RAG_GRPC_PORT).toBe(env.RAG_RETRIEVER_GRPC!.split(':')[1]);
    expect(byName.gateway!.env.RAG_GRPC_PORT).toBe('0');
    for (const s of plan.services) {
      expect(s.env).toMatchObject({ RAG_BUS: 'kafka', RAG_VECTOR_STORE: 'milvus', RAG_KEYWORD_INDEX: 'opensearch', RAG_DATA_DIR: env.RAG_DATA_DIR });
      expect(s.env.RAG_PORT).toBe(String(s.port));
    }
  });

  it('fails fast when Kafka, Milvus or OpenSearch do not answer', async () => {
    const { grpc } = await ports();
    const r = runLauncher([], { ...(await baseEnv()), RAG_KAFKA_BROKERS: `127.0.0.1:${grpc[0]}`, RAG_MILVUS_ADDRESS: `127.0.0.1:${grpc[1]}`, RAG_OPENSEARCH_URL: `http://127.0.0.1:${grpc[2]}` });
    expect(await r.exit).toBe(1);
    expect(r.out()).toMatch(/not reachable: Kafka broker .*Milvus .*OpenSearch/);
  });

  it('starts every service, prefixes their output, waits for health, and stops them all on SIGTERM', async () => {
    const r = runLauncher(['--no-preflight'], await baseEnv());
    try {
      await vi.waitFor(() => expect(r.out()).toMatch(/ready in/), { timeout: 30_000, interval: 100 });
      const out = r.out();
      for (const s of SERVICES) {
        expect(out).toMatch(new RegExp(`\\[${s}\\s*\\] service ${s} up bus=kafka`));
        expect(out).toMatch(new RegExp(`\\[${s}\\s*\\] a warning from ${s}`));
      }
      expect(out).toMatch(/\[retriever\s*\] service retriever up bus=kafka grpc=\d{4,5}/);
      const pids = pidsFromSummary(out);
      expect(pids).toHaveLength(8);
      expect(pids.every(alive)).toBe(true);
      r.child.kill('SIGTERM');
      expect(await r.exit).toBe(143);
      expect(r.out()).toMatch(/all services stopped/);
      expect(pids.filter(alive)).toEqual([]);
    } finally {
      r.child.kill('SIGKILL');
    }
  });

  it('stops everything and exits non-zero when one service dies', async () => {
    const r = runLauncher(['--no-preflight'], { ...(await baseEnv()), FAKE_DIE: 'indexer', FAKE_DIE_AFTER_MS: '1500' });
    try {
      await vi.waitFor(() => expect(r.out()).toMatch(/ready in/), { timeout: 30_000, interval: 100 });
      const pids = pidsFromSummary(r.out());
      expect(await r.exit).toBe(3);
      expect(r.out()).toMatch(/indexer exited unexpectedly \(code 3\); stopping the others/);
      expect(pids.filter(alive)).toEqual([]);
    } finally {
      r.child.kill('SIGKILL');
    }
  });
});
