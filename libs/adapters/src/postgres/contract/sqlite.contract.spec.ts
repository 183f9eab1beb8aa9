// The shared-state contract suites against the SQLite adapters (the embedded mode). The same suites run against the
// PostgreSQL adapters on a real server in test/infra/postgres.infra.spec.ts.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe } from 'vitest';
import { SqliteApiKeyStore } from '../../sqlite-api-keys';
import { SqliteRegistry, SqliteSourceStateStore } from '../../sqlite-registry';
import { apiKeyStoreContract, registryContract, sourceStateContract } from '.';

let dir: string;
const opened: { close(): Promise<void> }[] = [];
const track = <T extends { close(): Promise<void> }>(s: T): T => {
  opened.push(s);
  return s;
};
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'contract-sqlite-'));
});
afterEach(async () => {
  for (const s of opened.splice(0)) await s.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('Registry contract: SqliteRegistry', () => {
  registryContract({ open: async (o) => track(new SqliteRegistry({ dir, synchronous: 'NORMAL', ...o })) });
});

describe('SourceStateStore contract: SqliteSourceStateStore', () => {
  sourceStateContract({ open: async () => track(new SqliteSourceStateStore({ dir })) });
});

describe('ApiKeyStore contract: SqliteApiKeyStore', () => {
  apiKeyStoreContract({ open: async () => track(new SqliteApiKeyStore({ dir })) });
});
