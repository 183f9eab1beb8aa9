/**
 * A local fake of the Notion API for tests, speaking the documented wire format of what the connector uses
 * (Notion-Version 2022-06-28): `GET /v1/pages/{id}`, `GET /v1/blocks/{id}/children` (`start_cursor`, `page_size`,
 * `has_more`, `next_cursor`), `POST /v1/search` (filter object=page, cursor pagination); Bearer token and the
 * `Notion-Version` header required; errors as `{object:"error", status, code, message}`; 429 `rate_limited` with
 * `Retry-After` on demand. Webhooks: the unsigned verification request `{verification_token}` and events
 * (`page.created`, `page.content_updated`, `page.deleted`, `page.undeleted`) signed with
 * `X-Notion-Signature: sha256=<HMAC-SHA256 of the body keyed by the verification token>`.
 */
import { createHmac, randomUUID } from 'node:crypto';
import { startJsonServer, Throttle, type FakeHandler } from './http-util';

export interface FakeBlock {
  type: 'paragraph' | 'heading_1' | 'heading_2' | 'heading_3' | 'bulleted_list_item' | 'numbered_list_item' | 'to_do' | 'code' | 'table' | 'toggle' | 'quote';
  text?: string;
  language?: string;
  checked?: boolean;
  /** table rows (first = header) */
  rows?: string[][];
  children?: FakeBlock[];
}

export interface FakeNotionPage {
  id: string;
  title: string;
  blocks: FakeBlock[];
  last_edited_time: string;
  created_time: string;
  in_trash: boolean;
}

const rich = (text: string) => [
  { type: 'text', text: { content: text, link: null }, annotations: { bold: false, italic: false, strikethrough: false, underline: false, code: false, color: 'default' }, plain_text: text, href: null },
];
const error = (status: number, code: string, message: string) => ({ status, body: { object: 'error', status, code, message } });

export class FakeNotion {
  readonly pages = new Map<string, FakeNotionPage>();
  /** Rendered blocks by id: children lists of pages and of blocks. */
  private readonly childrenOf = new Map<string, Record<string, unknown>[]>();
  readonly throttle = new Throttle();
  readonly requests: string[] = [];
  pageSize = 2;
  url = '';
  readonly workspaceId = randomUUID();
  readonly subscriptionId = randomUUID();
  readonly integrationId = randomUUID();
  private close_: (() => Promise<void>) | null = null;

  constructor(readonly token = 'secret_fake_notion_token') {}

  async start(port = 0): Promise<this> {
    const s = await startJsonServer((req) => this.handle(req.method, req.path, req.query, req.headers, req.body), port);
    this.url = s.url;
    this.close_ = s.close;
    return this;
  }
  close(): Promise<void> {
    return this.close_?.() ?? Promise.resolve();
  }

  putPage(p: { id?: string; title: string; blocks: FakeBlock[] }): FakeNotionPage {
    const now = new Date().toISOString();
    const prev = p.id ? this.pages.get(p.id) : undefined;
    const page: FakeNotionPage = {
      id: p.id ?? randomUUID(),
      title: p.title,
      blocks: p.blocks,
      created_time: prev?.created_time ?? now,
      last_edited_time: now,
      in_trash: false,
    };
    this.pages.set(page.id, page);
    this.childrenOf.set(page.id, this.render(p.blocks));
    return page;
  }
  trash(id: string, inTrash = true): void {
    const p = this.pages.get(id)!;
    p.in_trash = inTrash;
    p.last_edited_time = new Date().toISOString();
  }
  remove(id: string): void {
    this.pages.delete(id);
    this.childrenOf.delete(id);
  }

  private render(blocks: FakeBlock[]): Record<string, unknown>[] {
    return blocks.map((b) => {
      const id = randomUUID();
      let body: Record<string, unknown>;
      let kids: Record<string, unknown>[] = [];
      if (b.type === 'table') {
        const rows = b.rows ?? [];
        body = { table_width: rows[0]?.length ?? 0, has_column_header: true, has_row_header: false };
        kids = rows.map((r) => ({ ...this.base(randomUUID(), 'table_row', false), table_row: { cells: r.map(rich) } }));
      } else {
        body = { rich_text: rich(b.text ?? ''), color: 'default' };
        if (b.type === 'code') body = { caption: [], rich_text: rich(b.text ?? ''), language: b.language ?? 'plain text' };
        if (b.type === 'to_do') body.checked = b.checked ?? false;
        if (b.children) kids = this.render(b.children);
      }
      if (kids.length) this.childrenOf.set(id, kids);
      return { ...this.base(id, b.type, kids.length > 0), [b.type]: body };
    });
  }

  private base(id: string, type: string, hasChildren: boolean) {
    const t = new Date().toISOString();
    return {
      object: 'block',
      id,
      parent: { type: 'page_id', page_id: id },
      created_time: t,
      last_edited_time: t,
      created_by: { object: 'user', id: this.integrationId },
      last_edited_by: { object: 'user', id: this.integrationId },
      has_children: hasChildren,
      archived: false,
      in_trash: false,
      type,
    };
  }

  pageJson(p: FakeNotionPage) {
    return {
      object: 'page',
      id: p.id,
      created_time: p.created_time,
      last_edited_time: p.last_edited_time,
      created_by: { object: 'user', id: this.integrationId },
      last_edited_by: { object: 'user', id: this.integrationId },
      cover: null,
      icon: null,
      parent: { type: 'workspace', workspace: true },
      archived: p.in_trash,
      in_trash: p.in_trash,
      properties: { title: { id: 'title', type: 'title', title: rich(p.title) } },
      url: `https://www.notion.so/${p.title.replace(/\W+/g, '-')}-${p.id.replace(/-/g, '')}`,
      public_url: null,
    };
  }

  private paginate<T>(all: T[], q: { start_cursor?: string | null; page_size?: number }) {
    const size = Math.min(q.page_size ?? 100, this.pageSize);
    const offset = q.start_cursor ? Number(Buffer.from(q.start_cursor, 'base64url').toString()) : 0;
    const more = offset + size < all.length;
    return {
      object: 'list',
      results: all.slice(offset, offset + size),
      next_cursor: more ? Buffer.from(String(offset + size)).toString('base64url') : null,
      has_more: more,
      type: 'block',
      block: {},
    };
  }

  private handle(method: string, path: string, q: URLSearchParams, headers: Record<string, string | string[] | undefined>, body: unknown): ReturnType<FakeHandler> {
    this.requests.push(`${method} ${path}`);
    if (headers.authorization !== `Bearer ${this.token}`) return error(401, 'unauthorized', 'API token is invalid.');
    if (!headers['notion-version']) return error(400, 'missing_version', 'Notion-Version header failed validation: Notion-Version header should be defined');
    const retryAfter = this.throttle.take();
    if (retryAfter !== null) return { ...error(429, 'rate_limited', 'You have been rate limited. Please try again in a few minutes.'), headers: { 'retry-after': retryAfter } };
    let m: RegExpExecArray | null;
    const norm = (id: string) => (id.includes('-') ? id : id.replace(/^(.{8})(.{4})(.{4})(.{4})(.{12})$/, '$1-$2-$3-$4-$5'));
    if (method === 'GET' && (m = /^\/v1\/pages\/([0-9a-f-]+)$/i.exec(path))) {
      const p = this.pages.get(norm(m[1]!));
      return p ? { status: 200, body: this.pageJson(p) } : error(404, 'object_not_found', `Could not find page with ID: ${m[1]}.`);
    }
    if (method === 'GET' && (m = /^\/v1\/blocks\/([0-9a-f-]+)\/children$/i.exec(path))) {
      const kids = this.childrenOf.get(norm(m[1]!));
      if (!kids) return error(404, 'object_not_found', `Could not find block with ID: ${m[1]}.`);
      return { status: 200, body: this.paginate(kids, { start_cursor: q.get('start_cursor'), page_size: Number(q.get('page_size') ?? 100) }) };
    }
    if (method === 'POST' && path === '/v1/search') {
      const b = (body ?? {}) as { start_cursor?: string; page_size?: number; filter?: { property?: string; value?: string } };
      const pages = [...this.pages.values()].filter((p) => !p.in_trash).sort((a, b2) => a.id.localeCompare(b2.id)).map((p) => this.pageJson(p));
      return { status: 200, body: { ...this.paginate(pages, b), type: 'page_or_database', page_or_database: {} } };
    }
    return error(400, 'invalid_request_url', `Invalid request URL: ${method} ${path}`);
  }

  event(type: 'page.created' | 'page.content_updated' | 'page.deleted' | 'page.undeleted', pageId: string, timestamp = new Date().toISOString()) {
    return {
      id: randomUUID(),
      timestamp,
      workspace_id: this.workspaceId,
      workspace_name: 'Fake workspace',
      subscription_id: this.subscriptionId,
      integration_id: this.integrationId,
      authors: [{ id: randomUUID(), type: 'person' }],
      attempt_number: 1,
      type,
      entity: { id: pageId, type: 'page' },
      data: type === 'page.content_updated' ? { parent: { id: this.workspaceId, type: 'space' }, updated_blocks: [] } : { parent: { id: this.workspaceId, type: 'space' } },
    };
  }
}

/** Posts a Notion webhook: JSON body, `X-Notion-Signature: sha256=<hex>` over the exact bytes (none for verification). */
export async function postNotionWebhook(
  url: string,
  secret: string | null,
  payload: unknown,
  opts: { signature?: string; rawBody?: string } = {},
): Promise<{ status: number; body: Record<string, unknown> }> {
  const raw = opts.rawBody ?? JSON.stringify(payload);
  const signature = opts.signature ?? (secret !== null ? `sha256=${createHmac('sha256', secret).update(raw).digest('hex')}` : undefined);
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(signature ? { 'x-notion-signature': signature } : {}) },
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
