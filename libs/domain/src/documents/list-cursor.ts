/**
 * Keyset page tokens of the document list (`GET /v1/documents?cursor=…`, issue 13: paging that costs the same at
 * any depth). A position is the last record of a page in list order — most recently updated first, ties by the
 * registry's change sequence — and the next page starts strictly after it.
 *
 * The token is opaque to clients: `<updated_at epoch ms, base 36>.<seq, base 36>`. Both registries store
 * `updated_at` with millisecond precision (they are written from JavaScript Dates), so the round trip is exact.
 */
export interface ListCursor {
  /** ISO-8601 instant with milliseconds, as the registries return it. */
  updated_at: string;
  /** The record's change sequence number (unique per registry). */
  seq: number;
}

const TOKEN = /^([0-9a-z]{1,11})\.([0-9a-z]{1,11})$/;

/** The page token for "after this record"; null when the record carries no sequence number. */
export function encodeListCursor(position: { updated_at: string; seq?: number }): string | null {
  const ms = Date.parse(position.updated_at);
  if (position.seq === undefined || !Number.isSafeInteger(position.seq) || position.seq < 0 || !Number.isFinite(ms) || ms < 0) return null;
  return `${ms.toString(36)}.${position.seq.toString(36)}`;
}

/** The position a token names, or null when it is not a token this codec makes (a client typo, a truncated copy). */
export function decodeListCursor(token: string): ListCursor | null {
  const m = TOKEN.exec(token);
  if (!m) return null;
  const ms = parseInt(m[1]!, 36);
  const seq = parseInt(m[2]!, 36);
  if (!Number.isSafeInteger(ms) || !Number.isSafeInteger(seq)) return null;
  const at = new Date(ms);
  if (Number.isNaN(at.getTime())) return null;
  return { updated_at: at.toISOString(), seq };
}
