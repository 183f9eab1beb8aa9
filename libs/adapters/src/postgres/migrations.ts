import type pg from 'pg';
import type { Logger } from '@rag/platform';

/**
 * Versioned, forward-only schema migrations of the PostgreSQL shared state, applied at start-up.
 *
 * A small runner rather than a migrator package: node-pg-migrate and friends are not dependencies of this workspace,
 * and what is needed is ~40 lines — an ordered list of SQL steps, one transaction each, under a session advisory lock
 * (many replicas start at once: exactly one applies a version, the others wait and then see it applied), and a refusal
 * to start against a schema newer than the code (a rolled-back Deployment must not write to tables it does not know).
 * node-pg-migrate has no such refusal. Never edit a released step: add a new one.
 */
export interface Migration {
  version: number;
  name: string;
  sql: string;
}

/** pg_advisory_lock(class, id) of the migration runner (class 7261 = "rag", id 1). */
export const MIGRATION_LOCK: readonly [number, number] = [7261, 1];

export const MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    name: 'registry, outbox, query traces, feedback, API keys, source state, rate limits',
    sql: `
      CREATE SEQUENCE documents_seq;
      CREATE TABLE documents (
        document_id    text PRIMARY KEY,
        tenant         text NOT NULL,
        title          text,
        status         text NOT NULL CHECK (status IN ('queued', 'processing', 'indexed', 'failed', 'deleted')),
        version        integer NOT NULL,
        active_version integer NOT NULL DEFAULT 0,
        content_hash   text,
        raw_hash       text,
        chunks         integer NOT NULL DEFAULT 0,
        error          text,
        mime_type      text,
        source_url     text,
        acl            text NOT NULL DEFAULT '[]',
        metadata       text NOT NULL DEFAULT '{}',
        created_at     timestamptz NOT NULL,
        updated_at     timestamptz NOT NULL,
        seq            bigint NOT NULL DEFAULT nextval('documents_seq')
      );
      CREATE INDEX documents_updated ON documents (updated_at DESC, seq DESC);
      CREATE INDEX documents_tenant_updated ON documents (tenant, updated_at DESC, seq DESC);
      CREATE INDEX documents_status ON documents (tenant, status);
      CREATE TABLE feedback (
        id         bigserial PRIMARY KEY,
        trace_id   text NOT NULL,
        tenant     text NOT NULL,
        rating     text NOT NULL CHECK (rating IN ('up', 'down')),
        comment    text,
        created_at timestamptz NOT NULL
      );
      CREATE INDEX feedback_trace ON feedback (trace_id);
      CREATE TABLE outbox (
        id            bigserial PRIMARY KEY,
        topic         text NOT NULL,
        key           text NOT NULL,
        value         text NOT NULL,
        created_at    timestamptz NOT NULL,
        claimed_until bigint NOT NULL DEFAULT 0,
        attempts      integer NOT NULL DEFAULT 0
      );
      CREATE INDEX outbox_claimable ON outbox (claimed_until, id);
      CREATE TABLE query_traces (
        trace_id   text NOT NULL,
        tenant     text NOT NULL,
        created_at bigint NOT NULL,
        PRIMARY KEY (trace_id, tenant)
      );
      CREATE INDEX query_traces_created ON query_traces (created_at);
      CREATE TABLE api_keys (
        id           text PRIMARY KEY,
        digest       text NOT NULL UNIQUE,
        name         text,
        tenant       text NOT NULL,
        scopes       text NOT NULL,
        groups       text NOT NULL DEFAULT '[]',
        unrestricted boolean NOT NULL DEFAULT false,
        rate_rps     double precision,
        rate_burst   integer,
        created_at   timestamptz NOT NULL,
        last_used_at timestamptz,
        revoked_at   timestamptz
      );
      CREATE INDEX api_keys_tenant ON api_keys (tenant, created_at);
      CREATE TABLE api_key_store_meta (name text PRIMARY KEY, value text NOT NULL);
      CREATE TABLE source_events (
        event_id    text PRIMARY KEY,
        document_id text NOT NULL,
        state       text NOT NULL CHECK (state IN ('pending', 'done', 'ignored')),
        received_at bigint NOT NULL,
        prev        text
      );
      CREATE INDEX source_events_received ON source_events (received_at);
      CREATE TABLE source_documents (
        document_id    text PRIMARY KEY,
        kind           text NOT NULL,
        tenant         text NOT NULL,
        scope          text,
        source_version text,
        changed_at     bigint NOT NULL,
        deleted        boolean NOT NULL,
        updated_at     timestamptz NOT NULL
      );
      CREATE INDEX source_documents_kind ON source_documents (kind, deleted, scope);
      CREATE TABLE rate_buckets (
        key        text PRIMARY KEY,
        rps        double precision NOT NULL,
        burst      integer NOT NULL,
        tokens     double precision NOT NULL,
        at         timestamptz NOT NULL,
        allowed    boolean NOT NULL
      );
    `,
  },
  {
    version: 2,
    name: 'rate_buckets unlogged',
    // A take is then one upsert without a WAL flush (measured: ≈2–4 ms p50 → well under 1 ms on this machine's disk).
    // Losing the table in a crash or failover only refills every bucket, which a restarted limiter does anyway.
    sql: `ALTER TABLE rate_buckets SET UNLOGGED`,
  },
  {
    version: 3,
    name: 'documents listed by status in list order',
    // A status-filtered list (GET /v1/documents?status=failed, a keyset page of indexed documents) reads this index
    // in order instead of sorting every row of that status; it also answers the per-tenant status counts, so the
    // (tenant, status) index it replaces is dropped (one index less to maintain on every registry write).
    sql: `
      CREATE INDEX documents_tenant_status_updated ON documents (tenant, status, updated_at DESC, seq DESC);
      DROP INDEX documents_status;
    `,
  },
  {
    version: 4,
    name: 'outbox value sizes',
    // A relay claims by bytes (claimOutbox's maxBytes: a backlog of 25 MB uploads is not claimed a hundred at a time);
    // the sizes are summed over this column, so the values it leaves are not read. The pending messages are measured
    // once (the outbox holds only what is not yet published).
    sql: `
      ALTER TABLE outbox ADD COLUMN bytes bigint NOT NULL DEFAULT 0;
      UPDATE outbox SET bytes = octet_length(value);
    `,
  },
];

export class SchemaTooNewError extends Error {
  readonly code = 'schema_too_new';
  constructor(
    readonly found: number,
    readonly known: number,
  ) {
    super(
      `the PostgreSQL schema is at version ${found}, newer than this build knows (${known}): refusing to start ` +
        `(a newer release migrated it; roll that release forward again instead of running an older one)`,
    );
  }
}

/** Applies the missing migrations in order; returns the schema version reached. */
export async function migrate(pool: pg.Pool, migrations: readonly Migration[], log?: Logger): Promise<number> {
  const known = migrations.reduce((m, x) => Math.max(m, x.version), 0);
  migrations.forEach((m, i) => {
    if (m.version !== i + 1) throw new Error(`migrations must be numbered 1, 2, 3… in order (found ${m.version} at ${i + 1})`);
  });
  const client = await pool.connect();
  let broken = false;
  // A checked-out client has no pool listener: a dying connection must not become an uncaught 'error'.
  const onError = () => {
    broken = true;
  };
  client.on('error', onError);
  try {
    // A session lock on a dedicated connection: held across the per-version transactions below, released on unlock
    // or, if this process dies mid-way, when the server notices the connection is gone.
    await client.query('SELECT pg_advisory_lock($1, $2)', [...MIGRATION_LOCK]);
    try {
      await client.query(`CREATE TABLE IF NOT EXISTS rag_schema_migrations (
        version    integer PRIMARY KEY,
        name       text NOT NULL,
        applied_at timestamptz NOT NULL DEFAULT now()
      )`);
      const { rows } = await client.query<{ v: number | null }>('SELECT MAX(version) AS v FROM rag_schema_migrations');
      const current = rows[0]?.v ?? 0;
      if (current > known) throw new SchemaTooNewError(current, known);
      for (const m of migrations) {
        if (m.version <= current) continue;
        await client.query('BEGIN');
        try {
          await client.query(m.sql);
          await client.query('INSERT INTO rag_schema_migrations (version, name) VALUES ($1, $2)', [m.version, m.name]);
          await client.query('COMMIT');
        } catch (e) {
          await client.query('ROLLBACK');
          throw new Error(`PostgreSQL migration ${m.version} (${m.name}) failed: ${(e as Error).message}`);
        }
        log?.info('applied PostgreSQL migration', { version: m.version, name: m.name });
      }
      return Math.max(current, known);
    } finally {
      await client.query('SELECT pg_advisory_unlock($1, $2)', [...MIGRATION_LOCK]).catch(() => {
        broken = true;
      });
    }
  } finally {
    client.removeListener('error', onError);
    client.release(broken);
  }
}
