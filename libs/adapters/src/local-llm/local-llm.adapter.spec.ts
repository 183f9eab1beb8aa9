/**
 * LocalLlm against the REAL model: Gemma 3 270M Q4_K_M, fetched (once, then reused from .models/) by the project's
 * own scripts/models/fetch.js. A base model: these tests assert mechanics (grammar, streaming, queueing,
 * cancellation, usage), never answer quality. Few tokens and 2 threads keep them short on a 2-core machine.
 */
import { metrics, type AppError } from '@rag/platform';
import type { ChatMessage, LlmUsage } from '@rag/ports';
import { ensureTestModels, TEST_MODELS_DIR } from '../onnx-embedder/test-models';
import { LocalLlm } from './local-llm.adapter';
import { DEFAULT_LOCAL_MODEL, defaultLocalModelPath } from './model-file';

const MODEL = defaultLocalModelPath(TEST_MODELS_DIR);
const ask = (q: string): ChatMessage[] => [
  { role: 'system', content: 'Answer in one short sentence.' },
  { role: 'user', content: q },
];

async function tokensCounted(kind: 'prompt' | 'completion', model: string): Promise<number> {
  const v = (await metrics.llmTokens.get()).values.find((x) => x.labels['kind'] === kind && x.labels['model'] === model);
  return v?.value ?? 0;
}

async function collect(stream: AsyncIterable<string>, onPiece?: (p: string) => void): Promise<string[]> {
  const pieces: string[] = [];
  for await (const p of stream) {
    pieces.push(p);
    onPiece?.(p);
  }
  return pieces;
}

describe.skipIf(process.env.RAG_SKIP_MODEL_TESTS === '1')('LocalLlm on a real GGUF model (node-llama-cpp)', () => {
  let llm: LocalLlm;
  beforeAll(async () => {
    ensureTestModels([DEFAULT_LOCAL_MODEL.name]);
    llm = await LocalLlm.create({ modelPath: MODEL, threads: 2, contextSize: 2048, sequences: 1, timeoutMs: 60_000, maxTokens: 16 });
  }, 15 * 60_000);
  afterAll(async () => {
    await llm?.close();
  });

  it('names itself after the file and uses the threads it was given', () => {
    expect(llm.id).toBe('local:gemma-3-270m-q4_k_m');
    expect(llm.threads).toBe(2);
    expect(llm.contextSize).toBe(2048);
  });

  it('a JSON-schema-constrained answer parses, and every source_id is one of the given sources', async () => {
    const schema = {
      type: 'object',
      properties: {
        answer: { type: 'string', maxLength: 60 },
        source_ids: { type: 'array', items: { enum: [1, 2] }, minItems: 1, maxItems: 2 },
      },
      required: ['answer', 'source_ids'],
    } as const;
    const messages: ChatMessage[] = [
      { role: 'system', content: 'Answer from the sources as JSON {"answer": string, "source_ids": [ids of the sources used]}.' },
      { role: 'user', content: 'Sources:\n[1] Paris is the capital of France.\n[2] Berlin is the capital of Germany.\n\nQuestion: What is the capital of France?' },
    ];
    const r = await llm.generateJson<{ answer: string; source_ids: number[] }>(messages, schema, { maxTokens: 80 });
    expect(JSON.parse(r.text)).toEqual(r.value);
    expect(typeof r.value.answer).toBe('string');
    expect(r.value.source_ids.length).toBeGreaterThanOrEqual(1);
    for (const id of r.value.source_ids) expect([1, 2]).toContain(id);
    expect(r.usage!.completion_tokens).toBeGreaterThan(0);
  });

  it('a JSON answer cut by maxTokens is an error that says so, not a half-parsed value', async () => {
    const schema = { type: 'object', properties: { items: { type: 'array', items: { type: 'string' } } }, required: ['items'] } as const;
    await expect(llm.generateJson([{ role: 'user', content: 'List many fruits as JSON.' }], schema, { maxTokens: 3 })).rejects.toMatchObject({
      code: 'unavailable',
      message: expect.stringMatching(/cut at 3 tokens/),
    });
  });

  it('streams the completion in pieces and counts its usage into rag_llm_tokens_total', async () => {
    const promptBefore = await tokensCounted('prompt', llm.name);
    const completionBefore = await tokensCounted('completion', llm.name);
    let usage: LlmUsage | undefined;
    const pieces = await collect(llm.stream(ask('Name three colours.'), { maxTokens: 12, onUsage: (u) => (usage = u) }));
    expect(pieces.length).toBeGreaterThan(1);
    expect(pieces.join('').length).toBeGreaterThan(0);
    expect(usage!.completion_tokens).toBeGreaterThan(1);
    expect(usage!.completion_tokens).toBeLessThanOrEqual(12);
    expect(usage!.prompt_tokens).toBeGreaterThan(0);
    expect((await tokensCounted('prompt', llm.name)) - promptBefore).toBe(usage!.prompt_tokens);
    expect((await tokensCounted('completion', llm.name)) - completionBefore).toBe(usage!.completion_tokens);
  });

  it('two concurrent requests are queued: one finishes before the other starts, each with its own text', async () => {
    const alone = (await llm.complete(ask('Why is the sky blue?'), { maxTokens: 10 })).text;
    const order: string[] = [];
    const a = collect(llm.stream(ask('Why is the sky blue?'), { maxTokens: 10 }), () => order.push('a'));
    const b = collect(llm.stream(ask('Where do penguins live?'), { maxTokens: 10 }), () => order.push('b'));
    await new Promise((r) => setImmediate(r));
    expect(llm.queued).toBe(1);
    const [ta, tb] = await Promise.all([a, b]);
    // No interleaving: the pieces of one request all come before the pieces of the other.
    expect(order.join('')).toMatch(/^a+b+$/);
    expect(ta.join('')).toBe(alone);
    expect(tb.join('')).not.toBe(alone);
    expect(llm.queued).toBe(0);
  });

  it('cancellation stops generating and frees the sequence: the queued request and a next one run', async () => {
    const controller = new AbortController();
    const reason = new Error('client went away');
    let pieces = 0;
    let usage: LlmUsage | undefined;
    const cancelled = collect(llm.stream(ask('Tell me a long story about a dragon.'), { maxTokens: 200, signal: controller.signal, onUsage: (u) => (usage = u) }), () => {
      if (++pieces === 2) controller.abort(reason);
    });
    const queued = llm.complete(ask('Say hello.'), { maxTokens: 5 });
    await expect(cancelled).rejects.toBe(reason);
    expect(usage!.completion_tokens).toBeLessThan(20);
    expect((await queued).text.length).toBeGreaterThan(0);
    expect((await llm.complete(ask('Say goodbye.'), { maxTokens: 5 })).text.length).toBeGreaterThan(0);
  });

  it('a consumer that stops reading early ends the generation (the sequence is free for the next request)', async () => {
    let usage: LlmUsage | undefined;
    for await (const piece of llm.stream(ask('Count from one to one hundred.'), { maxTokens: 200, onUsage: (u) => (usage = u) })) {
      expect(piece.length).toBeGreaterThan(0);
      break;
    }
    expect(usage!.completion_tokens).toBeLessThan(20);
    expect((await llm.complete(ask('Say yes.'), { maxTokens: 3 })).text.length).toBeGreaterThan(0);
  });

  it('an aborted request waiting in the queue leaves it without running', async () => {
    const first = llm.complete(ask('Describe the sea.'), { maxTokens: 8 });
    const controller = new AbortController();
    const waiting = llm.complete(ask('Describe the moon.'), { maxTokens: 8, signal: controller.signal });
    expect(llm.queued).toBe(1);
    controller.abort(new Error('deadline'));
    await expect(waiting).rejects.toThrow('deadline');
    expect(llm.queued).toBe(0);
    expect((await first).text.length).toBeGreaterThan(0);
  });

  it('rejects what cannot run with a clear invalid_request: no messages, a prompt larger than the context', async () => {
    await expect(llm.complete([], {})).rejects.toMatchObject({ code: 'invalid_request', message: expect.stringMatching(/no messages/) });
    const huge = 'word '.repeat(4000);
    await expect(llm.complete(ask(huge), {})).rejects.toMatchObject({ code: 'invalid_request', message: expect.stringMatching(/more than the 2048-token context/) });
    await expect(llm.generateJson(ask('x'), { type: 'object', properties: { a: { type: 'date-time-of-doom' } } })).rejects.toMatchObject({
      code: 'invalid_request',
      message: expect.stringContaining('$.properties.a.type "date-time-of-doom" is not a JSON type'),
    });
    expect((await llm.complete(ask('Still there?'), { maxTokens: 3 })).text.length).toBeGreaterThan(0);
  });

  it('its own timeout is deadline_exceeded naming the setting, and the model serves the next request', async () => {
    const impatient = await LocalLlm.create({ modelPath: MODEL, threads: 2, contextSize: 1024, timeoutMs: 1, maxTokens: 50 });
    try {
      const e = (await impatient.complete(ask('Tell me about rivers.')).catch((x: unknown) => x)) as AppError;
      expect(e).toMatchObject({ code: 'deadline_exceeded', message: expect.stringMatching(/RAG_LLM_TIMEOUT_MS/) });
    } finally {
      await impatient.close();
    }
    await expect(impatient.complete(ask('x'))).rejects.toMatchObject({ code: 'unavailable', message: expect.stringMatching(/closed/) });
  });

  it('a file that is not a GGUF model fails to load with the path in the message', async () => {
    await expect(LocalLlm.create({ modelPath: __filename, threads: 2 })).rejects.toMatchObject({ code: 'unavailable', message: expect.stringContaining(__filename) });
  });
});
