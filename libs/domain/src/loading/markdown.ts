import type { Block } from '@rag/contracts';
import { lexer, type MarkedToken, type Token, type Tokens } from 'marked';
import { decodeEntities, HARD_BREAK, inlineText, parseHtml } from './html';
import { cleanText, collapseWhitespace } from './text';

export interface MarkdownParseResult {
  blocks: Block[];
  /** `title:` from a YAML front-matter block, when present. */
  title?: string;
}

const FRONT_MATTER = /^---[ \t]*\n([\s\S]*?)\n(?:---|\.\.\.)[ \t]*(?:\n|$)/;

/** Renders inline tokens to plain text (markup dropped, entities decoded, `<br>` kept as a hard break). */
function inline(tokens: Token[] | undefined, fallback = ''): string {
  if (!tokens) return decodeEntities(fallback);
  let out = '';
  for (const t of tokens) {
    const token = t as MarkedToken;
    switch (token.type) {
      case 'text':
        out += token.tokens ? inline(token.tokens) : decodeEntities(token.text);
        break;
      case 'escape':
      case 'codespan':
        out += token.text;
        break;
      case 'br':
        out += HARD_BREAK;
        break;
      case 'html':
        if (/^<br\s*\/?>$/i.test(token.text.trim())) out += HARD_BREAK;
        break;
      case 'checkbox':
        break;
      case 'strong':
      case 'em':
      case 'del':
      case 'link':
      case 'image':
        out += inline(token.tokens, token.text);
        break;
      default: {
        const generic = t as Tokens.Generic;
        if (generic.tokens) out += inline(generic.tokens);
        else if (typeof generic['text'] === 'string') out += decodeEntities(generic['text'] as string);
      }
    }
  }
  return out;
}

function inlineLine(tokens: Token[] | undefined, fallback = ''): string {
  return inlineText(inline(tokens, fallback));
}

function codeLanguage(lang: string | undefined): string | undefined {
  const first = (lang ?? '').trim().split(/\s+/)[0] ?? '';
  const cleaned = first.replace(/^\{?\.?/, '').replace(/\}$/, '');
  return cleaned || undefined;
}

/** The text of a list item without its nested lists, and those nested lists' items (flattened). */
function listItems(list: Tokens.List): string[] {
  const items: string[] = [];
  for (const item of list.items) {
    const own: string[] = [];
    const nested: string[] = [];
    for (const t of item.tokens) {
      const token = t as MarkedToken;
      if (token.type === 'list') nested.push(...listItems(token));
      else if (token.type === 'checkbox' || token.type === 'space') continue;
      else if (token.type === 'text' || token.type === 'paragraph' || token.type === 'heading') own.push(inlineLine(token.tokens, token.text));
      else if (token.type === 'code') own.push(collapseWhitespace(token.text));
      else own.push(blocksText(toBlocks([t])));
    }
    let text = own.filter((s) => s !== '').join(' ');
    if (item.task && text) text = `[${item.checked ? 'x' : ' '}] ${text}`;
    if (text) items.push(text);
    items.push(...nested);
  }
  return items;
}

function blocksText(blocks: Block[]): string {
  return collapseWhitespace(
    blocks
      .map((b) => (b.type === 'list' ? b.items.join(' ') : b.type === 'table' ? b.rows.map((r) => r.join(' ')).join(' ') : b.text))
      .join(' '),
  );
}

function toBlocks(tokens: Token[]): Block[] {
  const blocks: Block[] = [];
  for (const t of tokens) {
    const token = t as MarkedToken;
    switch (token.type) {
      case 'heading': {
        const text = collapseWhitespace(inline(token.tokens, token.text).split(HARD_BREAK).join(' '));
        if (text) blocks.push({ type: 'heading', level: Math.min(6, Math.max(1, token.depth)), text });
        break;
      }
      case 'paragraph':
      case 'text': {
        const text = inlineLine(token.tokens, token.text);
        if (text) blocks.push({ type: 'paragraph', text });
        break;
      }
      case 'list': {
        const items = listItems(token);
        if (items.length > 0) blocks.push({ type: 'list', ordered: token.ordered, items });
        break;
      }
      case 'table': {
        const head = token.header.map((cell) => collapseWhitespace(inline(cell.tokens, cell.text).split(HARD_BREAK).join(' ')));
        const body = token.rows.map((row) => row.map((cell) => collapseWhitespace(inline(cell.tokens, cell.text).split(HARD_BREAK).join(' '))));
        const hasHeader = head.some((c) => c !== '');
        const rows = (hasHeader ? [head, ...body] : body).filter((r) => r.some((c) => c !== ''));
        if (rows.length > 0) blocks.push({ type: 'table', rows, header: hasHeader });
        break;
      }
      case 'code': {
        const text = token.text.replace(/\s+$/, '');
        if (!text.trim()) break;
        const language = codeLanguage(token.lang);
        blocks.push(language ? { type: 'code', text, language } : { type: 'code', text });
        break;
      }
      case 'blockquote':
        blocks.push(...toBlocks(token.tokens));
        break;
      case 'html':
        blocks.push(...parseHtml(token.text).blocks);
        break;
      case 'space':
      case 'hr':
      case 'def':
        break;
      default: {
        const generic = t as Tokens.Generic;
        if (generic.tokens) blocks.push(...toBlocks(generic.tokens));
        else if (typeof generic['text'] === 'string') {
          const text = inlineText(decodeEntities(generic['text'] as string));
          if (text) blocks.push({ type: 'paragraph', text });
        }
      }
    }
  }
  return blocks;
}

/** Markdown (GFM) → blocks: headings, paragraphs, lists, tables (header row first), fenced/indented code. */
export function parseMarkdown(markdown: string): MarkdownParseResult {
  let source = cleanText(markdown);
  let title: string | undefined;
  const fm = FRONT_MATTER.exec(source);
  if (fm) {
    source = source.slice(fm[0].length);
    const m = /^title:[ \t]*(.+)$/m.exec(fm[1] ?? '');
    const value = m?.[1]?.trim().replace(/^(["'])(.*)\1$/, '$2').trim();
    if (value) title = value;
  }
  const blocks = toBlocks(lexer(source, { gfm: true }));
  return title ? { blocks, title } : { blocks };
}
