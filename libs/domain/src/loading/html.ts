import type { Block } from '@rag/contracts';
import { HTMLElement, type Node, NodeType, parse, TextNode } from 'node-html-parser';
import { cleanText, collapseWhitespace, joinLines } from './text';

/** Marks a hard line break (`<br>`) inside inline text until the paragraph is flushed. */
export const HARD_BREAK = '\ue000';

/** Elements whose content is never document text. */
const DROPPED = new Set([
  'script', 'style', 'noscript', 'template', 'head', 'title', 'meta', 'link', 'nav', 'svg', 'math', 'canvas',
  'iframe', 'object', 'embed', 'video', 'audio', 'map', 'button', 'select', 'textarea', 'input', 'dialog',
]);
/** Page chrome, dropped unless it belongs to an `<article>` (where `<header>` holds the article's heading). */
const CHROME = new Set(['header', 'footer']);
/** Containers that end the current paragraph before and after their content. */
const BLOCK = new Set([
  'p', 'div', 'section', 'article', 'main', 'aside', 'blockquote', 'li', 'dl', 'dt', 'dd', 'figure', 'figcaption',
  'address', 'form', 'fieldset', 'legend', 'details', 'summary', 'center', 'body', 'html', 'hgroup', 'tr', 'td', 'th',
  'tbody', 'thead', 'tfoot', 'caption', 'hr',
]);
const HEADING = /^h([1-6])$/;

/** Renders inline text: source newlines are soft (joined), `HARD_BREAK` markers become `\n`. */
export function inlineText(text: string): string {
  return text
    .split(HARD_BREAK)
    .map((part) => joinLines(part.split('\n')))
    .filter((part) => part !== '')
    .join('\n');
}

/** Decodes HTML character references (`&amp;`, `&#x4e2d;`) without interpreting any markup. */
export function decodeEntities(text: string): string {
  return text.includes('&') ? new TextNode(text, null).text : text;
}

function isElement(node: Node): node is HTMLElement {
  return node.nodeType === NodeType.ELEMENT_NODE;
}

function tagOf(el: HTMLElement): string {
  return (el.rawTagName ?? '').toLowerCase();
}

function isHidden(el: HTMLElement): boolean {
  const role = el.getAttribute('role');
  return (
    el.getAttribute('hidden') !== undefined ||
    el.getAttribute('aria-hidden') === 'true' ||
    role === 'navigation' ||
    role === 'banner' ||
    role === 'contentinfo'
  );
}

class HtmlToBlocks {
  readonly blocks: Block[] = [];
  private inline = '';

  walk(parent: HTMLElement, inArticle: boolean): void {
    for (const node of parent.childNodes) {
      if (node.nodeType === NodeType.TEXT_NODE) {
        this.inline += (node as TextNode).text;
        continue;
      }
      if (!isElement(node)) continue; // comments
      const tag = tagOf(node);
      if (this.skip(node, tag, inArticle)) continue;
      const heading = HEADING.exec(tag);
      if (heading) {
        this.flush();
        const text = textOf(node, inArticle);
        if (text) this.blocks.push({ type: 'heading', level: Number(heading[1]), text });
      } else if (tag === 'ul' || tag === 'ol') {
        this.flush();
        const items = listItems(node, inArticle);
        if (items.length > 0) this.blocks.push({ type: 'list', ordered: tag === 'ol', items });
      } else if (tag === 'table') {
        this.flush();
        this.table(node, inArticle);
      } else if (tag === 'pre') {
        this.flush();
        this.code(node);
      } else if (tag === 'br') {
        this.inline += HARD_BREAK;
      } else if (tag === 'img') {
        continue;
      } else if (BLOCK.has(tag) || CHROME.has(tag)) {
        this.flush();
        this.walk(node, inArticle || tag === 'article');
        this.flush();
      } else {
        // inline element (span, a, b, code, …): its text continues the current paragraph
        this.walk(node, inArticle);
      }
    }
  }

  private skip(el: HTMLElement, tag: string, inArticle: boolean): boolean {
    return DROPPED.has(tag) || (CHROME.has(tag) && !inArticle) || isHidden(el);
  }

  flush(): void {
    const text = inlineText(this.inline);
    this.inline = '';
    if (text) this.blocks.push({ type: 'paragraph', text });
  }

  private code(pre: HTMLElement): void {
    const text = pre.text.replace(/^\n/, '').replace(/\s+$/, '');
    if (!text.trim()) return;
    const codeEl = pre.querySelector('code');
    const classes = `${pre.getAttribute('class') ?? ''} ${codeEl?.getAttribute('class') ?? ''}`;
    const language = /(?:^|\s)(?:language|lang)-([\w+#.-]+)/.exec(classes)?.[1];
    this.blocks.push(language ? { type: 'code', text, language } : { type: 'code', text });
  }

  private table(table: HTMLElement, inArticle: boolean): void {
    const headRows: HTMLElement[] = [];
    const bodyRows: HTMLElement[] = [];
    let caption: string | undefined;
    for (const child of table.childNodes) {
      if (!isElement(child)) continue;
      const tag = tagOf(child);
      if (tag === 'caption') caption = textOf(child, inArticle) || undefined;
      else if (tag === 'tr') bodyRows.push(child);
      else if (tag === 'thead' || tag === 'tbody' || tag === 'tfoot') {
        for (const tr of child.childNodes) {
          if (isElement(tr) && tagOf(tr) === 'tr') (tag === 'thead' ? headRows : bodyRows).push(tr);
        }
      }
    }
    const rowEls = [...headRows, ...bodyRows];
    const rows: string[][] = [];
    let header = false;
    rowEls.forEach((tr, i) => {
      const cells = tr.childNodes.filter((c): c is HTMLElement => isElement(c) && (tagOf(c) === 'td' || tagOf(c) === 'th'));
      const texts = cells.map((c) => textOf(c, inArticle));
      if (texts.every((t) => t === '')) return;
      if (rows.length === 0) header = (i < headRows.length) || (cells.length > 0 && cells.every((c) => tagOf(c) === 'th'));
      rows.push(texts);
    });
    if (rows.length === 0) return;
    if (rows.every((r) => r.length <= 1)) {
      // a layout table (one column): its cells are ordinary content
      if (caption) this.blocks.push({ type: 'paragraph', text: caption });
      for (const tr of rowEls) {
        this.walk(tr, inArticle);
        this.flush();
      }
      return;
    }
    this.blocks.push(caption ? { type: 'table', rows, header, caption } : { type: 'table', rows, header });
  }
}

/** The text of an element as one line: nested blocks separated by spaces, dropped elements skipped. */
function textOf(el: HTMLElement, inArticle: boolean, skipLists = false): string {
  const parts: string[] = [];
  const visit = (node: Node): void => {
    if (node.nodeType === NodeType.TEXT_NODE) {
      parts.push((node as TextNode).text);
      return;
    }
    if (!isElement(node)) return;
    const tag = tagOf(node);
    if (DROPPED.has(tag) || (CHROME.has(tag) && !inArticle) || isHidden(node)) return;
    if (skipLists && (tag === 'ul' || tag === 'ol')) return;
    const spaced = tag === 'br' || BLOCK.has(tag) || HEADING.test(tag) || tag === 'ul' || tag === 'ol' || tag === 'pre';
    if (spaced) parts.push('\n');
    for (const child of node.childNodes) visit(child);
    if (spaced) parts.push('\n');
  };
  for (const child of el.childNodes) visit(child);
  return joinLines(parts.join('').split('\n'));
}

/** The `<ul>`/`<ol>` descendants of `el` that are not inside another list below `el`. */
function outermostLists(el: HTMLElement): HTMLElement[] {
  const found: HTMLElement[] = [];
  for (const child of el.childNodes) {
    if (!isElement(child)) continue;
    const tag = tagOf(child);
    if (tag === 'ul' || tag === 'ol') found.push(child);
    else if (!DROPPED.has(tag)) found.push(...outermostLists(child));
  }
  return found;
}

/** Items of a `<ul>`/`<ol>`; nested lists are flattened after their parent item. */
function listItems(list: HTMLElement, inArticle: boolean): string[] {
  const items: string[] = [];
  for (const li of list.childNodes) {
    if (!isElement(li) || tagOf(li) !== 'li' || isHidden(li)) continue;
    const nested = outermostLists(li);
    const text = textOf(li, inArticle, true);
    if (text) items.push(text);
    for (const sub of nested) items.push(...listItems(sub, inArticle));
  }
  return items;
}

export interface HtmlParseResult {
  blocks: Block[];
  /** The `<title>` text, when present and non-empty. */
  title?: string;
}

/** HTML → blocks. Scripts, styles and page chrome (nav, header, footer) are dropped. */
export function parseHtml(html: string): HtmlParseResult {
  const root = parse(cleanText(html), {
    comment: false,
    lowerCaseTagName: true,
    blockTextElements: { script: true, style: true, noscript: true },
  });
  const converter = new HtmlToBlocks();
  const body = root.querySelector('body') ?? root;
  converter.walk(body, false);
  converter.flush();
  const titleEl = root.querySelector('title');
  const title = titleEl ? collapseWhitespace(titleEl.text) : '';
  return title ? { blocks: converter.blocks, title } : { blocks: converter.blocks };
}
