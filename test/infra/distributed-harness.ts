/**
 * Shared by the distributed infra suites. The production shape for real: eight service processes talking over Kafka and gRPC to real Kafka, Milvus and
 * OpenSearch servers (start them first: `npm run infra:up`). Ingest through the gateway, query through the gRPC
 * chain, update, delete; kill -9 a stage mid-ingestion; a poison message; Milvus and OpenSearch stopped and back.
 */
import { execFileSync, spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { HashingEmbedder } from '@rag/adapters';
// The SDK-backed adapters are types only in the barrel (lazy loading); import their folders directly.
import { MilvusVectorStore } from '../../libs/adapters/src/milvus';
import { OpenSearchKeywordIndex } from '../../libs/adapters/src/opensearch';

export const root = resolve(__dirname, '../..');
export const run = `t${Date.now().toString(36)}`;
export const dataDir = mkdtempSync(join(tmpdir(), 'rag-dist-'));
/** RAG_TEST_PORT_BASE moves every port of a run (gateway, +1..+7 services, +11..+14 gRPC) so runs can share a machine. */
export const GATEWAY = Number(process.env.RAG_TEST_PORT_BASE ?? 18080);
export const URL = `http://127.0.0.1:${GATEWAY}`;
export const env: Record<string, string> = {
  RAG_DATA_DIR: dataDir,
  // The pipeline's behaviour under Kafka/Milvus/OpenSearch, not model quality: the hashing embedder needs no model files.
  RAG_EMBEDDER: 'hashing',
  RAG_PORT: String(GATEWAY),
  RAG_EMBEDDER_GRPC: `127.0.0.1:${GATEWAY + 11}`,
  RAG_RETRIEVER_GRPC: `127.0.0.1:${GATEWAY + 12}`,
  RAG_RERANKER_GRPC: `127.0.0.1:${GATEWAY + 13}`,
  RAG_GENERATOR_GRPC: `127.0.0.1:${GATEWAY + 14}`,
  RAG_KAFKA_TOPIC_PREFIX: `${run}.`,
  RAG_MILVUS_COLLECTION_PREFIX: run,
  RAG_KEYWORD_INDEX_PREFIX: `${run}-chunks`,
  RAG_PARENT_CHUNK_TOKENS: '0',
  RAG_BUS_PARTITIONS: '3',
  RAG_BUS_RETRY_BASE_MS: '100',
  RAG_DEADLINE_MS: '5000',
  RAG_LOG_LEVEL: 'error',
};

export interface Svc {
  /** The service name, or `<name>-<r>` for replica r (1-based) with replicas. */
  id?: string;
  name: string;
  main: string;
  env: Record<string, string>;
  port: number;
  proc?: ChildProcess;
}
export const services: Svc[] = [];

export function startService(s: Svc): void {
  s.proc = spawn(process.execPath, [s.main], { cwd: root, env: { ...process.env, ...env, ...s.env }, stdio: ['ignore', 'ignore', 'pipe'] });
  s.proc.stderr!.on('data', (d: Buffer) => {
    if (process.env.RAG_TEST_VERBOSE) process.stderr.write(`[${s.id ?? s.name}] ${d}`);
  });
}

export async function waitHealthy(port: number, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      if ((await fetch(`http://127.0.0.1:${port}/healthz`)).ok) return;
    } catch {
      /* not yet */
    }
    if (Date.now() > deadline) throw new Error(`service on ${port} not healthy`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

export async function call<T = Record<string, unknown>>(method: string, path: string, body?: unknown): Promise<{ status: number; body: T }> {
  const res = await fetch(URL + path, { method, headers: { 'content-type': 'application/json' }, ...(body ? { body: JSON.stringify(body) } : {}) });
  return { status: res.status, body: (await res.json()) as T };
}

export async function waitAll(ids: string[], wanted: string, timeoutMs = 180_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  const pending = new Set(ids);
  while (pending.size) {
    for (const id of [...pending]) {
      const r = await call<{ status: string }>('GET', `/v1/documents/${encodeURIComponent(id)}`);
      if (r.body.status === wanted) pending.delete(id);
    }
    if (!pending.size) break;
    if (Date.now() > deadline) throw new Error(`${pending.size} documents not ${wanted}: ${[...pending].slice(0, 5).join(', ')}`);
    await new Promise((r) => setTimeout(r, 500));
  }
}

export const servers = (cmd: string, name: string) => execFileSync('bash', [join(root, 'deploy/local/servers.sh'), cmd, name], { stdio: 'ignore', timeout: 240_000 });

export const embedder = new HashingEmbedder({ dim: 384 });
export const milvus = new MilvusVectorStore({ address: process.env.RAG_MILVUS_ADDRESS ?? '127.0.0.1:19530', modelId: embedder.modelId, dim: embedder.dim, collectionPrefix: run, indexType: 'HNSW' });
export const opensearch = new OpenSearchKeywordIndex({ node: process.env.RAG_OPENSEARCH_URL ?? 'http://127.0.0.1:9200', prefix: `${run}-chunks` });

export const doc = (i: number) => ({
  id: `doc-${i}`,
  title: `Report ${i}`,
  text: `Wind tunnel report ${i}.\n\nThe model number ${i} was tested at Mach ${(1 + (i % 7) * 0.5).toFixed(1)} and showed a ${i % 2 ? 'laminar' : 'turbulent'} boundary layer near station ${i}.`,
});


/**
 * `npm run build` into the shared dist/, or, when RAG_DIST_DIR is set (a folder inside the repository, e.g.
 * .local/dist-<name>, so node_modules resolve), the same SWC build into that folder: scripts/distributed.js starts
 * the services from RAG_DIST_DIR, so a suite never rewrites the dist/ that another running suite uses.
 */
function build(): number | null {
  const out = process.env.RAG_DIST_DIR;
  if (!out) return spawnSync('npm', ['run', 'build'], { cwd: root, stdio: 'ignore' }).status;
  rmSync(resolve(root, out), { recursive: true, force: true });
  const swc = join(root, 'node_modules', '.bin', 'swc');
  return spawnSync(swc, ['apps', 'libs', '-d', out, '--config-file', '.swcrc', '--ignore', '**/*.spec.ts', '--copy-files', '--quiet'], { cwd: root, stdio: 'ignore' })
    .status;
}

/** The process of one service (`id` from the plan: `gateway`, or `gateway-2` with replicas). */
export const service = (id: string): Svc => {
  const s = services.find((x) => (x.id ?? x.name) === id);
  if (!s) throw new Error(`no service ${id}`);
  return s;
};

/** SIGKILL, wait for the exit, start it again and wait for /healthz: a pod killed and rescheduled. */
export async function killAndRestart(s: Svc): Promise<void> {
  const exited = new Promise((r) => s.proc!.once('exit', r));
  s.proc!.kill('SIGKILL');
  await exited;
  startService(s);
  await waitHealthy(s.port);
}

/**
 * Starts the eight services before a suite and stops them (and drops its collections) after it. With `replicas` > 1
 * (issue 14) scripts/distributed.js plans that many processes of every service (HTTP ports + 8r, gRPC + 4r; the
 * gRPC clients balance over every replica); the gRPC ports then move to base+31.. so that they clear the second
 * replica's HTTP ports, and every replica gets its own RAG_DATA_DIR (nothing shared through files, as on two nodes).
 * Replicas need RAG_DATABASE_URL (set it in process.env before this hook runs).
 */
export function useDistributedPlatform(opts: { replicas?: number } = {}): void {
  const replicas = opts.replicas ?? 1;
  beforeAll(async () => {
    expect(build()).toBe(0);
    if (replicas > 1) {
      const grpcBase = GATEWAY + 31;
      Object.assign(env, {
        RAG_EMBEDDER_GRPC: `127.0.0.1:${grpcBase}`,
        RAG_RETRIEVER_GRPC: `127.0.0.1:${grpcBase + 1}`,
        RAG_RERANKER_GRPC: `127.0.0.1:${grpcBase + 2}`,
        RAG_GENERATOR_GRPC: `127.0.0.1:${grpcBase + 3}`,
      });
    }
    const plan = JSON.parse(
      execFileSync(process.execPath, [join(root, 'scripts/distributed.js'), '--dry-run', ...(replicas > 1 ? ['--replicas', String(replicas)] : [])], {
        cwd: root,
        env: { ...process.env, ...env },
        encoding: 'utf8',
      }),
    ) as { services: Svc[] };
    services.push(
      ...plan.services.map((s) => {
        const own: Record<string, string> = {};
        if (replicas > 1) mkdirSync((own.RAG_DATA_DIR = join(dataDir, s.id ?? s.name)), { recursive: true });
        return { ...s, env: { ...s.env, ...own, RAG_LOG_LEVEL: 'error', RAG_PARENT_CHUNK_TOKENS: '0' } };
      }),
    );
    for (const s of services) startService(s);
    // 8 × replicas Node processes start at once: on 2 busy cores the last ones can take minutes (replicas 2 here).
    for (const s of services) {
      await waitHealthy(s.port, 120_000 * replicas).catch((e: Error) => {
        throw new Error(`${s.id ?? s.name}: ${e.message}${s.proc?.exitCode != null ? ` (exited with ${s.proc.exitCode})` : ''}`);
      });
    }
  }, 60_000 + 240_000 * replicas);

  afterAll(async () => {
    for (const s of services) s.proc?.kill('SIGTERM');
    await new Promise((r) => setTimeout(r, 2000));
    for (const s of services) if (s.proc && s.proc.exitCode === null) s.proc.kill('SIGKILL');
    await milvus.drop().catch(() => undefined);
    await milvus.close().catch(() => undefined);
    await opensearch.dropAll().catch(() => undefined);
    await opensearch.close().catch(() => undefined);
    rmSync(dataDir, { recursive: true, force: true });
  }, 60_000);

}
