/**
 * The Confluence and Notion connectors against local fakes that speak the documented REST wire format:
 * content mapping, ACLs from restrictions, cursor pagination, 429 + Retry-After backoff, auth failures, gone pages.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfluenceConnector, NotionConnector } from '@rag/adapters';
import { AppError } from '@rag/platform';
import type { SourceListing } from '@rag/ports';
import { FakeConfluence } from '../fakes/confluence-server';
import { FakeNotion } from '../fakes/notion-server';

const collect = async (it: AsyncIterable<SourceListing>) => {
  const out: SourceListing[] = [];
  for await (const x of it) out.push(x);
  return out;
};

describe('ConfluenceConnector (fake Confluence Cloud)', () => {
  const fake = new FakeConfluence();
  const sleeps: number[] = [];
  let conn: ConfluenceConnector;
  beforeAll(async () => {
    await fake.start();
    fake.addSpace('ENG');
    fake.addSpace('OPS');
    conn = new ConfluenceConnector({
      baseUrl: fake.url,
      email: fake.email,
      apiToken: fake.apiToken,
      spaces: ['ENG'],
      site: 'acme.atlassian.net',
      http: { sleep: async (ms) => void sleeps.push(ms) },
    });
  });
  afterAll(() => fake.close());

  it('fetches a page as storage format and maps it, with read restrictions as the ACL', async () => {
    const p = fake.putPage({
      spaceKey: 'ENG',
      title: 'Ports',
      storage: '<h2>Ports</h2><table><tbody><tr><th>svc</th><th>port</th></tr><tr><td>gateway</td><td>8080</td></tr></tbody></table><ac:structured-macro ac:name="code"><ac:parameter ac:name="language">yaml</ac:parameter><ac:plain-text-body><![CDATA[port: 8080]]></ac:plain-text-body></ac:structured-macro>',
      readGroups: ['eng'],
      readUsers: ['557058:f0b2'],
    });
    const r = await conn.fetch(p.id);
    expect(r.status).toBe('found');
    if (r.status !== 'found') return;
    expect(r.title).toBe('Ports');
    expect(r.blocks).toEqual([
      { type: 'heading', level: 2, text: 'Ports' },
      { type: 'table', header: true, rows: [['svc', 'port'], ['gateway', '8080']] },
      { type: 'code', language: 'yaml', text: 'port: 8080' },
    ]);
    expect(r.acl).toEqual(['group:eng', 'user:557058:f0b2']);
    expect(r.source_url).toBe(`${fake.url}/wiki/spaces/ENG/pages/${p.id}/Ports`);
    expect(r.metadata).toMatchObject({ source: 'confluence', space: 'ENG', page_id: p.id, source_version: 1 });
    expect(conn.documentId(p.id)).toBe(`confluence:acme.atlassian.net:${p.id}`);
  });

  it('acl() reads the restrictions alone (a restriction change makes no new version); null once the page is gone', async () => {
    const p = fake.putPage({ spaceKey: 'ENG', title: 'Budget', storage: '<p>budget</p>' });
    expect(await conn.acl(p.id)).toEqual(['*']);
    fake.restrict(p.id, { readGroups: ['finance'] });
    const before = fake.requests.length;
    expect(await conn.acl(p.id)).toEqual(['group:finance']);
    expect(fake.requests.slice(before)).toEqual([`GET /wiki/rest/api/content/${p.id}/restriction/byOperation/read`]);
    fake.purge(p.id);
    expect(await conn.acl(p.id)).toBeNull();
    expect(await conn.acl('not-a-page-id')).toBeNull();
  });

  it('a trashed or purged page is gone', async () => {
    const p = fake.putPage({ spaceKey: 'ENG', title: 'Old', storage: '<p>old</p>' });
    fake.trash(p.id);
    expect(await conn.fetch(p.id)).toEqual({ status: 'gone', reason: 'the page is trashed' });
    fake.purge(p.id);
    expect((await conn.fetch(p.id)).status).toBe('gone');
  });

  it('lists a space across cursor pages and only that space', async () => {
    for (let i = 0; i < 4; i++) fake.putPage({ spaceKey: 'ENG', title: `E${i}`, storage: '<p>x</p>' });
    fake.putPage({ spaceKey: 'OPS', title: 'ops page', storage: '<p>x</p>' });
    const listed = await collect(conn.list('ENG'));
    const expected = [...fake.pages.values()].filter((p) => p.spaceKey === 'ENG' && p.status === 'current').map((p) => p.id);
    expect(listed.map((l) => l.ref).sort()).toEqual(expected.sort());
    expect(listed.length).toBeGreaterThan(fake.pageSize); // pagination was followed
    expect(listed.every((l) => l.scope === 'ENG' && l.source_version === '1')).toBe(true);
  });

  it('backs off on 429 for exactly the Retry-After the server asks for', async () => {
    const p = fake.putPage({ spaceKey: 'ENG', title: 'T', storage: '<p>throttled</p>' });
    sleeps.length = 0;
    fake.throttle.throttleNext(2, 3);
    const before = fake.throttle.served429;
    const r = await conn.fetch(p.id);
    expect(r.status).toBe('found');
    expect(fake.throttle.served429 - before).toBe(2);
    expect(sleeps).toEqual([3000, 3000]);
  });

  it('gives up after the attempt budget with rate_limited, and bad credentials are not retried', async () => {
    const p = fake.putPage({ spaceKey: 'ENG', title: 'T2', storage: '<p>x</p>' });
    const tight = new ConfluenceConnector({ baseUrl: fake.url, email: fake.email, apiToken: fake.apiToken, spaces: [], http: { sleep: async () => {}, maxAttempts: 2 } });
    fake.throttle.throttleNext(5, 1);
    await expect(tight.fetch(p.id)).rejects.toMatchObject({ code: 'rate_limited' });
    fake.throttle.throttleNext(0);
    const bad = new ConfluenceConnector({ baseUrl: fake.url, email: fake.email, apiToken: 'wrong', spaces: [], http: { sleep: async () => {} } });
    const n = fake.requests.length;
    const e = await bad.fetch(p.id).catch((x: unknown) => x);
    expect(e).toBeInstanceOf(AppError);
    expect((e as AppError).code).toBe('unauthorized');
    expect(fake.requests.length - n).toBe(1);
  });
});

describe('NotionConnector (fake Notion API)', () => {
  const fake = new FakeNotion();
  const sleeps: number[] = [];
  let conn: NotionConnector;
  beforeAll(async () => {
    await fake.start();
    conn = new NotionConnector({ baseUrl: fake.url, token: fake.token, http: { sleep: async (ms) => void sleeps.push(ms) } });
  });
  afterAll(() => fake.close());

  it('fetches a page with nested blocks across paginated children', async () => {
    const p = fake.putPage({
      title: 'Handbook',
      blocks: [
        { type: 'heading_1', text: 'Handbook' },
        { type: 'paragraph', text: 'Welcome.' },
        { type: 'bulleted_list_item', text: 'laptop', children: [{ type: 'bulleted_list_item', text: 'charger' }] },
        { type: 'bulleted_list_item', text: 'badge' },
        { type: 'code', text: 'npm start', language: 'shell' },
        { type: 'table', rows: [['team', 'lead'], ['search', 'ada'], ['infra', 'lin']] },
      ],
    });
    const r = await conn.fetch(p.id.replace(/-/g, ''));
    expect(r.status).toBe('found');
    if (r.status !== 'found') return;
    expect(r.title).toBe('Handbook');
    expect(r.blocks).toEqual([
      { type: 'heading', level: 1, text: 'Handbook' },
      { type: 'paragraph', text: 'Welcome.' },
      { type: 'list', ordered: false, items: ['laptop', 'charger', 'badge'] },
      { type: 'code', text: 'npm start', language: 'shell' },
      { type: 'table', header: true, rows: [['team', 'lead'], ['search', 'ada'], ['infra', 'lin']] },
    ]);
    expect(r.acl).toEqual(['*']);
    expect(r.source_version).toBe(p.last_edited_time);
    expect(conn.documentId(p.id)).toBe(`notion:${p.id}`);
  });

  it('a trashed or unknown page is gone; search lists live pages across cursors', async () => {
    const a = fake.putPage({ title: 'A', blocks: [{ type: 'paragraph', text: 'a' }] });
    fake.putPage({ title: 'B', blocks: [] });
    fake.putPage({ title: 'C', blocks: [] });
    fake.trash(a.id);
    expect((await conn.fetch(a.id)).status).toBe('gone');
    expect((await conn.fetch('00000000-0000-4000-8000-000000000000')).status).toBe('gone');
    const listed = await collect(conn.list('workspace'));
    expect(listed.map((l) => l.ref).sort()).toEqual([...fake.pages.values()].filter((p) => !p.in_trash).map((p) => p.id).sort());
    expect(listed.some((l) => l.ref === a.id)).toBe(false);
  });

  it('honours Retry-After on 429', async () => {
    const p = fake.putPage({ title: 'R', blocks: [{ type: 'paragraph', text: 'r' }] });
    sleeps.length = 0;
    fake.throttle.throttleNext(1, 2);
    expect((await conn.fetch(p.id)).status).toBe('found');
    expect(sleeps).toEqual([2000]);
  });
});
