import type { ChunkDocument } from '../documents';
import type { AliasAction, BulkRefresh, CreateIndexRequest, KeywordEngineClient } from '../engine-client';
import type { QueryBody, SearchBody } from '../query';
import { evaluate } from './query-evaluator';

/**
 * Test support: an in-memory `KeywordEngineClient` that answers with Elasticsearch/OpenSearch-shaped JSON bodies.
 * Filters are evaluated with the engine semantics of `query-evaluator.ts`; scoring is a plain count of shared
 * `text_seg` tokens (enough to order results in contract tests, not BM25). Records every call.
 */
export class MemoryEngine implements KeywordEngineClient {
  readonly engine = 'opensearch' as const;
  readonly indices = new Map<string, { body: CreateIndexRequest; docs: Map<string, ChunkDocument> }>();
  /** alias → (index → is_write_index) */
  readonly aliases = new Map<string, Map<string, boolean>>();
  readonly calls: Array<{ op: string; args: unknown[] }> = [];
  /** Make the next call of this op throw this error. */
  failNext: { op: string; error: unknown } | null = null;
  /** Make this op never answer. */
  hang: string | null = null;
  closed = false;

  private async rec<T>(op: string, args: unknown[], fn: () => T): Promise<T> {
    this.calls.push({ op, args });
    if (this.hang === op) return new Promise<T>(() => undefined);
    if (this.failNext && this.failNext.op === op) {
      const e = this.failNext.error;
      this.failNext = null;
      throw e;
    }
    return fn();
  }

  ops(): string[] {
    return this.calls.map((c) => c.op);
  }

  private resolve(target: string): string[] {
    const a = this.aliases.get(target);
    if (a) return [...a.keys()];
    if (this.indices.has(target)) return [target];
    throw Object.assign(new Error(`no such index [${target}]`), { meta: { statusCode: 404 }, body: { error: { type: 'index_not_found_exception' } } });
  }

  private writeIndex(alias: string): string {
    const a = this.aliases.get(alias);
    if (!a) return this.resolve(alias)[0]!;
    const targets = [...a.entries()];
    const w = targets.find(([, isWrite]) => isWrite) ?? (targets.length === 1 ? targets[0] : undefined);
    if (!w) throw new Error(`alias [${alias}] has no write index`);
    return w[0];
  }

  getAliasTargets(alias: string): Promise<string[]> {
    return this.rec('getAliasTargets', [alias], () => [...(this.aliases.get(alias)?.keys() ?? [])].sort());
  }

  createIndex(index: string, body: CreateIndexRequest): Promise<'created' | 'exists'> {
    return this.rec('createIndex', [index, body], () => {
      if (this.indices.has(index)) return 'exists' as const;
      this.indices.set(index, { body, docs: new Map() });
      for (const [alias, opts] of Object.entries(body.aliases ?? {})) {
        const m = this.aliases.get(alias) ?? new Map<string, boolean>();
        m.set(index, opts.is_write_index === true);
        this.aliases.set(alias, m);
      }
      return 'created' as const;
    });
  }

  deleteIndex(index: string): Promise<void> {
    return this.rec('deleteIndex', [index], () => {
      this.indices.delete(index);
      for (const m of this.aliases.values()) m.delete(index);
      for (const [alias, m] of [...this.aliases]) if (m.size === 0) this.aliases.delete(alias);
    });
  }

  listIndices(pattern: string): Promise<string[]> {
    const re = new RegExp(`^${pattern.split('*').map((p) => p.replace(/[.+?^${}()|[\]\\-]/g, '\\$&')).join('.*')}$`);
    return this.rec('listIndices', [pattern], () => [...this.indices.keys()].filter((i) => re.test(i)).sort());
  }

  updateAliases(actions: AliasAction[]): Promise<void> {
    return this.rec('updateAliases', [actions], () => {
      for (const a of actions) {
        if (a.remove) this.aliases.get(a.remove.alias)?.delete(a.remove.index);
        if (a.add) {
          const m = this.aliases.get(a.add.alias) ?? new Map<string, boolean>();
          m.set(a.add.index, a.add.is_write_index === true);
          this.aliases.set(a.add.alias, m);
        }
      }
      for (const [alias, m] of [...this.aliases]) if (m.size === 0) this.aliases.delete(alias);
    });
  }

  bulk(operations: object[], refresh: BulkRefresh): Promise<unknown> {
    return this.rec('bulk', [operations, refresh], () => {
      const items: unknown[] = [];
      for (let i = 0; i < operations.length; i += 2) {
        const action = (operations[i] as { index: { _index: string; _id: string } }).index;
        const source = JSON.parse(JSON.stringify(operations[i + 1])) as ChunkDocument;
        const index = this.writeIndex(action._index);
        const docs = this.indices.get(index)!.docs;
        const existed = docs.has(action._id);
        docs.set(action._id, source);
        items.push({ index: { _index: index, _id: action._id, _version: 1, result: existed ? 'updated' : 'created', status: existed ? 200 : 201 } });
      }
      return { took: 1, errors: false, items };
    });
  }

  search(index: string, body: SearchBody): Promise<unknown> {
    return this.rec('search', [index, body], () => {
      const hits: Array<{ _index: string; _id: string; _score: number; _source: Record<string, unknown> }> = [];
      for (const i of this.resolve(index)) {
        for (const [id, doc] of this.indices.get(i)!.docs) {
          if (!evaluate(body.query, doc)) continue;
          const q = (body.query as { bool: { should: Array<{ match?: { text_seg?: { query: string } } }> } }).bool.should[0]?.match?.text_seg?.query ?? '';
          const docTokens = (doc.text_seg ?? '').split(' ');
          const score = q.split(' ').reduce((s, t) => s + docTokens.filter((d) => d === t).length, 0);
          hits.push({ _index: i, _id: id, _score: score, _source: { chunk_id: doc.chunk_id, document_id: doc.document_id, version: doc.version } });
        }
      }
      // Score only, ties in index order (what Lucene does for a score-only sort: the lower doc id first), not by chunk id.
      hits.sort((a, b) => b._score - a._score);
      return { took: 1, timed_out: false, _shards: { total: 1, successful: 1, skipped: 0, failed: 0 }, hits: { max_score: hits[0]?._score ?? null, hits: hits.slice(0, body.size) } };
    });
  }

  mget(index: string, ids: string[], sourceIncludes: string[]): Promise<unknown> {
    return this.rec('mget', [index, ids, sourceIncludes], () => {
      const target = this.resolve(index)[0]!;
      const docs = this.indices.get(target)!.docs;
      return {
        docs: ids.map((id) => {
          const d = docs.get(id);
          return d ? { _index: target, _id: id, _version: 1, found: true, _source: { chunk: d.chunk } } : { _index: target, _id: id, found: false };
        }),
      };
    });
  }

  deleteByQuery(indices: string[], body: QueryBody): Promise<unknown> {
    return this.rec('deleteByQuery', [indices, body], () => {
      const targets = new Set(indices.flatMap((i) => this.resolve(i)));
      let deleted = 0;
      for (const t of targets) {
        const docs = this.indices.get(t)!.docs;
        for (const [id, doc] of [...docs]) {
          if (evaluate(body.query, doc)) {
            docs.delete(id);
            deleted++;
          }
        }
      }
      return { took: 1, timed_out: false, total: deleted, deleted, batches: 1, version_conflicts: 0, noops: 0, failures: [] };
    });
  }

  count(index: string, body: QueryBody): Promise<unknown> {
    return this.rec('count', [index, body], () => {
      let n = 0;
      for (const i of this.resolve(index)) for (const doc of this.indices.get(i)!.docs.values()) if (evaluate(body.query, doc)) n++;
      return { count: n, _shards: { total: 1, successful: 1, skipped: 0, failed: 0 } };
    });
  }

  reindex(source: string, dest: string): Promise<unknown> {
    return this.rec('reindex', [source, dest], () => {
      const from = this.indices.get(this.resolve(source)[0]!)!.docs;
      const to = this.indices.get(this.resolve(dest)[0]!)!.docs;
      let created = 0;
      let conflicts = 0;
      for (const [id, doc] of from) {
        if (to.has(id)) conflicts++;
        else {
          to.set(id, doc);
          created++;
        }
      }
      return { took: 1, timed_out: false, total: from.size, updated: 0, created, deleted: 0, batches: 1, version_conflicts: conflicts, noops: 0, failures: [] };
    });
  }

  refresh(index: string): Promise<void> {
    return this.rec('refresh', [index], () => undefined);
  }

  close(): Promise<void> {
    return this.rec('close', [], () => {
      this.closed = true;
    });
  }
}
