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
 */
export function openSqlite(file: string, synchronous: SqliteSynchronous = 'FULL'): Database.Database {
  if (file !== ':memory:') mkdirSync(dirname(file), { recursive: true });
  let db: Database.Database;
  try {
    db = new Database(file);
  } catch (e) {
    throw openError(file, e);
  }
  try {
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

function guardStatement(file: string, stmt: Database.Statement): Database.Statement {
  const cache = new Map<PropertyKey, unknown>();
  const proxy: Database.Statement = new Proxy(stmt, {
    get(target, prop) {
      const value: unknown = Reflect.get(target, prop, target);
      if (typeof value !== 'function') return value;
      let w = cache.get(prop);
      if (!w) {
        const fn = value as Fn;
        if (prop === 'iterate') w = (...args: unknown[]) => guardIterator(file, guarded(file, fn, target, args) as IterableIterator<unknown>);
        else if (CHAINING.has(prop)) {
          // columns() returns column descriptions, the others the statement.
          w = (...args: unknown[]) => {
            const r = guarded(file, fn, target, args);
            return r === target ? proxy : r;
          };
        } else w = (...args: unknown[]) => guarded(file, fn, target, args);
        cache.set(prop, w);
      }
      return w;
    },
  });
  return proxy;
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
  const cache = new Map<PropertyKey, unknown>();
  const proxy: Database.Database = new Proxy(db, {
    get(target, prop) {
      // Accessors (open, inTransaction, name…) and methods run against the real object: native code checks `this`.
      const value: unknown = Reflect.get(target, prop, target);
      if (typeof value !== 'function') return value;
      let w = cache.get(prop);
      if (!w) {
        const fn = value as Fn;
        if (prop === 'prepare') w = (...args: unknown[]) => guardStatement(file, guarded(file, fn, target, args) as Database.Statement);
        else if (prop === 'transaction') w = (...args: unknown[]) => guardTransaction(file, guarded(file, fn, target, args) as Transaction);
        else {
          w = (...args: unknown[]) => {
            const r = guarded(file, fn, target, args);
            return r === target ? proxy : r; // exec, function, aggregate… return the database for chaining
          };
        }
        cache.set(prop, w);
      }
      return w;
    },
  });
  return proxy;
}
