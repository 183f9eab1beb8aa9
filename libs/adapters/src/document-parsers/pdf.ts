import type { Block } from '@rag/contracts';
import { dirname, join } from 'node:path';
import { DEFAULT_PARSE_LIMITS, isCjk, joinLines, textTooLarge, tooLarge, utf8Length, type LimitFailure, type ParseLimits } from '@rag/domain';

type PdfJs = typeof import('pdfjs-dist/legacy/build/pdf.mjs');

/** A text run as returned by pdf.js `getTextContent()` (marked-content entries have no `str`). */
interface PdfTextItem {
  str: string;
  transform: number[];
  width: number;
  height: number;
  hasEOL: boolean;
}

interface Line {
  text: string;
  /** baseline y (PDF user space, grows upwards) */
  y: number;
  /** font size of the line (largest run) */
  size: number;
  /** x where the last run ended, to decide whether the next run needs a space */
  endX: number;
}

interface Paragraph {
  lines: string[];
  size: number;
  page: number;
}

export type PdfParseResult =
  | { ok: true; blocks: Block[]; pages: number; title?: string }
  | { ok: false; code: 'corrupt' | 'empty'; reason: string }
  | LimitFailure;

let pdfjsPromise: Promise<PdfJs> | undefined;

/**
 * Loads pdf.js once. The legacy build is an ES module: under vitest this is a native `import()`; in the
 * CommonJS build SWC turns it into `require()`, which Node ≥ 20.19 supports for ES modules (no top-level await).
 */
function loadPdfJs(): Promise<PdfJs> {
  pdfjsPromise ??= import('pdfjs-dist/legacy/build/pdf.mjs').catch((err: unknown) => {
    pdfjsPromise = undefined;
    throw err;
  });
  return pdfjsPromise;
}

let assetDirs: { cMapUrl?: string; standardFontDataUrl?: string } | undefined;

/** Directories of pdf.js's CMaps (needed for CJK fonts without embedded maps) and standard font data. */
function pdfAssets(): { cMapUrl?: string; standardFontDataUrl?: string } {
  if (assetDirs) return assetDirs;
  try {
    const root = dirname(require.resolve('pdfjs-dist/package.json'));
    assetDirs = { cMapUrl: join(root, 'cmaps') + '/', standardFontDataUrl: join(root, 'standard_fonts') + '/' };
  } catch {
    assetDirs = {};
  }
  return assetDirs;
}

function isTextItem(item: unknown): item is PdfTextItem {
  return typeof item === 'object' && item !== null && typeof (item as { str?: unknown }).str === 'string';
}

/** Rebuilds lines from text runs: a new line on `hasEOL` or when the baseline moves by half a font size. */
export function itemsToLines(items: readonly unknown[]): Line[] {
  const lines: Line[] = [];
  let cur: Line | undefined;
  let eol = false;
  for (const item of items) {
    if (!isTextItem(item)) continue;
    const [a = 0, b = 0, c = 0, d = 0, x = 0, y = 0] = item.transform;
    const size = Math.hypot(c, d) || Math.hypot(a, b) || item.height || 1;
    if (item.str === '') {
      if (item.hasEOL) eol = true;
      continue;
    }
    if (cur && (eol || Math.abs(y - cur.y) > Math.max(cur.size, size) * 0.5)) {
      lines.push(cur);
      cur = undefined;
    }
    if (!cur) {
      cur = { text: item.str, y, size, endX: x + item.width };
    } else {
      const gap = x - cur.endX;
      const needsSpace =
        gap > size * 0.15 && !/\s$/.test(cur.text) && !/^\s/.test(item.str) && !(isCjk(cur.text.slice(-1)) && isCjk(item.str[0]));
      cur.text += (needsSpace ? ' ' : '') + item.str;
      cur.endX = x + item.width;
      cur.size = Math.max(cur.size, size);
    }
    eol = item.hasEOL;
  }
  if (cur) lines.push(cur);
  return lines.filter((l) => l.text.trim() !== '');
}

function median(values: number[]): number {
  if (values.length === 0) return 0;
  const s = [...values].sort((p, q) => p - q);
  return s[Math.floor(s.length / 2)]!;
}

function percentile(values: number[], p: number): number {
  if (values.length === 0) return 0;
  const s = [...values].sort((m, n) => m - n);
  return s[Math.min(s.length - 1, Math.floor(s.length * p))]!;
}

const PAGE_NUMBER = /^\s*(?:page\s+)?\d{1,4}(?:\s*(?:of|\/)\s*\d{1,4})?\s*$/i;

/**
 * Groups a page's lines into paragraphs by vertical gaps. The usual line spacing is the 25th percentile
 * of the gaps (capped at 1.6 × the font size, so a page of one-line paragraphs still splits); a gap over
 * 1.3 × that, a baseline moving up (a new column) or a change of font size starts a new paragraph.
 */
export function linesToParagraphs(lines: Line[], page: number): Paragraph[] {
  // a lone page number as the first or last line of the page is furniture, not content
  const content = lines.filter((l, i) => !((i === 0 || i === lines.length - 1) && lines.length > 1 && PAGE_NUMBER.test(l.text)));
  const gaps: number[] = [];
  for (let i = 1; i < content.length; i++) {
    const gap = content[i - 1]!.y - content[i]!.y;
    if (gap > 0) gaps.push(gap);
  }
  const bodySize = median(content.map((l) => l.size)) || 12;
  const base = Math.min(percentile(gaps, 0.25) || bodySize * 1.2, bodySize * 1.6);
  const paragraphs: Paragraph[] = [];
  let cur: Paragraph | undefined;
  let prev: Line | undefined;
  for (const line of content) {
    let split = !cur || !prev;
    if (cur && prev) {
      const gap = prev.y - line.y;
      const sizeChange = Math.abs(line.size - prev.size) > Math.max(line.size, prev.size) * 0.15;
      split = gap <= 0 || gap > base * 1.3 + 0.5 || sizeChange;
    }
    if (split || !cur) {
      cur = { lines: [line.text], size: line.size, page };
      paragraphs.push(cur);
    } else {
      cur.lines.push(line.text);
      cur.size = Math.max(cur.size, line.size);
    }
    prev = line;
  }
  return paragraphs;
}

/**
 * Paragraphs → blocks. Short paragraphs set in a font clearly larger than the body text become headings
 * (the largest size is level 1); a paragraph cut by a page break is rejoined when it does not end a sentence
 * and the next page continues in lower case with the same font size.
 */
export function paragraphsToBlocks(paragraphs: Paragraph[]): Block[] {
  const merged: Paragraph[] = [];
  for (const p of paragraphs) {
    const last = merged[merged.length - 1];
    const lastLine = last?.lines[last.lines.length - 1] ?? '';
    if (
      last &&
      last.page !== p.page &&
      Math.abs(last.size - p.size) < 0.5 &&
      !/[.!?:;。！？：；"”)]\s*$/.test(lastLine) &&
      /^\s*\p{Ll}/u.test(p.lines[0] ?? '')
    ) {
      last.lines.push(...p.lines);
      last.page = p.page;
      continue;
    }
    merged.push({ ...p, lines: [...p.lines] });
  }

  // body size = the font size carrying the most characters
  const weight = new Map<number, number>();
  for (const p of merged) {
    const key = Math.round(p.size * 2) / 2;
    weight.set(key, (weight.get(key) ?? 0) + p.lines.join('').length);
  }
  let bodySize = 0;
  let best = -1;
  for (const [size, chars] of weight) {
    if (chars > best) {
      best = chars;
      bodySize = size;
    }
  }
  const isHeading = (p: Paragraph): boolean => p.size >= bodySize * 1.2 && p.lines.length <= 3 && joinLines(p.lines).length <= 200;
  const headingSizes = [...new Set(merged.filter(isHeading).map((p) => Math.round(p.size * 2) / 2))].sort((p, q) => q - p);

  const blocks: Block[] = [];
  for (const p of merged) {
    const text = joinLines(p.lines, { dehyphenate: true });
    if (!text) continue;
    if (isHeading(p)) {
      const level = Math.min(6, headingSizes.indexOf(Math.round(p.size * 2) / 2) + 1);
      blocks.push({ type: 'heading', level, text });
    } else {
      blocks.push({ type: 'paragraph', text });
    }
  }
  return blocks;
}

function errorText(err: unknown): { name: string; message: string } {
  if (err instanceof Error) return { name: err.name, message: err.message };
  if (typeof err === 'object' && err !== null) {
    const e = err as { name?: unknown; message?: unknown };
    return { name: String(e.name ?? 'Error'), message: String(e.message ?? '') };
  }
  return { name: 'Error', message: String(err) };
}

function cleanTitle(raw: unknown): string | undefined {
  if (typeof raw !== 'string') return undefined;
  const t = raw.replace(/^Microsoft (?:Word|PowerPoint|Excel) - /, '').replace(/\s+/g, ' ').trim();
  if (!t || /^(untitled|document\d*|slide \d+)$/i.test(t)) return undefined;
  return t;
}

/** True when `%%EOF` appears near the end of the file, as in every complete PDF. */
function hasEofMarker(bytes: Uint8Array): boolean {
  const tail = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).subarray(Math.max(0, bytes.byteLength - 4096));
  return tail.includes('%%EOF');
}

type PdfPage = Awaited<ReturnType<Awaited<ReturnType<PdfJs['getDocument']>['promise']>['getPage']>>;

/**
 * A page's text runs, streamed (what `getTextContent` collects) so that extraction stops as soon as the document's
 * text passes `maxTextBytes` — a small PDF whose content streams inflate to tens of MB never builds its whole text.
 * `null` when the budget is exceeded.
 */
async function pageTextItems(page: PdfPage, budget: { textBytes: number }, maxTextBytes: number): Promise<unknown[] | null> {
  const reader = page.streamTextContent().getReader();
  const items: unknown[] = [];
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return items;
    for (const item of (value as { items?: unknown[] } | undefined)?.items ?? []) {
      items.push(item);
      if (isTextItem(item)) budget.textBytes += utf8Length(item.str);
    }
    if (budget.textBytes > maxTextBytes) {
      // pdf.js refuses a cancel without a reason (and then keeps evaluating the page)
      await reader.cancel(new Error('text limit reached')).catch(() => undefined);
      return null;
    }
  }
}

/**
 * Extracts the text of every page with pdf.js. Broken, truncated or password-protected files are
 * `corrupt`; a PDF without any text layer (scanned images) is `empty`; one with more than `limits.maxPages` pages or
 * `limits.maxTextBytes` of text is `too_large` (checked before the pages are read, and while each page streams).
 */
export async function parsePdf(bytes: Uint8Array, limits: ParseLimits = DEFAULT_PARSE_LIMITS): Promise<PdfParseResult> {
  if (bytes.byteLength === 0) return { ok: false, code: 'empty', reason: 'document has no text' };
  const head = Buffer.from(bytes.buffer, bytes.byteOffset, Math.min(bytes.byteLength, 1024)).toString('latin1');
  if (!head.includes('%PDF-')) return { ok: false, code: 'corrupt', reason: 'not a PDF file: the %PDF- header is missing' };
  if (!hasEofMarker(bytes)) {
    return { ok: false, code: 'corrupt', reason: 'the PDF is truncated: the %%EOF marker at the end of the file is missing' };
  }

  let pdfjs: PdfJs;
  try {
    pdfjs = await loadPdfJs();
  } catch (err) {
    // an installation problem, not a property of the document: let the caller see it
    throw new Error(`cannot load pdfjs-dist: ${errorText(err).message}`);
  }

  const task = pdfjs.getDocument({
    // pdf.js takes ownership of (and may detach) the buffer, so hand it a copy
    data: new Uint8Array(bytes),
    verbosity: 0,
    isEvalSupported: false,
    useSystemFonts: false,
    disableFontFace: true,
    useWorkerFetch: false,
    isOffscreenCanvasSupported: false,
    stopAtErrors: false,
    ...pdfAssets(),
  });
  try {
    let doc: Awaited<typeof task.promise>;
    try {
      doc = await task.promise;
    } catch (err) {
      const { name, message } = errorText(err);
      if (name === 'PasswordException') return { ok: false, code: 'corrupt', reason: 'the PDF is password-protected; text cannot be extracted' };
      return { ok: false, code: 'corrupt', reason: `the PDF cannot be parsed (${message || name}); the file is damaged or not a PDF` };
    }

    if (doc.numPages > limits.maxPages) {
      return tooLarge('pages', `the PDF has ${doc.numPages} pages, more than ${limits.maxPages}`);
    }
    const paragraphs: Paragraph[] = [];
    const budget = { textBytes: 0 };
    for (let n = 1; n <= doc.numPages; n++) {
      try {
        const page = await doc.getPage(n);
        const items = await pageTextItems(page, budget, limits.maxTextBytes);
        if (!items) return textTooLarge(limits.maxTextBytes);
        paragraphs.push(...linesToParagraphs(itemsToLines(items), n));
        page.cleanup();
      } catch (err) {
        const { name, message } = errorText(err);
        return { ok: false, code: 'corrupt', reason: `page ${n} of the PDF cannot be read (${message || name})` };
      }
    }
    const blocks = paragraphsToBlocks(paragraphs);
    if (blocks.length === 0) {
      return { ok: false, code: 'empty', reason: 'the PDF has no extractable text (scanned images need OCR)' };
    }

    let title: string | undefined;
    try {
      const meta = await doc.getMetadata();
      title = cleanTitle((meta.info as Record<string, unknown> | undefined)?.['Title']) ?? cleanTitle(meta.metadata?.get('dc:title'));
    } catch {
      title = undefined; // metadata is optional
    }
    return title ? { ok: true, blocks, pages: doc.numPages, title } : { ok: true, blocks, pages: doc.numPages };
  } finally {
    await task.destroy().catch(() => undefined);
  }
}
