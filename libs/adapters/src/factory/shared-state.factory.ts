import { type AppConfig, metrics } from '@rag/platform';
import type { ApiKeyStore, EmbeddingSpace, LeaderElection, RateLimiter } from '@rag/ports';
import { SqliteApiKeyStore } from '../sqlite-api-keys';
import { SqliteStoreInspector, embeddedStoreFiles } from '../sqlite/sqlite-store-inspector';
import { secretFrom } from './sources.factory';

/*
 * Shared state: PostgreSQL when RAG_DATABASE_URL (or RAG_DATABASE_URL_FILE, a mounted Secret) is set — what the
 * distributed mode needs to replicate the gateway, indexer and retriever — else the SQLite files under RAG_DATA_DIR
 * (the embedded mode, nothing to install). The PostgreSQL adapters (and `pg`) are imported only in that branch.
 */

/** The PostgreSQL URL of the shared state, or undefined for SQLite. */
export function databaseUrl(config: AppConfig): string | undefined {
  const url = secretFrom(config.RAG_DATABASE_URL, config.RAG_DATABASE_URL_FILE);
  if (url !== undefined && !/^postgres(ql)?:\/\/\S+$/.test(url)) {
    throw new Error('RAG_DATABASE_URL_FILE: the file must hold a postgres:// or postgresql:// URL');
  }
  return url;
}

/**
 * The inspector of a configuration's embedded store files. Where the shared state is decided by `databaseUrl` above,
 * so registry.db and api-keys.db are inspected exactly when the platform would open them.
 */
export function createStoreInspector(config: AppConfig, space: EmbeddingSpace | null): SqliteStoreInspector {
  return new SqliteStoreInspector(embeddedStoreFiles(config, space, databaseUrl(config) ? 'postgres' : 'sqlite'));
}

const pgOptions = (config: AppConfig, url: string) => ({ url, poolMax: config.RAG_DATABASE_POOL_MAX });

export async function createApiKeyStore(config: AppConfig): Promise<ApiKeyStore> {
  const url = databaseUrl(config);
  if (!url) return new SqliteApiKeyStore({ dir: config.dataDir, synchronous: config.RAG_SQLITE_SYNCHRONOUS });
  const { PgApiKeyStore } = await import('../postgres');
  return PgApiKeyStore.open(pgOptions(config, url));
}

/**
 * The rate limiter shared by every gateway replica (PostgreSQL), or null when there is no shared database: the
 * gateway then keeps its in-process token buckets (one process, nothing to share).
 */
export async function createSharedRateLimiter(config: AppConfig): Promise<(RateLimiter & { close(): Promise<void> }) | null> {
  const url = databaseUrl(config);
  if (!url) return null;
  const { PgRateLimiter } = await import('../postgres');
  return PgRateLimiter.open({ ...pgOptions(config, url), defaults: { rps: config.RAG_RATE_LIMIT_RPS, burst: config.RAG_RATE_LIMIT_BURST } });
}

/**
 * Leadership of a singleton job among replicas: a PostgreSQL advisory lock with a shared database; without one there
 * is a single process (the embedded mode, or one replica on SQLite), which always leads.
 */
export async function createLeaderElection(config: AppConfig, name: string): Promise<LeaderElection> {
  const url = databaseUrl(config);
  // rag_leader{name} shows on each replica's /metrics which one leads (the reliability suite reads it).
  if (!url) {
    return { start: async () => void metrics.leader.set({ name }, 1), isLeader: () => true, close: async () => void metrics.leader.set({ name }, 0) };
  }
  const { PgLeaderElection } = await import('../postgres');
  metrics.leader.set({ name }, 0);
  return new PgLeaderElection({ url, name, pollMs: config.RAG_LEADER_POLL_MS, onChange: (v) => metrics.leader.set({ name }, v ? 1 : 0) });
}

/** `rag db copy-sqlite`: copies registry.db and api-keys.db of `fromDir` into the PostgreSQL of RAG_DATABASE_URL. */
export async function copySqliteIntoPostgres(config: AppConfig, fromDir: string) {
  const url = databaseUrl(config);
  if (!url) throw new Error('set RAG_DATABASE_URL (or RAG_DATABASE_URL_FILE) to the PostgreSQL database to copy into');
  const { importSqliteIntoPostgres } = await import('../postgres');
  return importSqliteIntoPostgres({ url, poolMax: 2, dataDir: fromDir });
}
