import type { Block } from '@rag/contracts';
import { parseHtml } from './html';
import { DEFAULT_PARSE_LIMITS, textTooLarge, utf8Length, type LimitFailure, type ParseLimitName, type ParseLimits } from './limits';
import { parseMarkdown } from './markdown';
import {
  DOCUMENT_MIME_TYPES,
  isDocumentMimeType,
  MIME_DOCX,
  MIME_HTML,
  MIME_JSONL,
  MIME_MARKDOWN,
  MIME_PDF,
  MIME_TEXT,
  normalizeMimeType,
} from './mime';
import { cleanText, collapseWhitespace, decodeText, NotTextError, parsePlainText } from './text';

export interface LoadInput {
  bytes: Buffer;
  /** Media type (parameters such as `; charset=utf-8` are ignored); see `detectMimeType`. */
  mimeType: string;
  /** Title chosen by the caller; wins over everything found in the content. */
  title?: string;
  /** Original file name, used for the title when the content has none. */
  filename?: string;
}

export type LoadFailureCode = 'unsupported_media_type' | 'corrupt' | 'empty' | 'too_large';

export type LoadResult =
  | { ok: true; title: string; blocks: Block[]; pages?: number }
  | { ok: false; code: Exclude<LoadFailureCode, 'too_large'>; reason: string }
  /** Over one of the `ParseLimits`; `limit` says which. */
  | { ok: false; code: 'too_large'; limit: ParseLimitName; reason: string };

/** Longest title taken from content (a heading, metadata or the first line). */
export const DERIVED_TITLE_MAX = 200;
/** Longest title kept at all (`StructuredDocument.title`). */
export const TITLE_MAX = 1024;

/** Cuts `text` to at most `max` characters, at a word boundary when one is near, adding `…`. */
export function truncateTitle(text: string, max = DERIVED_TITLE_MAX): string {
  const t = collapseWhitespace(text);
  if (t.length <= max) return t;
  const cut = t.slice(0, max - 1);
  const space = cut.lastIndexOf(' ');
  return `${(space > max * 0.6 ? cut.slice(0, space) : cut).trimEnd()}…`;
}

function filenameTitle(filename: string | undefined): string {
  const base = (filename ?? '').split(/[\\/]/).pop() ?? '';
  const dot = base.lastIndexOf('.');
  return collapseWhitespace(dot > 0 ? base.slice(0, dot) : base);
}

function firstBlockLine(blocks: Block[]): string {
  for (const b of blocks) {
    const text = b.type === 'list' ? b.items[0] : b.type === 'table' ? b.rows[0]?.join(' | ') : b.text;
    const line = (text ?? '').split('\n').find((l) => l.trim() !== '');
    if (line) return line;
  }
  return '';
}

export interface TitleHints {
  /** The caller's title. */
  given?: string;
  /** The file's own title: PDF `/Title`, DOCX `dc:title`, HTML `<title>`, Markdown front-matter `title:`. */
  metadataTitle?: string;
  filename?: string;
  /** The first line of the source text (plain text keeps line breaks that its paragraphs join). */
  firstLine?: string;
}

/**
 * Title: the caller's title, else the first heading, else the file's own title, else the file name
 * without extension, else the first line (truncated to `DERIVED_TITLE_MAX`), else `Untitled`.
 */
export function chooseTitle(blocks: Block[], hints: TitleHints = {}): string {
  const explicit = collapseWhitespace(hints.given ?? '');
  if (explicit) return truncateTitle(explicit, TITLE_MAX);
  const heading = blocks.find((b): b is Extract<Block, { type: 'heading' }> => b.type === 'heading');
  const candidates = [heading?.text, hints.metadataTitle, filenameTitle(hints.filename), hints.firstLine, firstBlockLine(blocks)];
  for (const c of candidates) {
    const t = collapseWhitespace(c ?? '');
    if (t) return truncateTitle(t);
  }
  return 'Untitled';
}

interface Parsed {
  blocks: Block[];
  title?: string;
  pages?: number;
  firstLine?: string;
}

type ParseOutcome = ({ ok: true } & Parsed) | Extract<LoadResult, { ok: false }>;

/** What a binary-format parser returns: blocks (and the file's own title, page count), or why not. */
export type BinaryParseResult = { ok: true; blocks: Block[]; title?: string; pages?: number } | { ok: false; code: 'corrupt' | 'empty'; reason: string } | LimitFailure;

/** Parses one binary document's bytes within `limits`; expected failures are values, never thrown. */
export type BinaryParser = (bytes: Buffer, limits: ParseLimits) => Promise<BinaryParseResult>;

/**
 * The parsers of the binary formats. They need SDKs and Node built-ins (pdf.js, mammoth, zlib), so they live in an
 * adapter (libs/adapters/src/document-parsers, `BINARY_PARSERS`) and are passed in; the domain keeps the dispatch,
 * the limits and the title rules. A format without a parser is answered `unsupported_media_type`.
 */
export type BinaryParsers = Partial<Record<typeof MIME_PDF | typeof MIME_DOCX, BinaryParser>>;

function decode(bytes: Buffer): { ok: true; text: string } | { ok: false; code: 'corrupt'; reason: string } {
  try {
    return { ok: true, text: cleanText(decodeText(bytes)) };
  } catch (err) {
    if (err instanceof NotTextError) return { ok: false, code: 'corrupt', reason: err.message };
    throw err;
  }
}

async function parse(mime: string, bytes: Buffer, limits: ParseLimits, binary: BinaryParsers): Promise<ParseOutcome> {
  switch (mime) {
    case MIME_PDF:
    case MIME_DOCX: {
      const parser = binary[mime];
      if (!parser) return { ok: false, code: 'unsupported_media_type', reason: `no ${mime} parser is wired in this process` };
      return parser(bytes, limits);
    }
    case MIME_TEXT:
    case MIME_MARKDOWN:
    case MIME_HTML: {
      const decoded = decode(bytes);
      if (!decoded.ok) return decoded;
      // text, Markdown and HTML carry at least their text: refuse before parsing when the source alone is over
      if (mime !== MIME_HTML && utf8Length(decoded.text) > limits.maxTextBytes) return textTooLarge(limits.maxTextBytes);
      if (mime === MIME_TEXT) {
        const firstLine = decoded.text.split('\n').find((l) => l.trim() !== '');
        return { ok: true, blocks: parsePlainText(decoded.text), ...(firstLine ? { firstLine } : {}) };
      }
      return { ok: true, ...(mime === MIME_MARKDOWN ? parseMarkdown(decoded.text) : parseHtml(decoded.text)) };
    }
    default:
      return { ok: false, code: 'unsupported_media_type', reason: `unsupported media type "${mime}"` };
  }
}

/** UTF-8 bytes of the text of the blocks. */
function blocksTextBytes(blocks: Block[]): number {
  let n = 0;
  for (const b of blocks) {
    if (b.type === 'list') for (const item of b.items) n += utf8Length(item);
    else if (b.type === 'table') {
      for (const row of b.rows) for (const cell of row) n += utf8Length(cell);
      n += utf8Length(b.caption ?? '');
    }
    else n += utf8Length(b.text);
  }
  return n;
}

/**
 * Parses one document's bytes into structured blocks. Expected failures are values, never thrown:
 * an unsupported type, a corrupt file (damaged PDF/DOCX, binary bytes declared as text), no text at all, or
 * a document over one of the `limits` (`too_large`, with the limit it hit). PDF and DOCX go to `binary` (see
 * `BinaryParsers`); text, Markdown and HTML are parsed here.
 */
export async function loadContent(input: LoadInput, limits: ParseLimits = DEFAULT_PARSE_LIMITS, binary: BinaryParsers = {}): Promise<LoadResult> {
  const mime = normalizeMimeType(input.mimeType);
  if (mime === MIME_JSONL) {
    return {
      ok: false,
      code: 'unsupported_media_type',
      reason: `${MIME_JSONL} is a batch of documents: split it with parseJsonl and load each document`,
    };
  }
  if (!mime || !isDocumentMimeType(mime)) {
    return {
      ok: false,
      code: 'unsupported_media_type',
      reason: `unsupported media type "${mime ?? input.mimeType}"; supported: ${DOCUMENT_MIME_TYPES.join(', ')}`,
    };
  }
  if (input.bytes.length === 0) return { ok: false, code: 'empty', reason: 'document has no text' };

  const parsed = await parse(mime, input.bytes, limits, binary);
  if (!parsed.ok) return parsed;
  if (blocksTextBytes(parsed.blocks) > limits.maxTextBytes) return textTooLarge(limits.maxTextBytes);
  const blocks = parsed.blocks.filter((b) => (b.type === 'list' ? b.items.length > 0 : b.type === 'table' ? b.rows.length > 0 : b.text.trim() !== ''));
  if (blocks.length === 0) {
    return { ok: false, code: 'empty', reason: mime === MIME_PDF ? 'the PDF has no extractable text (scanned images need OCR)' : 'document has no text' };
  }
  const title = chooseTitle(blocks, { given: input.title, metadataTitle: parsed.title, filename: input.filename, firstLine: parsed.firstLine });
  return parsed.pages !== undefined ? { ok: true, title, blocks, pages: parsed.pages } : { ok: true, title, blocks };
}
