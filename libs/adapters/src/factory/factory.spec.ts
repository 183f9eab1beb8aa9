import { loadConfig } from '@rag/platform';
import { storeTimeoutMs } from './factory';

describe('storeTimeoutMs', () => {
  it('keeps store calls inside half of the query deadline, so a hanging store still leaves time to answer degraded', () => {
    expect(storeTimeoutMs(loadConfig({}))).toBe(10_000); // defaults: 10 s store limit, 30 s deadline
    expect(storeTimeoutMs(loadConfig({ RAG_DEADLINE_MS: '5000' }))).toBe(2_500);
    expect(storeTimeoutMs(loadConfig({ RAG_STORE_TIMEOUT_MS: '800', RAG_DEADLINE_MS: '5000' }))).toBe(800);
  });
});
