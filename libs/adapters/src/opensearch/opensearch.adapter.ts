import { Client, type API, type ClientOptions } from '@opensearch-project/opensearch';
import {
  SearchEngineKeywordIndex,
  errorStatus,
  errorType,
  parseAliasResponse,
  type AliasAction,
  type BulkRefresh,
  type CreateIndexRequest,
  type KeywordEngineClient,
  type QueryBody,
  type SearchBody,
  type SearchEngineKeywordIndexOptions,
} from '../keyword-search-core';

/**
 * OpenSearch 2.x keyword index (`@opensearch-project/opensearch` 3.x client): a thin transport over the shared
 * keyword-search core (`../keyword-search-core`), which owns the index layout, the query/filter translation, the
 * bulk/delete bodies, response validation and blue/green aliases. Request bodies go in `body`; the client returns
 * `{ body, statusCode, … }`.
 *
 * Tested by recorded-response unit tests (`opensearch.adapter.spec.ts`) and against a real OpenSearch 2.19
 * (`test/infra/opensearch.infra.spec.ts`).
 */
export interface OpenSearchKeywordIndexOptions extends SearchEngineKeywordIndexOptions {
  /** Base URL (RAG_OPENSEARCH_URL, default http://127.0.0.1:9200). */
  node?: string;
  /** Basic auth, when the cluster has the security plugin enabled. */
  auth?: { username: string; password: string };
  /** Client retries on connection errors (default 1). */
  maxRetries?: number;
  /** Extra client options (TLS, a custom Connection in tests, …). */
  clientOptions?: Omit<ClientOptions, 'node' | 'nodes'>;
  /** A ready client (the index then still closes it on close()). */
  client?: Client;
}

/** `KeywordEngineClient` over the OpenSearch client. */
export class OpenSearchEngineClient implements KeywordEngineClient {
  readonly engine = 'opensearch' as const;

  constructor(private readonly client: Client) {}

  private opts(timeoutMs: number): { requestTimeout: number } {
    return { requestTimeout: timeoutMs };
  }

  async getAliasTargets(alias: string, timeoutMs: number): Promise<string[]> {
    try {
      const res = await this.client.indices.getAlias({ name: alias }, this.opts(timeoutMs));
      return parseAliasResponse(res.body);
    } catch (e) {
      if (errorStatus(e) === 404) return [];
      throw e;
    }
  }

  async createIndex(index: string, body: CreateIndexRequest, timeoutMs: number): Promise<'created' | 'exists'> {
    try {
      await this.client.indices.create({ index, body: body as unknown as API.Indices_Create_RequestBody }, this.opts(timeoutMs));
      return 'created';
    } catch (e) {
      if (errorStatus(e) === 400 && errorType(e) === 'resource_already_exists_exception') return 'exists';
      throw e;
    }
  }

  async deleteIndex(index: string, timeoutMs: number): Promise<void> {
    await this.client.indices.delete({ index }, this.opts(timeoutMs));
  }

  async listIndices(pattern: string, timeoutMs: number): Promise<string[]> {
    const res = await this.client.indices.get({ index: pattern, allow_no_indices: true, expand_wildcards: ['open', 'closed'] }, this.opts(timeoutMs));
    return Object.keys(res.body ?? {}).sort();
  }

  async updateAliases(actions: AliasAction[], timeoutMs: number): Promise<void> {
    await this.client.indices.updateAliases({ body: { actions: actions as API.Indices_UpdateAliases_RequestBody['actions'] } }, this.opts(timeoutMs));
  }

  async bulk(operations: object[], refresh: BulkRefresh, timeoutMs: number): Promise<unknown> {
    const res = await this.client.bulk({ body: operations as API.Bulk_RequestBody, refresh }, this.opts(timeoutMs));
    return res.body;
  }

  async search(index: string, body: SearchBody, timeoutMs: number): Promise<unknown> {
    const res = await this.client.search({ index, body: body as unknown as API.Search_RequestBody }, this.opts(timeoutMs));
    return res.body;
  }

  async mget(index: string, ids: string[], sourceIncludes: string[], timeoutMs: number): Promise<unknown> {
    const res = await this.client.mget({ index, body: { ids }, _source_includes: sourceIncludes }, this.opts(timeoutMs));
    return res.body;
  }

  async deleteByQuery(indices: string[], body: QueryBody, timeoutMs: number): Promise<unknown> {
    const res = await this.client.deleteByQuery(
      { index: indices, body: body as unknown as API.DeleteByQuery_RequestBody, conflicts: 'proceed', refresh: true },
      this.opts(timeoutMs),
    );
    return res.body;
  }

  async count(index: string, body: QueryBody, timeoutMs: number): Promise<unknown> {
    const res = await this.client.count({ index, body: body as unknown as API.Count_RequestBody }, this.opts(timeoutMs));
    return res.body;
  }

  async reindex(source: string, dest: string, timeoutMs: number): Promise<unknown> {
    const res = await this.client.reindex(
      {
        body: { source: { index: source }, dest: { index: dest, op_type: 'create' }, conflicts: 'proceed' },
        wait_for_completion: true,
        refresh: true,
        timeout: `${Math.ceil(timeoutMs / 1000)}s`,
      },
      this.opts(timeoutMs),
    );
    return res.body;
  }

  async refresh(index: string, timeoutMs: number): Promise<void> {
    await this.client.indices.refresh({ index }, this.opts(timeoutMs));
  }

  async close(): Promise<void> {
    await this.client.close();
  }
}

export class OpenSearchKeywordIndex extends SearchEngineKeywordIndex {
  constructor(opts: OpenSearchKeywordIndexOptions = {}) {
    const client =
      opts.client ??
      new Client({
        ...opts.clientOptions,
        node: opts.node ?? 'http://127.0.0.1:9200',
        auth: opts.auth,
        maxRetries: opts.maxRetries ?? 1,
        requestTimeout: opts.timeoutMs ?? 10_000,
      });
    super(new OpenSearchEngineClient(client), opts);
  }
}
