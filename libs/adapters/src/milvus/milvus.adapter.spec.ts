import {
  ConsistencyLevelEnum,
  DataType,
  type BoolResponse,
  type CreateCollectionReq,
  type CreateIndexSimpleReq,
  type DeleteEntitiesReq,
  type DescribeCollectionResponse,
  type DescribeIndexResponse,
  type GetFlushStateResponse,
  type InsertReq,
  type MutationResult,
  type QueryReq,
  type QueryResults,
  type ResStatus,
  type SearchResults,
  type SearchSimpleReq,
} from '@zilliz/milvus2-sdk-node';
import { setLogLevel } from '@rag/platform';
import type { VectorRecord } from '@rag/ports';
import { MilvusVectorStore, milvusCollectionName, type MilvusClientLike } from './milvus.adapter';

setLogLevel('silent');

const OK: ResStatus = { error_code: 'Success', reason: '' };

function mutation(extra: Partial<MutationResult> = {}): MutationResult {
  return {
    status: OK,
    succ_index: [],
    err_index: [],
    acknowledged: false,
    insert_cnt: '0',
    delete_cnt: '0',
    upsert_cnt: '0',
    timestamp: '0',
    IDs: { str_id: { data: [] } },
    ...extra,
  };
}

/** A scripted fake of the SDK client: records every request, answers like Milvus 2.3 does. */
class FakeMilvus implements MilvusClientLike {
  calls: Array<{ op: string; req: unknown }> = [];
  exists = false;
  indexType: string | null = null;
  dim = 4;
  countAnswer = 0;
  deleteCnt = '0';
  searchAnswer: SearchResults = { status: OK, results: [] };
  hang: string | null = null;
  fail: Record<string, ResStatus> = {};

  private rec<T>(op: string, req: unknown, answer: () => T): Promise<T> {
    this.calls.push({ op, req });
    if (this.hang === op) return new Promise<T>(() => undefined);
    return Promise.resolve(answer());
  }
  ops(): string[] {
    return this.calls.map((c) => c.op);
  }
  reqs<T>(op: string): T[] {
    return this.calls.filter((c) => c.op === op).map((c) => c.req as T);
  }

  hasCollection(req: unknown): Promise<BoolResponse> {
    return this.rec('hasCollection', req, () => ({ status: OK, value: this.exists }));
  }
  createCollection(req: CreateCollectionReq): Promise<ResStatus> {
    return this.rec('createCollection', req, () => {
      this.exists = true;
      return this.fail['createCollection'] ?? OK;
    });
  }
  describeCollection(req: unknown): Promise<DescribeCollectionResponse> {
    return this.rec('describeCollection', req, () => {
      const names = ['chunk_id', 'document_id', 'tenant', 'version', 'acl', 'metadata', 'vector'];
      return {
        status: OK,
        schema: {
          name: 'c',
          description: '',
          enable_dynamic_field: false,
          fields: names.map((name) => ({
            name,
            data_type: name === 'acl' ? 'Array' : name === 'vector' ? 'FloatVector' : 'VarChar',
            type_params: name === 'vector' ? [{ key: 'dim', value: String(this.dim) }] : [],
          })),
        },
      } as unknown as DescribeCollectionResponse;
    });
  }
  describeIndex(req: unknown): Promise<DescribeIndexResponse> {
    return this.rec('describeIndex', req, () =>
      this.indexType === null
        ? { status: { error_code: 'IndexNotExist', reason: 'index not exist' }, index_descriptions: [] }
        : ({
            status: OK,
            index_descriptions: [{ index_name: 'vector_idx', field_name: 'vector', params: [{ key: 'index_type', value: this.indexType }] }],
          } as unknown as DescribeIndexResponse),
    );
  }
  createIndex(req: CreateIndexSimpleReq): Promise<ResStatus> {
    return this.rec('createIndex', req, () => {
      this.indexType = req.index_type ?? null;
      return OK;
    });
  }
  loadCollectionSync(req: unknown): Promise<ResStatus> {
    return this.rec('loadCollectionSync', req, () => OK);
  }
  upsert(req: InsertReq): Promise<MutationResult> {
    return this.rec('upsert', req, () => (this.fail['upsert'] ? mutation({ status: this.fail['upsert'] }) : mutation()));
  }
  search(req: SearchSimpleReq): Promise<SearchResults> {
    return this.rec('search', req, () => this.searchAnswer);
  }
  query(req: QueryReq): Promise<QueryResults> {
    return this.rec('query', req, () => ({ status: OK, data: [{ 'count(*)': String(this.countAnswer) }] }));
  }
  deleteEntities(req: DeleteEntitiesReq): Promise<MutationResult> {
    return this.rec('deleteEntities', req, () => mutation({ delete_cnt: this.deleteCnt }));
  }
  flushSync(req: unknown): Promise<GetFlushStateResponse> {
    return this.rec('flushSync', req, () => ({ status: OK, flushed: true }));
  }
  dropCollection(req: unknown): Promise<ResStatus> {
    return this.rec('dropCollection', req, () => OK);
  }
  closeConnection(): void {
    this.calls.push({ op: 'close', req: null });
  }
}

function rec(id: string, v: number[], extra: Partial<VectorRecord> = {}): VectorRecord {
  return { chunk_id: id, document_id: id.split('#')[0]!, tenant: 't', version: 1, acl: ['*'], metadata: {}, vector: Float32Array.from(v), ...extra };
}

describe('milvusCollectionName', () => {
  it('is rag_<model>_<dim> for clean ids', () => {
    expect(milvusCollectionName('all_MiniLM_L6_v2', 384)).toBe('rag_all_MiniLM_L6_v2_384');
  });

  it('sanitises to [A-Za-z0-9_] and adds a hash when characters were replaced', () => {
    const a = milvusCollectionName('all-MiniLM-L6-v2', 384);
    const b = milvusCollectionName('all.MiniLM.L6.v2', 384);
    expect(a).toMatch(/^rag_all_MiniLM_L6_v2_[0-9a-f]{8}_384$/);
    expect(b).toMatch(/^[A-Za-z0-9_]+$/);
    expect(a).not.toBe(b);
    expect(milvusCollectionName('BAAI/bge-small-zh-v1.5', 512, 'x')).toMatch(/^x_BAAI_bge_small_zh_v1_5_[0-9a-f]{8}_512$/);
  });

  it('keeps long ids within the 255-character limit', () => {
    expect(milvusCollectionName('m'.repeat(400), 1024).length).toBeLessThanOrEqual(255);
  });

  it('rejects an invalid prefix', () => {
    expect(() => milvusCollectionName('m', 8, '1bad')).toThrow(/prefix/);
  });
});

describe('MilvusVectorStore (fake client)', () => {
  let fake: FakeMilvus;
  const make = (extra: Partial<ConstructorParameters<typeof MilvusVectorStore>[0]> = {}) =>
    new MilvusVectorStore({ modelId: 'm', dim: 4, client: fake, ...extra });

  beforeEach(() => {
    fake = new FakeMilvus();
  });

  it('creates the collection, the COSINE HNSW index and loads it once, on first use', async () => {
    const store = make({ m: 24, efConstruction: 300 });
    await store.upsert([rec('d#v1#0', [1, 0, 0, 0])]);
    await store.upsert([rec('d#v1#1', [0, 1, 0, 0])]);
    expect(fake.ops()).toEqual(['hasCollection', 'createCollection', 'describeIndex', 'createIndex', 'loadCollectionSync', 'upsert', 'upsert']);
    const create = fake.reqs<CreateCollectionReq>('createCollection')[0]!;
    expect(create.collection_name).toBe('rag_m_4');
    expect(create.fields.map((f) => f.name)).toEqual(['chunk_id', 'document_id', 'tenant', 'version', 'acl', 'metadata', 'chunk', 'vector']);
    expect(create.fields[0]).toMatchObject({ is_primary_key: true, autoID: false });
    expect(create.fields[4]).toMatchObject({ data_type: DataType.Array, element_type: DataType.VarChar });
    expect(create.fields.find((f) => f.name === 'vector')).toMatchObject({ dim: 4 });
    expect(fake.reqs<CreateIndexSimpleReq>('createIndex')[0]).toMatchObject({
      field_name: 'vector',
      index_type: 'HNSW',
      metric_type: 'COSINE',
      params: { M: 24, efConstruction: 300 },
    });
  });

  it('IVF_SQ8: nlist at build time, nprobe at search time', async () => {
    const store = make({ indexType: 'IVF_SQ8', nlist: 64, nprobe: 8 });
    await store.search({ vector: Float32Array.from([1, 0, 0, 0]), k: 3, scope: { tenant: 't' } });
    expect(fake.reqs<CreateIndexSimpleReq>('createIndex')[0]).toMatchObject({ index_type: 'IVF_SQ8', params: { nlist: 64 } });
    expect(fake.reqs<SearchSimpleReq>('search')[0]).toMatchObject({ params: { nprobe: 8 }, limit: 3, metric_type: 'COSINE' });
  });

  it('an existing collection keeps its index type (search params follow it) and its dimension is checked', async () => {
    fake.exists = true;
    fake.indexType = 'IVF_SQ8';
    const store = make({ indexType: 'HNSW', nprobe: 5 });
    await store.search({ vector: Float32Array.from([1, 0, 0, 0]), k: 2, scope: { tenant: 't' } });
    expect(fake.ops()).toEqual(['hasCollection', 'describeCollection', 'describeIndex', 'loadCollectionSync', 'search']);
    expect(store.effectiveIndexType).toBe('IVF_SQ8');
    expect(fake.reqs<SearchSimpleReq>('search')[0]!.params).toEqual({ nprobe: 5 });

    const other = new FakeMilvus();
    other.exists = true;
    other.indexType = 'HNSW';
    other.dim = 8;
    const wrong = new MilvusVectorStore({ modelId: 'm', dim: 4, client: other });
    await expect(wrong.count()).rejects.toThrow(/dimension 8, not 4/);
  });

  it('upserts in batches, collapsing duplicate chunk ids (last wins)', async () => {
    const store = make({ batchSize: 2 });
    await store.upsert([
      rec('d#v1#0', [1, 0, 0, 0]),
      rec('d#v1#1', [0, 1, 0, 0]),
      rec('d#v1#0', [0, 0, 1, 0], { version: 2 }),
      rec('d#v1#2', [0, 0, 0, 1]),
      rec('d#v1#3', [1, 1, 0, 0]),
    ]);
    const batches = fake.reqs<InsertReq>('upsert').map((r) => (r.data ?? []).map((row) => row['chunk_id']));
    expect(batches).toEqual([['d#v1#1', 'd#v1#0'], ['d#v1#2', 'd#v1#3']]);
    const row = fake.reqs<InsertReq>('upsert')[0]!.data![1]!;
    expect(row).toMatchObject({ chunk_id: 'd#v1#0', version: 2, acl: ['*'], metadata: {}, vector: [0, 0, 1, 0] });
    expect(fake.reqs<InsertReq>('upsert').every((r) => typeof r.timeout === 'number' && r.timeout > 0)).toBe(true);
  });

  it('validates records before sending anything', async () => {
    const store = make();
    await expect(store.upsert([rec('a#v1#0', [1, 0, 0])])).rejects.toThrow(/dimension 3, expected 4/);
    await expect(store.upsert([rec('a#v1#0', [1, Number.NaN, 0, 0])])).rejects.toThrow(/non-finite/);
    await expect(store.upsert([rec('', [1, 0, 0, 0])])).rejects.toThrow(/without chunk_id/);
    expect(fake.ops()).toEqual([]);
    await store.upsert([]);
    expect(fake.ops()).toEqual([]);
  });

  it('search: filters and scope go into the request expression; hits are mapped with cosine similarity', async () => {
    fake.searchAnswer = {
      status: OK,
      results: [
        { id: 'd#v2#0', score: 0.93, document_id: 'd', version: '2' },
        { id: 'e#v1#4', score: -0.1, document_id: 'e', version: '1' },
      ],
    };
    const store = make({ ef: 16 });
    const hits = await store.search({
      vector: Float32Array.from([1, 0, 0, 0]),
      k: 50,
      scope: { tenant: 'acme', principals: ['g1'] },
      filters: { team: 'x' },
    });
    expect(hits).toEqual([
      { chunk_id: 'd#v2#0', document_id: 'd', version: 2, score: 0.93 },
      { chunk_id: 'e#v1#4', document_id: 'e', version: 1, score: -0.1 },
    ]);
    const req = fake.reqs<SearchSimpleReq>('search')[0]!;
    expect(req.filter).toBe('tenant == "acme" && array_contains_any(acl, ["*", "g1"]) && (metadata["team"] == "x" || json_contains(metadata["team"], "x"))');
    expect(req.params).toEqual({ ef: 50 }); // ef raised to k
    expect(req.output_fields).toEqual(['document_id', 'version']);
    expect(req.consistency_level).toBe(ConsistencyLevelEnum.Bounded); // default: no ≈200 ms wait for the next time tick
  });

  it('search: unsatisfiable filters, k <= 0 and wrong dimensions never reach Milvus', async () => {
    const store = make();
    expect(await store.search({ vector: Float32Array.from([1, 0, 0, 0]), k: 5, scope: { tenant: 't' }, filters: { document_id: 3 } })).toEqual([]);
    expect(await store.search({ vector: Float32Array.from([1, 0, 0, 0]), k: 0, scope: { tenant: 't' } })).toEqual([]);
    await expect(store.search({ vector: Float32Array.from([1, 0]), k: 5, scope: { tenant: 't' } })).rejects.toThrow(/dimension 2/);
    expect(fake.ops()).toEqual([]);
  });

  it('deleteDocument: counts (Strong), then deletes by expression', async () => {
    const store = make();
    fake.countAnswer = 3;
    fake.deleteCnt = '3';
    expect(await store.deleteDocument('doc"1', 2)).toBe(3);
    const q = fake.reqs<QueryReq>('query')[0]!;
    expect(q.expr).toBe('document_id == "doc\\"1" && version != 2');
    expect(q.output_fields).toEqual(['count(*)']);
    expect(fake.reqs<DeleteEntitiesReq>('deleteEntities')[0]!.filter).toBe('document_id == "doc\\"1" && version != 2');

    fake.countAnswer = 0;
    expect(await store.deleteDocument('none')).toBe(0);
    expect(fake.reqs('deleteEntities')).toHaveLength(1); // nothing to delete → no delete call
  });

  it('count: all rows or one document', async () => {
    const store = make();
    fake.countAnswer = 7;
    expect(await store.count()).toBe(7);
    expect(await store.count('d')).toBe(7);
    expect(fake.reqs<QueryReq>('query').map((q) => q.expr)).toEqual(['', 'document_id == "d"']);
  });

  it('a server error status becomes an unavailable AppError', async () => {
    fake.fail['upsert'] = { error_code: 'UnexpectedError', reason: 'boom' };
    const store = make();
    await expect(store.upsert([rec('a#v1#0', [1, 0, 0, 0])])).rejects.toMatchObject({ code: 'unavailable', message: expect.stringMatching(/upsert failed: UnexpectedError: boom/) });
  });

  it('a call that hangs fails with deadline_exceeded, and the next call retries preparation', async () => {
    fake.hang = 'hasCollection';
    const store = make({ timeoutMs: 50 });
    await expect(store.count()).rejects.toMatchObject({ code: 'deadline_exceeded' });
    fake.hang = null;
    fake.countAnswer = 1;
    expect(await store.count()).toBe(1);
  });

  it('flush is a no-op (acknowledged writes are in the WAL); sealSegments calls flushSync; close does not close an injected client and blocks later calls', async () => {
    const store = make();
    await store.sealSegments(); // nothing written yet: no-op
    expect(fake.ops()).toEqual([]);
    await store.upsert([rec('a#v1#0', [1, 0, 0, 0])]);
    await store.flush();
    expect(fake.ops()).not.toContain('flushSync');
    await store.sealSegments();
    expect(fake.ops()).toContain('flushSync');
    await store.close();
    expect(fake.ops()).not.toContain('close');
    await expect(store.count()).rejects.toThrow(/closed/);
  });
});
