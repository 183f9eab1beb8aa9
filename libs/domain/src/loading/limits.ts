/**
 * Limits on what one document may cost to parse. Each is checked as early as the format allows, so a hostile file
 * fails before the work it would cause: the ZIP central directory (and a capped inflate) before a DOCX is converted,
 * the page count before a PDF's pages are read, the text extracted so far while a PDF page streams.
 */
export interface ParseLimits {
  /** DOCX: uncompressed bytes of the package's XML parts (what is inflated and parsed; images are never read). */
  maxInflatedBytes: number;
  /** PDF: pages. */
  maxPages: number;
  /** Extracted text, in UTF-8 bytes, for every format. */
  maxTextBytes: number;
}

/** Which limit a `too_large` failure hit. */
export type ParseLimitName = 'inflated_bytes' | 'pages' | 'text_bytes';

/** The setting behind each limit, named in failure reasons so an operator knows what to raise. */
export const PARSE_LIMIT_SETTING: Readonly<Record<ParseLimitName, string>> = Object.freeze({
  inflated_bytes: 'RAG_MAX_INFLATED_BYTES',
  pages: 'RAG_MAX_PAGES',
  text_bytes: 'RAG_MAX_TEXT_BYTES',
});

/**
 * Defaults (the settings RAG_MAX_INFLATED_BYTES, RAG_MAX_PAGES, RAG_MAX_TEXT_BYTES):
 * - 64 MiB of DOCX XML: Word markup runs 3–10× the text, so this is thousands of pages; mammoth needs ~75× the XML
 *   in memory, so larger parts would exhaust the parse worker's heap anyway (a 100 MB-XML bomb of 400 KB fails here).
 * - 2000 PDF pages: the largest manuals and contracts; a 10k-page PDF is a scan dump or a report export.
 * - 8 MiB of text: ~2M tokens, ~12k chunks at the default sizes (about 5000 dense pages), under the chunk cap.
 */
export const DEFAULT_PARSE_LIMITS: Readonly<ParseLimits> = Object.freeze({
  maxInflatedBytes: 64 * 1024 * 1024,
  maxPages: 2000,
  maxTextBytes: 8 * 1024 * 1024,
});

export interface LimitFailure {
  ok: false;
  code: 'too_large';
  limit: ParseLimitName;
  reason: string;
}

/** A `too_large` failure; the reason ends with the setting to raise, e.g. `(RAG_MAX_PAGES)`. */
export function tooLarge(limit: ParseLimitName, reason: string): LimitFailure {
  return { ok: false, code: 'too_large', limit, reason: `${reason} (${PARSE_LIMIT_SETTING[limit]})` };
}

/** `12 MiB`, `640 KiB`, `900 bytes`. */
export function formatBytes(n: number): string {
  if (n >= 1024 * 1024) return `${+(n / (1024 * 1024)).toFixed(1)} MiB`;
  if (n >= 1024) return `${+(n / 1024).toFixed(1)} KiB`;
  return `${n} bytes`;
}

/** UTF-8 length of a string without encoding it (a lone surrogate counts 3, as TextEncoder writes U+FFFD). */
export function utf8Length(s: string): number {
  let n = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x80) n += 1;
    else if (c < 0x800) n += 2;
    else if (c >= 0xd800 && c <= 0xdbff && i + 1 < s.length && (s.charCodeAt(i + 1) & 0xfc00) === 0xdc00) {
      n += 4;
      i++;
    } else n += 3;
  }
  return n;
}

export function textTooLarge(max: number): LimitFailure {
  return tooLarge('text_bytes', `the document has more than ${formatBytes(max)} of text`);
}
