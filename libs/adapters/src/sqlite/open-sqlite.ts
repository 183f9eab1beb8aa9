import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import Database from 'better-sqlite3';
import { StoreCorruptError, StoreOpenError, forgetCorruption, isCorruptionCode, recordCorruption } from './store-error';

export type SqliteSynchronous = 'FULL' | 'NORMAL';

/**
 * Opens (creating its folder) a SQLite database the way every store of this project uses it: WAL, so readers never
 * block the writer and several processes can share the file; `synchronous` FULL (a committed transaction survives
 * power loss) or NORMAL (survives a process crash; the default of RAG_SQLITE_SYNCHRONOUS); and a 5 s busy timeout
 * for concurrent writers (write transactions that read first must still be IMMEDIATE).
 *
 * Errors name the file. Opening fails with a StoreCorruptError ("…/registry.db is not a valid SQLite database (file is
 * not a database): restore it from a backup or move it away to start empty") or a StoreOpenError, never with SQLite's
 * bare "file is not a database". The returned handle behaves exactly like better-sqlite3's, except that a corruption
 * error (SQLITE_CORRUPT*, SQLITE_NOTADB) raised by any statement, pragma, exec or transaction on it is rethrown as a
 * StoreCorruptError naming the file (and recorded for readiness, see observedCorruption); every other error passes
 * through unchanged, so adapters that look at `e.code` (constraint violations, busy) keep working.
 * `newFilePageSize`: the page size of a file this call creates (SQLite's 4096 otherwise); an existing file keeps its own.
 */
export function openSqlite(file: string, synchronous: SqliteSynchronous = 'FULL', newFilePageSize?: number): Database.Database {
  if (file !== ':memory:') mkdirSync(dirname(file), { recursive: true });
  let db: Database.Database;
  try {
    db = new Database(file);
  } catch (e) {
    throw openError(file, e);
  }
  try {
    // Only a file with nothing in it yet takes a page size (before WAL mode writes its header); a file keeps its own.
    if (newFilePageSize !== undefined) db.pragma(`page_size = ${newFilePageSize}`);
    db.pragma('journal_mode = WAL');
    db.pragma(`synchronous = ${synchronous}`);
    db.pragma('busy_timeout = 5000');
  } catch (e) {
    db.close();
    throw openError(file, e);
  }
  forgetCorruption(file); // opened cleanly: a corruption seen before (by an earlier handle) was dealt with
  return guardDatabase(db, file);
}

function openError(file: string, e: unknown): Error {
  const code = (e as { code?: unknown }).code;
  const message = e instanceof Error ? e.message : String(e);
  if (isCorruptionCode(code)) return StoreCorruptError.fromSqlite(file, code, message);
  return new StoreOpenError(file, typeof code === 'string' ? `${code}: ${message}` : message);
}

/** The error to throw for `e` raised on `file`: corruption named and recorded, anything else untouched. */
function annotate(file: string, e: unknown): unknown {
  if (e instanceof StoreCorruptError) return e;
  const code = (e as { code?: unknown } | null)?.code;
  if (!isCorruptionCode(code)) return e;
  const err = StoreCorruptError.fromSqlite(file, code, e instanceof Error ? e.message : String(e));
  recordCorruption(err);
  return err;
}

type Fn = (...args: unknown[]) => unknown;

function guarded(file: string, fn: Fn, self: unknown, args: unknown[]): unknown {
  try {
    return fn.apply(self, args);
  } catch (e) {
    throw annotate(file, e);
  }
}

/** Statement methods that return the statement itself (for chaining): the wrapper is returned instead. */
const CHAINING = new Set<PropertyKey>(['pluck', 'expand', 'raw', 'columns', 'bind', 'safeIntegers']);

function guardIterator(file: string, it: IterableIterator<unknown>): IterableIterator<unknown> {
  const wrapped: IterableIterator<unknown> = {
    next: () => guarded(file, it.next as Fn, it, []) as IteratorResult<unknown>,
    return: (value?: unknown) => (it.return ? it.return(value) : { done: true, value }),
    [Symbol.iterator]: () => wrapped,
  };
  return wrapped;
}

/**
 * A proxy of `target` whose methods are replaced, lazily and once per name, by `wrap(prop, method, proxy)`; accessors
 * and other values (open, inTransaction, name, reader…) are read from the real object, and methods run against it
 * (native code checks `this`). The one mechanism behind the database and the statement guards.
 */
function guardMethods<T extends object>(target: T, wrap: (prop: PropertyKey, fn: Fn, proxy: T) => Fn): T {
  const cache = new Map<PropertyKey, Fn>();
  const proxy: T = new Proxy(target, {
    get(t, prop) {
      const value: unknown = Reflect.get(t, prop, t);
      if (typeof value !== 'function') return value;
      let w = cache.get(prop);
      if (!w) {
        w = wrap(prop, value as Fn, proxy);
        cache.set(prop, w);
      }
      return w;
    },
  });
  return proxy;
}

function guardStatement(file: string, stmt: Database.Statement): Database.Statement {
  return guardMethods(stmt, (prop, fn, proxy) => {
    if (prop === 'iterate') return (...args: unknown[]) => guardIterator(file, guarded(file, fn, stmt, args) as IterableIterator<unknown>);
    if (CHAINING.has(prop)) {
      // columns() returns column descriptions, the others the statement.
      return (...args: unknown[]) => {
        const r = guarded(file, fn, stmt, args);
        return r === stmt ? proxy : r;
      };
    }
    return (...args: unknown[]) => guarded(file, fn, stmt, args);
  });
}

type Transaction = Fn & { deferred: Fn; immediate: Fn; exclusive: Fn };

function guardTransaction(file: string, tx: Transaction): Transaction {
  const wrap = (fn: Fn): Fn =>
    function (this: unknown, ...args: unknown[]) {
      return guarded(file, fn, this, args);
    };
  return Object.assign(wrap(tx), { deferred: wrap(tx.deferred), immediate: wrap(tx.immediate), exclusive: wrap(tx.exclusive) });
}

function guardDatabase(db: Database.Database, file: string): Database.Database {
  return guardMethods(db, (prop, fn, proxy) => {
    if (prop === 'prepare') return (...args: unknown[]) => guardStatement(file, guarded(file, fn, db, args) as Database.Statement);
    if (prop === 'transaction') return (...args: unknown[]) => guardTransaction(file, guarded(file, fn, db, args) as Transaction);
    return (...args: unknown[]) => {
      const r = guarded(file, fn, db, args);
      return r === db ? proxy : r; // exec, function, aggregate… return the database for chaining
    };
  });
}

/**
 * Creates `table` with `ddl` (its CREATE TABLE, the statements that fill it from the existing rows, and its triggers)
 * unless the file already has it, in one IMMEDIATE transaction: a second process opening the same file waits for the
 * lock and then finds the table, so a counter filled from the existing rows starts exact and is never filled twice.
 */
export function createTableOnce(db: Database.Database, table: string, ddl: string): void {
  db.transaction(() => {
    if (db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?").get(table)) return;
    db.exec(ddl);
  }).immediate();
}
