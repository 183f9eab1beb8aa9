import { resolve } from 'node:path';
import { defineConfig } from 'vite';

// The web console: Preact (React's API in 4 kB, so the bundle stays small and builds offline) compiled by esbuild's
// automatic JSX runtime — no Babel preset. `npm run build` passes --outDir (dist/console or RAG_DIST_DIR/console).
export default defineConfig({
  root: resolve(__dirname),
  base: '/',
  esbuild: { jsx: 'automatic', jsxImportSource: 'preact' },
  build: {
    outDir: resolve(__dirname, '../../dist/console'),
    emptyOutDir: true,
    assetsDir: 'assets',
    // The gateway's CSP allows no inline script: keep the module preload polyfill out of index.html.
    modulePreload: { polyfill: false },
    target: 'es2022',
  },
  logLevel: 'warn',
});
