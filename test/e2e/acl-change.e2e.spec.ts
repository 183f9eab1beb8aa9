/**
 * Issue 11, item 1, embedded mode (HNSW + BM25) through the HTTP API: a narrowed ACL, a new title and new metadata
 * sent with an unchanged body reach both stores and the answers; the same body and attributes again stay a no-op.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SqliteApiKeyStore } from '@rag/adapters';
import { issueApiKey } from '@rag/services';
import { bearer, type Call } from './access-scenario';
import { changeMetadata, changeTitle, indexFirstVersion, narrowAcl, resendUnchanged, type Principals } from './attribute-change-scenario';
import { api, removeDir, startServer, type Server } from './harness';

describe('attribute changes with an unchanged body (embedded platform, end to end)', () => {
  let server: Server;
  let p: Principals;
  const call: Call = (method, path, body, headers) => api(server, method, path, body, headers);

  beforeAll(async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'rag-acl-change-'));
    const store = new SqliteApiKeyStore({ dir: dataDir });
    const key = async (spec: Parameters<typeof issueApiKey>[1]) => bearer((await issueApiKey(store, spec)).key);
    p = {
      writer: await key({ tenant: 'acme', scopes: ['ingest', 'query'], unrestricted: true, name: 'writer' }),
      everyone: await key({ tenant: 'acme', scopes: ['query'], name: 'no groups' }),
      hr: await key({ tenant: 'acme', scopes: ['query'], groups: ['hr'], name: 'hr' }),
    };
    await store.close();
    server = await startServer(dataDir, { RAG_RATE_LIMIT_RPS: '100000', RAG_RATE_LIMIT_BURST: '100000' });
    await indexFirstVersion(call, p);
  });
  afterAll(async () => {
    await server?.stop();
    if (server) removeDir(server.dataDir);
  });

  it('a narrowed ACL with the same text: a key without groups no longer retrieves it nor gets it cited; group hr does', async () => {
    await narrowAcl(call, p);
  });

  it('a new title with the same text: results and citations carry the new title', async () => {
    await changeTitle(call, p);
  });

  it('new metadata with the same text: a filter on the new value finds it, the old value does not', async () => {
    await changeMetadata(call, p);
  });

  it('the same body and attributes in other bytes keep the active version (nothing rewritten)', async () => {
    await resendUnchanged(call, p);
  });
});
