/** createLlm for RAG_LLM=local: the settings reach the runtime; a bad model path fails the start with the setting's name. */
import { availableParallelism } from 'node:os';
import { loadConfig } from '@rag/platform';
import { createLlm } from '../factory';
import { ensureTestModels, TEST_MODELS_DIR } from '../onnx-embedder/test-models';
import { LocalLlm } from './local-llm.adapter';
import { DEFAULT_LOCAL_MODEL } from './model-file';

describe.skipIf(process.env.RAG_SKIP_MODEL_TESTS === '1')('createLlm with RAG_LLM=local', () => {
  beforeAll(() => ensureTestModels([DEFAULT_LOCAL_MODEL.name]), 15 * 60_000);

  it('loads the default GGUF from RAG_MODELS_DIR with the configured threads and context', async () => {
    const llm = await createLlm(loadConfig({ RAG_LLM: 'local', RAG_MODELS_DIR: TEST_MODELS_DIR, RAG_LLM_THREADS: '1', RAG_LLM_CONTEXT_SIZE: '1024' }));
    try {
      expect(llm).toBeInstanceOf(LocalLlm);
      expect(llm!.id).toBe('local:gemma-3-270m-q4_k_m');
      expect((llm as LocalLlm).threads).toBe(1);
      expect((llm as LocalLlm).contextSize).toBe(1024);
      const r = await llm!.complete([{ role: 'user', content: 'Hello' }], { maxTokens: 2 });
      expect(r.usage!.completion_tokens).toBeGreaterThan(0);
    } finally {
      await llm?.close?.();
    }
  });

  it('RAG_LLM_THREADS=0 (the default) means one thread per available core', async () => {
    const config = loadConfig({ RAG_LLM: 'local', RAG_MODELS_DIR: TEST_MODELS_DIR, RAG_LLM_CONTEXT_SIZE: '512' });
    expect(config.RAG_LLM_THREADS).toBe(0);
    const llm = (await createLlm(config)) as LocalLlm;
    try {
      expect(llm.threads).toBe(availableParallelism());
    } finally {
      await llm.close();
    }
  });

  it('a RAG_LLM_MODEL_PATH that does not exist fails the start, naming the setting', async () => {
    await expect(createLlm(loadConfig({ RAG_LLM: 'local', RAG_LLM_MODEL_PATH: '/nonexistent/model.gguf' }))).rejects.toMatchObject({
      code: 'invalid_request',
      message: expect.stringContaining('RAG_LLM_MODEL_PATH=/nonexistent/model.gguf'),
    });
  });

  it('out-of-range settings are configuration errors', () => {
    expect(() => loadConfig({ RAG_LLM: 'local', RAG_LLM_SEQUENCES: '0' })).toThrow(/RAG_LLM_SEQUENCES/);
    expect(() => loadConfig({ RAG_LLM: 'local', RAG_LLM_CONTEXT_SIZE: '100' })).toThrow(/RAG_LLM_CONTEXT_SIZE/);
    expect(() => loadConfig({ RAG_LLM: 'local', RAG_LLM_THREADS: '-1' })).toThrow(/RAG_LLM_THREADS/);
  });
});
