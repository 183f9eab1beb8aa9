/**
 * The anonymous local mode through real HTTP (embedded platform on loopback, no keys configured): what a web page
 * could make the user's browser send is refused (cross-origin form posts: CSRF; a foreign Host: DNS rebinding), the
 * playground and curl keep working, and once a key has existed anonymous access never comes back — revoking the last
 * key leaves every request 401 until an operator creates one with the CLI. Also: multipart ids are validated like
 * JSON ids.
 */
import { request } from 'node:http';
import { SqliteApiKeyStore } from '@rag/adapters';
import { issueApiKey } from '@rag/services';
import { api, removeDir, startServer, type Server } from './harness';

interface Raw {
  status: number;
  body: { error?: { code: string; message: string } } & Record<string, unknown>;
}

/** A request with exactly these headers (fetch cannot set Host): what a browser or curl would send. */
function raw(server: Server, method: string, path: string, headers: Record<string, string>, body?: string | Buffer): Promise<Raw> {
  const url = new URL(server.url);
  return new Promise((resolve, reject) => {
    const req = request({ host: url.hostname, port: url.port, method, path, headers: { ...headers, ...(body !== undefined ? { 'content-length': String(Buffer.byteLength(body)) } : {}) } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        let parsed: Raw['body'] = {};
        try {
          parsed = JSON.parse(text) as Raw['body'];
        } catch {
          parsed = { text };
        }
        resolve({ status: res.statusCode ?? 0, body: parsed });
      });
    });
    req.on('error', reject);
    req.end(body);
  });
}

function multipart(fields: Record<string, string>, file: { name: string; type: string; content: string }): { type: string; body: Buffer } {
  const boundary = '----rag-test-boundary';
  const parts = Object.entries(fields).map(([k, v]) => `--${boundary}\r\ncontent-disposition: form-data; name="${k}"\r\n\r\n${v}\r\n`);
  parts.push(`--${boundary}\r\ncontent-disposition: form-data; name="file"; filename="${file.name}"\r\ncontent-type: ${file.type}\r\n\r\n${file.content}\r\n--${boundary}--\r\n`);
  return { type: `multipart/form-data; boundary=${boundary}`, body: Buffer.from(parts.join('')) };
}

const bearer = (key: string) => ({ authorization: `Bearer ${key}` });

describe('anonymous local mode: only requests no web page can forge (embedded, loopback, no keys)', () => {
  let server: Server;
  let host: string;
  let count: () => Promise<number>;
  beforeAll(async () => {
    server = await startServer();
    host = new URL(server.url).host;
    count = async () => ((await api(server, 'GET', '/v1/documents')).body as { documents: unknown[] }).documents.length;
  });
  afterAll(async () => {
    await server?.stop();
    if (server) removeDir(server.dataDir);
  });

  it('curl-style requests (no Origin) and the web console’s same-origin fetches are served', async () => {
    const port = new URL(server.url).port;
    expect((await raw(server, 'GET', '/v1/documents', { host })).status).toBe(200);
    expect((await raw(server, 'GET', '/v1/documents', { host: `localhost:${port}` })).status).toBe(200);
    const posted = await raw(server, 'POST', '/v1/documents', { host, 'content-type': 'application/json' }, JSON.stringify({ id: 'curl-doc', text: 'Posted by curl.' }));
    expect(posted.status, JSON.stringify(posted.body)).toBe(202);
    // The console page itself (built by `npm run build`), then its query fetch: a browser sends Origin on a same-origin POST.
    const page = await raw(server, 'GET', '/', { host });
    expect(page.status).toBe(200);
    expect(String(page.body.text)).toContain('<div id="app">');
    const q = await raw(server, 'POST', '/v1/query', { host, origin: server.url, 'content-type': 'application/json', 'sec-fetch-site': 'same-origin' }, JSON.stringify({ question: 'what did curl post?' }));
    expect(q.status, JSON.stringify(q.body)).toBe(200);
    expect(q.body).toHaveProperty('answer');
  });

  it('refuses cross-origin form and multipart posts (CSRF) with 403 and a message, and queues nothing', async () => {
    const before = await count();
    const evil = { host, origin: 'https://evil.example', 'sec-fetch-site': 'cross-site' };
    const form = await raw(server, 'POST', '/v1/documents', { ...evil, 'content-type': 'application/x-www-form-urlencoded' }, 'id=csrf&text=planted');
    expect(form.status).toBe(403);
    expect(form.body.error).toMatchObject({ code: 'forbidden', message: expect.stringMatching(/cross-origin/) });
    const mp = multipart({ id: 'csrf-mp' }, { name: 'x.txt', type: 'text/plain', content: 'planted' });
    const up = await raw(server, 'POST', '/v1/documents', { ...evil, 'content-type': mp.type }, mp.body);
    expect(up.status).toBe(403);
    // A form that would mint an admin key.
    expect((await raw(server, 'POST', '/v1/admin/api-keys', { ...evil, 'content-type': 'text/plain' }, '{"scopes":["admin"]}')).status).toBe(403);
    // Older browsers send no Origin on a form post: the content type alone is refused without a key.
    const noOrigin = await raw(server, 'POST', '/v1/documents', { host, 'content-type': mp.type }, mp.body);
    expect(noOrigin.status).toBe(403);
    expect(noOrigin.body.error?.message).toMatch(/CSRF.*send JSON/);
    const plain = await raw(server, 'POST', '/v1/query', { host, 'content-type': 'text/plain' }, '{"question":"x"}');
    expect(plain.status).toBe(403);
    // A JSON fetch from another origin (the browser would need a preflight this server never grants) is refused too.
    expect((await raw(server, 'POST', '/v1/retrieve', { ...evil, 'content-type': 'application/json' }, '{"query":"x"}')).status).toBe(403);
    expect(await count()).toBe(before);
    expect((await api(server, 'GET', '/v1/documents/csrf')).status).toBe(404);
  });

  it('refuses a foreign Host (DNS rebinding) on every API route, reads included', async () => {
    const port = new URL(server.url).port;
    for (const h of [`rebind.evil.example:${port}`, 'rebind.evil.example', `127.0.0.1.nip.io:${port}`, `localhost:${Number(port) === 1 ? 2 : 1}`]) {
      const r = await raw(server, 'GET', '/v1/documents', { host: h });
      expect(r.status, h).toBe(403);
      expect(r.body.error?.message, h).toMatch(/DNS rebinding/);
    }
    const post = await raw(server, 'POST', '/v1/admin/api-keys', { host: `rebind.evil.example:${port}`, origin: `http://rebind.evil.example:${port}`, 'content-type': 'application/json' }, '{"scopes":["admin"]}');
    expect(post.status).toBe(403);
    expect((await raw(server, 'GET', '/v1/admin/api-keys', { host })).body).toEqual({ api_keys: [] });
  });
});

describe('once a key has existed the anonymous mode stays closed, and multipart ids are validated (embedded)', () => {
  let server: Server;
  afterAll(async () => {
    await server?.stop();
    if (server) removeDir(server.dataDir);
  });

  it('revoking the last key leaves every request 401 (admin minting included), across a restart, until the CLI makes a key', async () => {
    server = await startServer();
    const created = await api(server, 'POST', '/v1/admin/api-keys', { scopes: ['admin', 'ingest', 'query'], unrestricted: true });
    expect(created.status).toBe(201);
    const { id, key } = created.body as { id: string; key: string };
    expect((await api(server, 'DELETE', `/v1/admin/api-keys/${id}`, undefined, bearer(key))).status).toBe(200);

    const expectClosed = async () => {
      const anon = await api<{ error: { message: string } }>(server, 'GET', '/v1/documents');
      expect(anon.status).toBe(401);
      expect(anon.body.error.message).toMatch(/revoked.*npm run rag -- keys create/);
      expect((await api(server, 'POST', '/v1/admin/api-keys', { scopes: ['admin'], unrestricted: true })).status).toBe(401);
      expect((await api(server, 'POST', '/v1/query', { question: 'x' })).status).toBe(401);
      expect((await api(server, 'GET', '/v1/documents', undefined, bearer(key))).status).toBe(401);
    };
    await expectClosed();
    const dataDir = server.dataDir;
    await server.stop();
    server = await startServer(dataDir);
    await expectClosed();

    // The operator's way back (`rag keys create` writes the store directly, the gateway running).
    const store = new SqliteApiKeyStore({ dir: dataDir });
    const fresh = await issueApiKey(store, { tenant: 'default', scopes: ['admin', 'ingest', 'query'], unrestricted: true });
    await store.close();
    expect((await api(server, 'GET', '/v1/documents', undefined, bearer(fresh.key))).status).toBe(200);
    expect((await api(server, 'GET', '/v1/documents')).status).toBe(401);

    // Multipart ids follow the JSON id schema: refused at the edge with 400, never queued to dead-letter later.
    const upload = (fields: Record<string, string>) => {
      const form = new FormData();
      form.append('file', new Blob(['Uploaded text.'], { type: 'text/plain' }), 'a.txt');
      for (const [k, v] of Object.entries(fields)) form.append(k, v);
      return api<{ error?: { code: string; message: string }; document_id?: string }>(server, 'POST', '/v1/documents', form, bearer(fresh.key));
    };
    for (const bad of ['has space', 'has#hash', 'x'.repeat(3000), '']) {
      const r = await upload({ id: bad });
      expect(r.status, bad.slice(0, 20)).toBe(400);
      expect(r.body.error).toMatchObject({ code: 'invalid_request', message: expect.stringMatching(/^id: /) });
      const json = await api<{ error?: { message: string } }>(server, 'POST', '/v1/documents', { id: bad, text: 'x' }, bearer(fresh.key));
      expect(json.status, `json ${bad.slice(0, 20)}`).toBe(400);
      // The same schema at the edge: the multipart answer is the JSON answer, word for word.
      expect(r.body.error?.message).toBe(json.body.error?.message);
    }
    const good = await upload({ id: 'multipart-ok', title: 'ok' });
    expect(good.status, JSON.stringify(good.body)).toBe(202);
    expect(good.body.document_id).toBe('multipart-ok');
  });
});
