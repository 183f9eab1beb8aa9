export { ATOMIC_FACTOR, DEFAULT_CHUNK_OPTIONS, DEFAULT_MAX_CHUNKS_PER_DOCUMENT, validateChunkOptions, type ChunkOptions } from './options';
export { countTokens } from './tokens';
export { chunkDocument, chunkDocumentWithin, embeddingText, type ChunkingResult } from './chunker';
