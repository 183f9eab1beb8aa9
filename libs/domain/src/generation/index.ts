export { REFUSAL_MESSAGE, buildAnswerPrompt, isRefusalAnswer } from './prompt';
export type { PromptMessage, PromptSource } from './prompt';
export { parseCitations } from './citations';
export { extractiveAnswer } from './extractive';
export type { ExtractiveAnswer, ExtractiveOptions, ExtractiveSource } from './extractive';
export { evidenceScore, shouldRefuse } from './evidence';
export type { RefusalDecision } from './evidence';
export { LexicalMemo } from './lexical-memo';
export type { LexicalMemoOptions, LexicalMemoStats } from './lexical-memo';
