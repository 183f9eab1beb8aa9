import { AppError } from '@rag/platform';

/** What an operator can do about a damaged store file; the same advice in every message. */
export const RESTORE_ADVICE = 'restore it from a backup or move it away to start empty';

/** SQLite result codes (primary or extended) that mean the file itself is damaged or is not a database. */
export function isCorruptionCode(code: unknown): code is string {
  return typeof code === 'string' && (code.startsWith('SQLITE_CORRUPT') || code === 'SQLITE_NOTADB');
}

/** One line: SQLite's messages (quick_check output in particular) may span several. */
export function oneLine(text: string): string {
  return text.replace(/\s*\n\s*/g, '; ').trim();
}

/**
 * A store file that cannot be used because it is damaged (SQLITE_CORRUPT), is not a SQLite database (SQLITE_NOTADB)
 * or does not hold the schema its store expects. An `unavailable` AppError (503) whose one-line message names the file;
 * the gateway answers it as `store_corrupt`.
 */
export class StoreCorruptError extends AppError {
  readonly kind = 'store_corrupt' as const;
  constructor(
    readonly file: string,
    /** The SQLite code behind it (SQLITE_CORRUPT, SQLITE_NOTADB, …) or `SCHEMA` for an unexpected schema. */
    readonly sqliteCode: string,
    reason: string,
  ) {
    super('unavailable', `${file} ${reason}: ${RESTORE_ADVICE}`, { store: file, sqlite_code: sqliteCode });
    this.name = 'StoreCorruptError';
  }

  /** The error for a SQLite error of a corruption code raised on `file`. */
  static fromSqlite(file: string, code: string, message: string): StoreCorruptError {
    const reason =
      code === 'SQLITE_NOTADB' ? `is not a valid SQLite database (${oneLine(message)})` : `is corrupt (${code}: ${oneLine(message)})`;
    return new StoreCorruptError(file, code, reason);
  }
}

/** A store file that could not be opened for another reason (permissions, a folder in its place, disk full…). */
export class StoreOpenError extends AppError {
  constructor(
    readonly file: string,
    reason: string,
  ) {
    super('unavailable', `cannot open ${file} (${oneLine(reason)})`, { store: file });
    this.name = 'StoreOpenError';
  }
}

/**
 * Corruption seen on a store file while the process runs (a query or a write hit a damaged page that the start-up
 * check did not reach, or the file was damaged later). Keyed by file; readiness reports these until the file is opened
 * again (a restart after a restore). Module state on purpose: the SQLite opener is the one place that sees every
 * statement of every store, and it has no handle on the service that answers /readyz.
 */
const observed = new Map<string, StoreCorruptError>();

export function recordCorruption(e: StoreCorruptError): void {
  if (!observed.has(e.file)) observed.set(e.file, e);
}

export function forgetCorruption(file: string): void {
  observed.delete(file);
}

/** Corruption observed at run time on any of `files` (all files when omitted). */
export function observedCorruption(files?: Iterable<string>): StoreCorruptError[] {
  if (!files) return [...observed.values()];
  const out: StoreCorruptError[] = [];
  for (const f of files) {
    const e = observed.get(f);
    if (e) out.push(e);
  }
  return out;
}
