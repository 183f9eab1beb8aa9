export { ATOMIC_FACTOR, DEFAULT_CHUNK_OPTIONS, DEFAULT_MAX_CHUNKS_PER_DOCUMENT, validateChunkOptions, type ChunkOptions } from './options';
export { countTokens } from './tokens';
export { chunkDocument, chunkDocumentWithin, embeddingText, keywordText, type ChunkingResult } from './chunker';
export { cleanContext, contextDocumentText, contextPrompt, cutToTokens, MAX_CONTEXT_CHARS, type ContextMessage } from './context-prompt';
