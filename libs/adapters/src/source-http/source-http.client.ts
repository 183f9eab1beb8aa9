import type { z } from 'zod';
import { AppError, Logger, formatIssues } from '@rag/platform';
// One Retry-After parser for every HTTP client of the adapters (delay-seconds or an HTTP date, RFC 9110 §10.2.3).
import { parseRetryAfter } from '../http-embedder/http-client';

export interface SourceHttpOptions {
  /** e.g. `https://acme.atlassian.net` or `https://api.notion.com` */
  baseUrl: string;
  /** Headers sent on every request (authorization, API version). Never logged. */
  headers: Record<string, string>;
  /** Attempts per request for 429/5xx/network failures (default 6). */
  maxAttempts?: number;
  /** First backoff when the server gives no Retry-After (default 500 ms; doubles, with jitter). */
  baseDelayMs?: number;
  /** Longest wait honoured for one Retry-After / backoff (default 60 s). */
  maxDelayMs?: number;
  timeoutMs?: number;
  /** Injected for tests. */
  sleep?: (ms: number) => Promise<void>;
  fetchImpl?: typeof fetch;
  name: string;
}

export type HttpOutcome<T> = { status: 'ok'; value: T } | { status: 'not_found' };

/**
 * A small JSON client for the SaaS sources (hand-written over `fetch`: the official SDKs would add two dependencies
 * and neither honours Retry-After the same way). Retries 429 after the server's `Retry-After` (capped at
 * `maxDelayMs`), 5xx and network errors with exponential backoff and jitter, up to `maxAttempts`. 404 and 410
 * are a value (`not_found`); 401/403 and other 4xx are non-retryable `AppError`s; every body is validated.
 */
export class SourceHttpClient {
  private readonly log: Logger;
  private readonly sleep: (ms: number) => Promise<void>;
  private readonly fetchImpl: typeof fetch;

  constructor(private readonly opts: SourceHttpOptions) {
    this.log = new Logger(`${opts.name}-http`);
    this.sleep = opts.sleep ?? ((ms) => new Promise((r) => setTimeout(r, ms)));
    this.fetchImpl = opts.fetchImpl ?? fetch;
  }

  /** Resolves a path (or an absolute `_links.next` URL of the same origin) against the base URL. */
  url(pathOrUrl: string): string {
    const u = new URL(pathOrUrl, this.opts.baseUrl);
    const base = new URL(this.opts.baseUrl);
    if (u.origin !== base.origin) throw new AppError('invalid_request', `${this.opts.name}: refusing to follow a link to another origin (${u.origin})`);
    return u.toString();
  }

  async json<S extends z.ZodType>(method: 'GET' | 'POST', pathOrUrl: string, schema: S, body?: unknown): Promise<HttpOutcome<z.infer<S>>> {
    const url = this.url(pathOrUrl);
    const maxAttempts = this.opts.maxAttempts ?? 6;
    const base = this.opts.baseDelayMs ?? 500;
    const cap = this.opts.maxDelayMs ?? 60_000;
    for (let attempt = 1; ; attempt++) {
      let res: Response;
      try {
        res = await this.fetchImpl(url, {
          method,
          headers: { accept: 'application/json', ...(body !== undefined ? { 'content-type': 'application/json' } : {}), ...this.opts.headers },
          ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
          signal: AbortSignal.timeout(this.opts.timeoutMs ?? 30_000),
        });
      } catch (e) {
        if (attempt >= maxAttempts) throw new AppError('unavailable', `${this.opts.name}: ${method} ${new URL(url).pathname} failed: ${String(e)}`);
        await this.sleep(Math.min(cap, backoff(base, attempt)));
        continue;
      }
      if (res.ok) {
        const parsed = schema.safeParse(await res.json().catch(() => undefined));
        if (!parsed.success) {
          throw new AppError('internal', `${this.opts.name}: unexpected response from ${new URL(url).pathname}: ${formatIssues(parsed.error.issues, 'body', 3)}`);
        }
        return { status: 'ok', value: parsed.data as z.infer<S> };
      }
      if (res.status === 404 || res.status === 410) {
        await res.body?.cancel();
        return { status: 'not_found' };
      }
      const retryable = res.status === 429 || res.status >= 500;
      const text = (await res.text().catch(() => '')).slice(0, 300);
      if (!retryable || attempt >= maxAttempts) {
        const code = res.status === 401 ? 'unauthorized' : res.status === 403 ? 'forbidden' : res.status === 429 ? 'rate_limited' : retryable ? 'unavailable' : 'invalid_request';
        throw new AppError(code, `${this.opts.name}: ${method} ${new URL(url).pathname} answered ${res.status}: ${text}`);
      }
      const wait = Math.min(cap, res.status === 429 ? (parseRetryAfter(res.headers.get('retry-after')) ?? backoff(base, attempt)) : backoff(base, attempt));
      this.log.info('backing off', { status: res.status, attempt, wait_ms: wait, path: new URL(url).pathname });
      await this.sleep(wait);
    }
  }
}

function backoff(base: number, attempt: number): number {
  const exp = base * 2 ** (attempt - 1);
  return Math.round(exp / 2 + Math.random() * (exp / 2));
}
