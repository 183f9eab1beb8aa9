import { AppError, metrics, setSpanAttributes, type ErrorCode } from '@rag/platform';
import type { ChatMessage, Llm, LlmUsage } from '@rag/ports';
import { SseDataParser } from './sse';
import { CallDeadline } from '../llm-call';

export interface OpenAiCompatibleLlmOptions {
  /** Base URL of an OpenAI-compatible API, e.g. `https://api.openai.com/v1` or `http://127.0.0.1:8000/v1`. */
  baseUrl: string;
  /** Sent as `Authorization: Bearer <key>` when set. */
  apiKey?: string;
  /** Model name sent with every request. */
  model: string;
  /**
   * Milliseconds (default 30 000). `complete()`: the whole request. `stream()`: the wait for the
   * response and for each next piece of it (an idle timeout), so a long answer that keeps flowing is
   * not cut; the caller's `signal` bounds the total.
   */
  timeoutMs?: number;
  /**
   * Ask for token usage in streamed responses (`stream_options: {include_usage: true}`, default true).
   * A server that rejects the field is retried once without it, and it is not sent again.
   */
  streamUsage?: boolean;
  /** Extra request headers (e.g. `OpenAI-Organization`, an API gateway's key header). */
  headers?: Record<string, string>;
  /** fetch implementation (default: the global one). */
  fetch?: typeof fetch;
}

export interface OpenAiCallOptions {
  signal?: AbortSignal;
  maxTokens?: number;
  temperature?: number;
}

export interface OpenAiStreamOptions extends OpenAiCallOptions {
  /** Called with the token usage when the server reports it (at the end of the stream). */
  onUsage?: (usage: LlmUsage) => void;
}

/** A failed call to the LLM provider: `status` is the HTTP status (absent for network errors and timeouts). */
export class OpenAiLlmError extends AppError {
  constructor(
    code: ErrorCode,
    message: string,
    readonly status?: number,
    readonly providerMessage?: string,
  ) {
    super(code, message, status !== undefined ? { status, providerMessage } : undefined);
    this.name = 'OpenAiLlmError';
  }
}

const MAX_ERROR_BODY = 64 * 1024;

/**
 * `Llm` over any OpenAI-compatible chat completions API (OpenAI, Azure OpenAI behind a gateway, vLLM,
 * llama.cpp server, Ollama, LiteLLM, ...): `POST {baseUrl}/chat/completions`.
 *
 * - `stream()` sends `stream: true` and parses the server-sent events (`data: {choices:[{delta:{content}}]}`
 *   lines, `data: [DONE]` at the end), yielding each non-empty piece of text. A stream that stops
 *   before `[DONE]` or a `finish_reason` is an error (the answer would be silently truncated). A
 *   server that ignores `stream` and answers with plain JSON is accepted.
 * - `complete()` sends `stream: false` and returns the message text and usage.
 * - Errors are `OpenAiLlmError`s (`AppError`s) naming the status and the provider's own message:
 *   429 → `rate_limited`; 408/504 and our own timeout → `deadline_exceeded`; everything else
 *   (5xx, 4xx such as a wrong key or model, network failure, bad response) → `unavailable`.
 *   An abort by the caller's signal rethrows the signal's reason.
 */
export class OpenAiCompatibleLlm implements Llm {
  readonly id: string;
  private readonly endpoint: string;
  private readonly timeoutMs: number;
  private readonly fetchImpl: typeof fetch;
  private streamUsage: boolean;

  constructor(private readonly options: OpenAiCompatibleLlmOptions) {
    let url: URL;
    try {
      url = new URL(options.baseUrl);
    } catch {
      throw new AppError('invalid_request', `LLM base URL is not a URL: ${JSON.stringify(options.baseUrl)}`);
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:') {
      throw new AppError('invalid_request', `LLM base URL must be http(s), got ${url.protocol}`);
    }
    if (!options.model) throw new AppError('invalid_request', 'LLM model name is empty');
    const timeoutMs = options.timeoutMs ?? 30_000;
    if (!(timeoutMs > 0) || !Number.isFinite(timeoutMs)) throw new AppError('invalid_request', `LLM timeoutMs must be > 0, got ${timeoutMs}`);
    this.endpoint = `${options.baseUrl.replace(/\/+$/, '')}/chat/completions`;
    this.timeoutMs = timeoutMs;
    this.fetchImpl = options.fetch ?? fetch;
    this.streamUsage = options.streamUsage ?? true;
    this.id = `openai:${options.model}`;
  }

  async *stream(messages: ChatMessage[], opts: OpenAiStreamOptions = {}): AsyncIterable<string> {
    const timer = new CallDeadline(this.timeoutMs, opts.signal);
    try {
      const res = await this.postStreaming(messages, opts, timer);
      const contentType = res.headers.get('content-type') ?? '';
      if (contentType.includes('application/json')) {
        // The server ignored `stream: true`.
        const { text, usage } = parseCompletion(await readBody(res, Infinity), this.endpoint);
        if (usage) this.recordUsage(usage, opts);
        if (text) yield text;
        return;
      }
      if (!res.body) throw new OpenAiLlmError('unavailable', `LLM response from ${this.endpoint} has no body`);
      const reader = res.body.getReader();
      const decoder = new TextDecoder();
      const parser = new SseDataParser();
      let finished = false; // [DONE] or a finish_reason seen
      let done = false; // [DONE] seen
      let usage: LlmUsage | undefined;
      try {
        while (!done) {
          timer.arm();
          const { value, done: eof } = await reader.read();
          timer.disarm();
          const events = eof ? parser.push(decoder.decode()).concat(parser.end()) : parser.push(decoder.decode(value, { stream: true }));
          for (const data of events) {
            if (data.trim() === '[DONE]') {
              finished = done = true;
              break;
            }
            for (const chunk of parseStreamData(data, this.endpoint)) {
              if (chunk.usage) usage = chunk.usage;
              if (chunk.finished) finished = true;
              if (chunk.text) yield chunk.text;
            }
          }
          if (eof) break;
        }
      } finally {
        if (!done) await reader.cancel().catch(() => undefined);
      }
      if (usage) this.recordUsage(usage, opts);
      if (!finished) throw new OpenAiLlmError('unavailable', `LLM stream from ${this.endpoint} ended before completion (no [DONE])`);
    } catch (e) {
      throw translateError(timer, e, this.endpoint);
    } finally {
      timer.dispose();
    }
  }

  async complete(messages: ChatMessage[], opts: OpenAiCallOptions = {}): Promise<{ text: string; usage?: LlmUsage }> {
    const timer = new CallDeadline(this.timeoutMs, opts.signal);
    try {
      timer.arm();
      const res = await this.post(this.body(messages, opts, false, false), 'application/json', timer.signal);
      if (!res.ok) throw await httpError(res, this.endpoint);
      const { text, usage } = parseCompletion(await readBody(res, Infinity), this.endpoint);
      if (usage) this.recordUsage(usage);
      return usage ? { text, usage } : { text };
    } catch (e) {
      throw translateError(timer, e, this.endpoint);
    } finally {
      timer.dispose();
    }
  }

  /** Token usage the server reported: rag_llm_tokens_total{kind,model}, attributes of the active span, `onUsage`. */
  private recordUsage(usage: LlmUsage, opts?: OpenAiStreamOptions): void {
    const model = this.options.model;
    metrics.llmTokens.inc({ kind: 'prompt', model }, usage.prompt_tokens);
    metrics.llmTokens.inc({ kind: 'completion', model }, usage.completion_tokens);
    setSpanAttributes({ 'gen_ai.request.model': model, 'gen_ai.usage.input_tokens': usage.prompt_tokens, 'gen_ai.usage.output_tokens': usage.completion_tokens });
    opts?.onUsage?.(usage);
  }

  /** POSTs a streaming request; retries once without `stream_options` when the server rejects that field. */
  private async postStreaming(messages: ChatMessage[], opts: OpenAiCallOptions, timer: CallDeadline): Promise<Response> {
    for (;;) {
      const withUsage = this.streamUsage;
      timer.arm();
      const res = await this.post(this.body(messages, opts, true, withUsage), 'text/event-stream', timer.signal);
      timer.disarm();
      if (res.ok) return res;
      const error = await httpError(res, this.endpoint);
      if (withUsage && (res.status === 400 || res.status === 422) && /stream_options|include_usage/i.test(error.providerMessage ?? '')) {
        this.streamUsage = false;
        continue;
      }
      throw error;
    }
  }

  private body(messages: ChatMessage[], opts: OpenAiCallOptions, stream: boolean, withUsage: boolean): string {
    return JSON.stringify({
      model: this.options.model,
      messages: messages.map((m) => ({ role: m.role, content: m.content })),
      stream,
      ...(stream && withUsage ? { stream_options: { include_usage: true } } : {}),
      ...(opts.maxTokens !== undefined ? { max_tokens: opts.maxTokens } : {}),
      ...(opts.temperature !== undefined ? { temperature: opts.temperature } : {}),
    });
  }

  private post(body: string, accept: string, signal: AbortSignal): Promise<Response> {
    const headers: Record<string, string> = { ...this.options.headers, 'content-type': 'application/json', accept };
    if (this.options.apiKey) headers['authorization'] = `Bearer ${this.options.apiKey}`;
    return this.fetchImpl(this.endpoint, { method: 'POST', headers, body, signal });
  }
}

/** Maps whatever was thrown during a call to the error the caller should see. */
function translateError(timer: CallDeadline, e: unknown, endpoint: string): unknown {
  if (timer.timedOut) {
    return new OpenAiLlmError('deadline_exceeded', `LLM request to ${endpoint} timed out: no response data within ${timer.ms} ms`);
  }
  if (timer.callerAborted) return timer.callerReason ?? e;
  if (e instanceof AppError) return e;
  const cause = e instanceof Error ? (e.cause instanceof Error ? `${e.message}: ${e.cause.message}` : e.message) : String(e);
  return new OpenAiLlmError('unavailable', `LLM request to ${endpoint} failed: ${cause}`);
}

async function readBody(res: Response, limit: number): Promise<string> {
  if (!res.body) return '';
  const reader = res.body.getReader();
  const decoder = new TextDecoder();
  let text = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    text += decoder.decode(value, { stream: true });
    if (text.length > limit) {
      await reader.cancel().catch(() => undefined);
      return text.slice(0, limit);
    }
  }
  return text + decoder.decode();
}

async function httpError(res: Response, endpoint: string): Promise<OpenAiLlmError> {
  const body = await readBody(res, MAX_ERROR_BODY).catch(() => '');
  const providerMessage = providerErrorMessage(body) ?? (body.trim().slice(0, 500) || res.statusText || 'no error message');
  const code: ErrorCode = res.status === 429 ? 'rate_limited' : res.status === 408 || res.status === 504 ? 'deadline_exceeded' : 'unavailable';
  return new OpenAiLlmError(code, `LLM request to ${endpoint} failed with HTTP ${res.status}: ${providerMessage}`, res.status, providerMessage);
}

/** The message of an error body: `{error:{message}}` (OpenAI), `{error:"..."}`, `{message}` (vLLM), `{detail}` (FastAPI). */
function providerErrorMessage(body: string): string | undefined {
  let json: unknown;
  try {
    json = JSON.parse(body);
  } catch {
    return undefined;
  }
  if (!isRecord(json)) return undefined;
  const err = json['error'];
  if (typeof err === 'string' && err) return err;
  if (isRecord(err) && typeof err['message'] === 'string' && err['message']) return err['message'];
  if (typeof json['message'] === 'string' && json['message']) return json['message'];
  if (typeof json['detail'] === 'string' && json['detail']) return json['detail'];
  if (json['detail'] !== undefined) return JSON.stringify(json['detail']).slice(0, 500);
  return undefined;
}

interface StreamChunk {
  text: string;
  finished: boolean;
  usage?: LlmUsage;
}

/**
 * One SSE event's data: a chat.completion.chunk. Lenient with servers that put several JSON objects
 * into one event (separated by newlines). An `error` object in the stream is thrown.
 */
function parseStreamData(data: string, endpoint: string): StreamChunk[] {
  const whole = tryJson(data);
  const parts = whole.ok
    ? [whole]
    : data
        .split('\n')
        .filter((l) => l.trim())
        .map((l) => tryJson(l.replace(/^data:\s?/, '')));
  return parts.map((part) => {
    if (!part.ok || !isRecord(part.value)) {
      throw new OpenAiLlmError('unavailable', `LLM stream from ${endpoint} sent data that is not a JSON object: ${data.slice(0, 200)}`);
    }
    return chunkOf(part.value, endpoint);
  });
}

function chunkOf(json: Record<string, unknown>, endpoint: string): StreamChunk {
  if (json['error'] !== undefined && json['error'] !== null) {
    const message = providerErrorMessage(JSON.stringify({ error: json['error'] }));
    throw new OpenAiLlmError('unavailable', `LLM stream from ${endpoint} reported an error: ${message ?? 'unknown error'}`, undefined, message);
  }
  let text = '';
  let finished = false;
  const choices = json['choices'];
  if (Array.isArray(choices)) {
    for (const choice of choices) {
      if (!isRecord(choice) || (choice['index'] !== undefined && choice['index'] !== 0)) continue;
      const delta = choice['delta'];
      if (isRecord(delta) && typeof delta['content'] === 'string') text += delta['content'];
      if (typeof choice['finish_reason'] === 'string') finished = true;
    }
  }
  const usage = usageOf(json['usage']);
  return usage ? { text, finished, usage } : { text, finished };
}

function parseCompletion(body: string, endpoint: string): { text: string; usage?: LlmUsage } {
  const parsed = tryJson(body);
  if (!parsed.ok || !isRecord(parsed.value)) {
    throw new OpenAiLlmError('unavailable', `LLM response from ${endpoint} is not JSON: ${body.slice(0, 200)}`);
  }
  const json = parsed.value;
  if (json['error'] !== undefined && json['error'] !== null) {
    const message = providerErrorMessage(body) ?? 'unknown error';
    throw new OpenAiLlmError('unavailable', `LLM response from ${endpoint} reported an error: ${message}`, undefined, message);
  }
  const choices = json['choices'];
  const first = Array.isArray(choices) ? choices[0] : undefined;
  if (!isRecord(first)) throw new OpenAiLlmError('unavailable', `LLM response from ${endpoint} has no choices`);
  const message = first['message'];
  const content = isRecord(message) ? message['content'] : undefined;
  const text = typeof content === 'string' ? content : '';
  const usage = usageOf(json['usage']);
  return usage ? { text, usage } : { text };
}

function usageOf(u: unknown): LlmUsage | undefined {
  if (!isRecord(u)) return undefined;
  const p = u['prompt_tokens'];
  const c = u['completion_tokens'];
  if (typeof p !== 'number' || typeof c !== 'number') return undefined;
  return { prompt_tokens: p, completion_tokens: c };
}

function tryJson(text: string): { ok: true; value: unknown } | { ok: false } {
  try {
    return { ok: true, value: JSON.parse(text) };
  } catch {
    return { ok: false };
  }
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
