import type { Block } from '@rag/contracts';
import { HTMLElement, type Node, NodeType, parse, TextNode } from 'node-html-parser';
import { parseHtml } from '../loading/html';

/**
 * Confluence storage format (XHTML with `ac:`/`ri:` elements) → structured blocks.
 *
 * The storage document is rewritten into plain HTML and handed to the HTML loader, so headings, lists and tables
 * come out exactly as they do for uploaded HTML. Confluence-specific elements:
 * - `code` / `noformat` macros → `<pre><code class="language-…">` from `ac:plain-text-body` (CDATA, verbatim);
 * - macros with a rich-text body (info, note, warning, tip, panel, expand, details, excerpt, section/column…) →
 *   their body as ordinary content (an `expand`/`panel` `title` parameter becomes a paragraph first);
 * - other macros (toc, children, jira, attachments…) render nothing: they are generated content, not text;
 * - `ac:link` → its link body, else the linked page title / attachment name; `ac:image`, `ac:emoticon`,
 *   `ac:placeholder` and parameters are dropped; task lists become lists; layouts become sections.
 */

const ESC: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' };
const escapeHtml = (s: string): string => s.replace(/[&<>"]/g, (c) => ESC[c]!);

/** node-html-parser keeps CDATA sections as raw text; turn them into escaped text before parsing. */
function cdataToText(xhtml: string): string {
  return xhtml.replace(/<!\[CDATA\[([\s\S]*?)\]\]>/g, (_, body: string) => escapeHtml(body));
}

/** Decoded text content of an element (entities resolved). */
function textContent(el: HTMLElement): string {
  return el.text;
}

function isElement(n: Node): n is HTMLElement {
  return n.nodeType === NodeType.ELEMENT_NODE;
}

const tagOf = (el: HTMLElement): string => (el.rawTagName ?? '').toLowerCase();

function childByTag(el: HTMLElement, tag: string): HTMLElement | undefined {
  return el.childNodes.find((c): c is HTMLElement => isElement(c) && tagOf(c) === tag);
}

function param(macro: HTMLElement, name: string): string | undefined {
  const p = macro.childNodes.find((c): c is HTMLElement => isElement(c) && tagOf(c) === 'ac:parameter' && c.getAttribute('ac:name') === name);
  return p ? textContent(p).trim() : undefined;
}

const CODE_MACROS = new Set(['code', 'noformat']);
/** Macros whose title parameter is shown above their body. */
const TITLED_MACROS = new Set(['expand', 'panel', 'info', 'note', 'warning', 'tip', 'details']);
/** Standard (X)HTML elements copied through (attributes dropped; the HTML loader needs none of them). */
const VOID = new Set(['br', 'hr', 'img']);

class StorageToHtml {
  render(nodes: Node[]): string {
    return nodes.map((n) => this.node(n)).join('');
  }

  private node(n: Node): string {
    if (n.nodeType === NodeType.TEXT_NODE) return (n as TextNode).rawText;
    if (!isElement(n)) return '';
    const tag = tagOf(n);
    if (tag.startsWith('ac:') || tag.startsWith('ri:')) return this.confluence(n, tag);
    if (VOID.has(tag)) return tag === 'img' ? '' : `<${tag}>`;
    if (tag === 'pre') return `<pre>${escapeHtml(n.text)}</pre>`;
    return `<${tag}>${this.render(n.childNodes)}</${tag}>`;
  }

  private confluence(el: HTMLElement, tag: string): string {
    switch (tag) {
      case 'ac:structured-macro':
      case 'ac:macro':
        return this.macro(el);
      case 'ac:link': {
        const body = childByTag(el, 'ac:plain-text-link-body') ?? childByTag(el, 'ac:link-body');
        if (body) return tagOf(body) === 'ac:link-body' ? this.render(body.childNodes) : escapeHtml(textContent(body));
        const page = childByTag(el, 'ri:page');
        const label = page?.getAttribute('ri:content-title') ?? childByTag(el, 'ri:attachment')?.getAttribute('ri:filename') ?? '';
        return escapeHtml(label);
      }
      case 'ac:task-list':
        return `<ul>${el.childNodes
          .filter((c): c is HTMLElement => isElement(c) && tagOf(c) === 'ac:task')
          .map((t) => `<li>${this.render(childByTag(t, 'ac:task-body')?.childNodes ?? [])}</li>`)
          .join('')}</ul>`;
      case 'ac:layout':
      case 'ac:layout-section':
      case 'ac:layout-cell':
      case 'ac:rich-text-body':
        return `<div>${this.render(el.childNodes)}</div>`;
      case 'ac:image':
      case 'ac:emoticon':
      case 'ac:placeholder':
      case 'ac:parameter':
      case 'ac:inline-comment-marker':
        return tag === 'ac:inline-comment-marker' ? this.render(el.childNodes) : '';
      default:
        // ri:* resource identifiers outside links, ADF extensions and unknown elements: their text, if any.
        return tag.startsWith('ri:') ? '' : this.render(el.childNodes);
    }
  }

  private macro(el: HTMLElement): string {
    const name = (el.getAttribute('ac:name') ?? '').toLowerCase();
    if (CODE_MACROS.has(name)) {
      const body = childByTag(el, 'ac:plain-text-body');
      const code = body ? textContent(body) : '';
      const language = param(el, 'language');
      const cls = language ? ` class="language-${escapeHtml(language.replace(/\s+/g, '-'))}"` : '';
      return `<pre><code${cls}>${escapeHtml(code)}</code></pre>`;
    }
    const rich = childByTag(el, 'ac:rich-text-body');
    if (!rich) return '';
    const title = TITLED_MACROS.has(name) ? param(el, 'title') : undefined;
    return `<div>${title ? `<p>${escapeHtml(title)}</p>` : ''}${this.render(rich.childNodes)}</div>`;
  }
}

/** Storage-format XHTML → HTML the loader understands (exported for tests and diagnostics). */
export function confluenceStorageToHtml(storage: string): string {
  const root = parse(cdataToText(storage), { lowerCaseTagName: true, comment: false });
  return new StorageToHtml().render(root.childNodes);
}

/** Storage-format XHTML → blocks (headings, paragraphs, lists, tables with header rows, code with its language). */
export function confluenceStorageToBlocks(storage: string): Block[] {
  return parseHtml(`<html><body>${confluenceStorageToHtml(storage)}</body></html>`).blocks;
}
