// The web console's browser suite (test/browser): real Chromium (Debian's `chromium`, installed by
// scripts/browser/install.sh) driven by playwright-core against the embedded platform. `npm run test:browser`.
// The default vitest.config.ts excludes this folder; same SWC plugin and @rag/* aliases.
import { resolve } from 'node:path';
import { defineConfig } from 'vitest/config';
import base from '../../vitest.config';

export default defineConfig({
  ...base,
  root: resolve(__dirname, '../..'),
  test: {
    ...base.test,
    include: ['test/browser/**/*.spec.ts'],
    exclude: ['**/node_modules/**', 'dist/**'],
    // One browser and one server per file, the files one at a time (2-core machines).
    fileParallelism: false,
    testTimeout: 120_000,
    hookTimeout: 180_000,
    // expect.poll gives up after 1 s by default: a page's fetch on a loaded CI machine can take longer than that, and
    // a poll that times out early reads as a product failure. Waits that need longer still say so themselves.
    expect: { poll: { timeout: 15_000, interval: 100 } },
  },
});
