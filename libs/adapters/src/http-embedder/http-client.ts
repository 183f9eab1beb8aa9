/**
 * JSON-over-HTTP with the failure handling model services need: a per-attempt timeout, bounded retries
 * on 429/5xx/network errors with exponential backoff that honours `Retry-After` (capped), and errors
 * that name the service and status. Shared by the HTTP embedder and the HTTP reranker.
 */
import { AppError } from '@rag/platform';

export interface RetryPolicy {
  /** Per-attempt timeout (ms). */
  timeoutMs: number;
  /** Retries after the first attempt (0 = no retry). */
  maxRetries: number;
  /** First backoff (ms); doubles each retry, ±20 % jitter. */
  backoffMs: number;
  /** Upper bound of any single wait, `Retry-After` included (ms). */
  maxBackoffMs: number;
}

export const DEFAULT_RETRY_POLICY: RetryPolicy = { timeoutMs: 30_000, maxRetries: 3, backoffMs: 250, maxBackoffMs: 10_000 };

export interface PostJsonRequest {
  /** Names the service in errors and logs, e.g. `embedding service`. */
  what: string;
  url: string;
  body: unknown;
  apiKey?: string;
  headers?: Record<string, string>;
  policy: RetryPolicy;
  /** Cancels waiting and in-flight attempts (e.g. the caller's deadline). */
  signal?: AbortSignal;
}

const RETRYABLE = (status: number) => status === 429 || status === 408 || status >= 500;

/** Parses `Retry-After` (delta-seconds, possibly fractional, or an HTTP date) into ms; undefined when absent/invalid. */
export function parseRetryAfter(value: string | null, now = Date.now()): number | undefined {
  if (!value) return undefined;
  const trimmed = value.trim();
  if (/^\d+(\.\d+)?$/.test(trimmed)) return Math.round(Number(trimmed) * 1000);
  const at = Date.parse(trimmed);
  return Number.isNaN(at) ? undefined : Math.max(0, at - now);
}

function backoff(policy: RetryPolicy, retry: number, retryAfterMs?: number): number {
  if (retryAfterMs !== undefined) return Math.min(retryAfterMs, policy.maxBackoffMs);
  const base = policy.backoffMs * 2 ** retry;
  const jitter = base * (0.8 + Math.random() * 0.4);
  return Math.min(jitter, policy.maxBackoffMs);
}

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

function redact(url: string): string {
  try {
    const u = new URL(url);
    u.username = '';
    u.password = '';
    return u.toString();
  } catch {
    return url;
  }
}

/** POSTs JSON and returns the parsed JSON answer, retrying what is worth retrying. */
export async function postJson(req: PostJsonRequest): Promise<unknown> {
  const { policy } = req;
  const url = redact(req.url);
  const headers: Record<string, string> = { 'content-type': 'application/json', accept: 'application/json', ...req.headers };
  if (req.apiKey) headers.authorization = `Bearer ${req.apiKey}`;
  const payload = JSON.stringify(req.body);
  let lastError: AppError | undefined;

  for (let attempt = 0; attempt <= policy.maxRetries; attempt++) {
    if (req.signal?.aborted) throw new AppError('deadline_exceeded', `${req.what}: cancelled`, { url });
    let retryAfterMs: number | undefined;
    const timeout = AbortSignal.timeout(policy.timeoutMs);
    const signal = req.signal ? AbortSignal.any([req.signal, timeout]) : timeout;
    try {
      const res = await fetch(req.url, { method: 'POST', headers, body: payload, signal });
      const text = await res.text();
      if (res.ok) {
        try {
          return text.length > 0 ? (JSON.parse(text) as unknown) : null;
        } catch {
          throw new AppError('unavailable', `${req.what} at ${url} answered HTTP ${res.status} with invalid JSON: ${text.slice(0, 200)}`, { url, status: res.status });
        }
      }
      const detail = `${req.what} at ${url} answered HTTP ${res.status}: ${text.slice(0, 300)}`;
      if (!RETRYABLE(res.status)) {
        const code = res.status === 400 || res.status === 413 || res.status === 422 ? 'invalid_request' : 'unavailable';
        throw new AppError(code, detail, { url, status: res.status });
      }
      lastError = new AppError(res.status === 429 ? 'rate_limited' : 'unavailable', detail, { url, status: res.status });
      retryAfterMs = parseRetryAfter(res.headers.get('retry-after'));
    } catch (e) {
      if (e instanceof AppError) {
        if (e !== lastError) throw e;
      } else if (req.signal?.aborted) {
        throw new AppError('deadline_exceeded', `${req.what}: cancelled`, { url });
      } else if (timeout.aborted) {
        lastError = new AppError('deadline_exceeded', `${req.what} at ${url} did not answer within ${policy.timeoutMs} ms`, { url });
      } else {
        const cause = e instanceof Error ? ((e.cause as { code?: string; message?: string } | undefined)?.code ?? e.message) : String(e);
        lastError = new AppError('unavailable', `${req.what} at ${url} is unreachable: ${cause}`, { url });
      }
    }
    if (attempt < policy.maxRetries) {
      try {
        await sleep(backoff(policy, attempt, retryAfterMs), req.signal);
      } catch {
        throw new AppError('deadline_exceeded', `${req.what}: cancelled`, { url });
      }
    }
  }
  const final = lastError ?? new AppError('unavailable', `${req.what} at ${url} failed`);
  const attempts = policy.maxRetries + 1;
  throw new AppError(final.code, `${final.message} (after ${attempts} attempt${attempts === 1 ? '' : 's'})`, final.details);
}

/** Joins a base URL and an API path, avoiding a doubled version segment (`…/v1` + `/v1/embeddings`). */
export function joinUrl(baseUrl: string, path: string): string {
  const base = baseUrl.replace(/\/+$/, '');
  const versioned = /^\/v\d+\//.exec(path);
  if (versioned && base.endsWith(versioned[0].slice(0, -1))) return base + path.slice(versioned[0].length - 1);
  if (base.endsWith(path)) return base;
  return base + path;
}
