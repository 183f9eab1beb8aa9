import { existsSync, mkdirSync, mkdtempSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { build } from 'vite';

const root = resolve(__dirname, '../..');
export const OUT = join(root, '.ci', 'out', 'browser');
export const IMAGES = join(root, 'docs', 'images');

/** Debian's Chromium (scripts/browser/install.sh), or RAG_CHROMIUM. */
export function chromiumPath(): string {
  const p = process.env.RAG_CHROMIUM ?? '/usr/bin/chromium';
  if (!existsSync(p)) throw new Error(`no Chromium at ${p}: run \`bash scripts/browser/install.sh\` (or set RAG_CHROMIUM)`);
  return p;
}

/** Builds apps/console as `npm run build` does, into a fresh folder under <repo>/tmp (so dist/ is not touched). */
export async function buildConsole(): Promise<string> {
  mkdirSync(join(root, 'tmp'), { recursive: true });
  const out = mkdtempSync(join(root, 'tmp', 'console-browser-'));
  await build({ configFile: join(root, 'apps/console/vite.config.ts'), build: { outDir: out, emptyOutDir: true }, logLevel: 'error' });
  return out;
}

export async function launch(): Promise<Browser> {
  // --no-sandbox: CI runs as root, where Chromium's sandbox cannot start.
  return chromium.launch({ executablePath: chromiumPath(), headless: true, args: ['--no-sandbox', '--disable-dev-shm-usage'] });
}

export async function newPage(browser: Browser, opts: { width?: number; height?: number; locale?: string } = {}): Promise<{ context: BrowserContext; page: Page }> {
  const context = await browser.newContext({ viewport: { width: opts.width ?? 1280, height: opts.height ?? 860 }, locale: opts.locale ?? 'en-US' });
  const page = await context.newPage();
  page.setDefaultTimeout(60_000);
  return { context, page };
}

/** Screenshots of the current view and of every console page, for a failed test (under .ci/out/browser). */
export async function screenshotAll(page: Page, name: string): Promise<void> {
  mkdirSync(OUT, { recursive: true });
  const safe = name.replace(/[^A-Za-z0-9_-]+/g, '_').slice(0, 80);
  await page.screenshot({ path: join(OUT, `${safe}-current.png`), fullPage: true }).catch(() => undefined);
  const back = await page.evaluate(() => location.hash).catch(() => '');
  for (const route of ['overview', 'ask', 'documents', 'sources', 'access']) {
    await page
      .evaluate((r) => (location.hash = `#/${r}`), route)
      .then(() => page.waitForTimeout(300))
      .then(() => page.screenshot({ path: join(OUT, `${safe}-${route}.png`), fullPage: true }))
      .catch(() => undefined);
  }
  // Back where the test was, so the next test starts from the same place as when this one passes.
  await page.evaluate((h) => (location.hash = h), back).catch(() => undefined);
}
