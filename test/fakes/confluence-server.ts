/**
 * A local fake of Confluence Cloud for tests, speaking the documented wire format of what the connector uses:
 * - REST v2: `GET /wiki/api/v2/pages/{id}?body-format=storage`, `GET /wiki/api/v2/spaces?keys=`,
 *   `GET /wiki/api/v2/spaces/{id}`, `GET /wiki/api/v2/spaces/{id}/pages` (cursor pagination: `_links.next` and a
 *   `Link: <…>; rel="next"` header);
 * - REST v1: `GET /wiki/rest/api/content/{id}/restriction/byOperation/read`;
 * - Basic auth (email:API token) → 401 otherwise; 429 with `Retry-After` on demand;
 * - webhooks: `page_created|page_updated|page_removed|page_trashed|page_restored` payloads signed with
 *   `X-Hub-Signature: sha256=<HMAC-SHA256 of the body>`.
 * Fixtures are shaped from the public API documentation (ids are numeric strings, versions carry createdAt).
 */
import { createHmac, randomUUID } from 'node:crypto';
import { startJsonServer, Throttle, type FakeHandler } from './http-util';

export interface FakeConfluencePage {
  id: string;
  spaceKey: string;
  title: string;
  storage: string;
  status: 'current' | 'trashed';
  version: number;
  createdAt: string;
  versionAt: string;
  readGroups: string[];
  readUsers: string[];
}

export type ConfluenceEvent = 'page_created' | 'page_updated' | 'page_removed' | 'page_trashed' | 'page_restored' | 'content_permissions_updated';

export class FakeConfluence {
  readonly spaces = new Map<string, { id: string; key: string; name: string }>();
  readonly pages = new Map<string, FakeConfluencePage>();
  readonly throttle = new Throttle();
  readonly requests: string[] = [];
  pageSize = 2;
  url = '';
  private nextId = 65_601;
  private close_: (() => Promise<void>) | null = null;

  constructor(
    readonly email = 'bot@example.com',
    readonly apiToken = 'fake-confluence-token',
  ) {}

  async start(port = 0): Promise<this> {
    const s = await startJsonServer((req) => this.handle(req.method, req.path, req.query, req.headers.authorization), port);
    this.url = s.url;
    this.close_ = s.close;
    return this;
  }

  close(): Promise<void> {
    return this.close_?.() ?? Promise.resolve();
  }

  addSpace(key: string): string {
    const id = String(98_000 + this.spaces.size + 1);
    this.spaces.set(id, { id, key, name: `${key} space` });
    return id;
  }

  /** Creates or edits a page (a new version), returning it. */
  putPage(p: { id?: string; spaceKey: string; title: string; storage: string; readGroups?: string[]; readUsers?: string[] }): FakeConfluencePage {
    const now = new Date().toISOString();
    const prev = p.id ? this.pages.get(p.id) : undefined;
    const page: FakeConfluencePage = {
      id: p.id ?? String(this.nextId++),
      spaceKey: p.spaceKey,
      title: p.title,
      storage: p.storage,
      status: 'current',
      version: (prev?.version ?? 0) + 1,
      createdAt: prev?.createdAt ?? now,
      versionAt: now,
      readGroups: p.readGroups ?? prev?.readGroups ?? [],
      readUsers: p.readUsers ?? prev?.readUsers ?? [],
    };
    this.pages.set(page.id, page);
    return page;
  }

  /** Changes who may read a page; like Confluence, this makes no new page version. */
  restrict(id: string, r: { readGroups?: string[]; readUsers?: string[] }): FakeConfluencePage {
    const p = this.pages.get(id)!;
    p.readGroups = r.readGroups ?? [];
    p.readUsers = r.readUsers ?? [];
    return p;
  }

  trash(id: string): void {
    this.pages.get(id)!.status = 'trashed';
  }
  restore(id: string): void {
    this.pages.get(id)!.status = 'current';
  }
  /** Purged: gone for good (404). */
  purge(id: string): void {
    this.pages.delete(id);
  }

  private spaceIdOf(key: string): string {
    for (const s of this.spaces.values()) if (s.key === key) return s.id;
    return this.addSpace(key);
  }

  private pageJson(p: FakeConfluencePage, withBody: boolean) {
    const spaceId = this.spaceIdOf(p.spaceKey);
    return {
      id: p.id,
      status: p.status,
      title: p.title,
      spaceId,
      parentId: null,
      parentType: null,
      authorId: '5b10a2844c20165700ede21g',
      createdAt: p.createdAt,
      version: { createdAt: p.versionAt, message: '', number: p.version, minorEdit: false, authorId: '5b10a2844c20165700ede21g' },
      ...(withBody ? { body: { storage: { representation: 'storage', value: p.storage } } } : {}),
      _links: { webui: `/spaces/${p.spaceKey}/pages/${p.id}/${encodeURIComponent(p.title.replace(/ /g, '+'))}`, editui: `/pages/resumedraft.action?draftId=${p.id}`, tinyui: `/x/${p.id}` },
    };
  }

  private handle(method: string, path: string, q: URLSearchParams, auth: string | undefined): ReturnType<FakeHandler> {
    this.requests.push(`${method} ${path}`);
    const expected = `Basic ${Buffer.from(`${this.email}:${this.apiToken}`).toString('base64')}`;
    if (auth !== expected) return { status: 401, body: { code: 401, message: 'Client must be authenticated to access this resource.' } };
    const retryAfter = this.throttle.take();
    if (retryAfter !== null) return { status: 429, body: { code: 429, message: 'Rate limit exceeded' }, headers: { 'retry-after': retryAfter } };
    let m: RegExpExecArray | null;
    if (method === 'GET' && (m = /^\/wiki\/api\/v2\/pages\/(\d+)$/.exec(path))) {
      const p = this.pages.get(m[1]!);
      if (!p) return { status: 404, body: { errors: [{ status: 404, code: 'NOT_FOUND', title: 'Not Found', detail: null }] } };
      return { status: 200, body: { ...this.pageJson(p, q.get('body-format') === 'storage'), _links: { ...this.pageJson(p, false)._links, base: `${this.url}/wiki` } } };
    }
    if (method === 'GET' && path === '/wiki/api/v2/spaces') {
      const keys = (q.get('keys') ?? '').split(',').filter(Boolean);
      const results = [...this.spaces.values()].filter((s) => !keys.length || keys.includes(s.key)).map((s) => ({ ...s, type: 'global', status: 'current' }));
      return { status: 200, body: { results, _links: { base: `${this.url}/wiki` } } };
    }
    if (method === 'GET' && (m = /^\/wiki\/api\/v2\/spaces\/(\d+)$/.exec(path))) {
      const s = this.spaces.get(m[1]!);
      return s ? { status: 200, body: { ...s, type: 'global', status: 'current' } } : { status: 404, body: { errors: [{ status: 404, code: 'NOT_FOUND' }] } };
    }
    if (method === 'GET' && (m = /^\/wiki\/api\/v2\/spaces\/(\d+)\/pages$/.exec(path))) {
      const space = this.spaces.get(m[1]!);
      if (!space) return { status: 404, body: { errors: [{ status: 404, code: 'NOT_FOUND' }] } };
      const wanted = q.get('status') ?? 'current';
      const all = [...this.pages.values()].filter((p) => p.spaceKey === space.key && p.status === wanted).sort((a, b) => Number(a.id) - Number(b.id));
      const limit = Math.min(Number(q.get('limit') ?? 25), this.pageSize);
      const offset = q.get('cursor') ? Number(Buffer.from(q.get('cursor')!, 'base64url').toString()) : 0;
      const slice = all.slice(offset, offset + limit);
      const more = offset + limit < all.length;
      const next = more ? `/wiki/api/v2/spaces/${space.id}/pages?limit=${limit}&status=${wanted}&cursor=${Buffer.from(String(offset + limit)).toString('base64url')}` : undefined;
      return {
        status: 200,
        body: { results: slice.map((p) => this.pageJson(p, false)), _links: { ...(next ? { next } : {}), base: `${this.url}/wiki` } },
        ...(next ? { headers: { link: `<${next}>; rel="next"` } } : {}),
      };
    }
    if (method === 'GET' && (m = /^\/wiki\/rest\/api\/content\/(\d+)\/restriction\/byOperation\/read$/.exec(path))) {
      const p = this.pages.get(m[1]!);
      if (!p) return { status: 404, body: { statusCode: 404, message: 'No content found with id' } };
      return {
        status: 200,
        body: {
          operation: 'read',
          restrictions: {
            user: { results: p.readUsers.map((accountId) => ({ type: 'known', accountId, accountType: 'atlassian' })), start: 0, limit: 200, size: p.readUsers.length },
            group: { results: p.readGroups.map((name) => ({ type: 'group', name, id: randomUUID() })), start: 0, limit: 200, size: p.readGroups.length },
          },
          _expandable: { content: `/rest/api/content/${p.id}` },
        },
      };
    }
    return { status: 404, body: { message: `no route ${method} ${path}` } };
  }

  /**
   * The webhook body Confluence posts for an event about a page (page may be gone: pass its last known state).
   * `content_permissions_updated` names the page `content`; page events name it `page`.
   */
  webhookPayload(event: ConfluenceEvent, page: Pick<FakeConfluencePage, 'id' | 'title' | 'spaceKey' | 'version'>, timestamp = Date.now()) {
    return {
      timestamp,
      event,
      userAccountId: '5b10a2844c20165700ede21g',
      accountType: 'customer',
      updateTrigger: event === 'page_updated' ? 'edit_page' : '',
      suppressNotifications: false,
      [event === 'content_permissions_updated' ? 'content' : 'page']: {
        spaceKey: page.spaceKey,
        modificationDate: timestamp,
        creatorAccountId: '5b10a2844c20165700ede21g',
        lastModifierAccountId: '5b10a2844c20165700ede21g',
        self: `${this.url}/wiki/spaces/${page.spaceKey}/pages/${page.id}`,
        id: Number(page.id),
        title: page.title,
        creationDate: timestamp,
        contentType: 'page',
        version: page.version,
      },
    };
  }
}

/** Posts a webhook the way Confluence does: JSON body, `X-Hub-Signature: sha256=<hex>` over the exact bytes. */
export async function postConfluenceWebhook(
  url: string,
  secret: string | null,
  payload: unknown,
  opts: { signature?: string; rawBody?: string; headers?: Record<string, string> } = {},
): Promise<{ status: number; body: Record<string, unknown> }> {
  const raw = opts.rawBody ?? JSON.stringify(payload);
  const signature = opts.signature ?? (secret !== null ? `sha256=${createHmac('sha256', secret).update(raw).digest('hex')}` : undefined);
  const res = await fetch(url, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      'user-agent': 'Atlassian Webhook HTTP Client',
      ...(signature ? { 'x-hub-signature': signature } : {}),
      ...opts.headers,
    },
    body: raw,
  });
  const text = await res.text();
  let body: Record<string, unknown> = {};
  try {
    body = JSON.parse(text) as Record<string, unknown>;
  } catch {
    body = { text };
  }
  return { status: res.status, body };
}
