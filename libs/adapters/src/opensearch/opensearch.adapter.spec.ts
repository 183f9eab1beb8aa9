import type { ClientRequest, IncomingMessage } from 'node:http';
import { Readable } from 'node:stream';
import { Connection } from '@opensearch-project/opensearch';
import type { Chunk } from '@rag/contracts';
import { setLogLevel } from '@rag/platform';
import { buildIndexBody, buildSearchBody, documentQuery } from '../keyword-search-core';
import { FixtureRouter } from '../keyword-search-core/testing/recorded-http';
import { OpenSearchKeywordIndex } from './opensearch.adapter';
import acknowledged from './fixtures/acknowledged.json';
import aliasMissing from './fixtures/alias-missing.json';
import bulkPartialFailure from './fixtures/bulk-partial-failure.json';
import bulk from './fixtures/bulk.json';
import count from './fixtures/count.json';
import createIndex from './fixtures/create-index.json';
import deleteByQuery from './fixtures/delete-by-query.json';
import getAlias from './fixtures/get-alias.json';
import indexExists from './fixtures/index-exists.json';
import mget from './fixtures/mget.json';
import search from './fixtures/search.json';
import refresh from './fixtures/refresh.json';
import reindexFixture from './fixtures/reindex.json';
import unavailable from './fixtures/unavailable.json';
import { testChunk } from '@rag/contracts';

/*
 * Recorded-response tests: the real @opensearch-project/opensearch client, over a fake connection that serves JSON
 * fixtures recorded from a live OpenSearch 2.19.1 (index names rewritten to the default `rag-chunks` prefix; only
 * `unavailable.json`, a 503, is hand-written). No network. Asserts the HTTP requests the adapter
 * makes (bodies in `body`) and how it reads responses and errors. The same scenarios run against a live OpenSearch in
 * test/infra/opensearch.infra.spec.ts.
 */

setLogLevel('silent');

const router = new FixtureRouter();
const authHeaders: string[] = [];

interface OpenSearchRequestParams {
  method: string;
  path: string;
  querystring?: string;
  body?: string | Buffer | null;
  headers?: Record<string, string>;
}

class FixtureConnection extends Connection {
  override request(params: OpenSearchRequestParams, callback: (err: Error | null, response: IncomingMessage | null) => void): ClientRequest {
    const raw = typeof params.body === 'string' ? params.body : Buffer.isBuffer(params.body) ? params.body.toString('utf8') : undefined;
    authHeaders.push(String(params.headers?.['authorization'] ?? this.headers['authorization'] ?? ''));
    const res = router.handle(params.method, params.path, params.querystring, raw);
    const stream = Readable.from([Buffer.from(res.body)]) as unknown as IncomingMessage;
    stream.statusCode = res.status;
    stream.headers = { 'content-type': 'application/json; charset=UTF-8', 'content-length': String(Buffer.byteLength(res.body)) };
    process.nextTick(callback, null, stream);
    return { abort: () => undefined } as unknown as ClientRequest;
  }
}

const chunk = (id: string, over: Partial<Chunk> = {}): Chunk =>
  testChunk(id, { tenant: 'default', title: 'Beijing', metadata: { lang: 'zh' }, text: '北京是中国的首都。', token_count: 9, ...over });

function makeIndex(): OpenSearchKeywordIndex {
  return new OpenSearchKeywordIndex({ node: 'http://os.invalid:9200', maxRetries: 0, clientOptions: { Connection: FixtureConnection } });
}

/** Routes of an index whose aliases already exist. */
function existingIndex(): void {
  router.on({ method: 'GET', path: '/_alias/rag-chunks-read', status: 200, body: getAlias });
  router.on({ method: 'GET', path: '/_alias/rag-chunks-write', status: 200, body: getAlias });
}

describe('OpenSearchKeywordIndex (recorded responses)', () => {
  beforeEach(() => router.reset());

  it('first use: creates rag-chunks-v1 with mappings, similarity and both aliases; bulk without refresh, then a refresh of the write alias', async () => {
    router.on({ method: 'GET', path: '/_alias/rag-chunks-read', status: 404, body: aliasMissing });
    router.on({ method: 'PUT', path: '/rag-chunks-v1', status: 200, body: createIndex });
    router.on({ method: 'POST', path: '/_bulk', status: 200, body: bulk });
    for (const method of ['GET', 'POST']) router.on({ method, path: '/rag-chunks-write/_refresh', status: 200, body: { _shards: { total: 1, successful: 1, failed: 0 } } });
    const index = makeIndex();
    await index.upsert([chunk('upload:1#v1#0'), chunk('upload:1#v1#1')]);

    const [getAliasReq, create, bulkReq] = router.requests;
    expect(getAliasReq).toMatchObject({ method: 'GET', path: '/_alias/rag-chunks-read' });
    expect(create!.method).toBe('PUT');
    expect(create!.path).toBe('/rag-chunks-v1');
    const expected = buildIndexBody();
    expect(create!.body).toEqual({
      settings: expected.settings,
      mappings: expected.mappings,
      aliases: { 'rag-chunks-read': {}, 'rag-chunks-write': { is_write_index: true } },
    });
    expect(bulkReq!.query).toMatchObject({ refresh: 'false' });
    expect(router.requests.at(-1)).toMatchObject({ path: '/rag-chunks-write/_refresh' }); // the clients send it as GET or POST
    const lines = bulkReq!.body as Array<Record<string, unknown>>;
    expect(lines).toHaveLength(4);
    expect(lines[0]).toEqual({ index: { _index: 'rag-chunks-write', _id: 'upload:1#v1#0' } });
    expect(lines[1]).toMatchObject({ chunk_id: 'upload:1#v1#0', tenant: 'default', kind: 'child', md_s: { lang: 'zh' } });
    expect(String(lines[1]!['text_seg']).split(' ')).toContain('首都');
  });

  it('another process created the index first: resource_already_exists is fine, aliases are checked', async () => {
    router.on({ method: 'GET', path: '/_alias/rag-chunks-read', status: 404, body: aliasMissing, times: 1 });
    router.on({ method: 'PUT', path: '/rag-chunks-v1', status: 400, body: indexExists });
    router.on({ method: 'GET', path: '/_alias/rag-chunks-read', status: 200, body: getAlias });
    router.on({ method: 'GET', path: '/_alias/rag-chunks-write', status: 200, body: getAlias });
    router.on({ method: 'POST', path: '/rag-chunks-read/_count', status: 200, body: count });
    expect(await makeIndex().count()).toBe(2);
    expect(router.requests.some((r) => r.path === '/_aliases')).toBe(false);
  });

  it('search sends the core body in `body` (same JSON as Elasticsearch) and maps hits', async () => {
    existingIndex();
    router.on({ method: 'POST', path: '/rag-chunks-read/_search', status: 200, body: search });
    const req = { query: '中国的首都', k: 5, scope: { tenant: 'default', principals: ['g:eng'] }, filters: { lang: 'zh', year: { gte: 2020 } } };
    const hits = await makeIndex().search(req);
    expect(hits).toEqual([
      { chunk_id: 'upload:1#v1#0', document_id: 'upload:1', version: 1, score: 0.7213901 },
      { chunk_id: 'upload:2#v3#7', document_id: 'upload:2', version: 3, score: 0.36069506 },
      { chunk_id: 'upload:1#v1#1', document_id: 'upload:1', version: 1, score: 0.34513485 },
    ]);
    const sent = router.dataRequests()[0]!;
    expect(sent.method).toBe('POST');
    expect(sent.body).toEqual(JSON.parse(JSON.stringify(buildSearchBody(req))));
  });

  it('getChunks: _mget on the read alias for the chunk source; missing ids skipped', async () => {
    existingIndex();
    router.on({ method: 'POST', path: '/rag-chunks-read/_mget', status: 200, body: mget });
    const got = await makeIndex().getChunks(['upload:1#v1#0', 'upload:9#v1#0']);
    expect(got).toEqual([chunk('upload:1#v1#0')]);
    const sent = router.dataRequests()[0]!;
    expect(sent.body).toEqual({ ids: ['upload:1#v1#0', 'upload:9#v1#0'] });
    expect(sent.query).toMatchObject({ _source_includes: 'chunk' });
  });

  it('deleteDocument: _delete_by_query on both aliases with conflicts=proceed and refresh', async () => {
    existingIndex();
    router.on({ method: 'POST', path: '/rag-chunks-write,rag-chunks-read/_delete_by_query', status: 200, body: deleteByQuery });
    expect(await makeIndex().deleteDocument('upload:1', 2)).toBe(2);
    const sent = router.dataRequests()[0]!;
    expect(sent.query).toMatchObject({ conflicts: 'proceed', refresh: 'true' });
    expect(sent.body).toEqual(documentQuery('upload:1', 2));
  });

  it('count: _count with a document query', async () => {
    existingIndex();
    router.on({ method: 'POST', path: '/rag-chunks-read/_count', status: 200, body: count });
    expect(await makeIndex().count('upload:1')).toBe(2);
    expect(router.dataRequests()[0]!.body).toEqual(documentQuery('upload:1'));
  });

  it('a partial bulk failure fails the upsert with the item reason', async () => {
    existingIndex();
    router.on({ method: 'POST', path: '/_bulk', status: 200, body: bulkPartialFailure });
    await expect(makeIndex().upsert([chunk('upload:1#v1#0'), chunk('upload:1#v1#1')])).rejects.toThrow(
      /1 of 2 chunks were not indexed; first: upload:1#v1#1 \(400\) strict_dynamic_mapping_exception: mapping set to strict/,
    );
  });

  it('a 503 search becomes AppError(unavailable)', async () => {
    existingIndex();
    router.on({ method: 'POST', path: '/rag-chunks-read/_search', status: 503, body: unavailable });
    await expect(makeIndex().search({ query: 'wing', k: 3, scope: { tenant: 'default' } })).rejects.toMatchObject({ code: 'unavailable' });
  });

  it('blue/green reindex: create v2, move write alias, _reindex (op_type create), swap read alias', async () => {
    existingIndex();
    router.on({ method: 'PUT', path: '/rag-chunks-v2', status: 200, body: createIndex });
    router.on({ method: 'POST', path: '/_aliases', status: 200, body: acknowledged });
    router.on({ method: 'POST', path: '/_reindex', status: 200, body: reindexFixture });
    for (const method of ['GET', 'POST']) router.on({ method, path: '/rag-chunks-v2/_refresh', status: 200, body: refresh });
    const summary = await makeIndex().reindexAndSwap();
    expect(summary).toEqual({ from: 'rag-chunks-v1', to: 'rag-chunks-v2', copied: 1, skipped: 0, deletedOld: false });
    const aliasCalls = router.requests.filter((r) => r.path === '/_aliases').map((r) => r.body);
    expect(aliasCalls).toEqual([
      { actions: [{ remove: { index: 'rag-chunks-v1', alias: 'rag-chunks-write' } }, { add: { index: 'rag-chunks-v2', alias: 'rag-chunks-write', is_write_index: true } }] },
      { actions: [{ remove: { index: 'rag-chunks-v1', alias: 'rag-chunks-read' } }, { add: { index: 'rag-chunks-v2', alias: 'rag-chunks-read' } }] },
    ]);
    const reindex = router.requests.find((r) => r.path === '/_reindex')!;
    expect(reindex.body).toEqual({ source: { index: 'rag-chunks-v1' }, dest: { index: 'rag-chunks-v2', op_type: 'create' }, conflicts: 'proceed' });
    expect(reindex.query).toMatchObject({ wait_for_completion: 'true', refresh: 'true' });
  });

  it('basic auth goes into the Authorization header', async () => {
    authHeaders.length = 0;
    existingIndex();
    router.on({ method: 'POST', path: '/rag-chunks-read/_count', status: 200, body: count });
    const index = new OpenSearchKeywordIndex({
      node: 'http://os.invalid:9200',
      auth: { username: 'admin', password: 'pw' },
      maxRetries: 0,
      clientOptions: { Connection: FixtureConnection },
    });
    await index.count();
    expect(authHeaders.length).toBeGreaterThan(0);
    expect(authHeaders.every((h) => h === `Basic ${Buffer.from('admin:pw').toString('base64')}`)).toBe(true);
  });

  it('per-request timeouts reach the connection', async () => {
    const timeouts: unknown[] = [];
    class TimeoutConnection extends FixtureConnection {
      override request(params: OpenSearchRequestParams & { timeout?: number }, callback: (err: Error | null, response: IncomingMessage | null) => void): ClientRequest {
        timeouts.push(params.timeout);
        return super.request(params, callback);
      }
    }
    existingIndex();
    router.on({ method: 'POST', path: '/rag-chunks-read/_count', status: 200, body: count });
    const index = new OpenSearchKeywordIndex({ node: 'http://os.invalid:9200', timeoutMs: 1234, maxRetries: 0, clientOptions: { Connection: TimeoutConnection } });
    await index.count();
    expect(timeouts.at(-1)).toBe(1234);
  });
});
