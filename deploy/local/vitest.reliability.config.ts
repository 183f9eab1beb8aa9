// Runs the distributed reliability tests (test/reliability), which the default vitest.config.ts excludes,
// with the same plugins (SWC) and @rag/* aliases. Start the servers first:
//   bash deploy/local/servers.sh start all
import { resolve } from 'node:path';
import { defineConfig } from 'vitest/config';
import base from '../../vitest.config';

export default defineConfig({
  ...base,
  root: resolve(__dirname, '../..'),
  test: {
    ...base.test,
    include: ['test/reliability/**/*.spec.ts'],
    exclude: ['**/node_modules/**', 'dist/**'],
    // The specs share one Kafka, one OpenSearch and one Milvus on a small machine: one file at a time.
    fileParallelism: false,
  },
});
