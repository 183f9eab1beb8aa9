import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '@rag/platform';
import { HashingEmbedder } from '../hashing-embedder';
import { WorkerHashingEmbedder } from '../hashing-embedder/worker-hashing-embedder';
import { createEmbedder, embeddingSpace, onnxModelNames, prepareModels, storeTimeoutMs } from './factory';

describe('storeTimeoutMs', () => {
  it('keeps store calls inside half of the query deadline, so a hanging store still leaves time to answer degraded', () => {
    expect(storeTimeoutMs(loadConfig({}))).toBe(10_000); // defaults: 10 s store limit, 30 s deadline
    expect(storeTimeoutMs(loadConfig({ RAG_DEADLINE_MS: '5000' }))).toBe(2_500);
    expect(storeTimeoutMs(loadConfig({ RAG_STORE_TIMEOUT_MS: '800', RAG_DEADLINE_MS: '5000' }))).toBe(800);
  });
});

describe('onnxModelNames', () => {
  it('reads one model or a <CJK model>+<other model> pair, and rejects anything else with the expected form', () => {
    expect(onnxModelNames('all-MiniLM-L6-v2')).toEqual(['all-MiniLM-L6-v2']);
    expect(onnxModelNames('bge-small-zh-v1.5+bge-small-en-v1.5')).toEqual(['bge-small-zh-v1.5', 'bge-small-en-v1.5']);
    expect(() => onnxModelNames('a+b+c')).toThrow(/one ONNX model or two joined by "\+"/);
    expect(() => onnxModelNames('a+')).toThrow(/<CJK model>\+<other model>/);
  });
});

describe('createEmbedder (onnx) with a model missing', () => {
  it('fails naming the fetch command when automatic fetching is off', async () => {
    const modelsDir = mkdtempSync(join(tmpdir(), 'rag-no-models-'));
    try {
      const config = loadConfig({ RAG_MODELS_DIR: modelsDir, RAG_DATA_DIR: modelsDir, RAG_MODELS_AUTO_FETCH: 'false' });
      expect(config.RAG_EMBEDDER).toBe('onnx'); // the default
      await expect(createEmbedder(config)).rejects.toThrow(/bge-small-zh-v1\.5-q" is not installed.*models:fetch/);
    } finally {
      rmSync(modelsDir, { recursive: true, force: true });
    }
  });
});

describe('createEmbedder (hashing)', () => {
  it('hashes passages on a worker thread by default (RAG_HASHING_WORKER), on the calling thread with false — the same vectors', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'rag-hashing-'));
    const worker = await createEmbedder(loadConfig({ RAG_EMBEDDER: 'hashing', RAG_EMBEDDING_DIM: '64', RAG_DATA_DIR: dataDir }));
    const inline = await createEmbedder(loadConfig({ RAG_EMBEDDER: 'hashing', RAG_EMBEDDING_DIM: '64', RAG_DATA_DIR: dataDir, RAG_HASHING_WORKER: 'false' }));
    try {
      expect(worker).toBeInstanceOf(WorkerHashingEmbedder);
      expect(inline).toBeInstanceOf(HashingEmbedder);
      expect(worker.modelId).toBe(inline.modelId);
      const texts = ['wing root bending load', '尤金袋鼠分布在澳大利亚南部地区'];
      expect(await worker.embed(texts, 'passage')).toEqual(await inline.embed(texts, 'passage'));
      expect((worker as WorkerHashingEmbedder).stats().inWorker).toBe(1);
    } finally {
      await worker.close?.();
      rmSync(dataDir, { recursive: true, force: true });
    }
  }, 60_000);
});

describe('embeddingSpace', () => {
  it('gives the model id and dimension createEmbedder would, for hashing and HTTP embedders, without loading anything', async () => {
    const hashing = loadConfig({ RAG_EMBEDDER: 'hashing', RAG_EMBEDDING_DIM: '256', RAG_DATA_DIR: tmpdir() });
    const e = await createEmbedder({ ...hashing, dataDir: mkdtempSync(join(tmpdir(), 'rag-space-')) });
    try {
      expect(await embeddingSpace(hashing)).toEqual({ modelId: e.modelId, dim: 256 });
    } finally {
      await e.close?.();
    }
    const http = loadConfig({ RAG_EMBEDDER: 'http', RAG_EMBEDDING_URL: 'http://127.0.0.1:9/v1', RAG_EMBEDDING_MODEL: 'text-embedding-3-small', RAG_EMBEDDING_DIM: '1536' });
    expect(await embeddingSpace(http)).toEqual({ modelId: 'http:text-embedding-3-small', dim: 1536 });
  });

  it('fails like createEmbedder when an ONNX model is missing and fetching is off', async () => {
    const modelsDir = mkdtempSync(join(tmpdir(), 'rag-no-models-'));
    try {
      await expect(embeddingSpace(loadConfig({ RAG_MODELS_DIR: modelsDir, RAG_MODELS_AUTO_FETCH: 'false' }))).rejects.toThrow(/is not installed.*models:fetch/);
    } finally {
      rmSync(modelsDir, { recursive: true, force: true });
    }
  });
});

describe('prepareModels (start-up check)', () => {
  it('does nothing without ONNX, and fails with the fetch command before any service is built when a model is missing', async () => {
    const modelsDir = mkdtempSync(join(tmpdir(), 'rag-no-models-'));
    try {
      await expect(prepareModels(loadConfig({ RAG_EMBEDDER: 'hashing', RAG_MODELS_DIR: modelsDir }))).resolves.toBeUndefined();
      await expect(prepareModels(loadConfig({ RAG_MODELS_DIR: modelsDir, RAG_MODELS_AUTO_FETCH: 'false' }))).rejects.toMatchObject({
        code: 'unavailable',
        message: expect.stringMatching(/bge-small-zh-v1\.5-q" is not installed.*models:fetch/),
      });
    } finally {
      rmSync(modelsDir, { recursive: true, force: true });
    }
  });
});

describe('createEmbedder / embeddingSpace with RAG_CROSSLINGUAL_URL', () => {
  it('builds the pair plus the multilingual leg, and embeddingSpace names it without a model load or a call to the server', async () => {
    const { TEST_MODELS_DIR, ensureTestModels } = await import('../onnx-embedder/test-models');
    ensureTestModels(['bge-small-zh-v1.5-q', 'bge-small-en-v1.5-q']);
    const dataDir = mkdtempSync(join(tmpdir(), 'rag-xling-space-'));
    // Port 9 (discard): nothing answers there, and nothing may be asked while the embedder is only built.
    const config = loadConfig({ RAG_MODELS_DIR: TEST_MODELS_DIR, RAG_MODELS_AUTO_FETCH: 'false', RAG_DATA_DIR: dataDir, RAG_CROSSLINGUAL_URL: 'http://127.0.0.1:9' });
    const e = await createEmbedder(config);
    try {
      const pair = 'routed-script:onnx:bge-small-zh-v1.5-q+onnx:bge-small-en-v1.5-q';
      expect(e).toMatchObject({ modelId: `xling:${pair}+http:multilingual-e5-small-q4`, dim: 896 + 2 * 384 + 2 });
      expect(await embeddingSpace(config)).toEqual({ modelId: e.modelId, dim: e.dim });
      // Without the URL: the pair's own space.
      expect(await embeddingSpace({ ...config, RAG_CROSSLINGUAL_URL: undefined })).toEqual({ modelId: pair, dim: 896 });
    } finally {
      await e.close?.();
      rmSync(dataDir, { recursive: true, force: true });
    }
  }, 15 * 60_000);

  it('is a start-up error with another embedder', () => {
    expect(() => loadConfig({ RAG_EMBEDDER: 'hashing', RAG_CROSSLINGUAL_URL: 'http://127.0.0.1:8089' })).toThrow(/RAG_CROSSLINGUAL_URL needs RAG_EMBEDDER=onnx/);
  });
});
