// Runs only the deployment checks (test/deploy: Prometheus rules and dashboards, the Helm chart, the kustomize
// overlays), which the default vitest.config.ts excludes because they need tools a laptop may not have. Install them
// first (into .local/tools, nothing system-wide):
//   bash deploy/tools/install.sh all && npm run test:deploy
import { resolve } from 'node:path';
import { defineConfig } from 'vitest/config';
import base from '../vitest.config';

export default defineConfig({
  ...base,
  root: resolve(__dirname, '..'),
  test: {
    ...base.test,
    include: ['test/deploy/**/*.spec.ts'],
    exclude: ['**/node_modules/**', 'dist/**'],
    // helm, kustomize and the validators each use a core; one file at a time on a small machine.
    fileParallelism: false,
    testTimeout: 120_000,
  },
});
