/*
 * Elasticsearch cannot run on the development/CI machines of this project (no registry here ships a runnable
 * Elasticsearch 8.x/9.x), so this adapter is NOT tested against a live server. It is covered by
 *   - the shared keyword-search core's contract tests (`../keyword-search-core/*.spec.ts`: mappings, query and filter
 *     semantics checked against `matches()`, bulk/delete bodies, aliases/reindex flow), which it shares verbatim with
 *     the OpenSearch adapter — and that one IS tested against a real OpenSearch 2.19 (`test/infra/opensearch.infra.spec.ts`);
 *   - recorded-response unit tests (`elasticsearch.adapter.spec.ts`) that run the real `@elastic/elasticsearch` 8 client
 *     over a fake connection serving JSON fixtures shaped like Elasticsearch 8 responses, checking the HTTP requests the
 *     client sends (method, path, query string, body) and how responses and errors are handled.
 * Mapping note: `flattened` is not used for metadata (it indexes every leaf as a keyword, so numeric ranges would
 * compare strings); the typed dynamic `md_*` fields of the core behave the same on Elasticsearch and OpenSearch.
 */
import { Client, type ClientOptions, type estypes } from '@elastic/elasticsearch';
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
 * Elasticsearch 8 keyword index (`@elastic/elasticsearch` 8 client): a thin transport over the shared keyword-search
 * core, which owns the index layout, query/filter translation, bulk/delete bodies, response validation and
 * blue/green aliases. Request bodies are passed as top-level parameters (the 8.x style); the client returns the
 * response body itself.
 */
export interface ElasticsearchKeywordIndexOptions extends SearchEngineKeywordIndexOptions {
  /** Base URL (RAG_ELASTICSEARCH_URL, default http://127.0.0.1:9200). */
  node?: string;
  /** API key (RAG_ELASTICSEARCH_API_KEY). */
  apiKey?: string;
  /** Basic auth (alternative to the API key). */
  auth?: { username: string; password: string };
  /** Client retries on connection errors (default 1). */
  maxRetries?: number;
  /** Extra client options (TLS, Elastic Cloud id, a custom Connection in tests, …). */
  clientOptions?: Omit<ClientOptions, 'node' | 'nodes' | 'auth'>;
  /** A ready client (the index then still closes it on close()). */
  client?: Client;
}

/** `KeywordEngineClient` over the Elasticsearch 8 client. */
export class ElasticsearchEngineClient implements KeywordEngineClient {
  readonly engine = 'elasticsearch' as const;

  constructor(private readonly client: Client) {}

  private opts(timeoutMs: number): { requestTimeout: number } {
    return { requestTimeout: timeoutMs };
  }

  async getAliasTargets(alias: string, timeoutMs: number): Promise<string[]> {
    try {
      return parseAliasResponse(await this.client.indices.getAlias({ name: alias }, this.opts(timeoutMs)));
    } catch (e) {
      if (errorStatus(e) === 404) return [];
      throw e;
    }
  }

  async createIndex(index: string, body: CreateIndexRequest, timeoutMs: number): Promise<'created' | 'exists'> {
    try {
      await this.client.indices.create(
        {
          index,
          settings: body.settings as estypes.IndicesIndexSettings,
          mappings: body.mappings as unknown as estypes.MappingTypeMapping,
          aliases: body.aliases,
        },
        this.opts(timeoutMs),
      );
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
    return Object.keys(res).sort();
  }

  async updateAliases(actions: AliasAction[], timeoutMs: number): Promise<void> {
    await this.client.indices.updateAliases({ actions: actions as estypes.IndicesUpdateAliasesAction[] }, this.opts(timeoutMs));
  }

  async bulk(operations: object[], refresh: BulkRefresh, timeoutMs: number): Promise<unknown> {
    return this.client.bulk({ operations: operations as estypes.BulkRequest['operations'], refresh }, this.opts(timeoutMs));
  }

  async search(index: string, body: SearchBody, timeoutMs: number): Promise<unknown> {
    return this.client.search(
      {
        index,
        size: body.size,
        query: body.query as unknown as estypes.QueryDslQueryContainer,
        _source: body._source,
        track_total_hits: body.track_total_hits,
      },
      this.opts(timeoutMs),
    );
  }

  async mget(index: string, ids: string[], sourceIncludes: string[], timeoutMs: number): Promise<unknown> {
    return this.client.mget({ index, ids, _source_includes: sourceIncludes }, this.opts(timeoutMs));
  }

  async deleteByQuery(indices: string[], body: QueryBody, timeoutMs: number): Promise<unknown> {
    return this.client.deleteByQuery(
      { index: indices, query: body.query as unknown as estypes.QueryDslQueryContainer, conflicts: 'proceed', refresh: true },
      this.opts(timeoutMs),
    );
  }

  async count(index: string, body: QueryBody, timeoutMs: number): Promise<unknown> {
    return this.client.count({ index, query: body.query as unknown as estypes.QueryDslQueryContainer }, this.opts(timeoutMs));
  }

  async reindex(source: string, dest: string, timeoutMs: number): Promise<unknown> {
    return this.client.reindex(
      {
        source: { index: source },
        dest: { index: dest, op_type: 'create' },
        conflicts: 'proceed',
        wait_for_completion: true,
        refresh: true,
        timeout: `${Math.ceil(timeoutMs / 1000)}s`,
      },
      this.opts(timeoutMs),
    );
  }

  async refresh(index: string, timeoutMs: number): Promise<void> {
    await this.client.indices.refresh({ index }, this.opts(timeoutMs));
  }

  async close(): Promise<void> {
    await this.client.close();
  }
}

export class ElasticsearchKeywordIndex extends SearchEngineKeywordIndex {
  constructor(opts: ElasticsearchKeywordIndexOptions = {}) {
    const auth = opts.apiKey ? { apiKey: opts.apiKey } : opts.auth;
    const client =
      opts.client ??
      new Client({
        ...opts.clientOptions,
        node: opts.node ?? 'http://127.0.0.1:9200',
        ...(auth ? { auth } : {}),
        maxRetries: opts.maxRetries ?? 1,
        requestTimeout: opts.timeoutMs ?? 10_000,
      });
    super(new ElasticsearchEngineClient(client), opts);
  }
}
