import { z } from 'zod';
import { ConfluencePageListSchema, ConfluencePageSchema, ConfluenceReadRestrictionSchema, ConfluenceSpaceListSchema } from '@rag/contracts';
import { confluenceAcl, confluenceDocumentId, confluenceStorageToBlocks } from '@rag/domain';
import type { SourceConnector, SourceFetchResult, SourceListing } from '@rag/ports';
import { SourceHttpClient, type HttpOutcome, type SourceHttpOptions } from '../source-http';

export interface ConfluenceConnectorOptions {
  /** Site root, e.g. `https://acme.atlassian.net` (the REST API is under `/wiki`). */
  baseUrl: string;
  email?: string;
  apiToken: string;
  /** Space keys the reconciler lists. */
  spaces: string[];
  /** The `<site>` part of document ids; defaults to the base URL's host name. */
  site?: string;
  /** ACL when a page has no read restriction. */
  defaultAcl?: string[];
  http?: Partial<Pick<SourceHttpOptions, 'sleep' | 'fetchImpl' | 'maxAttempts' | 'baseDelayMs' | 'maxDelayMs' | 'timeoutMs'>>;
}

const SpaceSchema = z.object({ id: z.string(), key: z.string() }).loose();

/**
 * Confluence Cloud over REST v2: `GET /wiki/api/v2/pages/{id}?body-format=storage` for content (storage-format XHTML
 * → blocks), `GET /wiki/rest/api/content/{id}/restriction/byOperation/read` for the ACL, `GET /wiki/api/v2/spaces?keys=`
 * and `GET /wiki/api/v2/spaces/{id}/pages` (cursor pagination via `_links.next`) for reconciliation.
 * Auth: Basic email:API-token (Atlassian Cloud), or Bearer when only a token is configured (PAT / OAuth).
 */
export class ConfluenceConnector implements SourceConnector {
  readonly kind = 'confluence' as const;
  readonly site: string;
  private readonly http: SourceHttpClient;
  private readonly spaceKeys = new Map<string, string>();

  constructor(private readonly opts: ConfluenceConnectorOptions) {
    this.site = opts.site ?? new URL(opts.baseUrl).hostname;
    const auth = opts.email ? `Basic ${Buffer.from(`${opts.email}:${opts.apiToken}`).toString('base64')}` : `Bearer ${opts.apiToken}`;
    this.http = new SourceHttpClient({ name: 'confluence', baseUrl: opts.baseUrl, headers: { authorization: auth }, ...opts.http });
  }

  documentId(ref: string): string {
    return confluenceDocumentId(this.site, ref);
  }

  async fetch(ref: string): Promise<SourceFetchResult> {
    if (!/^\d{1,20}$/.test(ref)) return { status: 'gone', reason: `not a Confluence page id: ${ref}` };
    const page = await this.http.json('GET', `/wiki/api/v2/pages/${ref}?body-format=storage`, ConfluencePageSchema);
    if (page.status === 'not_found') return { status: 'gone', reason: 'the page no longer exists' };
    const p = page.value;
    if (p.status !== 'current') return { status: 'gone', reason: `the page is ${p.status}` };
    const acl = await this.acl(ref);
    if (acl === null) return { status: 'gone', reason: 'the page no longer exists' };
    const spaceKey = p.spaceId ? await this.spaceKey(p.spaceId) : undefined;
    const base = p._links?.base ?? `${this.opts.baseUrl.replace(/\/$/, '')}/wiki`;
    const version = p.version?.number ?? 0;
    return {
      status: 'found',
      title: p.title,
      blocks: confluenceStorageToBlocks(p.body?.storage?.value ?? ''),
      ...(p._links?.webui ? { source_url: `${base}${p._links.webui}` } : {}),
      acl,
      metadata: {
        source: 'confluence',
        page_id: p.id,
        ...(spaceKey ? { space: spaceKey } : {}),
        source_version: version,
      },
      source_version: String(version),
      changed_at: p.version?.createdAt ? Date.parse(p.version.createdAt) : Date.now(),
    };
  }

  /** The page's read restrictions as the document ACL (`group:<name>`, `user:<accountId>`, or the default); null when gone. */
  async acl(ref: string): Promise<string[] | null> {
    if (!/^\d{1,20}$/.test(ref)) return null;
    const restriction = await this.http.json('GET', `/wiki/rest/api/content/${ref}/restriction/byOperation/read`, ConfluenceReadRestrictionSchema);
    if (restriction.status === 'not_found') return null;
    return confluenceAcl(restriction.value, this.opts.defaultAcl ?? ['*']);
  }

  async scopes(): Promise<string[]> {
    return this.opts.spaces;
  }

  async *list(scope: string): AsyncIterable<SourceListing> {
    const spaces = await this.http.json('GET', `/wiki/api/v2/spaces?keys=${encodeURIComponent(scope)}`, ConfluenceSpaceListSchema);
    const space = spaces.status === 'ok' ? spaces.value.results.find((s) => s.key === scope) : undefined;
    if (!space) throw new Error(`confluence: space ${scope} not found (or not visible to the configured account)`);
    this.spaceKeys.set(space.id, space.key);
    let next: string | undefined = `/wiki/api/v2/spaces/${space.id}/pages?limit=250&status=current`;
    while (next) {
      const page: HttpOutcome<z.infer<typeof ConfluencePageListSchema>> = await this.http.json('GET', next, ConfluencePageListSchema);
      if (page.status === 'not_found') throw new Error(`confluence: listing of space ${scope} answered 404`);
      for (const p of page.value.results) {
        if (p.status !== 'current') continue;
        yield {
          document_id: this.documentId(p.id),
          ref: p.id,
          scope,
          title: p.title,
          source_version: String(p.version?.number ?? 0),
          changed_at: p.version?.createdAt ? Date.parse(p.version.createdAt) : 0,
        };
      }
      next = page.value._links?.next;
    }
  }

  private async spaceKey(spaceId: string): Promise<string | undefined> {
    const known = this.spaceKeys.get(spaceId);
    if (known) return known;
    const r = await this.http.json('GET', `/wiki/api/v2/spaces/${encodeURIComponent(spaceId)}`, SpaceSchema);
    if (r.status !== 'ok') return undefined;
    this.spaceKeys.set(spaceId, r.value.key);
    return r.value.key;
  }
}
