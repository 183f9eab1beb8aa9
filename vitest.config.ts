import { resolve } from 'node:path';
import swc from 'unplugin-swc';
import { defineConfig } from 'vitest/config';

const lib = (name: string) => resolve(__dirname, `libs/${name}/src/index.ts`);

export default defineConfig({
  // SWC instead of esbuild so NestJS decorator metadata is emitted exactly as in the build.
  plugins: [swc.vite({ module: { type: 'es6' } })],
  resolve: {
    alias: {
      '@rag/contracts': lib('contracts'),
      '@rag/domain': lib('domain'),
      '@rag/ports': lib('ports'),
      '@rag/adapters': lib('adapters'),
      '@rag/platform': lib('platform'),
      '@rag/application': lib('application'),
      '@rag/services': lib('services'),
    },
  },
  test: {
    globals: true,
    include: ['apps/**/*.spec.ts', 'libs/**/*.spec.ts', 'test/**/*.spec.ts'],
    exclude: ['**/node_modules/**', 'dist/**', 'test/infra/**', 'test/reliability/**', 'test/deploy/**', 'test/browser/**'],
    testTimeout: 60_000,
    hookTimeout: 120_000,
    pool: 'forks',
    reporters: ['default'],
  },
});
