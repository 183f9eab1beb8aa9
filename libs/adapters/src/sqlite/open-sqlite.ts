import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import Database from 'better-sqlite3';

export type SqliteSynchronous = 'FULL' | 'NORMAL';

/**
 * Opens (creating its folder) a SQLite database the way every store of this project uses it: WAL, so readers never
 * block the writer and several processes can share the file; `synchronous` FULL (a committed transaction survives
 * power loss) or NORMAL (survives a process crash; the default of RAG_SQLITE_SYNCHRONOUS); and a 5 s busy timeout
 * for concurrent writers (write transactions that read first must still be IMMEDIATE).
 */
export function openSqlite(file: string, synchronous: SqliteSynchronous = 'FULL'): Database.Database {
  if (file !== ':memory:') mkdirSync(dirname(file), { recursive: true });
  const db = new Database(file);
  try {
    db.pragma('journal_mode = WAL');
    db.pragma(`synchronous = ${synchronous}`);
    db.pragma('busy_timeout = 5000');
  } catch (e) {
    db.close();
    throw e;
  }
  return db;
}
