// The PostgreSQL shared state of the distributed mode, against the real server started by
//   bash deploy/local/servers.sh start postgres        (127.0.0.1:55432, database rag; RAG_TEST_DATABASE_URL overrides)
// - the same contract suites as the SQLite adapters (libs/adapters/src/postgres/contract), one schema per test;
// - migrations: concurrent start-ups apply each version once, a newer schema is refused;
// - leader election: exactly one leader; its connection terminated or its process killed -9 → another takes over;
// - rate limits: two limiters (two gateway replicas) on one key together hold the configured rate;
// - outages: an unreachable server is `unavailable` (not a bad message), and the pool recovers by itself.
import { spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { connect, createServer, type AddressInfo, type Socket } from 'node:net';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import {
  LEADER_LOCK_CLASS,
  MIGRATIONS,
  PgApiKeyStore,
  PgDatabase,
  PgLeaderElection,
  PgRateLimiter,
  PgRegistry,
  PgSourceStateStore,
  SchemaTooNewError,
  migrate,
} from '../../libs/adapters/src/postgres';
import { apiKeyStoreContract, registryContract, sourceStateContract } from '../../libs/adapters/src/postgres/contract';

const URL = process.env.RAG_TEST_DATABASE_URL ?? 'postgres://rag@127.0.0.1:55432/rag';
const admin = new pg.Pool({ connectionString: URL, max: 2 });
const schemas: string[] = [];
const opened: { close(): Promise<void> }[] = [];
let schema = '';

const newSchema = () => {
  const s = `t_${randomBytes(6).toString('hex')}`;
  schemas.push(s);
  return s;
};
const track = async <T extends { close(): Promise<void> }>(p: Promise<T>): Promise<T> => {
  const s = await p;
  opened.push(s);
  return s;
};

beforeEach(async () => {
  await admin.query('SELECT 1').catch((e: Error) => {
    throw new Error(`PostgreSQL at ${URL} does not answer (${e.message}): start it with bash deploy/local/servers.sh start postgres`);
  });
  schema = newSchema();
});
afterEach(async () => {
  for (const s of opened.splice(0).reverse()) await s.close();
});
afterAll(async () => {
  for (const s of schemas) await admin.query(`DROP SCHEMA IF EXISTS ${s} CASCADE`);
  await admin.end();
});

describe('Registry contract: PgRegistry', () => {
  registryContract({ open: (o) => track(PgRegistry.open({ url: URL, schema, ...o })) });
});

describe('SourceStateStore contract: PgSourceStateStore', () => {
  sourceStateContract({ open: () => track(PgSourceStateStore.open({ url: URL, schema })) });
});

describe('ApiKeyStore contract: PgApiKeyStore', () => {
  apiKeyStoreContract({ open: () => track(PgApiKeyStore.open({ url: URL, schema })) });
});

describe('PostgreSQL migrations', () => {
  const pools: pg.Pool[] = [];
  const pool = () => {
    const p = new pg.Pool(PgDatabase.connectionConfig({ url: URL, schema, poolMax: 2 }));
    pools.push(p);
    return p;
  };
  afterEach(async () => {
    for (const p of pools.splice(0)) await p.end();
  });

  it('applies every version exactly once when many replicas start at once (advisory lock)', async () => {
    await admin.query(`CREATE SCHEMA ${schema}`);
    const reached = await Promise.all(Array.from({ length: 6 }, () => migrate(pool(), MIGRATIONS)));
    expect(reached).toEqual(Array(6).fill(MIGRATIONS.length));
    const { rows } = await admin.query(`SELECT version FROM ${schema}.rag_schema_migrations ORDER BY version`);
    expect(rows.map((r) => r.version)).toEqual(MIGRATIONS.map((m) => m.version));
    expect((await admin.query(`SELECT to_regclass('${schema}.documents') AS t`)).rows[0].t).not.toBeNull();
  });

  it('brings a schema of an earlier release forward, one version at a time', async () => {
    await admin.query(`CREATE SCHEMA ${schema}`);
    expect(await migrate(pool(), MIGRATIONS.slice(0, 1))).toBe(1);
    const persistence = async () => (await admin.query(`SELECT relpersistence FROM pg_class WHERE oid = '${schema}.rate_buckets'::regclass`)).rows[0].relpersistence;
    expect(await persistence()).toBe('p');
    expect(await migrate(pool(), MIGRATIONS)).toBe(MIGRATIONS.length);
    expect(await persistence()).toBe('u'); // migration 2: the rate-limit buckets skip the WAL
    const { rows } = await admin.query(`SELECT version FROM ${schema}.rag_schema_migrations ORDER BY version`);
    expect(rows.map((r) => r.version)).toEqual(MIGRATIONS.map((m) => m.version));
  });

  it('is forward-only: a later release adds a version; an older build then refuses the newer schema', async () => {
    const later = [...MIGRATIONS, { version: MIGRATIONS.length + 1, name: 'a later release', sql: 'CREATE TABLE later_table (x int)' }];
    const db = await PgDatabase.open({ url: URL, schema, migrations: later });
    await db.release();
    expect((await admin.query(`SELECT to_regclass('${schema}.later_table') AS t`)).rows[0].t).not.toBeNull();
    const refused = PgRegistry.open({ url: URL, schema });
    await expect(refused).rejects.toBeInstanceOf(SchemaTooNewError);
    await expect(refused).rejects.toThrow(/newer than this build knows/);
    // A failing step rolls back and names itself; nothing of it stays.
    const broken = [...later, { version: later.length + 1, name: 'broken step', sql: 'CREATE TABLE half (x int); SELECT no_such_function()' }];
    await expect(PgDatabase.open({ url: URL, schema, migrations: broken })).rejects.toThrow(new RegExp(`migration ${broken.length} \\(broken step\\) failed`));
    expect((await admin.query(`SELECT to_regclass('${schema}.half') AS t`)).rows[0].t).toBeNull();
  });
});

describe('PgLeaderElection', () => {
  const leaderPid = async (name: string): Promise<number | undefined> =>
    (
      await admin.query<{ pid: number }>(
        `SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND classid = $1 AND objid::bigint = (hashtext($2)::bigint & 4294967295) AND granted`,
        [LEADER_LOCK_CLASS, name],
      )
    ).rows[0]?.pid;

  it('elects exactly one leader; when its connection is terminated it steps down and another takes over', async () => {
    const name = `reconciler-${schema}`;
    const changes: [number, boolean][] = [];
    const nodes = await Promise.all(
      [0, 1, 2].map((i) => track(Promise.resolve(new PgLeaderElection({ url: URL, name, pollMs: 100, onChange: (v) => changes.push([i, v]) })))),
    );
    for (const n of nodes) await n.start();
    expect(nodes.filter((n) => n.isLeader()).length).toBe(1);
    const first = nodes.findIndex((n) => n.isLeader());
    const pid = await leaderPid(name);
    expect(pid).toBeDefined();
    changes.length = 0;
    await admin.query('SELECT pg_terminate_backend($1)', [pid]);
    // The leader steps down as soon as its session is gone; then exactly one replica holds the lock again (any of
    // them: the old leader reconnects and campaigns like the others).
    await vi.waitFor(() => {
      expect(changes).toContainEqual([first, false]);
      expect(nodes.filter((n) => n.isLeader()).length).toBe(1);
      expect(changes.some(([, v]) => v)).toBe(true);
    }, { timeout: 10_000, interval: 50 });
    expect(await leaderPid(name)).not.toBe(pid);
    // Closing the new leader hands over again (its session ends, the lock is free at once).
    const second = nodes.find((n) => n.isLeader())!;
    await second.close();
    await vi.waitFor(() => expect(nodes.filter((n) => n.isLeader()).length).toBe(1), { timeout: 10_000, interval: 50 });
    expect(second.isLeader()).toBe(false);
  });

  it('takes over from a leader process killed with -9', async () => {
    const name = `killed-${schema}`;
    // Another process takes the lock and holds it (a replica), then is killed without any clean-up.
    const child = spawn(
      process.execPath,
      ['-e', `const pg=require('pg');const c=new pg.Client(${JSON.stringify(URL)});c.connect().then(()=>c.query("SELECT pg_advisory_lock(${LEADER_LOCK_CLASS}, hashtext('${name}'))")).then(()=>console.log('leader'))`],
      { stdio: ['ignore', 'pipe', 'inherit'], cwd: process.cwd() },
    );
    await new Promise<void>((resolve, reject) => {
      child.stdout.on('data', (d: Buffer) => d.toString().includes('leader') && resolve());
      child.on('exit', (code) => reject(new Error(`leader process exited early (${code})`)));
    });
    const follower = await track(Promise.resolve(new PgLeaderElection({ url: URL, name, pollMs: 100 })));
    await follower.start();
    expect(follower.isLeader()).toBe(false);
    child.kill('SIGKILL');
    await vi.waitFor(() => expect(follower.isLeader()).toBe(true), { timeout: 15_000, interval: 50 });
  });
});

describe('PgRateLimiter (shared by gateway replicas)', () => {
  // Two replicas: two limiter instances with their own pools (a distinct URL string is a distinct pool).
  const two = async (defaults = { rps: 0.001, burst: 10 }) => [
    await track(PgRateLimiter.open({ url: URL, schema, defaults })),
    await track(PgRateLimiter.open({ url: `${URL}?application_name=replica-b`, schema, defaults })),
  ];

  it('two limiters on one key together allow the burst once, not once each', async () => {
    const [a, b] = await two();
    const decisions = await Promise.all(Array.from({ length: 40 }, (_, i) => (i % 2 ? a : b).take('key-1')));
    // rps 0.001: under one token refills in any run shorter than 1000 s.
    expect(decisions.filter((d) => d!.allowed).length).toBe(10);
    const denied = decisions.find((d) => !d!.allowed)!;
    expect(denied).toMatchObject({ allowed: false, remaining: 0, limit: { rps: 0.001, burst: 10 } });
    expect(denied.retryAfterS).toBeGreaterThanOrEqual(1);
    // Another key has its own bucket; a key's own limit replaces the default (a changed limit starts a full bucket).
    expect((await a.take('key-2'))!.allowed).toBe(true);
    expect((await b.take('key-1', { rps: 0.001, burst: 3 }))).toMatchObject({ allowed: true, remaining: 2 });
    expect(await a.take('key-3', { rps: 0, burst: 1 })).toBeNull();
  });

  it('holds the configured rate in total over time across two limiters', async () => {
    const [a, b] = await two({ rps: 20, burst: 1 });
    const started = performance.now();
    let allowed = 0;
    let i = 0;
    while (performance.now() - started < 1_500) {
      const batch = await Promise.all(Array.from({ length: 16 }, () => (i++ % 2 ? a : b).take('shared')));
      allowed += batch.filter((d) => d!.allowed).length;
    }
    const elapsedS = (performance.now() - started) / 1000;
    // Never more than burst + rps × elapsed in total (two independent in-process buckets would allow twice that).
    expect(allowed).toBeLessThanOrEqual(1 + 20 * elapsedS + 1);
    expect(allowed).toBeGreaterThan(0);
  });
});

describe('PostgreSQL outages', () => {
  // A loopback TCP proxy in front of the server that the test can cut and restore (the server itself keeps running).
  const proxy = () => {
    const target = new globalThis.URL(URL);
    const sockets = new Set<Socket>();
    const server = createServer((client) => {
      const upstream = connect(Number(target.port || 5432), target.hostname);
      for (const s of [client, upstream]) {
        sockets.add(s);
        s.on('error', () => undefined);
        s.on('close', () => sockets.delete(s));
      }
      client.pipe(upstream).pipe(client);
    });
    let port = 0;
    return {
      url: () => `postgres://${target.username}@127.0.0.1:${port}${target.pathname}`,
      up: () => new Promise<void>((resolve) => server.listen(port, '127.0.0.1', () => ((port = (server.address() as AddressInfo).port), resolve()))),
      down: () => new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
    };
  };

  it('reports an unreachable database as `unavailable` (503, a transient bus failure) and recovers without a restart', async () => {
    const p = proxy();
    await p.up();
    const r = await track(PgRegistry.open({ url: p.url(), schema, connectTimeoutMs: 2_000 }));
    await r.accept({ document_id: 'd', tenant: 't', op: 'upsert' });
    await p.down();
    await expect(r.get('d')).rejects.toMatchObject({ code: 'unavailable', message: expect.stringMatching(/^PostgreSQL unavailable/) });
    await expect(r.accept({ document_id: 'e', tenant: 't', op: 'upsert' })).rejects.toMatchObject({ code: 'unavailable' });
    await p.up();
    await vi.waitFor(async () => expect((await r.get('d'))?.version).toBe(1), { timeout: 10_000, interval: 100 });
    expect((await r.accept({ document_id: 'd', tenant: 't', op: 'upsert' })).version).toBe(2);
    await p.down();
    // Starting against a database that is not there fails the same way (the platform's start-up names it).
    await expect(PgRegistry.open({ url: p.url(), schema: newSchema(), connectTimeoutMs: 1_000 })).rejects.toMatchObject({ code: 'unavailable' });
    // Other errors are not outages: a constraint violation keeps its own error.
    await p.up();
    const keys = await track(PgApiKeyStore.open({ url: p.url(), schema }));
    await keys.insert({ id: 'k', digest: 'a'.repeat(64), tenant: 't', scopes: ['query'] });
    await expect(keys.insert({ id: 'k', digest: 'b'.repeat(64), tenant: 't', scopes: ['query'] })).rejects.toMatchObject({ code: 'conflict' });
    await p.down();
  });

  it('servers.sh reports the local server running and ready', () => {
    const r = spawnSync('bash', [join(process.cwd(), 'deploy/local/servers.sh'), 'status', 'postgres'], { encoding: 'utf8' });
    expect(r.status, r.stdout + r.stderr).toBe(0);
    expect(r.stdout).toMatch(/postgres\s+running, ready/);
  });
});

describe('npm run start:distributed -- --replicas 2', () => {
  const plan = (args: string[], extra: Record<string, string> = {}) =>
    spawnSync(process.execPath, [join(process.cwd(), 'scripts/distributed.js'), '--dry-run', ...args], {
      encoding: 'utf8',
      env: { ...process.env, RAG_PORT: '8080', RAG_DATABASE_URL: URL, ...extra },
    });

  it('plans two processes of every service on their own ports, the gRPC clients naming every replica, all on the database', () => {
    const r = plan(['--replicas', '2']);
    expect(r.status, r.stderr).toBe(0);
    const p = JSON.parse(r.stdout) as { replicas: number; services: { id: string; name: string; port: number; grpc: number | null; env: Record<string, string> }[] };
    expect(p.replicas).toBe(2);
    expect(p.services).toHaveLength(16);
    const ports = p.services.flatMap((s) => [s.port, ...(s.grpc ? [s.grpc] : [])]);
    expect(new Set(ports).size).toBe(ports.length);
    expect(p.services.filter((s) => s.name === 'gateway').map((s) => [s.id, s.port])).toEqual([['gateway-1', 8080], ['gateway-2', 8088]]);
    for (const s of p.services) {
      expect(s.env.RAG_DATABASE_URL).toBe(URL);
      expect(s.env.RAG_RETRIEVER_GRPC).toBe('ipv4:127.0.0.1:50052,127.0.0.1:50056');
      expect(s.env.RAG_PORT).toBe(String(s.port));
    }
    // one replica: the plan of before (names as ids, single addresses)
    const one = JSON.parse(plan([]).stdout) as { services: { id: string; env: Record<string, string> }[] };
    expect(one.services.map((s) => s.id)).toEqual(['loader', 'chunker', 'embedder', 'indexer', 'retriever', 'reranker', 'generator', 'gateway']);
    expect(one.services[0]!.env.RAG_RETRIEVER_GRPC).toBe('127.0.0.1:50052');
  });

  it('refuses replicas without a shared database, or a bad count', () => {
    const noDb = plan(['--replicas=2'], { RAG_DATABASE_URL: '' });
    expect(noDb.status).not.toBe(0);
    expect(noDb.stderr).toMatch(/--replicas needs RAG_DATABASE_URL/);
    expect(plan(['--replicas', 'zero']).stderr).toMatch(/a whole number from 1 to 8/);
  });
});
