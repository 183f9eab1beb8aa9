import { ApiError, describeError } from './api';
import { translate } from './i18n';

describe('describeError', () => {
  const en = (k: Parameters<typeof translate>[1], v?: Record<string, string | number>) => translate('en', k, v);
  const zh = (k: Parameters<typeof translate>[1], v?: Record<string, string | number>) => translate('zh', k, v);
  it('explains 401, 403 and 429 (with Retry-After) and keeps the API’s message', () => {
    expect(describeError(new ApiError(401, 'unauthorized', 'invalid API key'), en)).toBe('Not signed in: the API key is missing or invalid (invalid API key).');
    expect(describeError(new ApiError(403, 'forbidden', 'this API key lacks the scope "admin"'), en)).toBe('Not allowed: this API key lacks the scope "admin"');
    expect(describeError(new ApiError(429, 'rate_limited', 'rate limit', 7), en)).toBe('Too many requests: retry in 7 s.');
    expect(describeError(new ApiError(429, 'rate_limited', 'rate limit', 7), zh)).toBe('请求过多：请 7 秒后重试。');
    expect(describeError(new ApiError(404, 'not_found', 'document x not found'), en)).toBe('Error 404: document x not found');
    expect(describeError(new ApiError(0, 'network', 'Failed to fetch'), en)).toBe('The gateway cannot be reached: Failed to fetch');
    expect(describeError(new Error('boom'), en)).toBe('boom');
  });
});
