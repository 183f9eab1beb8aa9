import type { Block } from '@rag/contracts';
import { createHash } from 'node:crypto';

function collapse(text: string): string {
  return text.normalize('NFC').replace(/\s+/g, ' ').trim();
}

/** The lines of a block in canonical form (no markup). */
function blockLines(block: Block): string[] {
  switch (block.type) {
    case 'heading':
    case 'paragraph':
    case 'code':
      return [block.text];
    case 'list':
      return block.items;
    case 'table':
      return [...(block.caption ? [block.caption] : []), ...block.rows.map((row) => row.map(collapse).join(' | '))];
  }
}

/**
 * Canonical text of a document body for hashing: one line per heading, paragraph, list item, table row
 * (cells joined with ` | `) and code block, whitespace collapsed (NFC), empty lines dropped.
 */
export function normalizeBody(blocks: Block[]): string {
  return blocks
    .flatMap(blockLines)
    .map(collapse)
    .filter((line) => line !== '')
    .join('\n');
}

/** sha256 (hex) of `normalizeBody(blocks)`: the document's `content_hash`. */
export function contentHash(blocks: Block[]): string {
  return createHash('sha256').update(normalizeBody(blocks), 'utf8').digest('hex');
}

function cell(text: string): string {
  return text.replace(/\s+/g, ' ').trim().replace(/\|/g, '\\|');
}

/** A readable Markdown-like rendering of the blocks, for display. */
export function blocksToText(blocks: Block[]): string {
  const parts: string[] = [];
  for (const block of blocks) {
    switch (block.type) {
      case 'heading':
        parts.push(`${'#'.repeat(block.level)} ${block.text}`);
        break;
      case 'paragraph':
        parts.push(block.text);
        break;
      case 'list':
        parts.push(block.items.map((item, i) => `${block.ordered ? `${i + 1}.` : '-'} ${item}`).join('\n'));
        break;
      case 'table': {
        const width = Math.max(...block.rows.map((r) => r.length));
        const row = (r: string[]): string => `| ${Array.from({ length: width }, (_, i) => cell(r[i] ?? '')).join(' | ')} |`;
        const lines = block.rows.map(row);
        if (block.header && lines.length > 0) lines.splice(1, 0, `|${' --- |'.repeat(width)}`);
        if (block.caption) lines.unshift(block.caption);
        parts.push(lines.join('\n'));
        break;
      }
      case 'code': {
        const fence = block.text.includes('```') ? '~~~~' : '```';
        parts.push(`${fence}${block.language ?? ''}\n${block.text}\n${fence}`);
        break;
      }
    }
  }
  return parts.join('\n\n');
}
