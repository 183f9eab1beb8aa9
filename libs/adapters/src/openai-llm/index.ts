export * from './openai-llm.adapter';
export { SseDataParser } from './sse';
