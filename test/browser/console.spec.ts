/**
 * The web console in a real browser (Chromium via playwright-core) against the embedded platform: upload two files
 * and watch them reach `indexed`; ask, see the streamed answer and open a citation; thumbs-down recorded (checked
 * through the API); a corrupt PDF shows as failed with its reason; a deleted document is gone from answers; an admin
 * creates and revokes a key; a query-only key does not see the Access page; 401 is explained; Chinese UI; phone width.
 * Writes docs/images/console-ask.png and console-documents.png (the README's screenshots); on a failure, screenshots
 * of every page go to .ci/out/browser/.
 */
import { copyFileSync, mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { writeLatestEval } from '@rag/services';
import { api, removeDir, startServer, type Server } from '../e2e/harness';
import { buildConsole, IMAGES, launch, newPage, OUT, screenshotAll } from './browser';

const ADMIN = 'browser-suite-admin-key-0123456789';
const auth = { authorization: `Bearer ${ADMIN}` };

const WINGS = `# Swept wings

## Boundary layer transition
The laminar boundary layer on a swept wing becomes unstable at lower Reynolds numbers than on an unswept wing, because crossflow vortices amplify disturbances near the leading edge.
Suction through a porous surface delays transition and keeps the boundary layer laminar over most of the chord.
`;
const HEAT = `# Hypersonic heating

## Stagnation point
At hypersonic speeds the stagnation point heat transfer rate varies with the inverse square root of the nose radius, so blunt bodies are used to reduce heating.
Ablative heat shields absorb the remaining heat load by pyrolysis and surface recession.
`;

describe('web console (Chromium)', () => {
  let server: Server;
  let browser: Browser;
  let page: Page;
  let consoleDir: string;

  beforeAll(async () => {
    consoleDir = await buildConsole();
    server = await startServer(undefined, { RAG_API_KEYS: ADMIN, RAG_CONSOLE_DIR: consoleDir, RAG_TRACE_URL_TEMPLATE: 'https://traces.example/trace/{trace_id}' });
    browser = await launch();
    ({ page } = await newPage(browser));
    await page.goto(server.url + '/');
    await page.getByLabel('API key').fill(ADMIN);
    await page.getByRole('button', { name: 'Use key' }).click();
    await page.getByRole('navigation').getByRole('link', { name: 'Access' }).waitFor();
  });

  afterEach(async (ctx) => {
    if (ctx.task.result?.state === 'fail' && page) await screenshotAll(page, ctx.task.name);
  });

  afterAll(async () => {
    await browser?.close();
    await server?.stop();
    if (server) removeDir(server.dataDir);
    if (consoleDir) rmSync(consoleDir, { recursive: true, force: true });
  });

  const go = async (route: string) => {
    await page.getByRole('navigation').getByRole('link', { name: route, exact: true }).click();
    await page.getByRole('heading', { level: 1 }).first().waitFor();
  };
  const row = (id: string) => page.locator(`tr[data-document="${id}"]`);

  it('uploads two files with per-file progress and shows them reaching indexed, with chunk counts', async () => {
    expect(await page.getByRole('navigation').getByRole('link').allTextContents()).toEqual(['Overview', 'Ask', 'Documents', 'Sources', 'Access']);
    await go('Documents');
    // Dropped on the drop zone, as a user drags files from the desktop (the DataTransfer a drop event carries).
    const files = await page.evaluateHandle(
      ([wings, heat]) => {
        const dt = new DataTransfer();
        dt.items.add(new File([wings], 'wings.md', { type: 'text/markdown' }));
        dt.items.add(new File([heat], 'heat.md', { type: 'text/markdown' }));
        return dt;
      },
      [WINGS, HEAT],
    );
    await page.locator('.dropzone').dispatchEvent('dragover', { dataTransfer: files });
    await page.locator('.dropzone').dispatchEvent('drop', { dataTransfer: files });
    await expect.poll(() => page.locator('.uploads li').count()).toBe(2);
    await expect.poll(() => page.locator('.uploads li[data-state="queued"]').count(), { timeout: 60_000 }).toBe(2);
    expect(await page.locator('.uploads progress').evaluateAll((els) => els.map((e) => (e as HTMLProgressElement).value))).toEqual([1, 1]);
    for (const id of ['upload:wings.md', 'upload:heat.md']) {
      await expect.poll(() => row(id).getAttribute('data-status'), { timeout: 60_000 }).toBe('indexed');
      expect(Number(await row(id).locator('td').nth(3).textContent())).toBeGreaterThan(0);
    }
    // The API agrees.
    const doc = await api(server, 'GET', '/v1/documents/upload%3Awings.md', undefined, auth);
    expect(doc.body).toMatchObject({ status: 'indexed', title: 'wings.md' });
    // Filters: title search and status.
    await page.getByLabel('Search titles').fill('heat');
    await expect.poll(() => page.locator('tbody tr[data-document]').count()).toBe(1);
    await page.getByLabel('Search titles').fill('');
    await expect.poll(() => page.locator('tbody tr[data-document]').count()).toBe(2);
    await page.evaluate(() => (document.activeElement as HTMLElement | null)?.blur());
    mkdirSync(IMAGES, { recursive: true });
    await page.screenshot({ path: join(IMAGES, 'console-documents.png') });
    // The document page lists the chunks of the active version with their heading paths.
    await row('upload:wings.md').getByRole('link').click();
    await page.locator('tr[data-chunk^="upload:wings.md#v1#"]').first().waitFor();
    expect(await page.locator('table.chunks').textContent()).toContain('Swept wings › Boundary layer transition');
    expect(await page.getByRole('heading', { level: 2 }).first().textContent()).toMatch(/^Chunks of version 1 \(\d+\)$/);
    await page.getByRole('link', { name: /Back/ }).click();
    await row('upload:wings.md').waitFor();
  });

  it('asks: the answer streams in, a [n] citation opens the cited chunk with its supporting text highlighted', async () => {
    await go('Ask');
    const phases: string[] = [];
    await page.exposeFunction('notePhase', (p: string) => phases.push(p));
    await page.evaluate(() => {
      const seen = new Set<string>();
      new MutationObserver(() => {
        const p = document.querySelector('.answer')?.getAttribute('data-phase');
        if (p && !seen.has(p)) {
          seen.add(p);
          (window as unknown as { notePhase(p: string): void }).notePhase(p);
        }
      }).observe(document.body, { subtree: true, childList: true, attributes: true });
    });
    await page.getByLabel('Question').fill('What delays boundary layer transition on a swept wing?');
    const response = page.waitForResponse((r) => r.url().endsWith('/v1/query'));
    await page.getByRole('button', { name: 'Ask', exact: true }).click();
    expect((await response).headers()['content-type']).toContain('text/event-stream');
    await page.locator('.answer[data-phase="done"]').waitFor();
    expect(phases.slice(0, 2)).toEqual(['streaming', 'done']);
    const answerText = await page.locator('.answer-text').textContent();
    expect(answerText).toMatch(/\[\d+\]/);
    expect(answerText?.toLowerCase()).toContain('transition');
    // The citation marker opens the chunk: title, heading path, highlighted support.
    await page.locator('.answer-text button.ref').first().click();
    const panel = page.getByRole('dialog');
    await expect.poll(() => panel.getByRole('heading').textContent()).toMatch(/Cited source \[\d+\]: wings\.md/);
    expect(await panel.textContent()).toContain('Boundary layer transition');
    expect((await panel.locator('mark').allTextContents()).join(' ').toLowerCase()).toMatch(/transition|suction/);
    // Per-stage timings and the trace id, linked by RAG_TRACE_URL_TEMPLATE.
    expect(await page.locator('.timings th').allTextContents()).toEqual(expect.arrayContaining([expect.stringContaining('embed'), expect.stringContaining('fuse')]));
    const trace = page.locator('a.trace');
    expect(await trace.getAttribute('href')).toBe(`https://traces.example/trace/${await trace.textContent()}`);
    await page.screenshot({ path: join(IMAGES, 'console-ask.png'), fullPage: true });
    // Escape closes the citation (keyboard).
    await panel.getByRole('button', { name: 'Close' }).focus();
    await page.keyboard.press('Escape');
    await expect.poll(() => panel.count()).toBe(0);
  });

  it('thumbs-down with a comment is recorded (the API’s feedback count goes up)', async () => {
    const before = (await api<{ feedback: { down: number } }>(server, 'GET', '/v1/overview', undefined, auth)).body.feedback.down;
    await page.getByRole('button', { name: 'Not helpful' }).click();
    await page.getByLabel('Comment (optional)').fill('too short');
    await page.getByRole('button', { name: 'Send feedback' }).click();
    await page.getByText('Thanks, your feedback was recorded.').waitFor();
    expect((await api<{ feedback: { down: number } }>(server, 'GET', '/v1/overview', undefined, auth)).body.feedback.down).toBe(before + 1);
    // The latest `rag eval` report of the data folder shows on the Overview.
    writeLatestEval(server.dataDir, { finished_at: new Date().toISOString(), dataset: 'cranfield', results: [{ mode: 'hybrid', 'ndcg@10': 0.4321 }] });
    await go('Overview');
    await expect.poll(() => page.locator('[data-stat="feedback-down"] .value').textContent()).toBe(String(before + 1));
    expect(await page.locator('[data-eval="cranfield"] table').textContent()).toContain('0.4321');
    expect(Number(await page.locator('[data-stat="status-indexed"] .value').textContent())).toBeGreaterThanOrEqual(2);
  });

  it('a corrupt PDF shows as failed, with its reason', async () => {
    await go('Documents');
    await page.getByLabel('Upload files').setInputFiles([{ name: 'broken.pdf', mimeType: 'application/pdf', buffer: Buffer.from('%PDF-1.7\nthis is not a PDF body\n%%EOF') }]);
    await expect.poll(() => row('upload:broken.pdf').getAttribute('data-status'), { timeout: 60_000 }).toBe('failed');
    const reason = await row('upload:broken.pdf').locator('.error-reason').textContent();
    expect(reason).toMatch(/^Failure reason: .{5,}/);
    const doc = await api<{ error: string }>(server, 'GET', '/v1/documents/upload%3Abroken.pdf', undefined, auth);
    expect(reason).toContain(doc.body.error);
    // The document page shows it too.
    await row('upload:broken.pdf').getByRole('link').click();
    await expect.poll(() => page.locator('dd.error-reason').textContent()).toBe(doc.body.error);
    await page.getByRole('link', { name: /Back/ }).click();
  });

  it('deletes a document: it is gone from answers', async () => {
    await go('Documents');
    page.once('dialog', (d) => void d.accept());
    await row('upload:heat.md').getByRole('button', { name: 'Delete upload:heat.md' }).click();
    await expect.poll(() => row('upload:heat.md').getAttribute('data-status'), { timeout: 60_000 }).toBe('deleted');
    await go('Ask');
    await page.getByLabel('Question').fill('How do ablative heat shields absorb the heat load?');
    await page.getByRole('button', { name: 'Ask', exact: true }).click();
    await page.locator('.answer[data-phase="done"]').waitFor();
    const cited = await page.locator('.citations li small').allTextContents();
    expect(cited.some((c) => c.includes('upload:heat.md'))).toBe(false);
    const q = await api<{ citations: { document_id: string }[] }>(server, 'POST', '/v1/query', { question: 'How do ablative heat shields absorb the heat load?' }, auth);
    expect(q.body.citations.map((c) => c.document_id)).not.toContain('upload:heat.md');
  });

  it('a deletion the pipeline finishes after the table’s refresh still shows: the table keeps refreshing until the row says deleted', async () => {
    expect((await api(server, 'POST', '/v1/documents:batch', { documents: [{ id: 'race-1', title: 'Race', text: 'Deleted while the table refreshes.' }] }, auth)).status).toBe(202);
    await expect.poll(async () => (await api<{ status: string }>(server, 'GET', '/v1/documents/race-1', undefined, auth)).body.status, { timeout: 60_000 }).toBe('indexed');
    await go('Documents');
    await expect.poll(() => row('race-1').getAttribute('data-status')).toBe('indexed');
    // The DELETE is accepted (202) and the pipeline removes the document afterwards. Make the race certain: the first
    // list the table fetches from now on answers as if the deletion had not happened yet.
    let served = false;
    await page.route('**/v1/documents?*', async (route) => {
      if (served) return route.continue();
      served = true;
      const response = await route.fetch();
      const body = (await response.json()) as { documents: { document_id: string; status: string }[] };
      body.documents = body.documents.map((d) => (d.document_id === 'race-1' ? { ...d, status: 'indexed' } : d));
      await route.fulfill({ response, json: body });
    });
    try {
      page.once('dialog', (d) => void d.accept());
      await row('race-1').getByRole('button', { name: 'Delete race-1' }).click();
      await expect.poll(() => served).toBe(true);
      await expect.poll(() => row('race-1').getAttribute('data-status'), { timeout: 15_000 }).toBe('deleted');
    } finally {
      await page.unroute('**/v1/documents?*');
    }
    await go('Overview'); // the next test opens Documents afresh
  });

  it('pages the document table by cursor: Next shows the following documents, Previous the same first page again', async () => {
    const documents = Array.from({ length: 30 }, (_, i) => ({ id: `paged-${String(i).padStart(2, '0')}`, title: `Paged ${i}`, text: `Paged document ${i}.` }));
    expect((await api(server, 'POST', '/v1/documents:batch', { documents }, auth)).status).toBe(202);
    // The table is newest-update first: while these 30 move from queued to indexed their rows move up, so page 1
    // before and after Next would differ. Let them settle first (the API is the source of truth).
    await expect
      .poll(
        async () => {
          const list = (await api<{ documents: { document_id: string; status: string }[] }>(server, 'GET', '/v1/documents?limit=1000', undefined, auth)).body.documents;
          return list.filter((d) => d.document_id.startsWith('paged-') && d.status === 'indexed').length;
        },
        { timeout: 60_000 },
      )
      .toBe(30);
    await go('Documents');
    const ids = () => page.locator('tbody tr[data-document]').evaluateAll((rows) => rows.map((r) => r.getAttribute('data-document')));
    await expect.poll(async () => (await ids()).length).toBe(25);
    const first = await ids();
    expect(await page.getByText('Page 1', { exact: true }).count()).toBe(1);
    expect(await page.getByRole('button', { name: 'Previous' }).isDisabled()).toBe(true);
    await page.getByRole('button', { name: 'Next' }).click();
    await page.getByText('Page 2', { exact: true }).waitFor();
    // The label changes at once; the rows only when page 2's request has answered. Until then the table says it is
    // busy (the rows it shows are page 1's), and a reader of it must wait for page 2's rows.
    await page.locator('table.documents[data-page="2"][aria-busy="false"]').waitFor();
    await expect.poll(async () => (await ids()).length).toBeGreaterThan(0);
    const second = await ids();
    expect(second.filter((id) => first.includes(id))).toEqual([]); // no row of page 1 again
    const all = (await api<{ documents: { document_id: string }[] }>(server, 'GET', '/v1/documents?limit=1000', undefined, auth)).body.documents;
    expect([...first, ...second].length).toBeLessThanOrEqual(all.length);
    await page.getByRole('button', { name: 'Previous' }).click();
    await page.getByText('Page 1', { exact: true }).waitFor();
    await page.locator('table.documents[data-page="1"][aria-busy="false"]').waitFor();
    await expect.poll(async () => (await ids())[0]).toBe(first[0]);
  });

  it('an admin creates a key (shown once, copyable) and revokes it', async () => {
    await go('Access');
    await page.getByLabel('Name').fill('ci-reader');
    await page.getByLabel('Rate limit (requests/s)').fill('5');
    await page.getByRole('button', { name: 'Create key' }).click();
    const secret = (await page.locator('#new-key').textContent()) ?? '';
    expect(secret).toMatch(/^rag_[0-9a-f]{16}_/);
    await page.context().grantPermissions(['clipboard-read', 'clipboard-write'], { origin: server.url });
    await page.getByRole('button', { name: 'Copy' }).click();
    await page.getByRole('button', { name: 'Copied' }).waitFor();
    const keyRow = page.locator('tr[data-key]', { hasText: 'ci-reader' });
    await keyRow.waitFor();
    expect(await keyRow.textContent()).toContain('5/s');
    expect((await api(server, 'GET', '/v1/session', undefined, { authorization: `Bearer ${secret}` })).status).toBe(200);
    await keyRow.getByRole('button', { name: 'Revoke ci-reader' }).click();
    await expect.poll(() => page.locator('tr[data-key]', { hasText: 'ci-reader' }).count()).toBe(0);
    expect((await api(server, 'GET', '/v1/session', undefined, { authorization: `Bearer ${secret}` })).status).toBe(401);
    await page.getByLabel('Show revoked keys').check();
    await expect.poll(() => page.locator('tr[data-key][data-revoked="true"]', { hasText: 'ci-reader' }).count()).toBe(1);
  });

  it('a query-only key sees only Ask, not Access (not even by its address); a bad key gets a clear 401', async () => {
    const created = await api<{ key: string }>(server, 'POST', '/v1/admin/api-keys', { scopes: ['query'], name: 'only-query', unrestricted: true }, auth);
    const { context, page: p } = await newPage(browser);
    try {
      await p.goto(server.url + '/#/access');
      await p.getByLabel('API key').fill('rag_not_a_real_key');
      await p.getByRole('button', { name: 'Use key' }).click();
      await expect.poll(() => p.getByRole('alert').textContent()).toMatch(/^Not signed in: the API key is missing or invalid/);
      await p.getByLabel('API key').fill(created.body.key);
      await p.getByRole('button', { name: 'Use key' }).click();
      await expect.poll(() => p.getByRole('navigation').getByRole('link').allTextContents()).toEqual(['Ask']);
      expect(await p.getByRole('heading', { level: 1 }).textContent()).toBe('Ask');
      expect(await p.getByRole('heading', { name: 'API keys' }).count()).toBe(0);
      // The key is kept for this tab only: a reload keeps it, a new tab does not have it.
      await p.reload();
      await expect.poll(() => p.getByRole('navigation').getByRole('link').allTextContents()).toEqual(['Ask']);
      const other = await context.newPage();
      await other.goto(server.url + '/');
      await expect.poll(() => other.getByRole('alert').textContent()).toMatch(/Not signed in/);
      await other.close();
    } catch (e) {
      await screenshotAll(p, 'query-only-key');
      throw e;
    } finally {
      await context.close();
    }
  });

  it('switches to Chinese, is keyboard-navigable, and fits a phone-width screen', async () => {
    const { context, page: p } = await newPage(browser, { width: 390, height: 844 });
    try {
      await p.goto(server.url + '/');
      await p.getByLabel('API key').fill(ADMIN);
      await p.keyboard.press('Enter');
      await p.getByRole('navigation').waitFor();
      await p.getByLabel('Language').selectOption('zh');
      await expect.poll(() => p.getByRole('navigation').getByRole('link').allTextContents()).toEqual(['概览', '问答', '文档', '数据源', '访问控制']);
      expect(await p.evaluate(() => document.documentElement.lang)).toBe('zh-CN');
      // Keyboard: focus the Documents link and follow it with Enter.
      await p.getByRole('link', { name: '文档' }).focus();
      await p.keyboard.press('Enter');
      await expect.poll(() => p.getByRole('heading', { level: 1 }).textContent()).toBe('文档');
      // No horizontal overflow of the page at 390 px (wide tables scroll inside their own box).
      expect(await p.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(390);
      mkdirSync(OUT, { recursive: true });
      await p.screenshot({ path: join(OUT, 'console-phone-documents-zh.png'), fullPage: true });
    } catch (e) {
      await screenshotAll(p, 'phone-zh');
      throw e;
    } finally {
      await context.close();
    }
  });
});

describe('web console in the anonymous local mode (what `npm start` serves on 127.0.0.1 without keys)', () => {
  let server: Server;
  let browser: Browser;
  let consoleDir: string;
  beforeAll(async () => {
    consoleDir = await buildConsole();
    server = await startServer(undefined, { RAG_CONSOLE_DIR: consoleDir });
    browser = await launch();
  });
  afterAll(async () => {
    await browser?.close();
    await server?.stop();
    if (server) removeDir(server.dataDir);
    if (consoleDir) rmSync(consoleDir, { recursive: true, force: true });
  });

  it('needs no key: uploads pass the CSRF checks (JSON, same origin) and the answer cites the upload', async () => {
    const { context, page } = await newPage(browser);
    try {
      // 127.0.0.1 as printed by `npm start` (the anonymous mode checks Host and Origin).
      await page.goto(server.url + '/');
      await page.getByText('local anonymous mode').waitFor();
      await page.getByRole('navigation').getByRole('link', { name: 'Documents' }).click();
      await page.getByLabel('Upload files').setInputFiles([{ name: 'wings.md', mimeType: 'text/markdown', buffer: Buffer.from(WINGS) }]);
      await expect.poll(() => page.locator('tr[data-document="upload:wings.md"]').getAttribute('data-status'), { timeout: 60_000 }).toBe('indexed');
      await page.getByRole('navigation').getByRole('link', { name: 'Ask' }).click();
      await page.getByLabel('Question').fill('What delays boundary layer transition?');
      await page.keyboard.press('Enter');
      await page.locator('.answer[data-phase="done"]').waitFor();
      expect(await page.locator('.citations li small').allTextContents()).toEqual([expect.stringContaining('upload:wings.md')]);
    } catch (e) {
      await screenshotAll(page, 'anonymous-mode');
      throw e;
    } finally {
      await context.close();
    }
  });
});

// Keep a copy of the README screenshots with the CI output.
afterAll(() => {
  mkdirSync(OUT, { recursive: true });
  for (const f of ['console-ask.png', 'console-documents.png']) {
    try {
      copyFileSync(join(IMAGES, f), join(OUT, f));
    } catch {
      /* not written: a test before it failed */
    }
  }
});
