import { inflateRawSync } from 'node:zlib';
import { ZIP_LOCAL_HEADER, type ZipEntry } from '@rag/domain';

/** The uncompressed content of one entry (stored or deflated), or `null` when it cannot be read. */
export function readZipEntry(bytes: Buffer, entry: ZipEntry): Buffer | null {
  const p = entry.localHeaderOffset;
  if (p + 30 > bytes.length || bytes.readUInt32LE(p) !== ZIP_LOCAL_HEADER) return null;
  const start = p + 30 + bytes.readUInt16LE(p + 26) + bytes.readUInt16LE(p + 28);
  const end = start + entry.compressedSize;
  if (end > bytes.length) return null;
  const data = bytes.subarray(start, end);
  try {
    if (entry.method === 0) return Buffer.from(data);
    if (entry.method === 8) return inflateRawSync(data);
  } catch {
    return null;
  }
  return null;
}

export type InflatedSizeCheck = { ok: true; bytes: number } | { ok: false; bytes: number; declared: boolean };

/**
 * Uncompressed size of the entries `select` picks, checked against `max` before anything parses them: first the sizes
 * the central directory declares (free), then by inflating each entry with the remaining budget as its output cap —
 * a directory can lie, and zlib stops at the cap instead of inflating a bomb. Entries that cannot be read are skipped
 * here (the parser reports them).
 */
export function checkInflatedSize(bytes: Buffer, entries: readonly ZipEntry[], max: number, select: (e: ZipEntry) => boolean): InflatedSizeCheck {
  const picked = entries.filter(select);
  const declared = picked.reduce((sum, e) => sum + e.size, 0);
  if (declared > max) return { ok: false, bytes: declared, declared: true };
  let total = 0;
  for (const e of picked) {
    const p = e.localHeaderOffset;
    if (p + 30 > bytes.length || bytes.readUInt32LE(p) !== ZIP_LOCAL_HEADER) continue;
    const start = p + 30 + bytes.readUInt16LE(p + 26) + bytes.readUInt16LE(p + 28);
    const data = bytes.subarray(start, Math.min(bytes.length, start + e.compressedSize));
    if (e.method === 0) {
      total += data.length;
    } else if (e.method === 8) {
      try {
        total += inflateRawSync(data, { maxOutputLength: Math.max(1, max - total + 1) }).length;
      } catch (err) {
        if (err instanceof RangeError) return { ok: false, bytes: max + 1, declared: false };
        continue; // damaged data: mammoth reports it
      }
    }
    if (total > max) return { ok: false, bytes: total, declared: false };
  }
  return { ok: true, bytes: total };
}
