/**
 * Confluence and Notion sources end to end on the embedded platform, against local fakes of both SaaS APIs that
 * speak their documented REST and webhook wire formats: webhook → answer changes; removed → gone from every
 * store; a delete missed by webhooks → pruned by reconciliation; bad signature / replay / malformed → 4xx and
 * nothing queued; duplicates processed once (also across a restart); a late update never resurrects a page.
 */
import { mkdtempSync, readFileSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SourceReconciler } from '@rag/application';
import { loadConfig, setLogLevel } from '@rag/platform';
import { KEYWORD_INDEX, type KeywordIndex } from '@rag/ports';
import { startEmbeddedServer, type EmbeddedHandles } from '@rag/services';
import { FakeConfluence, postConfluenceWebhook } from '../fakes/confluence-server';
import { FakeNotion, postNotionWebhook } from '../fakes/notion-server';
import { removeDir } from './harness';

setLogLevel('error');

const CONFLUENCE_SECRET = 'whsec-confluence-e2e';
const NOTION_SECRET = 'secret_notion_verification_e2e';
const SITE = 'acme.atlassian.net';

interface Answer {
  answer: string;
  refused: boolean;
  citations: { document_id: string; text: string }[];
}

type Running = EmbeddedHandles & { url: string };

describe('sources: Confluence and Notion (embedded, fake SaaS servers)', () => {
  const confluence = new FakeConfluence();
  const notion = new FakeNotion();
  const dataDir = mkdtempSync(join(tmpdir(), 'rag-sources-e2e-'));
  let srv: Running;

  const start = async (): Promise<Running> =>
    startEmbeddedServer(
      loadConfig({
        RAG_DATA_DIR: dataDir,
        RAG_EMBEDDER: 'hashing',
        RAG_PORT: '0',
        RAG_HOST: '127.0.0.1',
        RAG_LOG_LEVEL: 'error',
        RAG_CONFLUENCE_BASE_URL: confluence.url,
        RAG_CONFLUENCE_SITE: SITE,
        RAG_CONFLUENCE_EMAIL: confluence.email,
        RAG_CONFLUENCE_API_TOKEN: confluence.apiToken,
        RAG_CONFLUENCE_SPACES: 'ENG',
        RAG_CONFLUENCE_WEBHOOK_SECRET: CONFLUENCE_SECRET,
        RAG_NOTION_BASE_URL: notion.url,
        RAG_NOTION_TOKEN: notion.token,
        RAG_NOTION_WEBHOOK_SECRET: NOTION_SECRET,
        RAG_RECONCILE_INTERVAL_S: '0',
        RAG_BUS_RETRY_BASE_MS: '50',
      }),
    );
  const call = async <T = Record<string, unknown>>(method: string, path: string, body?: unknown): Promise<{ status: number; body: T }> => {
    const res = await fetch(srv.url + path, { method, headers: { 'content-type': 'application/json' }, ...(body ? { body: JSON.stringify(body) } : {}) });
    return { status: res.status, body: (await res.json()) as T };
  };
  const doc = (id: string) => call<{ status: string; version: number; title: string; acl: string[]; error?: string }>('GET', `/v1/documents/${encodeURIComponent(id)}`);
  const until = async <T>(what: string, fn: () => Promise<T | undefined | false>, timeoutMs = 30_000): Promise<T> => {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const v = await fn();
      if (v) return v;
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  };
  const settled = async (id: string, status: string, version?: number) =>
    until(`${id} ${status}${version ? ` v${version}` : ''}`, async () => {
      const d = await doc(id);
      return d.body.status === status && (version === undefined || d.body.version === version) && d.body;
    });
  const retrieveIds = async (query: string, mode: 'dense' | 'keyword') =>
    (await call<{ results: { document_id: string }[] }>('POST', '/v1/retrieve', { query, mode, top_k: 20 })).body.results.map((r) => r.document_id);
  const webhookUrl = (s: 'confluence' | 'notion') => `${srv.url}/v1/webhooks/${s}`;
  const sourceEventsQueued = async () => {
    // every accepted change reserves a registry version; this counts documents the gateway touched
    return (await srv.registry.list({ limit: 1000, offset: 0 })).length;
  };

  beforeAll(async () => {
    await confluence.start();
    await notion.start();
    confluence.addSpace('ENG');
    confluence.addSpace('OPS');
    // background documents so retrieval has competition
    for (const [t, body] of [
      ['Coffee machine', '<p>The coffee machine on floor three is descaled every Monday by the facilities team.</p>'],
      ['Parking', '<p>Visitor parking spots are in the north garage; reserve them a day ahead.</p>'],
    ] as const) {
      confluence.putPage({ spaceKey: 'ENG', title: t, storage: body });
    }
    srv = await start();
  });
  afterAll(async () => {
    await srv?.close();
    await confluence.close();
    await notion.close();
    removeDir(dataDir);
  });

  it('reconciliation imports the configured space (and only it)', async () => {
    confluence.putPage({ spaceKey: 'OPS', title: 'Ops only', storage: '<p>This page lives in an unconfigured space.</p>' });
    const reports = await srv.context.get(SourceReconciler, { strict: false }).runOnce();
    const eng = reports.find((r) => r.kind === 'confluence' && r.scope === 'ENG')!;
    expect(eng).toMatchObject({ listed: 2, upserts: 2, deletes: 0 });
    expect(eng.error).toBeUndefined();
    for (const p of confluence.pages.values()) {
      const d = await doc(`confluence:${SITE}:${p.id}`);
      if (p.spaceKey === 'ENG') await settled(`confluence:${SITE}:${p.id}`, 'indexed');
      else expect(d.status).toBe(404);
    }
  });

  let deployId = '';

  it('a page-created then page-updated webhook changes the answer within seconds', async () => {
    const page = confluence.putPage({
      spaceKey: 'ENG',
      title: 'Production deploy window',
      storage:
        '<h1>Production deploy window</h1><p>The production deploy window is Tuesday at 10:00 UTC.</p>' +
        '<table><tbody><tr><th>Step</th><th>Owner</th></tr><tr><td>Freeze merges</td><td>release captain</td></tr></tbody></table>' +
        '<ac:structured-macro ac:name="code"><ac:parameter ac:name="language">bash</ac:parameter><ac:plain-text-body><![CDATA[./deploy.sh --window tuesday]]></ac:plain-text-body></ac:structured-macro>',
    });
    deployId = `confluence:${SITE}:${page.id}`;
    const created = await postConfluenceWebhook(webhookUrl('confluence'), CONFLUENCE_SECRET, confluence.webhookPayload('page_created', page));
    expect(created).toMatchObject({ status: 200, body: { status: 'queued', document_id: deployId, version: 1 } });
    await settled(deployId, 'indexed', 1);
    const before = await call<Answer>('POST', '/v1/query', { question: 'When is the production deploy window?' });
    expect(before.body.citations[0]?.document_id).toBe(deployId);
    expect(before.body.answer).toContain('Tuesday');

    const edited = confluence.putPage({ id: page.id, spaceKey: 'ENG', title: page.title, storage: '<h1>Production deploy window</h1><p>The production deploy window is Thursday at 15:00 UTC.</p>' });
    const t0 = Date.now();
    const updated = await postConfluenceWebhook(webhookUrl('confluence'), CONFLUENCE_SECRET, confluence.webhookPayload('page_updated', edited));
    expect(updated.body).toMatchObject({ status: 'queued', version: 2 });
    const answer = await until('the new answer', async () => {
      const q = await call<Answer>('POST', '/v1/query', { question: 'When is the production deploy window?' });
      return q.body.answer.includes('Thursday') && q.body;
    });
    const elapsed = Date.now() - t0;
    process.stdout.write(`[sources.e2e] page_updated webhook → changed answer in ${elapsed} ms\n`);
    expect(answer.answer).not.toContain('Tuesday');
    expect(answer.citations.every((c) => !c.text.includes('Tuesday'))).toBe(true);
    expect((await doc(deployId)).body).toMatchObject({ status: 'indexed', version: 2 });
  });

  it('a duplicate delivery is processed once, even after a restart', async () => {
    const page = confluence.pages.get(deployId.split(':').pop()!)!;
    const payload = confluence.webhookPayload('page_updated', page);
    const first = await postConfluenceWebhook(webhookUrl('confluence'), CONFLUENCE_SECRET, payload);
    expect(first.body.status).toBe('queued');
    const version = first.body.version as number;
    const again = await postConfluenceWebhook(webhookUrl('confluence'), CONFLUENCE_SECRET, payload);
    expect(again).toMatchObject({ status: 200, body: { status: 'duplicate', document_id: deployId } });
    await settled(deployId, 'indexed', version);
    await srv.close();
    srv = await start();
    const afterRestart = await postConfluenceWebhook(webhookUrl('confluence'), CONFLUENCE_SECRET, payload);
    expect(afterRestart.body.status).toBe('duplicate');
    expect((await doc(deployId)).body.version).toBe(version);
  });

  it('bad signature, replayed (stale) event and malformed payload: 4xx, nothing queued', async () => {
    const page = confluence.putPage({ spaceKey: 'ENG', title: 'Secret plans', storage: '<p>Nobody should index this via a forged hook.</p>' });
    const id = `confluence:${SITE}:${page.id}`;
    const payload = confluence.webhookPayload('page_created', page);
    const docsBefore = await sourceEventsQueued();

    const forged = await postConfluenceWebhook(webhookUrl('confluence'), 'wrong-secret', payload);
    expect(forged.status).toBe(401);
    expect(forged.body).toMatchObject({ error: { code: 'unauthorized' } });
    const unsigned = await postConfluenceWebhook(webhookUrl('confluence'), null, payload);
    expect(unsigned.status).toBe(401);
    const tampered = await postConfluenceWebhook(webhookUrl('confluence'), CONFLUENCE_SECRET, payload, {
      signature: (await import('@rag/domain')).signHmacSha256(CONFLUENCE_SECRET, JSON.stringify({ ...payload, event: 'page_removed' })),
    });
    expect(tampered.status).toBe(401);

    const replayed = await postConfluenceWebhook(webhookUrl('confluence'), CONFLUENCE_SECRET, confluence.webhookPayload('page_created', page, Date.now() - 3600_000));
    expect(replayed.status).toBe(401);
    expect(String((replayed.body.error as { message: string }).message)).toContain('replayed');

    const notJson = await postConfluenceWebhook(webhookUrl('confluence'), CONFLUENCE_SECRET, null, { rawBody: '{"event": "page_created", ' });
    expect(notJson.status).toBe(400);
    const noPage = await postConfluenceWebhook(webhookUrl('confluence'), CONFLUENCE_SECRET, { event: 'page_created', timestamp: Date.now() });
    expect(noPage.status).toBe(400);
    const badEvent = await postConfluenceWebhook(webhookUrl('confluence'), CONFLUENCE_SECRET, { ...payload, event: 'page_exploded' });
    expect(badEvent.status).toBe(400);
    const { event: _omitted, ...unnamed } = payload;
    const noEvent = await postConfluenceWebhook(webhookUrl('confluence'), CONFLUENCE_SECRET, unnamed);
    expect(noEvent.status).toBe(400);
    expect((await postConfluenceWebhook(`${webhookUrl('confluence')}?event=page_exploded`, CONFLUENCE_SECRET, unnamed)).status).toBe(400);

    expect((await doc(id)).status).toBe(404);
    expect(await sourceEventsQueued()).toBe(docsBefore);
    await srv.bus.drain(10_000);
    expect((await doc(id)).status).toBe(404);
    confluence.purge(page.id); // never existed as far as the rest of this suite is concerned
  });

  it('a page-removed webhook removes it from every store; a late update cannot resurrect it', async () => {
    const page = confluence.pages.get(deployId.split(':').pop()!)!;
    expect(await retrieveIds('production deploy window Thursday', 'dense')).toContain(deployId);
    expect(await retrieveIds('production deploy window Thursday', 'keyword')).toContain(deployId);
    const lateUpdate = confluence.webhookPayload('page_updated', page, Date.now() - 2000);
    confluence.trash(page.id);
    const removed = await postConfluenceWebhook(webhookUrl('confluence'), CONFLUENCE_SECRET, confluence.webhookPayload('page_removed', page));
    expect(removed.body).toMatchObject({ status: 'queued', op: 'delete' });
    const gone = await settled(deployId, 'deleted');
    expect(await retrieveIds('production deploy window Thursday', 'dense')).not.toContain(deployId);
    expect(await retrieveIds('production deploy window Thursday', 'keyword')).not.toContain(deployId);

    const late = await postConfluenceWebhook(webhookUrl('confluence'), CONFLUENCE_SECRET, lateUpdate);
    expect(late).toMatchObject({ status: 200, body: { status: 'ignored' } });
    await srv.bus.drain(10_000);
    expect((await doc(deployId)).body).toMatchObject({ status: 'deleted', version: gone.version });
  });

  it('a restored page comes back (a newer event than the delete); the event may be named by the endpoint URL', async () => {
    const page = confluence.pages.get(deployId.split(':').pop()!)!;
    confluence.restore(page.id);
    const { event: _e, ...unnamed } = confluence.webhookPayload('page_restored', page);
    const restored = await postConfluenceWebhook(`${webhookUrl('confluence')}?event=page_restored`, CONFLUENCE_SECRET, unnamed);
    expect(restored.body.status).toBe('queued');
    await settled(deployId, 'indexed');
    expect(await retrieveIds('production deploy window Thursday', 'keyword')).toContain(deployId);
  });

  it('a delete missed by the webhooks is caught by the next reconciliation; a missed edit too', async () => {
    const page = confluence.pages.get(deployId.split(':').pop()!)!;
    const coffee = [...confluence.pages.values()].find((p) => p.title === 'Coffee machine')!;
    confluence.purge(page.id); // deleted at the source, no webhook
    confluence.putPage({ id: coffee.id, spaceKey: 'ENG', title: coffee.title, storage: '<p>The coffee machine on floor three is descaled every Friday by the facilities team.</p>' });
    const reports = await srv.context.get(SourceReconciler, { strict: false }).runOnce();
    expect(reports.find((r) => r.kind === 'confluence')).toMatchObject({ upserts: 1, deletes: 1 });
    await settled(deployId, 'deleted');
    await settled(`confluence:${SITE}:${coffee.id}`, 'indexed', 2);
    expect(await retrieveIds('production deploy window Thursday', 'dense')).not.toContain(deployId);
    expect(await retrieveIds('production deploy window Thursday', 'keyword')).not.toContain(deployId);
    const q = await call<Answer>('POST', '/v1/query', { question: 'When is the coffee machine descaled?' });
    expect(q.body.answer).toContain('Friday');
    // a second pass finds nothing to do
    const again = await srv.context.get(SourceReconciler, { strict: false }).runOnce();
    expect(again.find((r) => r.kind === 'confluence')).toMatchObject({ upserts: 0, deletes: 0 });
  });

  it('restricted Confluence pages carry their read restrictions as the ACL', async () => {
    const page = confluence.putPage({ spaceKey: 'ENG', title: 'Salary bands', storage: '<p>Salary bands are reviewed each spring.</p>', readGroups: ['hr'], readUsers: ['557058:aa'] });
    const r = await postConfluenceWebhook(webhookUrl('confluence'), CONFLUENCE_SECRET, confluence.webhookPayload('page_created', page));
    expect(r.body.status).toBe('queued');
    await settled(`confluence:${SITE}:${page.id}`, 'indexed');
    const keywords = srv.context.get<KeywordIndex>(KEYWORD_INDEX, { strict: false });
    const hits = async (principals: string[]) =>
      (await keywords.search({ query: 'salary bands reviewed spring', k: 10, scope: { tenant: 'default', principals } })).map((h) => h.document_id);
    const id = `confluence:${SITE}:${page.id}`;
    expect(await hits(['group:hr'])).toContain(id);
    expect(await hits(['user:557058:aa'])).toContain(id);
    expect(await hits(['group:eng'])).not.toContain(id);
    // the registry view shows the ACL the connector computed from the restrictions (it showed [])
    expect((await doc(id)).body.acl).toEqual(['group:hr', 'user:557058:aa']);
  });

  it('a read restriction added without a content change re-queues the page with the new ACL', async () => {
    const page = confluence.putPage({ spaceKey: 'ENG', title: 'Reorg plan', storage: '<p>The reorg plan merges the platform and tooling teams in May.</p>' });
    const id = `confluence:${SITE}:${page.id}`;
    expect((await postConfluenceWebhook(webhookUrl('confluence'), CONFLUENCE_SECRET, confluence.webhookPayload('page_created', page))).body.status).toBe('queued');
    const before = await settled(id, 'indexed');
    expect((await doc(id)).body.acl).toEqual(['*']);

    confluence.restrict(page.id, { readGroups: ['leads'] }); // no new page version
    const r = await postConfluenceWebhook(webhookUrl('confluence'), CONFLUENCE_SECRET, confluence.webhookPayload('content_permissions_updated', page));
    expect(r).toMatchObject({ status: 200, body: { status: 'queued', document_id: id, version: before.version + 1 } });
    expect((await doc(id)).body.acl).toEqual(['group:leads']);
    await until('the re-queued version settled', async () => {
      const d = (await doc(id)).body;
      return d.version === before.version + 1 && !['queued', 'processing'].includes(d.status) && d;
    });
    expect((await doc(id)).body.acl).toEqual(['group:leads']);
    // and the stores enforce it (the indexer re-indexes an ACL-only change; see indexer.stage.ts)
    const keywords = srv.context.get<KeywordIndex>(KEYWORD_INDEX, { strict: false });
    const hits = async (principals: string[]) =>
      (await keywords.search({ query: 'reorg plan merges platform tooling', k: 10, scope: { tenant: 'default', principals } })).map((h) => h.document_id);
    expect(await hits(['group:leads'])).toContain(id);
    expect(await hits(['group:eng'])).not.toContain(id);
  });

  it("the URL's ?event= cannot turn a signed update into a delete (nor into a second queued change)", async () => {
    const page = confluence.putPage({ spaceKey: 'ENG', title: 'Incident runbook', storage: '<p>Page the on-call engineer through the incident bridge.</p>' });
    const id = `confluence:${SITE}:${page.id}`;
    expect((await postConfluenceWebhook(webhookUrl('confluence'), CONFLUENCE_SECRET, confluence.webhookPayload('page_created', page))).body.status).toBe('queued');
    await settled(id, 'indexed');
    const edited = confluence.putPage({ id: page.id, spaceKey: 'ENG', title: page.title, storage: '<p>Page the on-call engineer through the escalation hotline.</p>' });
    // Cloud webhooks registered per event name it only in the URL; the body is signed, the URL is not
    const { event: _e, ...unnamed } = confluence.webhookPayload('page_updated', edited);
    const forged = await postConfluenceWebhook(`${webhookUrl('confluence')}?event=page_removed`, CONFLUENCE_SECRET, unnamed);
    expect(forged.status).toBe(200);
    expect(forged.body).not.toMatchObject({ op: 'delete' });
    const real = await postConfluenceWebhook(`${webhookUrl('confluence')}?event=page_updated`, CONFLUENCE_SECRET, unnamed);
    expect(real.body.status).toBe('duplicate');
    await srv.bus.drain(10_000);
    expect((await doc(id)).body.status).toBe('indexed');
    expect(await retrieveIds('on-call escalation hotline', 'keyword')).toContain(id);
  });

  it('a replay with a new X-Atlassian-Webhook-Identifier is still a duplicate', async () => {
    const page = confluence.putPage({ spaceKey: 'ENG', title: 'Travel policy', storage: '<p>Book travel two weeks ahead through the portal.</p>' });
    const id = `confluence:${SITE}:${page.id}`;
    const payload = confluence.webhookPayload('page_created', page);
    const first = await postConfluenceWebhook(webhookUrl('confluence'), CONFLUENCE_SECRET, payload, { headers: { 'x-atlassian-webhook-identifier': 'delivery-1' } });
    expect(first.body).toMatchObject({ status: 'queued', version: 1 });
    const replay = await postConfluenceWebhook(webhookUrl('confluence'), CONFLUENCE_SECRET, payload, { headers: { 'x-atlassian-webhook-identifier': 'delivery-2-forged' } });
    expect(replay.body).toMatchObject({ status: 'duplicate', document_id: id });
    await settled(id, 'indexed', 1);
  });

  it('a delete does not win a tie: the update at the same source time is processed and the live page stays indexed', async () => {
    const page = confluence.putPage({ spaceKey: 'ENG', title: 'Expense limits', storage: '<p>Meals are reimbursed up to forty euros a day.</p>' });
    const id = `confluence:${SITE}:${page.id}`;
    expect((await postConfluenceWebhook(webhookUrl('confluence'), CONFLUENCE_SECRET, confluence.webhookPayload('page_created', page, Date.now() - 5000))).body.status).toBe('queued');
    await settled(id, 'indexed', 1);
    const at = Date.now();
    // a delete stamped with the update's own time (a duplicated or forged delete) arrives first
    expect((await postConfluenceWebhook(webhookUrl('confluence'), CONFLUENCE_SECRET, confluence.webhookPayload('page_removed', page, at))).body).toMatchObject({ op: 'delete' });
    await settled(id, 'deleted');
    const edited = confluence.putPage({ id: page.id, spaceKey: 'ENG', title: page.title, storage: '<p>Meals are reimbursed up to fifty euros a day.</p>' });
    const update = await postConfluenceWebhook(webhookUrl('confluence'), CONFLUENCE_SECRET, confluence.webhookPayload('page_updated', edited, at));
    expect(update.body).toMatchObject({ status: 'queued', op: 'upsert' });
    await settled(id, 'indexed', update.body.version as number);
    expect(await retrieveIds('meals reimbursed fifty euros', 'keyword')).toContain(id);
  });

  describe('Notion', () => {
    it('answers the verification handshake only with the configured token, queuing nothing', async () => {
      expect(await postNotionWebhook(webhookUrl('notion'), null, { verification_token: NOTION_SECRET })).toMatchObject({ status: 200, body: { status: 'verified' } });
      expect((await postNotionWebhook(webhookUrl('notion'), null, { verification_token: 'secret_other' })).status).toBe(401);
    });

    it('page.created / content_updated / deleted / undeleted drive the index; bad signatures and replays are refused', async () => {
      const page = notion.putPage({
        title: 'Onboarding checklist',
        blocks: [
          { type: 'heading_1', text: 'Onboarding checklist' },
          { type: 'paragraph', text: 'New engineers receive their laptop from the IT desk on the first morning.' },
          { type: 'bulleted_list_item', text: 'Sign the NDA', children: [{ type: 'bulleted_list_item', text: 'Return it to HR' }] },
          { type: 'code', text: 'make bootstrap', language: 'shell' },
        ],
      });
      const id = `notion:${page.id}`;
      const created = await postNotionWebhook(webhookUrl('notion'), NOTION_SECRET, notion.event('page.created', page.id));
      expect(created.body).toMatchObject({ status: 'queued', document_id: id });
      await settled(id, 'indexed', 1);
      expect((await call<Answer>('POST', '/v1/query', { question: 'Where do new engineers receive their laptop?' })).body.answer).toContain('IT desk');

      const forged = await postNotionWebhook(webhookUrl('notion'), 'secret_wrong', notion.event('page.deleted', page.id));
      expect(forged.status).toBe(401);
      const stale = await postNotionWebhook(webhookUrl('notion'), NOTION_SECRET, notion.event('page.deleted', page.id, new Date(Date.now() - 3600_000).toISOString()));
      expect(stale.status).toBe(401);
      const malformed = await postNotionWebhook(webhookUrl('notion'), NOTION_SECRET, { id: 'x', type: 'page.created', timestamp: 'yesterday', entity: { id: 'not-an-id', type: 'page' } });
      expect(malformed.status).toBe(400);
      expect((await doc(id)).body).toMatchObject({ status: 'indexed', version: 1 });

      notion.putPage({ id: page.id, title: 'Onboarding checklist', blocks: [{ type: 'paragraph', text: 'New engineers receive their laptop from the security office on the first morning.' }] });
      const ev = notion.event('page.content_updated', page.id);
      expect((await postNotionWebhook(webhookUrl('notion'), NOTION_SECRET, ev)).body.status).toBe('queued');
      expect((await postNotionWebhook(webhookUrl('notion'), NOTION_SECRET, ev)).body.status).toBe('duplicate');
      await settled(id, 'indexed', 2);
      expect((await call<Answer>('POST', '/v1/query', { question: 'Where do new engineers receive their laptop?' })).body.answer).toContain('security office');

      notion.trash(page.id);
      expect((await postNotionWebhook(webhookUrl('notion'), NOTION_SECRET, notion.event('page.deleted', page.id))).body.status).toBe('queued');
      await settled(id, 'deleted');
      expect(await retrieveIds('laptop security office', 'keyword')).not.toContain(id);

      notion.trash(page.id, false);
      expect((await postNotionWebhook(webhookUrl('notion'), NOTION_SECRET, notion.event('page.undeleted', page.id))).body.status).toBe('queued');
      await settled(id, 'indexed');
    });

    it('reconciliation prunes a Notion page removed without a webhook', async () => {
      const page = notion.putPage({ title: 'Lunch menu', blocks: [{ type: 'paragraph', text: 'Lunch is served at noon in the atrium.' }] });
      const reports = await srv.context.get(SourceReconciler, { strict: false }).runOnce();
      expect(reports.find((r) => r.kind === 'notion')?.upserts).toBeGreaterThanOrEqual(1);
      await settled(`notion:${page.id}`, 'indexed');
      notion.remove(page.id);
      const second = await srv.context.get(SourceReconciler, { strict: false }).runOnce();
      expect(second.find((r) => r.kind === 'notion')).toMatchObject({ deletes: 1 });
      await settled(`notion:${page.id}`, 'deleted');
    });
  });
});

describe('sources: the Notion verification token before RAG_NOTION_WEBHOOK_SECRET is set', () => {
  const notion = new FakeNotion();
  const dataDir = mkdtempSync(join(tmpdir(), 'rag-notion-verify-e2e-'));
  const tokenFile = join(dataDir, 'notion-verification-token');
  let srv: Running | undefined;
  const start = (extra: Record<string, string> = {}) =>
    startEmbeddedServer(
      loadConfig({
        RAG_DATA_DIR: dataDir,
        RAG_EMBEDDER: 'hashing',
        RAG_PORT: '0',
        RAG_HOST: '127.0.0.1',
        RAG_LOG_LEVEL: 'error',
        RAG_NOTION_BASE_URL: notion.url,
        RAG_NOTION_TOKEN: notion.token,
        RAG_RECONCILE_INTERVAL_S: '0',
        ...extra,
      }),
    );

  beforeAll(async () => {
    await notion.start();
    srv = await start();
  });
  afterAll(async () => {
    await srv?.close();
    await notion.close();
    removeDir(dataDir);
  });

  it('keeps the first token: an unsigned request with another token cannot overwrite it; configuring the secret takes over', async () => {
    const url = () => `${srv!.url}/v1/webhooks/notion`;
    const first = await postNotionWebhook(url(), null, { verification_token: 'secret_first_from_notion' });
    expect(first).toMatchObject({ status: 200, body: { status: 'verification_received' } });
    expect(readFileSync(tokenFile, 'utf8').trim()).toBe('secret_first_from_notion');
    expect(statSync(tokenFile).mode & 0o777).toBe(0o600);

    const attacker = await postNotionWebhook(url(), null, { verification_token: 'secret_attacker' });
    expect(attacker.status).toBe(409);
    expect(attacker.body).toMatchObject({ error: { code: 'conflict' } });
    expect(JSON.stringify(attacker.body)).not.toContain('secret_first_from_notion');
    expect(readFileSync(tokenFile, 'utf8').trim()).toBe('secret_first_from_notion');
    // Notion re-sending the same token is answered as before
    expect((await postNotionWebhook(url(), null, { verification_token: 'secret_first_from_notion' })).body.status).toBe('verification_received');

    await srv!.close();
    srv = await start({ RAG_NOTION_WEBHOOK_SECRET: 'secret_first_from_notion' });
    expect((await postNotionWebhook(url(), null, { verification_token: 'secret_first_from_notion' })).body.status).toBe('verified');
    expect((await postNotionWebhook(url(), null, { verification_token: 'secret_attacker' })).status).toBe(401);
  });
});
