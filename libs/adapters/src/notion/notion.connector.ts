import { NotionBlockSchema, NotionPageSchema, notionListSchema, type NotionBlockNode } from '@rag/contracts';
import { normalizeNotionId, notionBlocksToBlocks, notionDocumentId, notionPageTitle } from '@rag/domain';
import type { SourceConnector, SourceFetchResult, SourceListing } from '@rag/ports';
import type { z } from 'zod';
import { SourceHttpClient, type HttpOutcome, type SourceHttpOptions } from '../source-http';

export interface NotionConnectorOptions {
  /** Default `https://api.notion.com`. */
  baseUrl?: string;
  /** Integration token (internal integration secret or OAuth access token). */
  token: string;
  /** `Notion-Version` header (default 2022-06-28, the version the response schemas follow). */
  apiVersion?: string;
  /**
   * ACL of Notion documents. The public API does not expose a page's sharing to integrations, so every page the
   * integration can read gets this ACL (default `['*']`: everyone in the tenant).
   */
  defaultAcl?: string[];
  /** Nesting depth of child blocks fetched (default 8) and blocks per page (default 20 000). */
  maxDepth?: number;
  maxBlocks?: number;
  http?: Partial<Pick<SourceHttpOptions, 'sleep' | 'fetchImpl' | 'maxAttempts' | 'baseDelayMs' | 'maxDelayMs' | 'timeoutMs'>>;
}

const BlockListSchema = notionListSchema(NotionBlockSchema);
const PageListSchema = notionListSchema(NotionPageSchema);
/** Children of these block types are other documents (or database rows), not this page's text. */
const OWN_DOCUMENTS = new Set(['child_page', 'child_database']);
export const NOTION_SCOPE = 'workspace';

/**
 * Notion over its REST API: `GET /v1/pages/{id}` (title, trash state, last_edited_time), `GET /v1/blocks/{id}/children`
 * (recursively, `start_cursor`/`has_more`) for content, `POST /v1/search` (filter object=page, cursor pagination)
 * for reconciliation of everything shared with the integration.
 */
export class NotionConnector implements SourceConnector {
  readonly kind = 'notion' as const;
  private readonly http: SourceHttpClient;

  constructor(private readonly opts: NotionConnectorOptions) {
    this.http = new SourceHttpClient({
      name: 'notion',
      baseUrl: opts.baseUrl ?? 'https://api.notion.com',
      headers: { authorization: `Bearer ${opts.token}`, 'notion-version': opts.apiVersion ?? '2022-06-28' },
      ...opts.http,
    });
  }

  documentId(ref: string): string {
    return notionDocumentId(ref);
  }

  async fetch(ref: string): Promise<SourceFetchResult> {
    const id = normalizeNotionId(ref);
    const page = await this.http.json('GET', `/v1/pages/${id}`, NotionPageSchema);
    if (page.status === 'not_found') return { status: 'gone', reason: 'the page no longer exists or is no longer shared with the integration' };
    const p = page.value;
    if (p.in_trash || p.archived) return { status: 'gone', reason: 'the page is in the trash' };
    const budget = { left: this.opts.maxBlocks ?? 20_000 };
    const children = await this.children(id, 0, budget);
    if (children === null) return { status: 'gone', reason: 'the page no longer exists' };
    return {
      status: 'found',
      title: notionPageTitle(p),
      blocks: notionBlocksToBlocks(children),
      ...(p.url ? { source_url: p.url } : {}),
      acl: await this.acl(id),
      metadata: { source: 'notion', page_id: id, source_version: p.last_edited_time },
      source_version: p.last_edited_time,
      changed_at: Date.parse(p.last_edited_time),
    };
  }

  /** Notion's API does not expose a page's sharing: every page the integration reads gets the configured ACL (no request). */
  async acl(_ref: string): Promise<string[]> {
    return this.opts.defaultAcl ?? ['*'];
  }

  private async children(blockId: string, depth: number, budget: { left: number }): Promise<NotionBlockNode[] | null> {
    const out: NotionBlockNode[] = [];
    let cursor: string | null = null;
    do {
      const r: HttpOutcome<z.infer<typeof BlockListSchema>> = await this.http.json('GET', `/v1/blocks/${blockId}/children?page_size=100${cursor ? `&start_cursor=${encodeURIComponent(cursor)}` : ''}`, BlockListSchema);
      if (r.status === 'not_found') return depth === 0 ? null : out;
      for (const b of r.value.results) {
        if (budget.left-- <= 0) return out;
        const node: NotionBlockNode = { ...b };
        if (b.has_children && !OWN_DOCUMENTS.has(b.type) && depth + 1 < (this.opts.maxDepth ?? 8)) {
          node.children = (await this.children(b.id, depth + 1, budget)) ?? [];
        }
        out.push(node);
      }
      cursor = r.value.has_more ? r.value.next_cursor : null;
    } while (cursor);
    return out;
  }

  async scopes(): Promise<string[]> {
    return [NOTION_SCOPE];
  }

  async *list(_scope: string): AsyncIterable<SourceListing> {
    let cursor: string | null = null;
    do {
      const r: HttpOutcome<z.infer<typeof PageListSchema>> = await this.http.json('POST', '/v1/search', PageListSchema, {
        filter: { property: 'object', value: 'page' },
        page_size: 100,
        ...(cursor ? { start_cursor: cursor } : {}),
      });
      if (r.status === 'not_found') throw new Error('notion: search answered 404');
      for (const p of r.value.results) {
        if (p.in_trash || p.archived) continue;
        const id = normalizeNotionId(p.id);
        yield {
          document_id: notionDocumentId(id),
          ref: id,
          scope: NOTION_SCOPE,
          title: notionPageTitle(p),
          source_version: p.last_edited_time,
          changed_at: Date.parse(p.last_edited_time),
        };
      }
      cursor = r.value.has_more ? r.value.next_cursor : null;
    } while (cursor);
  }
}
