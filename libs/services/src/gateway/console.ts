import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { INestApplication } from '@nestjs/common';
import express, { type Request, type Response } from 'express';
import type { AppConfig } from '@rag/platform';

/**
 * The folder of the built web console (apps/console, built by `npm run build` with Vite): RAG_CONSOLE_DIR, else
 * `console/` of the build this file runs from (dist/ or RAG_DIST_DIR: `<out>/libs/services/src/gateway` → `<out>/console`),
 * else `<repo>/dist/console` (running from source, as the tests do). Null when none holds an index.html.
 */
export function consoleDir(config: Pick<AppConfig, 'RAG_CONSOLE_DIR'>, here = __dirname): string | null {
  const candidates = config.RAG_CONSOLE_DIR ? [resolve(config.RAG_CONSOLE_DIR)] : [resolve(here, '../../../../console'), resolve(here, '../../../../dist/console')];
  return candidates.find((d) => existsSync(join(d, 'index.html'))) ?? null;
}

const NOT_BUILT = `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>RAG console</title></head>
<body style="font:15px/1.5 system-ui,sans-serif;max-width:40rem;margin:3rem auto"><h1>The web console is not built</h1>
<p>Run <code>npm run build</code> (it builds apps/console into dist/console), or set RAG_CONSOLE_DIR to a built console. The API is up: see <a href="/docs">/docs</a>.</p></body></html>`;

/**
 * Serves the console at `/` (static files, no CDN): `index.html` is revalidated on every load (`no-cache`) so a new
 * build shows at once, and the content-hashed files under `assets/` are cached for a year (`immutable`). The page
 * talks only to the public API with the key the user enters. `/playground` (the page `/` used to be) redirects here.
 */
export function serveConsole(app: INestApplication, config: Pick<AppConfig, 'RAG_CONSOLE_DIR'>): void {
  const dir = consoleDir(config);
  app.use('/playground', (_req: Request, res: Response) => res.redirect(301, '/'));
  if (!dir) {
    app.use((req: Request, res: Response, next: () => void) => {
      if ((req.method === 'GET' || req.method === 'HEAD') && (req.path === '/' || req.path === '/index.html')) {
        res.status(503).type('html').setHeader('Cache-Control', 'no-cache').send(NOT_BUILT);
      } else next();
    });
    return;
  }
  app.use(
    '/assets',
    express.static(join(dir, 'assets'), { immutable: true, maxAge: '365d', index: false, fallthrough: false, redirect: false }),
  );
  const sendIndex = (_req: Request, res: Response) => {
    res.setHeader('Cache-Control', 'no-cache');
    res.setHeader('X-Content-Type-Options', 'nosniff');
    // The console loads only its own scripts and styles and calls only this origin.
    res.setHeader('Content-Security-Policy', "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; connect-src 'self'; frame-ancestors 'none'");
    res.sendFile(join(dir, 'index.html'));
  };
  app.use((req: Request, res: Response, next: () => void) => {
    if ((req.method === 'GET' || req.method === 'HEAD') && (req.path === '/' || req.path === '/index.html')) sendIndex(req, res);
    else next();
  });
}
