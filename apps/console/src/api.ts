import type { MessageKey } from './i18n';
import { readSse, type SseEvent } from './sse';
import { uploadIdOf } from './state';

/** An API failure: the HTTP status (0 = network), the API's error code and message, Retry-After for 429. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly retryAfterS?: number,
  ) {
    super(message);
  }
}

/** The user-facing text of an error: 401, 403 and 429 have their own wording; the API's message is always shown. */
export function describeError(e: unknown, t: (key: MessageKey, vars?: Record<string, string | number>) => string): string {
  if (e instanceof ApiError) {
    if (e.status === 0) return t('err_network', { message: e.message });
    if (e.status === 401) return t('err_401', { message: e.message });
    if (e.status === 403) return t('err_403', { message: e.message });
    if (e.status === 429) return t('err_429', { retry: e.retryAfterS ?? 1 });
    return t('err_other', { status: e.status, message: e.message });
  }
  return e instanceof Error ? e.message : String(e);
}

const KEY = 'rag-console-key';

/** The key entered once per tab: sessionStorage, so it is gone when the tab closes and other tabs never see it. */
export const keyStore = {
  get: (): string => sessionStorage.getItem(KEY) ?? '',
  set: (key: string) => (key ? sessionStorage.setItem(KEY, key) : sessionStorage.removeItem(KEY)),
};

async function errorOf(res: Response): Promise<ApiError> {
  let code = 'http_' + res.status;
  let message = res.statusText || `HTTP ${res.status}`;
  try {
    const body = (await res.json()) as { error?: { code?: unknown; message?: unknown } };
    if (typeof body.error?.code === 'string') code = body.error.code;
    if (typeof body.error?.message === 'string') message = body.error.message;
  } catch {
    /* not the API's JSON error */
  }
  const retry = Number(res.headers.get('retry-after'));
  return new ApiError(res.status, code, message, Number.isFinite(retry) && retry > 0 ? retry : undefined);
}

const headers = (key: string, json: boolean): Record<string, string> => ({
  ...(json ? { 'content-type': 'application/json' } : {}),
  ...(key ? { authorization: `Bearer ${key}` } : {}),
});

/** The public API of this gateway (same origin), with the tab's key. */
export class Api {
  constructor(private readonly key: string) {}

  async request<T>(method: string, path: string, body?: unknown): Promise<T> {
    let res: Response;
    try {
      res = await fetch(path, { method, headers: headers(this.key, body !== undefined), ...(body !== undefined ? { body: JSON.stringify(body) } : {}) });
    } catch (e) {
      throw new ApiError(0, 'network', e instanceof Error ? e.message : String(e));
    }
    if (!res.ok) throw await errorOf(res);
    return (await res.json()) as T;
  }

  /** POST /v1/query with stream:true; calls `onEvent` per server-sent event. A non-2xx answer throws before any event. */
  async streamQuery(body: Record<string, unknown>, onEvent: (e: SseEvent) => void, signal?: AbortSignal): Promise<void> {
    let res: Response;
    try {
      res = await fetch('/v1/query', { method: 'POST', headers: headers(this.key, true), body: JSON.stringify({ ...body, stream: true }), ...(signal ? { signal } : {}) });
    } catch (e) {
      throw new ApiError(0, 'network', e instanceof Error ? e.message : String(e));
    }
    if (!res.ok) throw await errorOf(res);
    if (!res.body) throw new ApiError(res.status, 'bad_stream', 'the answer has no body');
    await readSse(res.body, onEvent, signal);
  }

  /**
   * Uploads one file as JSON (`content_base64`: the anonymous local mode refuses multipart, a CSRF vector) with
   * XMLHttpRequest, whose upload events give per-file progress (fetch has none); `onProgress` gets 0…1. The id is
   * derived from the file name, so uploading the same file again (Re-ingest) replaces it with a new version.
   */
  upload(file: File, onProgress: (fraction: number) => void, id = uploadIdOf(file.name)): Promise<{ document_id: string; version: number; status: string }> {
    return new Promise((resolve, reject) => {
      const reader = new FileReader();
      reader.onerror = () => reject(new ApiError(0, 'read_failed', `cannot read ${file.name}`));
      reader.onload = () => {
        const url = String(reader.result);
        const base64 = url.slice(url.indexOf(',') + 1);
        const xhr = new XMLHttpRequest();
        xhr.open('POST', '/v1/documents');
        for (const [k, v] of Object.entries(headers(this.key, true))) xhr.setRequestHeader(k, v);
        xhr.upload.onprogress = (e) => e.lengthComputable && onProgress(e.loaded / e.total);
        xhr.onerror = () => reject(new ApiError(0, 'network', 'upload failed'));
        xhr.onload = () => {
          let body: { error?: { code?: string; message?: string } } & Record<string, unknown> = {};
          try {
            body = JSON.parse(xhr.responseText);
          } catch {
            /* not JSON */
          }
          if (xhr.status >= 200 && xhr.status < 300) {
            onProgress(1);
            resolve(body as unknown as { document_id: string; version: number; status: string });
          } else {
            const retry = Number(xhr.getResponseHeader('retry-after'));
            reject(new ApiError(xhr.status, body.error?.code ?? `http_${xhr.status}`, body.error?.message ?? xhr.statusText, retry > 0 ? retry : undefined));
          }
        };
        xhr.send(JSON.stringify({ id, title: file.name, content_base64: base64, ...(file.type ? { mime_type: file.type } : {}) }));
      };
      reader.readAsDataURL(file);
    });
  }
}
