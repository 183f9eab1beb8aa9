import type { Block, NotionBlockNode, NotionPage } from '@rag/contracts';
import { collapseWhitespace } from '../loading/text';

/**
 * Notion blocks (`GET /v1/blocks/{id}/children`, children fetched recursively) → structured blocks.
 * - paragraph, quote, callout, toggle, to_do, template → paragraphs (to-dos become list items with [ ]/[x]);
 * - heading_1..3 → headings 1..3 (toggleable headings keep their children after them);
 * - consecutive bulleted/numbered list items → one list; nested items are flattened after their parent;
 * - code → code with its language; table (+ table_row children) → table, `has_column_header` → header row;
 * - column_list/column/synced_block → their children; child_page/child_database are separate documents;
 * - media, embeds, dividers, breadcrumbs and the like carry no text and are skipped (captions kept).
 */

type RichHolder = { rich_text?: unknown; caption?: unknown; language?: unknown; checked?: unknown; has_column_header?: unknown; cells?: unknown };

function plain(rich: unknown): string {
  if (!Array.isArray(rich)) return '';
  return rich.map((r) => (r && typeof r === 'object' && typeof (r as { plain_text?: unknown }).plain_text === 'string' ? (r as { plain_text: string }).plain_text : '')).join('');
}

function payload(b: NotionBlockNode): RichHolder {
  const v = (b as Record<string, unknown>)[b.type];
  return v && typeof v === 'object' ? (v as RichHolder) : {};
}

const PARAGRAPH_LIKE = new Set(['paragraph', 'quote', 'callout', 'toggle', 'template']);
const CONTAINERS = new Set(['column_list', 'column', 'synced_block']);
const CAPTIONED = new Set(['image', 'video', 'file', 'pdf', 'audio', 'bookmark', 'embed']);

class NotionToBlocks {
  readonly blocks: Block[] = [];
  private list: { ordered: boolean; items: string[] } | null = null;

  private flushList(): void {
    if (this.list && this.list.items.length) this.blocks.push({ type: 'list', ordered: this.list.ordered, items: this.list.items });
    this.list = null;
  }

  private listItem(ordered: boolean, text: string): void {
    if (!this.list || this.list.ordered !== ordered) {
      this.flushList();
      this.list = { ordered, items: [] };
    }
    if (text) this.list.items.push(text);
  }

  /** Nested items under a list item: flattened into the same list. */
  private nestedItems(children: NotionBlockNode[] | undefined): void {
    for (const c of children ?? []) {
      if (c.type === 'bulleted_list_item' || c.type === 'numbered_list_item' || c.type === 'to_do') {
        this.list!.items.push(...[itemText(c)].filter(Boolean));
        this.nestedItems(c.children);
      } else {
        const text = collapseWhitespace(plain(payload(c).rich_text));
        if (text) this.list!.items.push(text);
      }
    }
  }

  walk(nodes: NotionBlockNode[]): void {
    for (const b of nodes) {
      if (b.archived || b.in_trash) continue;
      const p = payload(b);
      if (b.type === 'bulleted_list_item' || b.type === 'numbered_list_item' || b.type === 'to_do') {
        this.listItem(b.type === 'numbered_list_item', itemText(b));
        this.nestedItems(b.children);
        continue;
      }
      this.flushList();
      const heading = /^heading_([1-3])$/.exec(b.type);
      if (heading) {
        const text = collapseWhitespace(plain(p.rich_text));
        if (text) this.blocks.push({ type: 'heading', level: Number(heading[1]), text });
        if (b.children) this.walk(b.children);
      } else if (PARAGRAPH_LIKE.has(b.type)) {
        const text = plain(p.rich_text).trim();
        if (text) this.blocks.push({ type: 'paragraph', text });
        if (b.children) this.walk(b.children);
        this.flushList();
      } else if (b.type === 'code') {
        const text = plain(p.rich_text).replace(/\s+$/, '');
        const language = typeof p.language === 'string' && p.language !== 'plain text' ? p.language : undefined;
        if (text.trim()) this.blocks.push(language ? { type: 'code', text, language } : { type: 'code', text });
      } else if (b.type === 'table') {
        const rows = (b.children ?? [])
          .filter((r) => r.type === 'table_row')
          .map((r) => {
            const cells = payload(r).cells;
            return Array.isArray(cells) ? cells.map((c) => collapseWhitespace(plain(c))) : [];
          })
          .filter((r) => r.some((c) => c !== ''));
        if (rows.length) this.blocks.push({ type: 'table', rows, header: p.has_column_header === true });
      } else if (b.type === 'equation') {
        const expr = (p as { expression?: unknown }).expression;
        if (typeof expr === 'string' && expr.trim()) this.blocks.push({ type: 'paragraph', text: expr.trim() });
      } else if (CONTAINERS.has(b.type)) {
        if (b.children) this.walk(b.children);
        this.flushList();
      } else if (CAPTIONED.has(b.type)) {
        const caption = plain(p.caption).trim();
        if (caption) this.blocks.push({ type: 'paragraph', text: caption });
      }
      // child_page, child_database, divider, breadcrumb, table_of_contents, link_preview, unsupported: no text here
    }
    this.flushList();
  }
}

function itemText(b: NotionBlockNode): string {
  const p = payload(b);
  const text = collapseWhitespace(plain(p.rich_text));
  if (b.type === 'to_do' && text) return `[${p.checked === true ? 'x' : ' '}] ${text}`;
  return text;
}

export function notionBlocksToBlocks(nodes: NotionBlockNode[]): Block[] {
  const c = new NotionToBlocks();
  c.walk(nodes);
  return c.blocks;
}

/** The page title: the text of its `title` property (every page has exactly one). */
export function notionPageTitle(page: Pick<NotionPage, 'properties'>): string {
  for (const prop of Object.values(page.properties)) {
    if (prop.type === 'title') return collapseWhitespace(plain((prop as { title?: unknown }).title));
  }
  return '';
}
