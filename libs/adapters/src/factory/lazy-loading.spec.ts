import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { join, resolve } from 'node:path';

/*
 * Issue 12 item 5: a process loads only the SDKs of its own configuration. Vitest runs modules through Vite, whose
 * module graph is not Node's, so this builds libs/ with the project's SWC settings (as `npm run build` does) into a
 * folder inside the repository (so node_modules resolve) and asks a plain Node process what `require.cache` holds
 * after importing '@rag/adapters' and after each factory call.
 */
const root = resolve(__dirname, '../../../..');
const SDKS = ['@zilliz/milvus2-sdk-node', '@opensearch-project/opensearch', '@elastic/elasticsearch', 'kafkajs', 'piscina', 'mammoth', 'pdfjs-dist'];

let out: string;
beforeAll(() => {
  mkdirSync(join(root, 'tmp'), { recursive: true }); // absent in a fresh clone
  out = mkdtempSync(join(root, 'tmp', 'lazy-adapters-'));
  const swc = spawnSync(join(root, 'node_modules/.bin/swc'), ['libs', '-d', out, '--config-file', '.swcrc', '--ignore', '**/*.spec.ts', '--quiet'], {
    cwd: root,
    encoding: 'utf8',
  });
  expect(swc.status, swc.stderr).toBe(0);
}, 120_000);
afterAll(() => rmSync(out, { recursive: true, force: true }));

/** Runs `steps` (JS with `adapters`, `config`, `loaded()` in scope) in a fresh Node process; returns what each step logged. */
function probe(steps: string): Record<string, string[]> {
  const script = `
    const adapters = require(${JSON.stringify(join(out, 'libs/adapters/src/index.js'))});
    const { loadConfig } = require(${JSON.stringify(join(out, 'libs/platform/src/index.js'))});
    const sdks = ${JSON.stringify(SDKS)};
    const loaded = () => sdks.filter((s) => Object.keys(require.cache).some((f) => f.includes('/node_modules/' + s + '/')));
    const config = (env) => loadConfig({ RAG_DATA_DIR: ${JSON.stringify(join(out, 'data'))}, ...env });
    const seen = {};
    (async () => {
      seen.barrel = loaded();
      ${steps}
      process.stdout.write(JSON.stringify(seen));
      process.exit(0);
    })().catch((e) => { process.stderr.write(String(e && e.stack || e)); process.exit(1); });`;
  const r = spawnSync(process.execPath, ['-e', script], { cwd: root, encoding: 'utf8', timeout: 60_000, env: { ...process.env, RAG_LOG_LEVEL: 'error' } });
  expect(r.status, r.stderr).toBe(0);
  return JSON.parse(r.stdout) as Record<string, string[]>;
}

describe('adapter loading (item 5: each process loads only what it uses)', () => {
  it('importing @rag/adapters loads none of the SDK-backed adapters', () => {
    expect(probe('').barrel).toEqual([]);
  });

  it('each factory loads the SDK of the engine its configuration names, and no other', () => {
    const seen = probe(`
      await adapters.createKeywordIndex(config({ RAG_KEYWORD_INDEX: 'opensearch' }));
      seen.opensearch = loaded();
      await adapters.createBus(config({ RAG_BUS: 'kafka' }));
      seen.kafka = loaded();
      await adapters.createVectorStore(config({ RAG_VECTOR_STORE: 'milvus' }), { modelId: 'm', dim: 4 });
      seen.milvus = loaded();
    `);
    expect(seen.barrel).toEqual([]);
    expect(seen.opensearch).toEqual(['@opensearch-project/opensearch']);
    expect(seen.kafka).toEqual(['@opensearch-project/opensearch', 'kafkajs']);
    expect(seen.milvus).toEqual(['@zilliz/milvus2-sdk-node', '@opensearch-project/opensearch', 'kafkajs']);
  });

  it('the embedded configuration loads no SDK at all', () => {
    const seen = probe(`
      const c = config({ RAG_BUS: 'embedded', RAG_VECTOR_STORE: 'embedded', RAG_KEYWORD_INDEX: 'embedded' });
      const made = [await adapters.createBus(c), await adapters.createKeywordIndex(c), await adapters.createVectorStore(c, { modelId: 'm', dim: 4 })];
      seen.embedded = loaded();
      seen.kinds = made.map((m) => m.constructor.name);
    `);
    expect(seen.kinds).toEqual(['SqliteLogBus', 'EmbeddedBm25KeywordIndex', 'EmbeddedHnswVectorStore']);
    expect(seen.embedded).toEqual([]);
  });
});
