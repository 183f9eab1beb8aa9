/**
 * Issue 14, "Prove it": two replicas of every service (scripts/distributed.js --replicas 2: 16 processes) on one
 * PostgreSQL database for the shared state, beside the real Kafka, Milvus and OpenSearch servers.
 * 1. 1,000 documents through both gateways while, in turn, one replica of the loader, the chunker, the embedder and
 *    the indexer is killed with SIGKILL and restarted, and one gateway is stopped: every accepted document ends
 *    `indexed` once (version 1), the registry's chunk total equals the Milvus and the OpenSearch counts, and Milvus
 *    holds no chunk id twice.
 * 2. Queries keep answering while a retriever replica is killed; both replicas' /metrics show they served queries
 *    before the kill (round robin over both).
 * 3. The reconciler leader (a gateway) is killed with SIGKILL: the other gateway's rag_leader{name="reconciler"}
 *    becomes 1, and a page purged at the (fake) Confluence source is then pruned by its reconciliation.
 * 4. PostgreSQL stopped for 15 s mid-ingestion: nothing lost, duplicated or failed; a query during the outage
 *    returns (a status, not a hang); every service process recovers without being restarted.
 *    This stops the shared PostgreSQL of the machine for 15 s (other suites using it see the outage).
 * Needs `bash deploy/local/servers.sh start all`. RAG_TEST_DATABASE_URL overrides the PostgreSQL address.
 */
import { randomBytes } from 'node:crypto';
import { ConsistencyLevelEnum, MilvusClient } from '@zilliz/milvus2-sdk-node';
import pg from 'pg';
import { FakeConfluence } from '../fakes/confluence-server';
import { GATEWAY, doc, env, killAndRestart, milvus, opensearch, servers, service, services, startService, useDistributedPlatform, waitHealthy } from '../infra/distributed-harness';

const BASE = process.env.RAG_TEST_DATABASE_URL ?? 'postgres://rag@127.0.0.1:55432/rag';
const dbName = `rag_rep_${randomBytes(4).toString('hex')}`;
const dbUrl = Object.assign(new globalThis.URL(BASE), { pathname: `/${dbName}` }).toString();
const admin = new pg.Pool({ connectionString: BASE, max: 1 });
const db = new pg.Pool({ connectionString: dbUrl, max: 2 });
// The outage test stops PostgreSQL: the pools' idle connections end with an error event, which is expected here.
for (const pool of [admin, db]) pool.on('error', () => undefined);
const SITE = 'acme.atlassian.net';
const confluence = new FakeConfluence();

// Registered before the platform's hooks: the database and the fake source exist, and every process inherits them.
beforeAll(async () => {
  await admin.query(`CREATE DATABASE ${dbName}`);
  process.env.RAG_DATABASE_URL = dbUrl;
  await confluence.start(GATEWAY + 40);
  confluence.addSpace('OPS');
  Object.assign(env, {
    RAG_BUS_PARTITIONS: '4', // two partitions per replica of each stage
    RAG_CONFLUENCE_BASE_URL: confluence.url,
    RAG_CONFLUENCE_SITE: SITE,
    RAG_CONFLUENCE_EMAIL: confluence.email,
    RAG_CONFLUENCE_API_TOKEN: confluence.apiToken,
    RAG_CONFLUENCE_SPACES: 'OPS',
    RAG_RECONCILE_INTERVAL_S: '2',
    RAG_LEADER_POLL_MS: '500',
  });
});
useDistributedPlatform({ replicas: 2 });
afterAll(async () => {
  delete process.env.RAG_DATABASE_URL;
  await confluence.close();
  await db.end();
  await admin.query(`DROP DATABASE IF EXISTS ${dbName} WITH (FORCE)`);
  await admin.end();
}, 60_000);

const gatewayUrl = (id: 'gateway-1' | 'gateway-2') => `http://127.0.0.1:${service(id).port}`;
const at = async <T = Record<string, unknown>>(base: string, method: string, path: string, body?: unknown) => {
  const r = await fetch(`${base}${path}`, {
    method,
    headers: { 'content-type': 'application/json' },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    // A hang fails the test (instead of blocking it); no request here is expected to come near this.
    signal: AbortSignal.timeout(60_000),
  });
  return { status: r.status, body: (await r.json().catch(() => ({}))) as T };
};
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const alive = (id: string) => service(id).proc!.exitCode === null && service(id).proc!.signalCode === null;

/** One metric sample of a process's /metrics (0 when absent). */
async function metric(port: number, sample: string): Promise<number> {
  const text = await (await fetch(`http://127.0.0.1:${port}/metrics`, { signal: AbortSignal.timeout(30_000) })).text();
  const line = text.split('\n').find((l) => l.startsWith(`${sample} `));
  return line ? Number(line.slice(sample.length + 1)) : 0;
}

/** The sum of every sample of a counter over every service process's /metrics (e.g. all dead letters). */
async function total(name: string): Promise<number> {
  let sum = 0;
  for (const s of services) {
    const text = await (await fetch(`http://127.0.0.1:${s.port}/metrics`, { signal: AbortSignal.timeout(30_000) })).text();
    for (const l of text.split('\n')) if (l.startsWith(`${name}{`) || l.startsWith(`${name} `)) sum += Number(l.slice(l.lastIndexOf(' ') + 1));
  }
  return sum;
}

/** Registry rows of the documents whose id starts with `prefix`, straight from PostgreSQL. */
async function registry(prefix: string) {
  const { rows } = await db.query<{ status: string; n: number; chunks: number; v1: number }>(
    `SELECT status, COUNT(*)::int AS n, COALESCE(SUM(chunks), 0)::int AS chunks, COUNT(*) FILTER (WHERE version = 1)::int AS v1
       FROM documents WHERE document_id LIKE $1 GROUP BY status`,
    [`${prefix}%`],
  );
  return Object.fromEntries(rows.map((r) => [r.status, r]));
}

/** Polls the registry until every one of `n` documents is indexed, or fails on a `failed` one or the deadline. */
async function waitIndexed(prefix: string, n: number, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const r = await registry(prefix).catch(() => ({}) as Awaited<ReturnType<typeof registry>>);
    if (r.failed) throw new Error(`${r.failed.n} documents ${prefix}* failed`);
    if ((r.indexed?.n ?? 0) === n) return;
    if (Date.now() > deadline) throw new Error(`documents ${prefix}*: ${JSON.stringify(r)} after ${timeoutMs} ms, expected ${n} indexed`);
    await sleep(1000);
  }
}

/** Every chunk id of the documents `prefix*` in Milvus (strong consistency), to look for duplicates. */
async function milvusChunkIds(prefix: string): Promise<string[]> {
  const client = new MilvusClient({ address: process.env.RAG_MILVUS_ADDRESS ?? '127.0.0.1:19530', logLevel: 'error' });
  try {
    const res = await client.query({
      collection_name: milvus.collection,
      expr: `document_id like "${prefix}%"`,
      output_fields: ['chunk_id'],
      limit: 16_384,
      consistency_level: ConsistencyLevelEnum.Strong,
    });
    return res.data.map((d) => String((d as { chunk_id: string }).chunk_id));
  } finally {
    await client.closeConnection();
  }
}

/** The registry, Milvus and OpenSearch agree on the chunks of `prefix*`, and no chunk id is stored twice. */
async function expectExactlyOnce(prefix: string, n: number): Promise<void> {
  const r = await registry(prefix);
  expect(Object.keys(r)).toEqual(['indexed']);
  expect(r.indexed!.n).toBe(n);
  expect(r.indexed!.v1).toBe(n); // accepted once: nothing re-submitted or re-versioned
  const chunks = r.indexed!.chunks;
  expect(chunks).toBeGreaterThanOrEqual(n);
  const ids = await milvusChunkIds(prefix);
  expect(ids.length).toBe(chunks);
  expect(new Set(ids).size).toBe(chunks);
  let keyword = 0;
  for (let i = 0; i < n; i++) keyword += await opensearch.count(`${prefix}${i}`);
  expect(keyword).toBe(chunks);
}

describe('two replicas of every service on PostgreSQL shared state', () => {
  it('indexes 1,000 documents from both gateways exactly once while a replica of each stage is killed with SIGKILL and a gateway is stopped', { timeout: 600_000 }, async () => {
    expect(services.map((s) => s.id).sort()).toEqual(
      ['chunker', 'embedder', 'gateway', 'generator', 'indexer', 'loader', 'reranker', 'retriever'].flatMap((n) => [`${n}-1`, `${n}-2`]),
    );
    const N = 1000;
    const BATCH = 50;
    const prefix = 'rep-';
    // Before batch k, the event of `events[k]`; the stage kills land while the earlier batches are still flowing.
    const events: Record<number, () => Promise<void>> = {
      3: () => killAndRestart(service('loader-1')),
      6: () => killAndRestart(service('chunker-1')),
      9: () => killAndRestart(service('embedder-1')),
      12: () => killAndRestart(service('indexer-1')),
      15: async () => {
        const gw = service('gateway-2');
        const exited = new Promise((r) => gw.proc!.once('exit', r));
        gw.proc!.kill('SIGTERM'); // a rolling update / scale-down: it drains, the other keeps serving
        await exited;
      },
    };
    let accepted = 0;
    let midStream = 0;
    for (let k = 0; k * BATCH < N; k++) {
      if (events[k]) {
        const r = await registry(prefix);
        if ((r.indexed?.n ?? 0) < accepted) midStream++; // documents were still in the pipeline at the kill
        await events[k]!();
      }
      const via = k % 2 === 1 && alive('gateway-2') ? gatewayUrl('gateway-2') : gatewayUrl('gateway-1');
      const documents = Array.from({ length: BATCH }, (_, j) => ({ ...doc(k * BATCH + j), id: `${prefix}${k * BATCH + j}` }));
      const res = await at<{ accepted: unknown[] }>(via, 'POST', '/v1/documents:batch', { documents });
      expect(res.status, JSON.stringify(res.body).slice(0, 300)).toBe(202);
      expect(res.body.accepted).toHaveLength(BATCH);
      accepted += BATCH;
    }
    // Every event but perhaps the first found documents in flight (the pipeline is slower than the batch API).
    expect(midStream).toBeGreaterThanOrEqual(4);
    await waitIndexed(prefix, N, 420_000);
    await expectExactlyOnce(prefix, N);
    // The stopped gateway comes back (the next tests use both).
    startService(service('gateway-2'));
    await waitHealthy(service('gateway-2').port);
  });

  it('keeps answering while a retriever replica is killed; both replicas served queries before', { timeout: 240_000 }, async () => {
    const served = 'rag_stage_duration_seconds_count{stage="retrieve"}';
    const [r1, r2] = [service('retriever-1'), service('retriever-2')];
    const before = [await metric(r1.port, served), await metric(r2.port, served)];
    const ask = async (i: number) => {
      // A different question each time: no answer cache between the gateway and the retriever.
      const q = await at<{ citations: { document_id: string }[] }>(gatewayUrl(i % 2 ? 'gateway-1' : 'gateway-2'), 'POST', '/v1/query', {
        question: `Which Mach number was model number ${i} tested at?`,
      });
      expect(q.status, JSON.stringify(q.body).slice(0, 300)).toBe(200);
      expect(q.body.citations.length).toBeGreaterThan(0);
    };
    for (let i = 1; i <= 12; i++) await ask(i);
    const after = [await metric(r1.port, served), await metric(r2.port, served)];
    expect(after[0]! - before[0]!).toBeGreaterThan(0);
    expect(after[1]! - before[1]!).toBeGreaterThan(0);
    // Kill one replica while queries run, and keep asking: every query is answered by the other.
    const exited = new Promise((r) => r1.proc!.once('exit', r));
    const during = Promise.all([13, 14, 15, 16].map((i) => ask(i)));
    r1.proc!.kill('SIGKILL');
    await exited;
    await during;
    const survivor = await metric(r2.port, served);
    for (let i = 17; i <= 28; i++) await ask(i);
    expect((await metric(r2.port, served)) - survivor).toBeGreaterThanOrEqual(12);
    startService(r1);
    await waitHealthy(r1.port);
  });

  it('hands the reconciler to the other gateway when its leader is killed, which then prunes a page deleted at the source', { timeout: 240_000 }, async () => {
    const leaderOf = async () => {
      const flags = [await metric(service('gateway-1').port, 'rag_leader{name="reconciler"}'), await metric(service('gateway-2').port, 'rag_leader{name="reconciler"}')];
      return flags;
    };
    // Exactly one leader (poll: a gateway restarted by the previous test campaigns every RAG_LEADER_POLL_MS).
    let flags = await leaderOf();
    for (let i = 0; i < 60 && flags[0]! + flags[1]! !== 1; i++) {
      await sleep(500);
      flags = await leaderOf();
    }
    expect(flags[0]! + flags[1]!).toBe(1);
    const [leader, follower] = flags[0] === 1 ? (['gateway-1', 'gateway-2'] as const) : (['gateway-2', 'gateway-1'] as const);

    const page = confluence.putPage({ spaceKey: 'OPS', title: 'Failover runbook', storage: '<p>The standby takes over the reconciler.</p>' });
    const id = `confluence:${SITE}:${page.id}`;
    const waitStatus = async (base: string, wanted: string) => {
      for (let i = 0; ; i++) {
        const r = await at<{ status: string }>(base, 'GET', `/v1/documents/${encodeURIComponent(id)}`);
        if (r.body.status === wanted || (wanted === 'deleted' && r.status === 404)) return;
        if (i > 240) throw new Error(`${id}: ${JSON.stringify(r.body)}, expected ${wanted}`);
        await sleep(500);
      }
    };
    await waitStatus(gatewayUrl(follower), 'indexed'); // imported by the leader's reconciliation alone

    const dead = service(leader);
    const exited = new Promise((r) => dead.proc!.once('exit', r));
    dead.proc!.kill('SIGKILL');
    await exited;
    // The follower takes the advisory lock once PostgreSQL drops the dead leader's session (a closed socket: at
    // once) on its next poll (500 ms here); bounded by the polls below, not a timing assertion.
    let now = 0;
    for (let i = 0; i < 60 && now !== 1; i++) {
      await sleep(500);
      now = await metric(service(follower).port, 'rag_leader{name="reconciler"}');
    }
    expect(now).toBe(1);
    confluence.purge(page.id);
    await waitStatus(gatewayUrl(follower), 'deleted');
    startService(dead);
    await waitHealthy(dead.port);
    // The restarted one is a follower: still exactly one leader. Polled, not sampled once after a fixed sleep: with a
    // 500 ms poll the lock check times out at 500 ms too, and on a loaded machine (a CI run beside a benchmark,
    // 2026-12-06) a leader whose `SELECT 1` took longer stepped down and took the lock again on its next poll — one
    // sample in that window read no leader at all.
    let final = await leaderOf();
    for (let i = 0; i < 60 && final.filter((f) => f === 1).length !== 1; i++) {
      await sleep(500);
      final = await leaderOf();
    }
    expect(final.filter((f) => f === 1)).toHaveLength(1);
  });

  it('loses and duplicates nothing when PostgreSQL is stopped for 15 s mid-ingestion; services recover without restart', { timeout: 420_000 }, async () => {
    const N = 200;
    const prefix = 'pgout-';
    const pids = services.map((s) => s.proc!.pid);
    const deadLetters = await total('rag_dlq_messages_total');
    for (let k = 0; k < N; k += 100) {
      const documents = Array.from({ length: 100 }, (_, j) => ({ ...doc(5000 + k + j), id: `${prefix}${k + j}` }));
      const res = await at<{ accepted: unknown[] }>(gatewayUrl(k ? 'gateway-2' : 'gateway-1'), 'POST', '/v1/documents:batch', { documents });
      expect(res.status).toBe(202);
      expect(res.body.accepted).toHaveLength(100);
    }
    // Mid-ingestion: some indexed, not all.
    for (let i = 0; ; i++) {
      const r = await registry(prefix);
      if ((r.indexed?.n ?? 0) > 0) {
        expect(r.indexed!.n).toBeLessThan(N);
        break;
      }
      if (i > 600) throw new Error('nothing indexed');
      await sleep(200);
    }
    let during: { status: number; body: { error?: { message?: string } } } | undefined;
    let leadersDuring: number[] = [];
    servers('stop', 'postgres');
    try {
      await sleep(5_000);
      // A query during the outage answers with a status (200, possibly degraded, or a clear 503), not a hang.
      during = await at(gatewayUrl('gateway-1'), 'POST', '/v1/query', { question: 'Which Mach number was model number 5003 tested at?' });
      // The leader lost its lock session with the server: no gateway leads while the database is away.
      leadersDuring = [await metric(service('gateway-1').port, 'rag_leader{name="reconciler"}'), await metric(service('gateway-2').port, 'rag_leader{name="reconciler"}')];
      await sleep(10_000);
    } finally {
      servers('start', 'postgres');
    }
    expect([200, 503], JSON.stringify(during)).toContain(during!.status);
    expect(leadersDuring).toEqual([0, 0]);
    process.stderr.write(`replicas: query during the PostgreSQL outage → ${during!.status} ${JSON.stringify(during!.body).slice(0, 200)}\n`);
    await waitIndexed(prefix, N, 300_000);
    await expectExactlyOnce(prefix, N);
    // Nothing was restarted: the same processes, all alive and healthy.
    expect(services.map((s) => s.proc!.pid)).toEqual(pids);
    expect(await total('rag_dlq_messages_total')).toBe(deadLetters); // none dead-lettered (same processes: counters kept)
    for (const s of services) {
      expect(alive(s.id!)).toBe(true);
      await waitHealthy(s.port);
    }
    expect((await at(gatewayUrl('gateway-2'), 'GET', `/v1/documents/${prefix}0`)).status).toBe(200);
  });
});
