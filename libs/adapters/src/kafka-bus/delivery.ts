/** Kafka header values (Buffer, string or arrays of them) as plain strings; the last value wins for repeated headers. */
export function decodeHeaders(headers: Record<string, Buffer | string | (Buffer | string)[] | undefined> | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(headers ?? {})) {
    if (v === undefined) continue;
    const last = Array.isArray(v) ? v[v.length - 1] : v;
    if (last === undefined) continue;
    out[k] = typeof last === 'string' ? last : last.toString('utf8');
  }
  return out;
}

/** A message value as JSON, or the raw text when it is not JSON (the handler's validation then rejects it). */
export function decodeValue(value: Buffer | null): unknown {
  if (value === null) return null;
  const text = value.toString('utf8');
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return text;
  }
}

/** The offset to commit after `offset` was handled (Kafka commits the next offset to read). */
export const nextOffset = (offset: string): string => (BigInt(offset) + 1n).toString();

/**
 * Unconsumed messages of one partition: high watermark minus the committed offset; a group that never committed
 * starts at the low watermark (consumers subscribe from the beginning).
 */
export function partitionLag(p: { high: string; low: string; committed: string | null }): number {
  const high = BigInt(p.high);
  const low = BigInt(p.low);
  const committed = p.committed === null || BigInt(p.committed) < 0n ? low : BigInt(p.committed);
  const start = committed < low ? low : committed;
  return Number(high > start ? high - start : 0n);
}
