export interface ChatMessage {
  role: 'system' | 'user' | 'assistant';
  content: string;
}

export interface LlmUsage {
  prompt_tokens: number;
  completion_tokens: number;
}

/** A JSON Schema for constrained output (object/array/string/number/integer/boolean/null, enum, const, oneOf, required). */
export type JsonSchema = Readonly<Record<string, unknown>>;

export interface LlmJsonResult<T = unknown> {
  value: T;
  /** The raw text the model wrote. */
  text: string;
  usage?: LlmUsage;
}

export interface Llm {
  readonly id: string;
  /** Streams the completion text; throws on timeout or a provider error. */
  stream(messages: ChatMessage[], opts: { signal?: AbortSignal; maxTokens?: number; temperature?: number }): AsyncIterable<string>;
  /** Convenience: the whole completion. */
  complete(messages: ChatMessage[], opts: { signal?: AbortSignal; maxTokens?: number; temperature?: number }): Promise<{ text: string; usage?: LlmUsage }>;
  /**
   * Output constrained to a JSON schema (a grammar, or the provider's structured output) and parsed: structured
   * answers, tool calls. Optional: an adapter that cannot constrain its output leaves it out (callers then parse
   * `complete()` text and handle malformed JSON themselves).
   */
  generateJson?<T = unknown>(messages: ChatMessage[], schema: JsonSchema, opts: { signal?: AbortSignal; maxTokens?: number; temperature?: number }): Promise<LlmJsonResult<T>>;
  /** Frees what the adapter holds (a loaded model); called once at shutdown. */
  close?(): Promise<void>;
}
export const LLM = Symbol('LLM');
