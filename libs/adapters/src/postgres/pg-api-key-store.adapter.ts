import type { ApiScope, RateLimit } from '@rag/contracts';
import { AppError } from '@rag/platform';
import type { ApiKeyRecord, ApiKeyStore, NewApiKeyRecord } from '@rag/ports';
import { PgDatabase, pgText, type PgDatabaseOptions } from './pg-database';

interface Row {
  id: string;
  name: string | null;
  tenant: string;
  scopes: string;
  groups: string;
  unrestricted: boolean;
  rate_rps: number | null;
  rate_burst: number | null;
  created_at: Date;
  last_used_at: Date | null;
  revoked_at: Date | null;
}

const iso = (d: Date | null): string | null => (d ? d.toISOString() : null);
const toRecord = (r: Row): ApiKeyRecord => ({
  id: r.id,
  name: r.name,
  tenant: r.tenant,
  scopes: JSON.parse(r.scopes) as ApiScope[],
  groups: JSON.parse(r.groups) as string[],
  unrestricted: r.unrestricted,
  rate_limit: r.rate_rps !== null && r.rate_burst !== null ? ({ rps: r.rate_rps, burst: r.rate_burst } satisfies RateLimit) : null,
  created_at: r.created_at.toISOString(),
  last_used_at: iso(r.last_used_at),
  revoked_at: iso(r.revoked_at),
});

const COLUMNS = 'id, name, tenant, scopes, groups, unrestricted, rate_rps, rate_burst, created_at, last_used_at, revoked_at';

/**
 * API keys in PostgreSQL, shared by every gateway replica and the `rag keys` CLI (same contract as SqliteApiKeyStore:
 * sha256 digests only, revoked keys stay listed, a "a key has existed" marker set with the first insert and never
 * cleared).
 */
export class PgApiKeyStore implements ApiKeyStore {
  private closed = false;

  private constructor(private readonly db: PgDatabase) {}

  static async open(opts: PgDatabaseOptions): Promise<PgApiKeyStore> {
    return new PgApiKeyStore(await PgDatabase.open(opts));
  }

  async insert(k: NewApiKeyRecord): Promise<ApiKeyRecord> {
    this.assertOpen();
    if (!/^[0-9a-f]{64}$/.test(k.digest)) throw new Error('api key digest must be 64 lowercase hex characters (sha256)');
    const createdAt = new Date();
    // The key and the marker commit together.
    const row = await this.db.transaction(async (c) => {
      // (A duplicate id or digest fails with 23505, reported below like SQLite's UNIQUE constraint error.)
      const { rows } = await c.query<Row>(
        `INSERT INTO api_keys (id, digest, name, tenant, scopes, groups, unrestricted, rate_rps, rate_burst, created_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) RETURNING ${COLUMNS}`,
        [
          k.id,
          k.digest,
          pgText(k.name),
          k.tenant,
          JSON.stringify([...new Set(k.scopes)]),
          JSON.stringify([...new Set(k.groups ?? [])]),
          !!k.unrestricted,
          k.rate_limit?.rps ?? null,
          k.rate_limit?.burst ?? null,
          createdAt,
        ],
      );
      await c.query(`INSERT INTO api_key_store_meta (name, value) VALUES ('first_key_at', $1) ON CONFLICT (name) DO NOTHING`, [createdAt.toISOString()]);
      return rows[0]!;
    }).catch((e: unknown) => {
      if ((e as { code?: string }).code === '23505') throw new AppError('conflict', 'UNIQUE constraint failed: an API key with this id or digest exists');
      throw e;
    });
    return toRecord(row);
  }

  async findByDigest(digest: string): Promise<ApiKeyRecord | null> {
    this.assertOpen();
    const r = (await this.db.query<Row>(`SELECT ${COLUMNS} FROM api_keys WHERE digest = $1 AND revoked_at IS NULL`, [digest])).rows[0];
    return r ? toRecord(r) : null;
  }

  async get(id: string): Promise<ApiKeyRecord | null> {
    this.assertOpen();
    const r = (await this.db.query<Row>(`SELECT ${COLUMNS} FROM api_keys WHERE id = $1`, [id])).rows[0];
    return r ? toRecord(r) : null;
  }

  async list(opts: { tenant?: string; includeRevoked?: boolean } = {}): Promise<ApiKeyRecord[]> {
    this.assertOpen();
    const where: string[] = [];
    const params: unknown[] = [];
    if (opts.tenant !== undefined) where.push(`tenant = $${params.push(opts.tenant)}`);
    if (!opts.includeRevoked) where.push('revoked_at IS NULL');
    const { rows } = await this.db.query<Row>(
      `SELECT ${COLUMNS} FROM api_keys ${where.length ? `WHERE ${where.join(' AND ')}` : ''} ORDER BY created_at, id COLLATE "C"`,
      params,
    );
    return rows.map(toRecord);
  }

  async revoke(id: string, tenant?: string): Promise<ApiKeyRecord | null> {
    this.assertOpen();
    const existing = await this.get(id);
    if (!existing || (tenant !== undefined && existing.tenant !== tenant)) return null;
    await this.db.query('UPDATE api_keys SET revoked_at = $1 WHERE id = $2 AND revoked_at IS NULL', [new Date(), id]);
    return this.get(id);
  }

  async touch(id: string, at: string): Promise<void> {
    this.assertOpen();
    await this.db.query('UPDATE api_keys SET last_used_at = $1 WHERE id = $2', [at, id]);
  }

  async countActive(): Promise<number> {
    this.assertOpen();
    return (await this.db.query<{ n: number }>('SELECT COUNT(*)::int AS n FROM api_keys WHERE revoked_at IS NULL')).rows[0]!.n;
  }

  async keysEverIssued(): Promise<boolean> {
    this.assertOpen();
    return (await this.db.query(`SELECT 1 FROM api_key_store_meta WHERE name = 'first_key_at'`)).rowCount! > 0;
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.db.release();
  }

  private assertOpen(): void {
    if (this.closed) throw new Error('PgApiKeyStore is closed');
  }
}
