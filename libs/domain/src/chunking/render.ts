import type { Block } from '@rag/contracts';
import { splitToFit, type Span } from './split';
import { countTokens } from './tokens';

/**
 * What the packer works on, in section order:
 * - `text`: a paragraph or a list, pre-split into `atoms` (spans of `text` of at most `chunkTokens`
 *   each) that the packer merges greedily and overlaps;
 * - `atomic`: a table or code block (or one piece of a large one) that is never cut further; `solo`
 *   ones are larger than `chunkTokens` (or are pieces of a split block) and always make a chunk alone.
 */
export type Unit = TextUnit | AtomicUnit;
export interface TextUnit {
  kind: 'text';
  text: string;
  atoms: Span[];
}
export interface AtomicUnit {
  kind: 'atomic';
  text: string;
  tokens: number;
  solo: boolean;
}

export interface RenderLimits {
  chunkTokens: number;
  /** tables and code up to this size are kept whole. */
  atomicTokens: number;
}

/** Renders one non-heading block into units; a block with no visible text gives none. */
export function blockUnits(block: Exclude<Block, { type: 'heading' }>, limits: RenderLimits): Unit[] {
  switch (block.type) {
    case 'paragraph':
      return textUnit(block.text, limits);
    case 'list':
      return textUnit(renderList(block.items, block.ordered), limits);
    case 'table':
      return tableUnits(block.rows, block.header, block.caption, limits);
    case 'code':
      return codeUnits(block.text, block.language, limits);
  }
}

function textUnit(raw: string, limits: RenderLimits): Unit[] {
  const text = raw.trim();
  if (!text) return [];
  return [{ kind: 'text', text, atoms: splitToFit(text, 0, text.length, limits.chunkTokens) }];
}

/** `- item` / `1. item` lines; empty items are dropped. */
export function renderList(items: readonly string[], ordered: boolean): string {
  const kept = items.map((i) => i.trim()).filter((i) => i.length > 0);
  return kept.map((item, i) => `${ordered ? `${i + 1}.` : '-'} ${item}`).join('\n');
}

// ---------------------------------------------------------------------------------------------- tables

function cell(text: string): string {
  return text.replace(/\s+/g, ' ').trim().replace(/\|/g, '\\|');
}

function row(cells: readonly string[]): string {
  return `| ${cells.join(' | ')} |`;
}

/**
 * Markdown rows (`| a | b |`, a `| --- |` line under the header), the caption on a line above.
 * Kept whole up to `atomicTokens`; a larger table is cut between rows into pieces of about
 * `chunkTokens`, each repeating the caption and the header so it reads on its own.
 */
export function tableUnits(rows: readonly (readonly string[])[], header: boolean, caption: string | undefined, limits: RenderLimits): Unit[] {
  const width = rows.reduce((w, r) => Math.max(w, r.length), 0);
  const cells = rows.map((r) => Array.from({ length: width }, (_, i) => cell(r[i] ?? '')));
  const head = header && cells.length > 0 ? cells[0]! : null;
  const body = (head ? cells.slice(1) : cells).filter((r) => r.some((c) => c.length > 0)).map(row);
  const captionLine = caption?.replace(/\s+/g, ' ').trim() ?? '';
  const hasHead = head !== null && head.some((c) => c.length > 0);
  if (body.length === 0 && !hasHead) return captionLine ? textUnit(captionLine, limits) : [];

  const prefix = [...(captionLine ? [captionLine] : []), ...(hasHead ? [row(head!), row(head!.map(() => '---'))] : [])];
  const whole = [...prefix, ...body].join('\n');
  const tokens = countTokens(whole);
  if (tokens <= limits.atomicTokens || body.length === 0) {
    return [{ kind: 'atomic', text: whole, tokens, solo: tokens > limits.chunkTokens }];
  }

  const prefixText = prefix.join('\n');
  const prefixTokens = prefix.length > 0 ? countTokens(prefixText) + 1 : 0;
  const room = Math.max(1, limits.chunkTokens - prefixTokens);
  const pieces: string[] = [];
  let rowsIn: string[] = [];
  let used = 0;
  const emit = (): void => {
    if (rowsIn.length > 0) pieces.push([...prefix, ...rowsIn].join('\n'));
    rowsIn = [];
    used = 0;
  };
  for (const r of body) {
    const t = countTokens(r) + 1;
    if (t > room) {
      // One row larger than a chunk: it goes alone, cut at text boundaries (each part keeps the header).
      emit();
      for (const part of splitToFit(r, 0, r.length, room)) pieces.push([...prefix, r.slice(part.start, part.end)].join('\n'));
      continue;
    }
    if (used + t > room) emit();
    rowsIn.push(r);
    used += t;
  }
  emit();
  return pieces.map((text) => ({ kind: 'atomic', text, tokens: countTokens(text), solo: true }));
}

// ------------------------------------------------------------------------------------------------ code

/**
 * A fenced block (```lang … ```, the fence longer than any backtick run inside). Kept whole up to
 * `atomicTokens`; a larger one is cut between lines into fenced pieces of about `chunkTokens`. Lines
 * are never cut, except a single line larger than `atomicTokens` (minified code, embedded data), which
 * is cut at spaces/punctuation so that no chunk grows without bound.
 */
export function codeUnits(raw: string, language: string | undefined, limits: RenderLimits): Unit[] {
  const code = raw.replace(/\r\n?/g, '\n').replace(/^(?:[^\S\n]*\n)+/, '').trimEnd();
  if (!code.trim()) return [];
  const lang = (language ?? '').trim().replace(/\s+/g, '-');
  const longestRun = (code.match(/`+/g) ?? []).reduce((m, r) => Math.max(m, r.length), 0);
  const fence = '`'.repeat(Math.max(3, longestRun + 1));
  const wrap = (body: string): string => `${fence}${lang}\n${body}\n${fence}`;

  const whole = wrap(code);
  const tokens = countTokens(whole);
  if (tokens <= limits.atomicTokens) return [{ kind: 'atomic', text: whole, tokens, solo: tokens > limits.chunkTokens }];

  const room = Math.max(1, limits.chunkTokens - countTokens(wrap('')));
  const pieces: string[] = [];
  let lines: string[] = [];
  let used = 0;
  const emit = (): void => {
    // Blank lines at the edges of a piece carry nothing.
    while (lines.length > 0 && !lines[0]!.trim()) lines.shift();
    while (lines.length > 0 && !lines[lines.length - 1]!.trim()) lines.pop();
    if (lines.length > 0) pieces.push(wrap(lines.join('\n')));
    lines = [];
    used = 0;
  };
  for (const line of code.split('\n')) {
    const t = countTokens(line) + 1;
    if (t > limits.atomicTokens) {
      emit();
      for (const part of splitToFit(line, 0, line.length, room)) pieces.push(wrap(line.slice(part.start, part.end)));
      continue;
    }
    if (used + t > room && lines.length > 0) emit();
    lines.push(line);
    used += t;
  }
  emit();
  return pieces.map((text) => ({ kind: 'atomic', text, tokens: countTokens(text), solo: true }));
}
