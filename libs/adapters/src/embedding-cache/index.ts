export { CachedEmbedder, type CachedEmbedderOptions, type EmbeddingCacheStats } from './embedding-cache.adapter';
