import { looksBinary } from './text';
import { isZip, zipEntries } from './zip';

export const MIME_TEXT = 'text/plain';
export const MIME_MARKDOWN = 'text/markdown';
export const MIME_HTML = 'text/html';
export const MIME_PDF = 'application/pdf';
export const MIME_DOCX = 'application/vnd.openxmlformats-officedocument.wordprocessingml.document';
/** JSON Lines batches (BEIR corpus format); parsed with `parseJsonl`, not `loadContent`. */
export const MIME_JSONL = 'application/x-ndjson';

const DOCUMENT_TYPES = [MIME_TEXT, MIME_MARKDOWN, MIME_HTML, MIME_PDF, MIME_DOCX] as const;
const SUPPORTED_TYPES = [...DOCUMENT_TYPES, MIME_JSONL] as const;
export type SupportedMimeType = (typeof SUPPORTED_TYPES)[number];
export type DocumentMimeType = (typeof DOCUMENT_TYPES)[number];

/** Every media type the loader accepts (typed `readonly string[]` so `.includes(anyString)` type-checks). */
export const SUPPORTED_MIME_TYPES: readonly string[] = SUPPORTED_TYPES;
/** The media types `loadContent` turns into one document (all but JSONL batches). */
export const DOCUMENT_MIME_TYPES: readonly string[] = DOCUMENT_TYPES;

/** File extensions (lower case, with the dot) → media type. */
export const MIME_BY_EXTENSION: Readonly<Record<string, SupportedMimeType>> = {
  '.txt': MIME_TEXT,
  '.text': MIME_TEXT,
  '.md': MIME_MARKDOWN,
  '.markdown': MIME_MARKDOWN,
  '.html': MIME_HTML,
  '.htm': MIME_HTML,
  '.pdf': MIME_PDF,
  '.docx': MIME_DOCX,
  '.jsonl': MIME_JSONL,
  '.ndjson': MIME_JSONL,
};

/** Other spellings of the supported types. */
const ALIASES: Readonly<Record<string, SupportedMimeType>> = {
  'text/x-markdown': MIME_MARKDOWN,
  'text/x-gfm': MIME_MARKDOWN,
  'application/xhtml+xml': MIME_HTML,
  'application/x-pdf': MIME_PDF,
  'application/jsonl': MIME_JSONL,
  'application/jsonlines': MIME_JSONL,
  'application/x-jsonlines': MIME_JSONL,
  'application/json-lines': MIME_JSONL,
  'application/ndjson': MIME_JSONL,
};

/** Declared types that say nothing about the content. */
const GENERIC = new Set(['application/octet-stream', 'binary/octet-stream', 'application/unknown', 'application/x-unknown']);

/** `Text/HTML; charset=UTF-8` → `text/html`; aliases mapped to the canonical type; blank → `null`. */
export function normalizeMimeType(declared: string | undefined | null): string | null {
  const base = (declared ?? '').split(';')[0]!.trim().toLowerCase();
  if (!base) return null;
  return ALIASES[base] ?? base;
}

export function isSupportedMimeType(mime: string): mime is SupportedMimeType {
  return SUPPORTED_MIME_TYPES.includes(mime);
}

export function isDocumentMimeType(mime: string): mime is DocumentMimeType {
  return DOCUMENT_MIME_TYPES.includes(mime);
}

/** The lower-case extension of a file name including the dot (`Report.PDF` → `.pdf`), or `''`. */
export function fileExtension(filename: string | undefined): string {
  const base = (filename ?? '').split(/[\\/]/).pop() ?? '';
  const dot = base.lastIndexOf('.');
  return dot > 0 ? base.slice(dot).toLowerCase() : '';
}

/** True when the first KiB holds the `%PDF-` header. */
export function hasPdfHeader(bytes: Uint8Array): boolean {
  return Buffer.from(bytes.buffer, bytes.byteOffset, Math.min(bytes.byteLength, 1024)).includes('%PDF-');
}

/** True when the bytes are a ZIP package holding `word/document.xml` (a DOCX). */
export function isDocxPackage(bytes: Buffer): boolean {
  if (!isZip(bytes)) return false;
  const entries = zipEntries(bytes);
  // a damaged central directory: fall back to the file names in the local headers
  return entries ? entries.some((e) => e.name === 'word/document.xml') : bytes.includes('word/document.xml');
}

/**
 * Decides the media type of an upload, or `null` when it is not supported.
 *
 * 1. Magic bytes win: `%PDF-` → PDF; a ZIP package with `word/document.xml` → DOCX (a ZIP without it is
 *    unsupported unless the name or declared type claims DOCX, so that loading reports it as corrupt).
 * 2. A known extension (`.txt .md .markdown .html .htm .pdf .docx .jsonl .ndjson`).
 * 3. The declared type, parameters stripped (`text/html; charset=utf-8`); any other `text/*` is read as plain text.
 * 4. Sniffing: binary bytes → `null`; `<!doctype html>` / `<html` → HTML; other text → plain text, unless a
 *    specific unsupported type was declared (e.g. `image/png`, `application/json`).
 */
export function detectMimeType(filename: string | undefined, bytes: Buffer, declared?: string): string | null {
  const fromExt = MIME_BY_EXTENSION[fileExtension(filename)];
  const fromDeclared = normalizeMimeType(declared);

  if (hasPdfHeader(bytes)) return MIME_PDF;
  if (isZip(bytes)) {
    if (isDocxPackage(bytes)) return MIME_DOCX;
    return fromExt === MIME_DOCX || fromDeclared === MIME_DOCX ? MIME_DOCX : null;
  }
  if (fromExt) return fromExt;
  if (fromDeclared && isSupportedMimeType(fromDeclared)) return fromDeclared;
  if (fromDeclared?.startsWith('text/')) return MIME_TEXT;
  if (fromDeclared && !GENERIC.has(fromDeclared)) return null;

  if (bytes.length === 0 || looksBinary(bytes)) return null;
  const head = bytes.subarray(0, 1024).toString('utf8').replace(/^\ufeff/, '').trimStart().toLowerCase();
  if (head.startsWith('<!doctype html') || head.startsWith('<html')) return MIME_HTML;
  return MIME_TEXT;
}
