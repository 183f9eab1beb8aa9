import { availableParallelism } from 'node:os';
import { AppError, metrics, setSpanAttributes } from '@rag/platform';
import type { ChatMessage, JsonSchema, Llm, LlmJsonResult, LlmUsage } from '@rag/ports';
// Types only: the package is ESM-only and is loaded at run time by `loadNodeLlamaCpp` below.
import type { ChatHistoryItem, GbnfJsonSchema, Llama, LlamaChat, LlamaContext, LlamaContextSequence, LlamaGrammar, LlamaJsonSchemaGrammar, LlamaModel } from 'node-llama-cpp';
import { CallDeadline } from '../llm-call';

type JsonGrammar = LlamaJsonSchemaGrammar<GbnfJsonSchema>;

/**
 * node-llama-cpp is ESM-only with top-level await (so `require()` cannot load it, not even Node 20's require(esm)),
 * and the build is CommonJS (SWC), which compiles a plain `await import()` to `require()`. An `import()` in a
 * Function body is left alone by every compiler and runs Node's own loader. Code evaluated by a VM without a
 * dynamic-import hook (vitest's module runner) gets ERR_VM_DYNAMIC_IMPORT_CALLBACK_MISSING from it; there the
 * module is ESM already and the plain `import()` is the runner's own.
 */
const nativeImport = new Function('specifier', 'return import(specifier)') as (specifier: string) => Promise<typeof import('node-llama-cpp')>;

async function loadNodeLlamaCpp(): Promise<typeof import('node-llama-cpp')> {
  try {
    return await nativeImport('node-llama-cpp');
  } catch (e) {
    if ((e as { code?: unknown }).code !== 'ERR_VM_DYNAMIC_IMPORT_CALLBACK_MISSING') throw e;
    return import('node-llama-cpp');
  }
}

export interface LocalLlmOptions {
  /** A GGUF file. */
  modelPath: string;
  /** CPU threads for generation and prompt evaluation (default os.availableParallelism()). */
  threads?: number;
  /** Context window in tokens, per sequence (default 8192, never more than the model was trained for). */
  contextSize?: number;
  /** Requests generated at once (default 1); the rest wait in FIFO order. */
  sequences?: number;
  /**
   * Milliseconds (default 30 000): the wait for the first token (queue wait included) and for each next one (an idle
   * timeout, as the OpenAI-compatible adapter's streams), so a long answer that keeps flowing is not cut; the
   * caller's `signal` bounds the total.
   */
  timeoutMs?: number;
  /** Completion tokens when the caller sets no `maxTokens` (default 512). */
  maxTokens?: number;
  /** Name in ids, metrics and spans (default: the file name without `.gguf`). */
  name?: string;
}

export interface LocalCallOptions {
  signal?: AbortSignal;
  maxTokens?: number;
  temperature?: number;
  /** Called with the tokens this request used once it ends (also when it fails or is cancelled). */
  onUsage?: (usage: LlmUsage) => void;
}

interface Slot {
  readonly sequence: LlamaContextSequence;
  chat: LlamaChat;
}

interface Waiter {
  resolve(slot: Slot): void;
  reject(e: unknown): void;
}

/**
 * `Llm` on a GGUF model run in-process by node-llama-cpp (llama.cpp, prebuilt CPU binaries; never compiled at run
 * time). One model and one context; the context has `sequences` sequences and a request holds one from its first
 * token to its last, so concurrent requests queue (FIFO) instead of interleaving on one sequence. A request that is
 * cancelled (caller's signal, deadline, the consumer leaving a stream early) stops generating at once and gives its
 * sequence back to the next request.
 *
 * - `stream()` yields text as it is generated; `complete()` returns all of it.
 * - `generateJson()` constrains the output with a grammar built from a JSON schema
 *   (`llama.createGrammarForJsonSchema`), so the text always parses unless `maxTokens` cut it.
 * - Usage: the sequence's token meter around the request: `prompt_tokens` are the prompt tokens evaluated (a
 *   prefix the sequence still holds from the previous request is reused by llama.cpp and not counted again),
 *   `completion_tokens` the generated ones; into rag_llm_tokens_total{kind,model} and the active span.
 * - Errors are `AppError`s: `deadline_exceeded` on our timeout, `invalid_request` for a prompt that cannot fit the
 *   context, `unavailable` otherwise; an abort by the caller's signal rethrows the signal's reason.
 */
export class LocalLlm implements Llm {
  readonly id: string;
  private readonly free: Slot[] = [];
  private readonly waiting: Waiter[] = [];
  private readonly grammars = new Map<string, Promise<JsonGrammar>>();
  private closed = false;

  private constructor(
    private readonly lib: typeof import('node-llama-cpp'),
    private readonly llama: Llama,
    private readonly model: LlamaModel,
    private readonly context: LlamaContext,
    readonly name: string,
    readonly threads: number,
    private readonly timeoutMs: number,
    private readonly defaultMaxTokens: number,
  ) {
    this.id = `local:${name}`;
    for (let i = 0; i < context.totalSequences; i++) {
      const sequence = context.getSequence();
      this.free.push({ sequence, chat: new lib.LlamaChat({ contextSequence: sequence }) });
    }
  }

  /** Loads the model and creates its context (seconds for a small model; the file is memory-mapped). */
  static async create(options: LocalLlmOptions): Promise<LocalLlm> {
    const threads = options.threads && options.threads > 0 ? Math.floor(options.threads) : availableParallelism();
    const sequences = options.sequences ?? 1;
    const timeoutMs = options.timeoutMs ?? 30_000;
    const maxTokens = options.maxTokens ?? 512;
    if (!options.modelPath) throw new AppError('invalid_request', 'local LLM: no GGUF model path');
    if (!Number.isInteger(sequences) || sequences < 1) throw new AppError('invalid_request', `local LLM: sequences must be an integer >= 1, got ${sequences}`);
    if (!(timeoutMs > 0) || !Number.isFinite(timeoutMs)) throw new AppError('invalid_request', `local LLM: timeoutMs must be > 0, got ${timeoutMs}`);
    if (!Number.isInteger(maxTokens) || maxTokens < 1) throw new AppError('invalid_request', `local LLM: maxTokens must be an integer >= 1, got ${maxTokens}`);
    const lib = await loadNodeLlamaCpp();
    // gpu: false and build: 'never': CPU prebuilt binaries only, never a CMake build of llama.cpp at start-up.
    const llama = await lib.getLlama({ gpu: false, build: 'never', maxThreads: threads, logLevel: lib.LlamaLogLevel.error });
    let model: LlamaModel;
    try {
      model = await llama.loadModel({ modelPath: options.modelPath });
    } catch (e) {
      await llama.dispose().catch(() => undefined);
      throw new AppError('unavailable', `local LLM: cannot load GGUF model ${options.modelPath}: ${e instanceof Error ? e.message : String(e)}`);
    }
    try {
      const contextSize = Math.min(options.contextSize ?? 8192, model.trainContextSize);
      const context = await model.createContext({ contextSize, sequences, threads });
      const name = options.name ?? (options.modelPath.split(/[\\/]/).pop() ?? 'model').replace(/\.gguf$/i, '');
      return new LocalLlm(lib, llama, model, context, name, threads, timeoutMs, maxTokens);
    } catch (e) {
      await model.dispose().catch(() => undefined);
      await llama.dispose().catch(() => undefined);
      throw new AppError('unavailable', `local LLM: cannot create a context for ${options.modelPath}: ${e instanceof Error ? e.message : String(e)}`);
    }
  }

  /** Context window of one sequence, in tokens. */
  get contextSize(): number {
    return this.context.contextSize;
  }

  /** Requests waiting for a sequence (not counting the ones generating). */
  get queued(): number {
    return this.waiting.length;
  }

  async *stream(messages: ChatMessage[], opts: LocalCallOptions = {}): AsyncIterable<string> {
    // Bridges the library's callback into pull-based iteration; the consumer leaving early aborts generation.
    const pieces: string[] = [];
    let wake: (() => void) | undefined;
    let finished = false;
    let failure: { error: unknown } | undefined;
    const stop = new AbortController();
    const signal = opts.signal ? AbortSignal.any([opts.signal, stop.signal]) : stop.signal;
    const run = this.generate(messages, { ...opts, signal }, undefined, (t) => {
      pieces.push(t);
      wake?.();
    }).then(
      () => {
        finished = true;
        wake?.();
      },
      (error: unknown) => {
        failure = { error: opts.signal?.aborted ? (opts.signal.reason ?? error) : error };
        finished = true;
        wake?.();
      },
    );
    try {
      for (;;) {
        if (pieces.length > 0) {
          yield pieces.splice(0).join('');
          continue;
        }
        if (finished) break;
        await new Promise<void>((r) => (wake = r));
        wake = undefined;
      }
      if (failure) throw failure.error;
    } finally {
      if (!finished) stop.abort(new Error('stream consumer stopped reading'));
      await run;
    }
  }

  async complete(messages: ChatMessage[], opts: LocalCallOptions = {}): Promise<{ text: string; usage?: LlmUsage }> {
    return this.generate(messages, opts);
  }

  /**
   * Output constrained to `schema` by a grammar and parsed (objects, arrays, strings, numbers, booleans, enums,
   * const, oneOf, `required`; see node-llama-cpp's GbnfJsonSchema). Temperature 0 unless given.
   */
  async generateJson<T = unknown>(messages: ChatMessage[], schema: JsonSchema, opts: LocalCallOptions = {}): Promise<LlmJsonResult<T>> {
    const grammar = await this.grammarFor(schema);
    const r = await this.generate(messages, { temperature: 0, ...opts }, grammar);
    if (r.stopReason === 'maxTokens') {
      throw new AppError('unavailable', `local LLM: the JSON answer was cut at ${r.maxTokens} tokens before it was complete; raise maxTokens`, { text: r.text.slice(0, 500) });
    }
    let value: unknown;
    try {
      value = grammar.parse(r.text);
    } catch (e) {
      throw new AppError('unavailable', `local LLM: the JSON answer does not parse: ${e instanceof Error ? e.message : String(e)}`, { text: r.text.slice(0, 500) });
    }
    return { value: value as T, text: r.text, usage: r.usage };
  }

  /** Rejects queued requests and frees the context, the model and the runtime. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    for (const w of this.waiting.splice(0)) w.reject(new AppError('unavailable', 'local LLM closed'));
    await this.context.dispose().catch(() => undefined);
    await this.model.dispose().catch(() => undefined);
    await this.llama.dispose().catch(() => undefined);
  }

  private grammarFor(schema: JsonSchema): Promise<JsonGrammar> {
    const problem = schemaProblem(schema, '$');
    if (problem) return Promise.reject(new AppError('invalid_request', `local LLM: JSON schema not supported for constrained output: ${problem}`));
    const key = JSON.stringify(schema);
    let g = this.grammars.get(key);
    if (!g) {
      // The schema's shape is checked by the library (it throws on what it cannot express), not by its static type.
      const create = this.llama.createGrammarForJsonSchema.bind(this.llama) as (s: GbnfJsonSchema) => Promise<JsonGrammar>;
      g = create(schema as GbnfJsonSchema).catch((e: unknown) => {
        this.grammars.delete(key);
        throw new AppError('invalid_request', `local LLM: JSON schema not supported for constrained output: ${e instanceof Error ? e.message : String(e)}`);
      });
      this.grammars.set(key, g);
    }
    return g;
  }

  /** One request: wait for a sequence, generate on it, record usage, give the sequence back. */
  private async generate(
    messages: ChatMessage[],
    opts: LocalCallOptions,
    grammar?: LlamaGrammar,
    onText?: (t: string) => void,
  ): Promise<{ text: string; usage: LlmUsage; stopReason: string; maxTokens: number }> {
    const history = toHistory(messages);
    const timer = new CallDeadline(this.timeoutMs, opts.signal);
    let slot: Slot | undefined;
    let before: ReturnType<LlamaContextSequence['tokenMeter']['getState']> | undefined;
    let failed = false;
    try {
      timer.arm();
      slot = await this.acquire(timer.signal);
      before = slot.sequence.tokenMeter.getState();
      const maxTokens = this.fitMaxTokens(messages, opts.maxTokens ?? this.defaultMaxTokens, slot.sequence.contextSize);
      const res = await slot.chat.generateResponse(history, {
        maxTokens,
        temperature: opts.temperature ?? 0,
        signal: timer.signal,
        ...(grammar ? { grammar } : {}),
        onTextChunk: (t: string) => {
          timer.arm();
          if (t) onText?.(t);
        },
      });
      timer.disarm();
      return { text: res.response, usage: this.usageSince(slot, before, opts), stopReason: res.metadata.stopReason, maxTokens };
    } catch (e) {
      failed = true;
      if (slot && before) this.usageSince(slot, before, opts);
      throw translateError(timer, e, this.id);
    } finally {
      timer.dispose();
      if (slot) await this.release(slot, failed);
    }
  }

  /**
   * The completion budget that still fits the sequence's window after the prompt (the library would otherwise shift
   * the context and silently drop the start of the prompt — the sources, in RAG). Counted on the messages' text, a
   * few template tokens per message added.
   */
  private fitMaxTokens(messages: ChatMessage[], wanted: number, window: number): number {
    const promptTokens = messages.reduce((n, m) => n + this.model.tokenize(m.content).length + 8, 8);
    const room = window - promptTokens;
    if (room < 1) {
      throw new AppError('invalid_request', `local LLM: the prompt has about ${promptTokens} tokens, more than the ${window}-token context (RAG_LLM_CONTEXT_SIZE)`);
    }
    return Math.max(1, Math.min(wanted, room));
  }

  private usageSince(slot: Slot, before: ReturnType<LlamaContextSequence['tokenMeter']['getState']>, opts: LocalCallOptions): LlmUsage {
    const d = slot.sequence.tokenMeter.diff(before);
    const usage = { prompt_tokens: d.usedInputTokens, completion_tokens: d.usedOutputTokens };
    metrics.llmTokens.inc({ kind: 'prompt', model: this.name }, usage.prompt_tokens);
    metrics.llmTokens.inc({ kind: 'completion', model: this.name }, usage.completion_tokens);
    setSpanAttributes({ 'gen_ai.request.model': this.name, 'gen_ai.usage.input_tokens': usage.prompt_tokens, 'gen_ai.usage.output_tokens': usage.completion_tokens });
    opts.onUsage?.(usage);
    return usage;
  }

  private acquire(signal: AbortSignal): Promise<Slot> {
    if (this.closed) return Promise.reject(new AppError('unavailable', 'local LLM closed'));
    const slot = this.free.shift();
    if (slot) return Promise.resolve(slot);
    return new Promise<Slot>((resolve, reject) => {
      const onAbort = () => {
        const i = this.waiting.indexOf(waiter);
        if (i >= 0) this.waiting.splice(i, 1);
        reject(signal.reason);
      };
      const waiter: Waiter = {
        resolve: (s) => {
          signal.removeEventListener('abort', onAbort);
          resolve(s);
        },
        reject: (e) => {
          signal.removeEventListener('abort', onAbort);
          reject(e);
        },
      };
      if (signal.aborted) return reject(signal.reason);
      signal.addEventListener('abort', onAbort, { once: true });
      this.waiting.push(waiter);
    });
  }

  private async release(slot: Slot, failed: boolean): Promise<void> {
    if (failed && !this.closed) {
      // A cancelled or failed generation may leave the chat mid-response: start the sequence over clean.
      slot.chat.dispose({ disposeSequence: false });
      await slot.sequence.clearHistory().catch(() => undefined);
      slot.chat = new this.lib.LlamaChat({ contextSequence: slot.sequence });
    }
    if (this.closed) return;
    const next = this.waiting.shift();
    if (next) next.resolve(slot);
    else this.free.push(slot);
  }
}

const JSON_TYPES = new Set(['string', 'number', 'integer', 'boolean', 'null', 'object', 'array']);

/**
 * What the grammar builder would silently mis-handle: it turns an unknown `type` into a grammar no text satisfies
 * the schema with. Checks the `type` of every sub-schema (properties, items, prefixItems, oneOf/anyOf, $defs).
 */
function schemaProblem(schema: unknown, at: string): string | undefined {
  if (typeof schema !== 'object' || schema === null || Array.isArray(schema)) return `${at} is not a schema object`;
  const s = schema as Record<string, unknown>;
  const types = s['type'] === undefined ? [] : Array.isArray(s['type']) ? s['type'] : [s['type']];
  for (const t of types) if (typeof t !== 'string' || !JSON_TYPES.has(t)) return `${at}.type ${JSON.stringify(t)} is not a JSON type`;
  const subs: [string, unknown][] = [];
  for (const key of ['properties', '$defs'] as const) {
    const v = s[key];
    if (v !== undefined) {
      if (typeof v !== 'object' || v === null || Array.isArray(v)) return `${at}.${key} must be an object`;
      for (const [k, sub] of Object.entries(v)) subs.push([`${at}.${key}.${k}`, sub]);
    }
  }
  if (s['items'] !== undefined && typeof s['items'] !== 'boolean') subs.push([`${at}.items`, s['items']]);
  for (const key of ['prefixItems', 'oneOf', 'anyOf'] as const) {
    const v = s[key];
    if (v !== undefined) {
      if (!Array.isArray(v)) return `${at}.${key} must be an array`;
      v.forEach((sub, i) => subs.push([`${at}.${key}[${i}]`, sub]));
    }
  }
  for (const [path, sub] of subs) {
    const p = schemaProblem(sub, path);
    if (p) return p;
  }
  return undefined;
}

/** Chat messages as node-llama-cpp's history; an empty model turn at the end (unless the last message is the model's, which is then continued). */
function toHistory(messages: ChatMessage[]): ChatHistoryItem[] {
  if (!Array.isArray(messages) || messages.length === 0) throw new AppError('invalid_request', 'local LLM: no messages');
  const history: ChatHistoryItem[] = messages.map((m) => {
    if (typeof m?.content !== 'string') throw new AppError('invalid_request', 'local LLM: every message needs a string content');
    if (m.role === 'system') return { type: 'system', text: m.content };
    if (m.role === 'user') return { type: 'user', text: m.content };
    if (m.role === 'assistant') return { type: 'model', response: [m.content] };
    throw new AppError('invalid_request', `local LLM: unknown message role ${JSON.stringify((m as { role?: unknown }).role)}`);
  });
  if (messages[messages.length - 1].role !== 'assistant') history.push({ type: 'model', response: [] });
  return history;
}

/** Maps whatever was thrown during a request to the error the caller should see. */
function translateError(timer: CallDeadline, e: unknown, id: string): unknown {
  if (timer.timedOut) return new AppError('deadline_exceeded', `${id}: no token within ${timer.ms} ms (RAG_LLM_TIMEOUT_MS)`);
  if (timer.callerAborted) return timer.callerReason ?? e;
  if (e instanceof AppError) return e;
  return new AppError('unavailable', `${id} failed: ${e instanceof Error ? e.message : String(e)}`);
}
