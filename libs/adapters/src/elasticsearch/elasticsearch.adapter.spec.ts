import {
  BaseConnection,
  type ConnectionRequestOptions,
  type ConnectionRequestOptionsAsStream,
  type ConnectionRequestParams,
  type ConnectionRequestResponse,
  type ConnectionRequestResponseAsStream,
} from '@elastic/elasticsearch';
import type { Chunk } from '@rag/contracts';
import { setLogLevel } from '@rag/platform';
import { buildIndexBody, buildSearchBody, documentQuery } from '../keyword-search-core';
import { FixtureRouter } from '../keyword-search-core/testing/recorded-http';
import { ElasticsearchKeywordIndex } from './elasticsearch.adapter';
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
import unavailable from './fixtures/unavailable.json';
import { testChunk } from '@rag/contracts';

/*
 * Recorded-response tests: the real @elastic/elasticsearch 8 client, over a fake connection that serves JSON fixtures
 * shaped like Elasticsearch 8 responses (with the `x-elastic-product` header the client's product check requires).
 * No network. Asserts the HTTP requests the adapter makes and how it reads responses and errors.
 */

setLogLevel('silent');

const router = new FixtureRouter();

function buffered(body: string): Buffer {
  return Buffer.from(body);
}

const authHeaders: string[] = [];

class FixtureConnection extends BaseConnection {
  override request(params: ConnectionRequestParams, options: ConnectionRequestOptions): Promise<ConnectionRequestResponse>;
  override request(params: ConnectionRequestParams, options: ConnectionRequestOptionsAsStream): Promise<ConnectionRequestResponseAsStream>;
  override async request(
    params: ConnectionRequestParams,
    _options: ConnectionRequestOptions | ConnectionRequestOptionsAsStream,
  ): Promise<ConnectionRequestResponse | ConnectionRequestResponseAsStream> {
    const raw = typeof params.body === 'string' ? params.body : Buffer.isBuffer(params.body) ? params.body.toString('utf8') : undefined;
    authHeaders.push(String(params.headers?.['authorization'] ?? this.headers['authorization'] ?? ''));
    const res = router.handle(params.method, params.path, params.querystring, raw);
    return {
      statusCode: res.status,
      headers: { 'content-type': 'application/json', 'x-elastic-product': 'Elasticsearch' },
      body: buffered(res.body),
    };
  }
}

const chunk = (id: string, over: Partial<Chunk> = {}): Chunk =>
  testChunk(id, { tenant: 'default', title: 'Beijing', metadata: { lang: 'zh' }, text: '北京是中国的首都。', token_count: 9, ...over });

function makeIndex(): ElasticsearchKeywordIndex {
  return new ElasticsearchKeywordIndex({ node: 'http://es.invalid:9200', maxRetries: 0, clientOptions: { Connection: FixtureConnection } });
}

/** Routes of an index whose aliases already exist. */
function existingIndex(): void {
  router.on({ method: 'GET', path: '/_alias/rag-chunks-read', status: 200, body: getAlias });
  router.on({ method: 'GET', path: '/_alias/rag-chunks-write', status: 200, body: getAlias });
}

describe('ElasticsearchKeywordIndex (recorded responses)', () => {
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
    expect(await makeIndex().count()).toBe(42);
    expect(router.requests.some((r) => r.path === '/_aliases')).toBe(false);
  });

  it('search sends the core body as top-level params (same JSON as OpenSearch) and maps hits', async () => {
    existingIndex();
    router.on({ method: 'POST', path: '/rag-chunks-read/_search', status: 200, body: search });
    const req = { query: '中国的首都', k: 5, scope: { tenant: 'default', principals: ['g:eng'] }, filters: { lang: 'zh', year: { gte: 2020 } } };
    const hits = await makeIndex().search(req);
    expect(hits).toEqual([
      { chunk_id: 'upload:1#v1#0', document_id: 'upload:1', version: 1, score: 2.4123 },
      { chunk_id: 'upload:2#v3#7', document_id: 'upload:2', version: 3, score: 1.0067 },
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
    expect(await makeIndex().count('upload:1')).toBe(42);
    expect(router.dataRequests()[0]!.body).toEqual(documentQuery('upload:1'));
  });

  it('a partial bulk failure fails the upsert with the item reason', async () => {
    existingIndex();
    router.on({ method: 'POST', path: '/_bulk', status: 200, body: bulkPartialFailure });
    await expect(makeIndex().upsert([chunk('upload:1#v1#0'), chunk('upload:1#v1#1')])).rejects.toThrow(
      /1 of 2 chunks were not indexed; first: upload:1#v1#1 \(429\) es_rejected_execution_exception/,
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
    router.on({ method: 'POST', path: '/_reindex', status: 200, body: { took: 5, timed_out: false, total: 3, created: 3, updated: 0, version_conflicts: 0, failures: [] } });
    for (const method of ['GET', 'POST']) router.on({ method, path: '/rag-chunks-v2/_refresh', status: 200, body: { _shards: { total: 1, successful: 1, failed: 0 } } });
    const summary = await makeIndex().reindexAndSwap();
    expect(summary).toEqual({ from: 'rag-chunks-v1', to: 'rag-chunks-v2', copied: 3, skipped: 0, deletedOld: false });
    const aliasCalls = router.requests.filter((r) => r.path === '/_aliases').map((r) => r.body);
    expect(aliasCalls).toEqual([
      { actions: [{ remove: { index: 'rag-chunks-v1', alias: 'rag-chunks-write' } }, { add: { index: 'rag-chunks-v2', alias: 'rag-chunks-write', is_write_index: true } }] },
      { actions: [{ remove: { index: 'rag-chunks-v1', alias: 'rag-chunks-read' } }, { add: { index: 'rag-chunks-v2', alias: 'rag-chunks-read' } }] },
    ]);
    const reindex = router.requests.find((r) => r.path === '/_reindex')!;
    expect(reindex.body).toEqual({ source: { index: 'rag-chunks-v1' }, dest: { index: 'rag-chunks-v2', op_type: 'create' }, conflicts: 'proceed' });
    expect(reindex.query).toMatchObject({ wait_for_completion: 'true', refresh: 'true' });
  });

  it('API key auth goes into the Authorization header', async () => {
    authHeaders.length = 0;
    existingIndex();
    router.on({ method: 'POST', path: '/rag-chunks-read/_count', status: 200, body: count });
    const index = new ElasticsearchKeywordIndex({ node: 'http://es.invalid:9200', apiKey: 'c2VjcmV0', maxRetries: 0, clientOptions: { Connection: FixtureConnection } });
    await index.count();
    expect(authHeaders.length).toBeGreaterThan(0);
    expect(authHeaders.every((h) => h === 'ApiKey c2VjcmV0')).toBe(true);
  });
});
