export interface ChatMessage {
  role: 'system' | 'user' | 'assistant';
  content: string;
}

export interface LlmUsage {
  prompt_tokens: number;
  completion_tokens: number;
}

export interface Llm {
  readonly id: string;
  /** Streams the completion text; throws on timeout or a provider error. */
  stream(messages: ChatMessage[], opts: { signal?: AbortSignal; maxTokens?: number; temperature?: number }): AsyncIterable<string>;
  /** Convenience: the whole completion. */
  complete(messages: ChatMessage[], opts: { signal?: AbortSignal; maxTokens?: number; temperature?: number }): Promise<{ text: string; usage?: LlmUsage }>;
}
export const LLM = Symbol('LLM');
