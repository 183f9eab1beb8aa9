import * as fs from 'node:fs';
import * as path from 'node:path';
import Database from 'better-sqlite3';
import type { ApiScope, RateLimit } from '@rag/contracts';
import type { ApiKeyRecord, ApiKeyStore, NewApiKeyRecord } from '@rag/ports';
import { openSqlite } from '../sqlite/open-sqlite';

export const API_KEYS_DB_FILE = 'api-keys.db';

export interface SqliteApiKeyStoreOptions {
  /** Data folder (RAG_DATA_DIR); the store is `dir/api-keys.db`. */
  dir: string;
  synchronous?: 'NORMAL' | 'FULL';
}

interface Row {
  id: string;
  name: string | null;
  tenant: string;
  scopes: string;
  groups: string;
  unrestricted: number;
  rate_rps: number | null;
  rate_burst: number | null;
  created_at: string;
  last_used_at: string | null;
  revoked_at: string | null;
}

const toRecord = (r: Row): ApiKeyRecord => ({
  id: r.id,
  name: r.name,
  tenant: r.tenant,
  scopes: JSON.parse(r.scopes) as ApiScope[],
  groups: JSON.parse(r.groups) as string[],
  unrestricted: r.unrestricted === 1,
  rate_limit: r.rate_rps !== null && r.rate_burst !== null ? ({ rps: r.rate_rps, burst: r.rate_burst } satisfies RateLimit) : null,
  created_at: r.created_at,
  last_used_at: r.last_used_at,
  revoked_at: r.revoked_at,
});

const COLUMNS = 'id, name, tenant, scopes, groups, unrestricted, rate_rps, rate_burst, created_at, last_used_at, revoked_at';

/**
 * API keys in their own SQLite file under the data folder (WAL, so the CLI can add a key while the gateway runs and
 * the gateway sees it on the next request). Only the sha256 digest of a key is stored: keys are 256-bit random
 * secrets, so an unsalted fast hash is what GitHub/Stripe-style tokens use and a leaked table reveals no key.
 * A revoked key stays listed (with `revoked_at`) and never authenticates again.
 */
export class SqliteApiKeyStore implements ApiKeyStore {
  readonly file: string;
  private readonly db: Database.Database;
  private readonly stmt: {
    insert: Database.Statement<Record<string, string | number | null>>;
    byDigest: Database.Statement<[string], Row>;
    byId: Database.Statement<[string], Row>;
    revoke: Database.Statement<[string, string]>;
    touch: Database.Statement<[string, string]>;
    countActive: Database.Statement<[], { n: number }>;
    markIssued: Database.Statement<[string]>;
    issued: Database.Statement<[], { value: string }>;
  };

  constructor(opts: SqliteApiKeyStoreOptions) {
    fs.mkdirSync(opts.dir, { recursive: true });
    this.file = path.join(opts.dir, API_KEYS_DB_FILE);
    this.db = openSqlite(this.file, opts.synchronous);
    try {
      this.db.exec(`
        CREATE TABLE IF NOT EXISTS api_keys (
          id           TEXT PRIMARY KEY,
          digest       TEXT NOT NULL UNIQUE,
          name         TEXT,
          tenant       TEXT NOT NULL,
          scopes       TEXT NOT NULL,
          groups       TEXT NOT NULL DEFAULT '[]',
          unrestricted INTEGER NOT NULL DEFAULT 0 CHECK (unrestricted IN (0, 1)),
          rate_rps     REAL,
          rate_burst   INTEGER,
          created_at   TEXT NOT NULL,
          last_used_at TEXT,
          revoked_at   TEXT
        );
        CREATE INDEX IF NOT EXISTS api_keys_tenant ON api_keys (tenant, created_at);
        -- Store-wide facts. 'first_key_at': when the first key was stored; set once, never cleared, so the anonymous
        -- local mode stays closed after the last key is revoked (or a row is removed by hand).
        CREATE TABLE IF NOT EXISTS api_key_store_meta (
          name  TEXT PRIMARY KEY,
          value TEXT NOT NULL
        );
        -- Stores written before the marker existed: any row (revoked ones included) means a key has existed.
        INSERT OR IGNORE INTO api_key_store_meta (name, value)
          SELECT 'first_key_at', MIN(created_at) FROM api_keys HAVING COUNT(*) > 0;
      `);
      this.stmt = {
        insert: this.db.prepare(
          `INSERT INTO api_keys (id, digest, name, tenant, scopes, groups, unrestricted, rate_rps, rate_burst, created_at)
           VALUES (@id, @digest, @name, @tenant, @scopes, @groups, @unrestricted, @rate_rps, @rate_burst, @created_at)`,
        ),
        byDigest: this.db.prepare(`SELECT ${COLUMNS} FROM api_keys WHERE digest = ? AND revoked_at IS NULL`),
        byId: this.db.prepare(`SELECT ${COLUMNS} FROM api_keys WHERE id = ?`),
        revoke: this.db.prepare('UPDATE api_keys SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL'),
        touch: this.db.prepare('UPDATE api_keys SET last_used_at = ? WHERE id = ?'),
        countActive: this.db.prepare('SELECT COUNT(*) AS n FROM api_keys WHERE revoked_at IS NULL'),
        markIssued: this.db.prepare("INSERT OR IGNORE INTO api_key_store_meta (name, value) VALUES ('first_key_at', ?)"),
        issued: this.db.prepare("SELECT value FROM api_key_store_meta WHERE name = 'first_key_at'"),
      };
    } catch (e) {
      this.db.close();
      throw e;
    }
  }

  async insert(k: NewApiKeyRecord): Promise<ApiKeyRecord> {
    if (!/^[0-9a-f]{64}$/.test(k.digest)) throw new Error('api key digest must be 64 lowercase hex characters (sha256)');
    const createdAt = new Date().toISOString();
    const row = {
      id: k.id,
      digest: k.digest,
      name: k.name ?? null,
      tenant: k.tenant,
      scopes: JSON.stringify([...new Set(k.scopes)]),
      groups: JSON.stringify([...new Set(k.groups ?? [])]),
      unrestricted: k.unrestricted ? 1 : 0,
      rate_rps: k.rate_limit?.rps ?? null,
      rate_burst: k.rate_limit?.burst ?? null,
      created_at: createdAt,
    };
    // The key and the "a key has existed" marker commit together.
    this.db.transaction(() => {
      this.stmt.insert.run(row);
      this.stmt.markIssued.run(createdAt);
    })();
    return toRecord(this.stmt.byId.get(k.id)!);
  }

  async findByDigest(digest: string): Promise<ApiKeyRecord | null> {
    const r = this.stmt.byDigest.get(digest);
    return r ? toRecord(r) : null;
  }

  async get(id: string): Promise<ApiKeyRecord | null> {
    const r = this.stmt.byId.get(id);
    return r ? toRecord(r) : null;
  }

  async list(opts: { tenant?: string; includeRevoked?: boolean } = {}): Promise<ApiKeyRecord[]> {
    const where: string[] = [];
    const params: string[] = [];
    if (opts.tenant !== undefined) {
      where.push('tenant = ?');
      params.push(opts.tenant);
    }
    if (!opts.includeRevoked) where.push('revoked_at IS NULL');
    const sql = `SELECT ${COLUMNS} FROM api_keys ${where.length ? `WHERE ${where.join(' AND ')}` : ''} ORDER BY created_at, id`;
    return (this.db.prepare(sql).all(...params) as Row[]).map(toRecord);
  }

  async revoke(id: string, tenant?: string): Promise<ApiKeyRecord | null> {
    const existing = this.stmt.byId.get(id);
    if (!existing || (tenant !== undefined && existing.tenant !== tenant)) return null;
    this.stmt.revoke.run(new Date().toISOString(), id);
    return toRecord(this.stmt.byId.get(id)!);
  }

  async touch(id: string, at: string): Promise<void> {
    this.stmt.touch.run(at, id);
  }

  async countActive(): Promise<number> {
    return this.stmt.countActive.get()!.n;
  }

  async keysEverIssued(): Promise<boolean> {
    return this.stmt.issued.get() !== undefined;
  }

  async close(): Promise<void> {
    if (this.db.open) this.db.close();
  }
}
