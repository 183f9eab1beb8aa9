/**
 * Confluence and Notion sources in distributed mode: the gateway process verifies and admits webhooks and runs the
 * reconciler, the loader process fetches pages from the (fake) source APIs, Kafka carries the events, Milvus and
 * OpenSearch hold the chunks. Run with RAG_TEST_PORT_BASE and RAG_DIST_DIR set (see distributed-harness.ts).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeConfluence, postConfluenceWebhook } from '../fakes/confluence-server';
import { FakeNotion, postNotionWebhook } from '../fakes/notion-server';
import { call, env, milvus, opensearch, URL, useDistributedPlatform, waitAll } from './distributed-harness';

const SECRET = 'whsec-dist-confluence';
const NOTION_SECRET = 'secret_dist_notion';
const SITE = 'acme.atlassian.net';

describe('distributed mode: Confluence/Notion webhooks, connectors in the loader, reconciliation', () => {
  const confluence = new FakeConfluence();
  const notion = new FakeNotion();
  beforeAll(async () => {
    const base = Number(process.env.RAG_TEST_PORT_BASE ?? 18080);
    await confluence.start(base + 20);
    await notion.start(base + 21);
    confluence.addSpace('ENG');
    Object.assign(env, {
      RAG_CONFLUENCE_BASE_URL: confluence.url,
      RAG_CONFLUENCE_SITE: SITE,
      RAG_CONFLUENCE_EMAIL: confluence.email,
      RAG_CONFLUENCE_API_TOKEN: confluence.apiToken,
      RAG_CONFLUENCE_SPACES: 'ENG',
      RAG_CONFLUENCE_WEBHOOK_SECRET: SECRET,
      RAG_NOTION_BASE_URL: notion.url,
      RAG_NOTION_TOKEN: notion.token,
      RAG_NOTION_WEBHOOK_SECRET: NOTION_SECRET,
      RAG_RECONCILE_INTERVAL_S: '2',
    });
  });
  useDistributedPlatform();
  afterAll(async () => {
    await confluence.close();
    await notion.close();
  });

  const hook = (p: unknown) => postConfluenceWebhook(`${URL}/v1/webhooks/confluence`, SECRET, p);

  it('webhook → indexed in Milvus and OpenSearch → answer changes on update → removed from every store', { timeout: 240_000 }, async () => {
    const page = confluence.putPage({ spaceKey: 'ENG', title: 'Incident paging', storage: '<p>The incident pager rotates every Wednesday at noon.</p>' });
    const id = `confluence:${SITE}:${page.id}`;
    const created = await hook(confluence.webhookPayload('page_created', page));
    expect(created.status).toBe(200);
    expect(['queued', 'duplicate']).toContain(created.body.status); // the reconciler may have admitted it first
    await waitAll([id], 'indexed', 120_000);
    expect(await milvus.count(id)).toBeGreaterThan(0);
    expect(await opensearch.count(id)).toBeGreaterThan(0);

    const edited = confluence.putPage({ id: page.id, spaceKey: 'ENG', title: page.title, storage: '<p>The incident pager rotates every Saturday at noon.</p>' });
    const t0 = Date.now();
    expect((await hook(confluence.webhookPayload('page_updated', edited))).body.status).toBe('queued');
    for (;;) {
      const q = await call<{ answer: string }>('POST', '/v1/query', { question: 'When does the incident pager rotate?' });
      if (q.body.answer.includes('Saturday')) break;
      if (Date.now() - t0 > 60_000) throw new Error(`answer did not change: ${q.body.answer}`);
      await new Promise((r) => setTimeout(r, 200));
    }
    process.stdout.write(`[sources.infra] page_updated webhook → changed answer in ${Date.now() - t0} ms (distributed)\n`);

    const forged = await postConfluenceWebhook(`${URL}/v1/webhooks/confluence`, 'nope', confluence.webhookPayload('page_removed', edited));
    expect(forged.status).toBe(401);
    confluence.trash(page.id);
    const removal = confluence.webhookPayload('page_removed', edited);
    expect((await hook(removal)).body.status).toBe('queued');
    expect((await hook(removal)).body.status).toBe('duplicate');
    await waitAll([id], 'deleted', 60_000);
    expect(await milvus.count(id)).toBe(0);
    expect(await opensearch.count(id)).toBe(0);
  });

  it('a delete missed by the webhooks is pruned by the scheduled reconciliation', { timeout: 120_000 }, async () => {
    const page = confluence.putPage({ spaceKey: 'ENG', title: 'Printer setup', storage: '<p>The printer on floor two needs driver version 7.</p>' });
    const id = `confluence:${SITE}:${page.id}`;
    await waitAll([id], 'indexed', 60_000); // imported by the reconciler alone
    confluence.purge(page.id);
    await waitAll([id], 'deleted', 60_000);
    expect(await milvus.count(id)).toBe(0);
    expect(await opensearch.count(id)).toBe(0);
  });

  it('Notion page events through the gateway and the loader', { timeout: 120_000 }, async () => {
    const page = notion.putPage({ title: 'Lunch', blocks: [{ type: 'paragraph', text: 'Lunch is served at noon in the atrium.' }] });
    const id = `notion:${page.id}`;
    const r = await postNotionWebhook(`${URL}/v1/webhooks/notion`, NOTION_SECRET, notion.event('page.created', page.id));
    expect(r.status).toBe(200);
    await waitAll([id], 'indexed', 60_000);
    notion.trash(page.id);
    expect((await postNotionWebhook(`${URL}/v1/webhooks/notion`, NOTION_SECRET, notion.event('page.deleted', page.id))).status).toBe(200);
    await waitAll([id], 'deleted', 60_000);
    expect(await opensearch.count(id)).toBe(0);
  });
});
