import type { Block } from '@rag/contracts';

/** Thrown internally when bytes declared as text are binary; `loadContent` turns it into a `corrupt` result. */
export class NotTextError extends Error {
  override readonly name = 'NotTextError';
}

const CJK_CHAR = /[\u2e80-\u9fff\uf900-\ufaff\uff00-\uffef\u3000-\u303f\uac00-\ud7af]/;

/** True when `c` is a CJK ideograph, kana, hangul or full-width punctuation (joined without spaces). */
export function isCjk(c: string | undefined): boolean {
  return c !== undefined && CJK_CHAR.test(c);
}

/**
 * Share of bytes in the first 8 KiB that are control characters other than tab, newline, carriage
 * return, form feed and escape; text files have almost none, binary files have many.
 */
export function binaryRatio(bytes: Uint8Array): number {
  const n = Math.min(bytes.length, 8192);
  if (n === 0) return 0;
  let bad = 0;
  for (let i = 0; i < n; i++) {
    const b = bytes[i]!;
    if (b < 0x20 && b !== 0x09 && b !== 0x0a && b !== 0x0d && b !== 0x0c && b !== 0x1b) bad++;
  }
  return bad / n;
}

/** True when the bytes look like binary data rather than text (UTF-16 with a BOM counts as text). */
export function looksBinary(bytes: Uint8Array): boolean {
  if (hasUtf16Bom(bytes)) return false;
  return binaryRatio(bytes) > 0.05;
}

function hasUtf16Bom(bytes: Uint8Array): boolean {
  return bytes.length >= 2 && ((bytes[0] === 0xff && bytes[1] === 0xfe) || (bytes[0] === 0xfe && bytes[1] === 0xff));
}

/**
 * Decodes text bytes: UTF-8 (BOM stripped); UTF-16 when it starts with a UTF-16 BOM; Windows-1252 when the
 * bytes are not valid UTF-8 (legacy Latin files). Throws `NotTextError` for binary data.
 */
export function decodeText(bytes: Uint8Array): string {
  if (hasUtf16Bom(bytes)) {
    return new TextDecoder(bytes[0] === 0xff ? 'utf-16le' : 'utf-16be').decode(bytes);
  }
  // only NULs and whitespace: nothing to read, not binary (reported as empty by the caller)
  if (bytes.every((b) => b === 0 || b === 0x20 || (b >= 0x09 && b <= 0x0d))) return '';
  if (looksBinary(bytes)) {
    throw new NotTextError(`the content is not text: ${(binaryRatio(bytes) * 100).toFixed(0)}% of its first bytes are control characters`);
  }
  try {
    return new TextDecoder('utf-8', { fatal: true, ignoreBOM: false }).decode(bytes);
  } catch {
    return new TextDecoder('windows-1252').decode(bytes);
  }
}

/** Strips NUL bytes and a leading BOM, and normalises CRLF / CR line endings to LF. */
export function cleanText(text: string): string {
  return text.replace(/^\ufeff/, '').replace(/\u0000/g, '').replace(/\r\n?/g, '\n');
}

/** Collapses every run of whitespace (newlines included) to one space and trims. */
export function collapseWhitespace(text: string): string {
  return text.replace(/[\s\u00a0\u200b]+/g, ' ').trim();
}

/**
 * Joins wrapped lines into one paragraph: a space between lines, none between CJK characters. With
 * `dehyphenate` (laid-out text such as PDF), a word hyphenated at a line end ("infor-" + "mation") is rejoined.
 */
export function joinLines(lines: string[], opts: { dehyphenate?: boolean } = {}): string {
  let out = '';
  for (const raw of lines) {
    const line = collapseWhitespace(raw);
    if (!line) continue;
    if (!out) {
      out = line;
      continue;
    }
    const last = out[out.length - 1];
    const first = line[0];
    if (opts.dehyphenate && last === '-' && /\p{Ll}/u.test(first ?? '') && /\p{L}/u.test(out[out.length - 2] ?? '')) {
      out = out.slice(0, -1) + line;
    } else if (isCjk(last) && isCjk(first)) {
      out += line;
    } else {
      out += ' ' + line;
    }
  }
  return out;
}

const BULLET = /^\s*(?:[-*•‣◦▪–]|\d{1,3}[.)])\s+/;

/**
 * Plain text: paragraphs split on blank lines; wrapped lines are joined. A paragraph whose every line
 * starts with a bullet (`-`, `*`, `•`) or a number (`1.`, `2)`) becomes a list.
 */
export function parsePlainText(text: string): Block[] {
  const blocks: Block[] = [];
  for (const chunk of cleanText(text).split(/\n[ \t\f\v]*\n/)) {
    const lines = chunk.split('\n').filter((l) => l.trim() !== '');
    if (lines.length === 0) continue;
    if (lines.length > 1 && lines.every((l) => BULLET.test(l))) {
      const ordered = lines.every((l) => /^\s*\d/.test(l));
      const items = lines.map((l) => collapseWhitespace(l.replace(BULLET, ''))).filter((s) => s !== '');
      if (items.length > 0) blocks.push({ type: 'list', ordered, items });
      continue;
    }
    const para = joinLines(lines);
    if (para) blocks.push({ type: 'paragraph', text: para });
  }
  return blocks;
}
