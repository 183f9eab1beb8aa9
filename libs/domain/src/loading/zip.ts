/**
 * ZIP central-directory reading, pure (bytes in, entries out): enough to detect a DOCX package. Inflating entries and
 * checking inflated sizes (node:zlib) is in libs/adapters/src/document-parsers/zip-entry.ts.
 */

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
/** Local file header signature (exported for the adapter that inflates entries, `readZipEntry`). */
export const ZIP_LOCAL_HEADER = 0x04034b50;

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
