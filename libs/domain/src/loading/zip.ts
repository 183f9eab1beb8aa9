import { inflateRawSync } from 'node:zlib';

/** One entry of a ZIP archive's central directory. */
export interface ZipEntry {
  name: string;
  method: number;
  compressedSize: number;
  size: number;
  localHeaderOffset: number;
}

const EOCD = 0x06054b50;
const CENTRAL = 0x02014b50;
const LOCAL = 0x04034b50;

/** True when the bytes start like a ZIP archive (`PK\x03\x04`). */
export function isZip(bytes: Uint8Array): boolean {
  return bytes.length >= 4 && bytes[0] === 0x50 && bytes[1] === 0x4b && bytes[2] === 0x03 && bytes[3] === 0x04;
}

/**
 * Reads the central directory of a ZIP archive (enough for OOXML packages; no ZIP64).
 * Returns `null` when the archive is damaged or truncated.
 */
export function zipEntries(bytes: Buffer): ZipEntry[] | null {
  const min = Math.max(0, bytes.length - 22 - 0xffff);
  let eocd = -1;
  for (let i = bytes.length - 22; i >= min; i--) {
    if (bytes.readUInt32LE(i) === EOCD) {
      eocd = i;
      break;
    }
  }
  if (eocd < 0) return null;
  const count = bytes.readUInt16LE(eocd + 10);
  let p = bytes.readUInt32LE(eocd + 16);
  const entries: ZipEntry[] = [];
  for (let i = 0; i < count; i++) {
    if (p + 46 > bytes.length || bytes.readUInt32LE(p) !== CENTRAL) return null;
    const nameLen = bytes.readUInt16LE(p + 28);
    const extraLen = bytes.readUInt16LE(p + 30);
    const commentLen = bytes.readUInt16LE(p + 32);
    entries.push({
      method: bytes.readUInt16LE(p + 10),
      compressedSize: bytes.readUInt32LE(p + 20),
      size: bytes.readUInt32LE(p + 24),
      localHeaderOffset: bytes.readUInt32LE(p + 42),
      name: bytes.toString('utf8', p + 46, p + 46 + nameLen),
    });
    p += 46 + nameLen + extraLen + commentLen;
  }
  return entries;
}

/** The uncompressed content of one entry (stored or deflated), or `null` when it cannot be read. */
export function readZipEntry(bytes: Buffer, entry: ZipEntry): Buffer | null {
  const p = entry.localHeaderOffset;
  if (p + 30 > bytes.length || bytes.readUInt32LE(p) !== LOCAL) return null;
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
    if (p + 30 > bytes.length || bytes.readUInt32LE(p) !== LOCAL) continue;
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
