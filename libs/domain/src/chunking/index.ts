export { ATOMIC_FACTOR, DEFAULT_CHUNK_OPTIONS, validateChunkOptions, type ChunkOptions } from './options';
export { countTokens } from './tokens';
export { chunkDocument, embeddingText } from './chunker';
