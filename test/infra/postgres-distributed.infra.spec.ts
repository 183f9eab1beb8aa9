/**
 * Issue 14: the distributed platform on PostgreSQL shared state, for real — eight service processes plus a SECOND
 * gateway process, all on one PostgreSQL database (RAG_DATABASE_URL) beside Kafka, Milvus and OpenSearch:
 * - documents submitted through both gateways are all indexed exactly once, and either gateway reports the same
 *   registry state (no file shared between the gateways: each has its own RAG_DATA_DIR);
 * - an API key stored once authenticates at both, and its rate limit holds across both together.
 * Needs `bash deploy/local/servers.sh start all` (PostgreSQL included); RAG_TEST_DATABASE_URL overrides its address.
 */
import { spawn, execFileSync, type ChildProcess } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PgApiKeyStore } from '../../libs/adapters/src/postgres';
import { GATEWAY, URL as GATEWAY_A, call, doc, env, milvus, opensearch, root, useDistributedPlatform, waitAll, type Svc } from './distributed-harness';

const BASE = process.env.RAG_TEST_DATABASE_URL ?? 'postgres://rag@127.0.0.1:55432/rag';
const dbName = `rag_dist_${randomBytes(4).toString('hex')}`;
const dbUrl = Object.assign(new globalThis.URL(BASE), { pathname: `/${dbName}` }).toString();
const admin = new pg.Pool({ connectionString: BASE, max: 1 });
const GATEWAY_B = `http://127.0.0.1:${GATEWAY + 20}`;
let second: ChildProcess | undefined;
const secondDir = mkdtempSync(join(tmpdir(), 'rag-gateway-b-'));

// Registered before the platform's hooks: the database exists, and every service process inherits its URL.
beforeAll(async () => {
  await admin.query(`CREATE DATABASE ${dbName}`);
  process.env.RAG_DATABASE_URL = dbUrl;
});
useDistributedPlatform();
beforeAll(async () => {
  // A second gateway replica from the same plan, on its own port and its own (scratch) data folder.
  const plan = JSON.parse(
    execFileSync(process.execPath, [join(root, 'scripts/distributed.js'), '--dry-run'], { cwd: root, env: { ...process.env, ...env }, encoding: 'utf8' }),
  ) as { services: Svc[] };
  const gw = plan.services.find((s) => s.name === 'gateway')!;
  expect(gw.env.RAG_DATABASE_URL).toBe(dbUrl);
  second = spawn(process.execPath, [gw.main], {
    cwd: root,
    env: { ...process.env, ...env, ...gw.env, RAG_PORT: String(GATEWAY + 20), RAG_DATA_DIR: secondDir, RAG_LOG_LEVEL: 'error' },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  const until = Date.now() + 120_000;
  for (;;) {
    const ok = await fetch(`${GATEWAY_B}/healthz`).then((r) => r.ok, () => false);
    if (ok) break;
    if (Date.now() > until || second.exitCode !== null) throw new Error('the second gateway did not start');
    await new Promise((r) => setTimeout(r, 500));
  }
}, 150_000);
afterAll(async () => {
  second?.kill('SIGTERM');
  await new Promise((r) => second?.once('exit', r) ?? r(undefined));
  delete process.env.RAG_DATABASE_URL;
  rmSync(secondDir, { recursive: true, force: true });
  await admin.query(`DROP DATABASE IF EXISTS ${dbName} WITH (FORCE)`);
  await admin.end();
}, 60_000);

const callAt = async <T = Record<string, unknown>>(base: string, method: string, path: string, body?: unknown, key?: string) => {
  const r = await fetch(`${base}${path}`, {
    method,
    headers: { 'content-type': 'application/json', ...(key ? { authorization: `Bearer ${key}` } : {}) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  return { status: r.status, body: (await r.json().catch(() => ({}))) as T };
};

describe('distributed mode on PostgreSQL shared state, two gateways', () => {
  it('indexes every document submitted through either gateway exactly once; both gateways see one registry', { timeout: 240_000 }, async () => {
    const ids: string[] = [];
    for (let i = 1; i <= 12; i++) {
      const r = await callAt<{ document_id: string; version: number }>(i % 2 ? GATEWAY_A : GATEWAY_B, 'POST', '/v1/documents', { ...doc(i), id: `pgdoc-${i}` });
      expect(r.status, JSON.stringify(r.body)).toBe(202);
      ids.push(r.body.document_id);
    }
    await waitAll(ids, 'indexed');
    for (const id of ids) {
      const [a, b] = [await callAt<{ status: string; version: number; chunks: number }>(GATEWAY_A, 'GET', `/v1/documents/${id}`), await callAt(GATEWAY_B, 'GET', `/v1/documents/${id}`)];
      expect(a.body).toMatchObject({ status: 'indexed', version: 1 });
      expect(b.body).toEqual(a.body);
      // exactly once: the chunks the registry counts are the ones in both stores
      expect(await milvus.count(id)).toBe(a.body.chunks);
      expect(await opensearch.count(id)).toBe(a.body.chunks);
    }
    const c = new pg.Client({ connectionString: dbUrl });
    await c.connect();
    const { rows } = await c.query<{ n: number }>(`SELECT COUNT(*)::int AS n FROM documents WHERE document_id LIKE 'pgdoc-%' AND status = 'indexed' AND version = 1`);
    await c.end();
    expect(rows[0]!.n).toBe(ids.length);
    // A query through the second gateway answers from documents the first one accepted.
    const q = await callAt<{ citations: { document_id: string }[]; degraded: string[] }>(GATEWAY_B, 'POST', '/v1/query', { question: 'Which Mach number was model number 3 tested at?' });
    expect(q.status).toBe(200);
    expect(q.body.degraded).toEqual([]);
    expect(q.body.citations[0]!.document_id).toBe('pgdoc-3');
    expect((await call('GET', '/v1/documents/pgdoc-4')).status).toBe(200);
  });

  // Last: once a key exists, the anonymous local mode is closed for good.
  it('one API key works at both gateways, and its rate limit holds across both together (20/s ± 10 %)', { timeout: 120_000 }, async () => {
    const key = `rag_${randomBytes(8).toString('hex')}_${randomBytes(32).toString('base64url')}`;
    const store = await PgApiKeyStore.open({ url: dbUrl });
    await store.insert({ id: key.split('_')[1]!, digest: createHash('sha256').update(key).digest('hex'), tenant: 'default', scopes: ['query', 'ingest'], rate_limit: { rps: 20, burst: 20 } });
    await store.close();
    expect((await callAt(GATEWAY_A, 'GET', '/v1/documents/pgdoc-1')).status).toBe(401);
    let allowed = 0;
    let other = 0;
    let sent = 0;
    const started = performance.now();
    // Faster than the limit: 8 requests at a time, alternating between the gateways (a cheap authenticated read).
    while (performance.now() - started < 5_000) {
      const batch = await Promise.all(
        Array.from({ length: 8 }, (_, j) => callAt(j % 2 ? GATEWAY_A : GATEWAY_B, 'GET', '/v1/documents/pgdoc-1', undefined, key)),
      );
      sent += batch.length;
      for (const r of batch) {
        if (r.status === 200 || r.status === 404) allowed++;
        else if (r.status !== 429) other++;
      }
    }
    const elapsedS = (performance.now() - started) / 1000;
    expect(other).toBe(0);
    // Both gateways draw from one bucket (issue 14: "two gateways with one key at 20 req/s: accepted requests stay
    // within ±10 % of 20/s in total"): beyond the initial burst, accepted/s is 20 ± 10 % (two in-process buckets would
    // allow about twice that). The offered load is far above 20/s (8 in flight); should this machine ever offer less,
    // the lower bound is what was sent — a slow client must not read as a broken limiter.
    const rate = (allowed - 20) / elapsedS;
    expect(rate, `accepted ${allowed} of ${sent} in ${elapsedS.toFixed(2)} s`).toBeLessThanOrEqual(22);
    if (sent >= 20 + 20 * elapsedS * 1.5) expect(rate, `accepted ${allowed} of ${sent} in ${elapsedS.toFixed(2)} s`).toBeGreaterThanOrEqual(18);
    expect(sent - allowed).toBeGreaterThan(0);
  });
});
